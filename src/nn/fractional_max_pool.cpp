// FractionalMaxPool2d/3d and their functionals (include/ember/nn/fractional_max_pool.h):
// torch.nn.functional's argument handling and ATen's checks and messages, then each plane's
// window starts computed on the host from its samples, one gather of every window's elements
// (a table of flat positions) and one max per window.
#include "ember/nn/fractional_max_pool.h"

#include <array>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/ops.h"

namespace ember::nn {

namespace functional {

namespace {

/// The start of each of `out` windows of size `k` over `in`, from sample u, in the precision
/// `Real` that PyTorch's kernel computes in (the input's dtype).
template <typename Real>
std::vector<int64_t> window_starts(Real u, int64_t in, int64_t out, int64_t k) {
  std::vector<int64_t> starts(static_cast<size_t>(out));
  if (out == 0) return starts;
  if (out > 1) {
    const Real alpha = static_cast<Real>(in - k) / static_cast<Real>(out - 1);
    for (int64_t i = 0; i < out - 1; ++i) {
      starts[static_cast<size_t>(i)] =
          static_cast<int64_t>((static_cast<Real>(i) + u) * alpha) - static_cast<int64_t>(u * alpha);
    }
  }
  starts[static_cast<size_t>(out - 1)] = in - k;
  return starts;
}

std::vector<int64_t> starts_for(const Tensor& samples_cpu, int64_t at, int64_t in, int64_t out, int64_t k) {
  if (samples_cpu.dtype() == kFloat64) return window_starts<double>(samples_cpu.data_ptr<double>()[at], in, out, k);
  return window_starts<float>(samples_cpu.data_ptr<float>()[at], in, out, k);
}

/// What one spatial rank (2 or 3) calls itself in ATen's messages.
struct Names {
  int64_t dims;
  const char* op;      // "fractional_max_pool2d"
  const char* prefix;  // the prefix of ATen's shape messages
  const char* kernel_message;
  const char* output_message;
};

constexpr Names kNames2d{2, "fractional_max_pool2d", "fractional_max_pool2d()",
                         "fractional_max_pool2d: kernel_size must either be a single Int or tuple of Ints",
                         "fractional_max_pool2d: output_size must either be a single Int or tuple of Ints"};
constexpr Names kNames3d{3, "fractional_max_pool3d", "fractional_max_pool3d_out()",
                         "fractional_max_pool3d: kernel_size must either be a single Int or tuple of three Ints",
                         "fractional_max_pool3d: output_size must either be a single Int or tuple of three Ints"};

std::vector<int64_t> expand(IntList values, int64_t dims) {
  if (values.size() == 1) return std::vector<int64_t>(static_cast<size_t>(dims), values[0]);
  return values.vec();
}

std::tuple<Tensor, Tensor> fractional_max_pool(const Names& names, const Tensor& input, IntList kernel_size,
                                               IntList output_size, const std::vector<double>& output_ratio,
                                               const Tensor& given_samples) {
  ember::detail::check_defined(input, names.op);
  const int64_t dims = names.dims;
  const size_t sdims = static_cast<size_t>(dims);
  // torch.nn.functional's part: the output size from the ratio, and the samples.
  EMBER_CHECK(!output_size.empty() || !output_ratio.empty(), names.op,
              " requires specifying either an output_size or an output_ratio");
  std::vector<int64_t> out_sizes;
  if (output_size.empty()) {
    EMBER_CHECK(output_ratio.size() == 1 || output_ratio.size() == sdims, names.op,
                " requires output_ratio to either be a single Int or tuple of Ints.");
    for (int64_t i = 0; i < dims; ++i) {
      const double ratio = output_ratio[output_ratio.size() == 1 ? 0 : static_cast<size_t>(i)];
      const int64_t in = input.size(ember::detail::wrap_dim(i - dims, input.dim()));
      out_sizes.push_back(static_cast<int64_t>(static_cast<double>(in) * ratio));
    }
  }
  Tensor samples = given_samples;
  if (!samples.defined()) {
    const int64_t channels = input.size(ember::detail::wrap_dim(-dims - 1, input.dim()));
    const int64_t batch = input.dim() == dims + 1 ? 1 : input.size(0);
    samples = rand({batch, channels, dims}, TensorOptions().dtype(input.dtype()).device(input.device()));
  }
  // ATen's checks, in its order.
  EMBER_CHECK(kernel_size.size() == 1 || kernel_size.size() == sdims, names.kernel_message);
  if (!output_size.empty()) {
    EMBER_CHECK(output_size.size() == 1 || output_size.size() == sdims, names.output_message);
    out_sizes = expand(output_size, dims);
  }
  const std::vector<int64_t> kernel = expand(kernel_size, dims);
  EMBER_CHECK(input.dim() == dims + 1 || input.dim() == dims + 2, names.prefix, ": Expected ", dims + 1, "D or ",
              dims + 2, "D tensor, but got: ", ember::detail::shape_str(input.sizes()));
  for (int64_t d = input.dim() - dims - 1; d < input.dim(); ++d) {
    EMBER_CHECK(input.size(d) > 0, names.prefix,
                ": Expected input to have non-zero size for non-batch dimensions, but got",
                ember::detail::shape_str(input.sizes()), " with dimension ", d, " being empty.");
  }
  bool positive = true;
  for (int64_t k : kernel) positive = positive && k > 0;
  if (!positive) {
    std::string shown;
    for (size_t i = 0; i < sdims; ++i) shown += (i ? "x" : "") + std::to_string(kernel[i]);
    EMBER_CHECK(false, names.op, "(): kernel size should be greater than zero, but got ", shown);
  }
  EMBER_CHECK(samples.dtype() == input.dtype(), "Expect _random_samples to have the same dtype as input");
  EMBER_CHECK(samples.dim() == 3, "Expect _random_samples to have 3 dimensions, got ", samples.dim());
  const bool batched = input.dim() == dims + 2;
  const Tensor x = batched ? input : input.unsqueeze(0);
  const int64_t n = x.size(0), c = x.size(1);
  EMBER_CHECK(samples.size(0) >= n, "Expect _random_samples.size(0) no less then input batch size.");
  EMBER_CHECK(samples.size(1) == c, "Expect _random_samples.size(1) equals to input channel size.");
  EMBER_CHECK(samples.size(2) == dims, "Expect _random_samples.size(2) equals to ", dims, "; got ", samples.size(2),
              ".");
  const char* dim_names[3] = {"time", "height", "width"};
  std::vector<int64_t> in_sizes;
  for (int64_t i = 0; i < dims; ++i) in_sizes.push_back(x.size(2 + i));
  for (size_t i = 0; i < sdims; ++i) {
    const char* what = dim_names[i + 3 - sdims];
    EMBER_CHECK(out_sizes[i] + kernel[i] - 1 <= in_sizes[i], names.prefix, ": pool ", what, " ", kernel[i],
                " too large relative to input ", what, " ", in_sizes[i]);
  }
  std::vector<int64_t> result_sizes{n, c};
  result_sizes.insert(result_sizes.end(), out_sizes.begin(), out_sizes.end());
  for (int64_t s : out_sizes) {
    EMBER_CHECK(s >= 0, "Trying to create tensor with negative dimension ", s, ": ",
                ember::detail::shape_str(result_sizes));
  }
  EMBER_CHECK(input.is_floating_point(), "\"", names.op, "_out_frame\" not implemented for '",
              scalar_type_name(input.dtype()), "'");

  int64_t outputs = 1, window = 1, plane = 1;
  for (size_t i = 0; i < sdims; ++i) {
    outputs *= out_sizes[i];
    window *= kernel[i];
    plane *= in_sizes[i];
  }
  const Tensor flat = x.reshape({n, c, plane});
  if (outputs == 0 || n == 0) {
    const Tensor empty = flat.narrow(2, 0, 0).reshape({-1}).narrow(0, 0, 0).reshape(result_sizes);
    Tensor indices = zeros(result_sizes, TensorOptions().dtype(kInt64).device(x.device()));
    return {batched ? empty : empty.squeeze(0), batched ? indices : indices.squeeze(0)};
  }
  // Every window's flat positions, plane by plane, in row-major order within the window.
  const Tensor samples_cpu =
      samples.detach().to(Device(kCPU), input.dtype() == kFloat64 ? kFloat64 : kFloat32).contiguous();
  std::vector<int64_t> table;
  table.reserve(static_cast<size_t>(n * c * outputs * window));
  std::array<int64_t, 3> stride_of{};  // element strides of (t, h, w) or (h, w) in a plane
  stride_of[sdims - 1] = 1;
  for (int64_t i = dims - 2; i >= 0; --i) {
    stride_of[static_cast<size_t>(i)] = stride_of[static_cast<size_t>(i + 1)] * in_sizes[static_cast<size_t>(i + 1)];
  }
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t ch = 0; ch < c; ++ch) {
      // As ATen reads them: in 2-D sample 0 belongs to the width and 1 to the height; in 3-D
      // samples 0, 1, 2 belong to the time, height and width.
      std::vector<std::vector<int64_t>> starts(sdims);
      for (size_t i = 0; i < sdims; ++i) {
        const int64_t sample = dims == 2 ? 1 - static_cast<int64_t>(i) : static_cast<int64_t>(i);
        const int64_t at = (b * c + ch) * dims + sample;
        starts[i] = starts_for(samples_cpu, at, in_sizes[i], out_sizes[i], kernel[i]);
      }
      // Odometers over the output positions and, inside, over the window's offsets.
      std::vector<int64_t> o(sdims, 0);
      for (int64_t q = 0; q < outputs; ++q) {
        std::vector<int64_t> k(sdims, 0);
        for (int64_t r = 0; r < window; ++r) {
          int64_t pos = 0;
          for (size_t i = 0; i < sdims; ++i) pos += (starts[i][static_cast<size_t>(o[i])] + k[i]) * stride_of[i];
          table.push_back(pos);
          for (int64_t i = dims - 1; i >= 0 && ++k[static_cast<size_t>(i)] == kernel[static_cast<size_t>(i)]; --i) {
            k[static_cast<size_t>(i)] = 0;
          }
        }
        for (int64_t i = dims - 1; i >= 0 && ++o[static_cast<size_t>(i)] == out_sizes[static_cast<size_t>(i)]; --i) {
          o[static_cast<size_t>(i)] = 0;
        }
      }
    }
  }
  const Tensor positions = tensor(table, TensorOptions().dtype(kInt64)).to(x.device()).view({n, c, outputs * window});
  const Tensor windows = ember::gather(flat, 2, positions).view({n, c, outputs, window});
  auto [values, slot] = ember::max(windows, -1);
  const Tensor indices =
      ember::gather(positions.view({n, c, outputs, window}), 3, slot.unsqueeze(-1)).view(result_sizes);
  const Tensor out = values.view(result_sizes);
  return {batched ? out : out.squeeze(0), batched ? indices : indices.squeeze(0)};
}

}  // namespace

std::tuple<Tensor, Tensor> fractional_max_pool2d_with_indices(const Tensor& input, IntList kernel_size,
                                                              IntList output_size,
                                                              const std::vector<double>& output_ratio,
                                                              const Tensor& random_samples) {
  ember::detail::OpContext context("fractional_max_pool2d", {{"input", &input}});
  return fractional_max_pool(kNames2d, input, kernel_size, output_size, output_ratio, random_samples);
}

Tensor fractional_max_pool2d(const Tensor& input, IntList kernel_size, IntList output_size,
                             const std::vector<double>& output_ratio, const Tensor& random_samples) {
  return std::get<0>(fractional_max_pool2d_with_indices(input, kernel_size, output_size, output_ratio, random_samples));
}

std::tuple<Tensor, Tensor> fractional_max_pool3d_with_indices(const Tensor& input, IntList kernel_size,
                                                              IntList output_size,
                                                              const std::vector<double>& output_ratio,
                                                              const Tensor& random_samples) {
  ember::detail::OpContext context("fractional_max_pool3d", {{"input", &input}});
  return fractional_max_pool(kNames3d, input, kernel_size, output_size, output_ratio, random_samples);
}

Tensor fractional_max_pool3d(const Tensor& input, IntList kernel_size, IntList output_size,
                             const std::vector<double>& output_ratio, const Tensor& random_samples) {
  return std::get<0>(fractional_max_pool3d_with_indices(input, kernel_size, output_size, output_ratio, random_samples));
}

}  // namespace functional

// ---------------------------------------------------------------- layers

namespace {

/// The layers' checks of output_size / output_ratio, with PyTorch's messages.
template <size_t D>
void check_layer_sizes(const char* layer, const OptionalSize<D>& output_size, const OptionalRatio<D>& output_ratio) {
  EMBER_CHECK(output_size.has_value() || output_ratio.has_value(), layer,
              " requires specifying either an output size, or a pooling ratio");
  EMBER_CHECK(!(output_size.has_value() && output_ratio.has_value()),
              "only one of output_size and output_ratio may be specified");
  if (output_size) output_size->check(layer, "output_size");
  if (!output_ratio) return;
  EMBER_CHECK(output_ratio->given() == 1 || output_ratio->given() == D, layer,
              ": output_ratio must either be a single float, or a tuple of ", D, " floats");
  bool inside = true;
  for (size_t i = 0; i < D; ++i) inside = inside && (*output_ratio)[i] > 0 && (*output_ratio)[i] < 1;
  if (inside) return;
  std::string shown;
  if (output_ratio->given() == 1) {
    shown = ember::detail::python_float((*output_ratio)[0]);
  } else {
    shown = "(";
    for (size_t i = 0; i < D; ++i) shown += (i ? ", " : "") + ember::detail::python_float((*output_ratio)[i]);
    shown += ")";
  }
  EMBER_CHECK(false, "output_ratio must be between 0 and 1 (got ", shown, ")");
}

}  // namespace

FractionalMaxPool2d::FractionalMaxPool2d(ExpandingSize<2> kernel_size, FractionalMaxPool2dOptions options)
    : kernel_size(kernel_size.check("FractionalMaxPool2d", "kernel_size")),
      output_size(std::move(options.output_size)),
      output_ratio(std::move(options.output_ratio)),
      return_indices(options.return_indices),
      random_samples(std::move(options.random_samples)) {
  check_layer_sizes<2>("FractionalMaxPool2d", output_size, output_ratio);
  if (random_samples.defined()) register_buffer("_random_samples", random_samples);
}

std::tuple<Tensor, Tensor> FractionalMaxPool2d::forward_with_indices(const Tensor& input) {
  return functional::fractional_max_pool2d_with_indices(
      input, kernel_size, output_size ? output_size->list() : IntList(),
      output_ratio ? output_ratio->vec() : std::vector<double>(), random_samples);
}

Tensor FractionalMaxPool2d::forward(const Tensor& input) {
  EMBER_CHECK(!return_indices,
              "FractionalMaxPool2d(return_indices=true) returns (output, indices): call forward_with_indices instead "
              "of forward");
  return std::get<0>(forward_with_indices(input));
}

FractionalMaxPool3d::FractionalMaxPool3d(ExpandingSize<3> kernel_size, FractionalMaxPool3dOptions options)
    : kernel_size(kernel_size.check("FractionalMaxPool3d", "kernel_size")),
      output_size(std::move(options.output_size)),
      output_ratio(std::move(options.output_ratio)),
      return_indices(options.return_indices),
      random_samples(std::move(options.random_samples)) {
  check_layer_sizes<3>("FractionalMaxPool3d", output_size, output_ratio);
  if (random_samples.defined()) register_buffer("_random_samples", random_samples);
}

std::tuple<Tensor, Tensor> FractionalMaxPool3d::forward_with_indices(const Tensor& input) {
  return functional::fractional_max_pool3d_with_indices(
      input, kernel_size, output_size ? output_size->list() : IntList(),
      output_ratio ? output_ratio->vec() : std::vector<double>(), random_samples);
}

Tensor FractionalMaxPool3d::forward(const Tensor& input) {
  EMBER_CHECK(!return_indices,
              "FractionalMaxPool3d(return_indices=true) returns (output, indices): call forward_with_indices instead "
              "of forward");
  return std::get<0>(forward_with_indices(input));
}

}  // namespace ember::nn
