// MaxUnpool1d/2d/3d and functional::max_unpool1d/2d/3d: PyTorch's output-size rule
// (torch.nn.functional._unpool_output_size) and its kernels' checks, then one ember::scatter per
// call: each plane of the flattened output takes the input's values at the indices. scatter's
// gradient (the output's gradient gathered at the indices) is max_unpool's.
#include "ember/nn/unpool.h"

#include <sstream>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/indexing.h"
#include "ember/ops.h"

namespace ember::nn {

namespace {

/// One value per spatial dimension from a list of one or `d` values.
std::vector<int64_t> expand_to(IntList values, size_t d, const char* name) {
  EMBER_CHECK(values.size() == 1 || values.size() == d, "max_unpool", d, "d: ", name,
              " must either be a single int, or a tuple of ", d, " ints");
  std::vector<int64_t> out(d);
  for (size_t i = 0; i < d; ++i) out[i] = values[values.size() == 1 ? 0 : i];
  return out;
}

/// Python's repr of a tuple of ints: "(6, 5)", "(6,)".
std::string tuple_repr(IntList values) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < values.size(); ++i) os << (i ? ", " : "") << values[i];
  os << (values.size() == 1 ? ",)" : ")");
  return os.str();
}

/// The unpooled spatial sizes, as torch.nn.functional._unpool_output_size decides them.
std::vector<int64_t> unpool_output_size(const Tensor& input, const std::vector<int64_t>& kernel,
                                        const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                                        IntList output_size) {
  const size_t d = kernel.size();
  std::vector<int64_t> defaults(d);
  for (size_t i = 0; i < d; ++i) {
    const int64_t in = input.size(input.dim() - static_cast<int64_t>(d) + static_cast<int64_t>(i));
    defaults[i] = (in - 1) * stride[i] + kernel[i] - 2 * padding[i];
  }
  if (output_size.empty()) return defaults;
  std::vector<int64_t> asked(output_size.begin(), output_size.end());
  if (asked.size() == d + 2) asked.erase(asked.begin(), asked.begin() + 2);
  EMBER_CHECK(asked.size() == d, "output_size should be a sequence containing ", d, " or ", d + 2,
              " elements, but it has a length of '", asked.size(), "'");
  for (size_t i = 0; i < d; ++i) {
    const int64_t low = defaults[i] - stride[i], high = defaults[i] + stride[i];
    EMBER_CHECK(asked[i] > low && asked[i] < high, "invalid output_size \"", tuple_repr(output_size), "\" (dim ", i,
                " must be between ", low, " and ", high, ")");
  }
  return asked;
}

Tensor max_unpool(const Tensor& input, const Tensor& indices, IntList kernel_size, IntList stride, IntList padding,
                  IntList output_size, size_t d) {
  ::ember::detail::check_defined(input, "max_unpool");
  ::ember::detail::check_defined(indices, "max_unpool");
  const std::vector<int64_t> kernel = expand_to(kernel_size, d, "kernel_size");
  const std::vector<int64_t> steps = stride.empty() ? kernel : expand_to(stride, d, "stride");
  const std::vector<int64_t> pads = expand_to(padding, d, "padding");
  // 1-D unpooling is 2-D unpooling over a width of one, as in PyTorch (and so are its messages).
  const size_t kernel_d = d == 1 ? 2 : d;
  const int64_t low_rank = static_cast<int64_t>(kernel_d) + 1;
  EMBER_CHECK(input.dim() + (d == 1 ? 1 : 0) == low_rank || input.dim() + (d == 1 ? 1 : 0) == low_rank + 1,
              "Input to max_unpooling", kernel_d, "d should be a ", low_rank, "d or ", low_rank + 1,
              "d Tensor, but got a tensor with ", input.dim() + (d == 1 ? 1 : 0), " dimensions.");
  const std::vector<int64_t> out_spatial = unpool_output_size(input, kernel, steps, pads, output_size);
  EMBER_CHECK(indices.dtype() == kInt64,
              "elements in indices should be type int64 but got: ", scalar_type_name(indices.dtype()));
  EMBER_CHECK(same_dims(input.sizes(), indices.sizes()),
              "Expected shape of indices to be same as that of the input tensor (",
              ::ember::detail::shape_str(input.sizes()),
              ") but got indices tensor with shape: ", ::ember::detail::shape_str(indices.sizes()));
  for (int64_t i = 1; i < input.dim(); ++i) {
    EMBER_CHECK(input.size(i) > 0, "max_unpooling", kernel_d,
                "d_forward_out_cpu(): Expected input to have non-zero size for non-batch dimensions, but input has "
                "sizes ",
                ::ember::detail::shape_str(input.sizes()), " with dimension ", i, " being empty");
  }
  int64_t plane = 1;
  std::string volume;
  for (size_t i = 0; i < d; ++i) {
    plane *= out_spatial[i];
    volume += (i ? "x" : "") + std::to_string(out_spatial[i]);
  }
  if (d == 1) volume += "x1";
  if (indices.is_cpu() && indices.numel() > 0) {
    const Tensor flat = indices.contiguous();
    const auto* data = static_cast<const int64_t*>(flat.data_ptr());
    for (int64_t i = 0; i < flat.numel(); ++i) {
      EMBER_CHECK(data[i] >= 0 && data[i] < plane, "Found an invalid max index: ", data[i],
                  " (output volumes are of size ", volume, ")");
    }
  }
  const int64_t spatial_dims = static_cast<int64_t>(d);
  const int64_t lead = input.dim() - spatial_dims;  // 1 (C) or 2 (N, C)
  std::vector<int64_t> planes(input.sizes().begin(), input.sizes().begin() + lead);
  std::vector<int64_t> flat_sizes = planes;
  flat_sizes.push_back(-1);
  std::vector<int64_t> out_flat = planes;
  out_flat.push_back(plane);
  std::vector<int64_t> out_sizes = planes;
  out_sizes.insert(out_sizes.end(), out_spatial.begin(), out_spatial.end());
  const Tensor zeros_out = zeros(out_flat, input.options());
  return scatter(zeros_out, lead, indices.reshape(flat_sizes), input.reshape(flat_sizes)).reshape(out_sizes);
}

}  // namespace

namespace functional {

Tensor max_unpool1d(const Tensor& input, const Tensor& indices, IntList kernel_size, IntList stride, IntList padding,
                    IntList output_size) {
  ::ember::detail::OpContext context("max_unpool1d", {{"input", &input}, {"indices", &indices}});
  return max_unpool(input, indices, kernel_size, stride, padding, output_size, 1);
}

Tensor max_unpool2d(const Tensor& input, const Tensor& indices, IntList kernel_size, IntList stride, IntList padding,
                    IntList output_size) {
  ::ember::detail::OpContext context("max_unpool2d", {{"input", &input}, {"indices", &indices}});
  return max_unpool(input, indices, kernel_size, stride, padding, output_size, 2);
}

Tensor max_unpool3d(const Tensor& input, const Tensor& indices, IntList kernel_size, IntList stride, IntList padding,
                    IntList output_size) {
  ::ember::detail::OpContext context("max_unpool3d", {{"input", &input}, {"indices", &indices}});
  return max_unpool(input, indices, kernel_size, stride, padding, output_size, 3);
}

}  // namespace functional

template <size_t D>
MaxUnpool<D>::MaxUnpool(ExpandingSize<D> kernel_size_, MaxUnpoolOptions<D> options)
    : kernel_size(std::move(kernel_size_)),
      stride(options.stride ? *options.stride : kernel_size),
      padding(std::move(options.padding)) {
  const std::string what = "MaxUnpool" + std::to_string(D) + "d";
  kernel_size.check(what.c_str(), "kernel_size");
  stride.check(what.c_str(), "stride");
  padding.check(what.c_str(), "padding");
}

template <size_t D>
std::string MaxUnpool<D>::name() const {
  return "MaxUnpool" + std::to_string(D) + "d";
}

template <size_t D>
Tensor MaxUnpool<D>::forward(const Tensor&) {
  ::ember::detail::fail(name(),
                        ".forward() missing 1 required positional argument: 'indices' (call forward(input, indices))");
}

template <size_t D>
Tensor MaxUnpool<D>::forward(const Tensor& input, const Tensor& indices, IntList output_size) {
  ::ember::detail::OpContext context("MaxUnpool", {{"input", &input}, {"indices", &indices}});
  return max_unpool(input, indices, kernel_size.list(), stride.list(), padding.list(), output_size, D);
}

template class MaxUnpool<1>;
template class MaxUnpool<2>;
template class MaxUnpool<3>;

}  // namespace ember::nn
