// torch.nn.functional.interpolate. The source indices and weights of each resized dimension are
// PyTorch's (ATen's UpSample.h), computed here on the host in the same floating type and
// uploaded as small [taps, out] tables; one backend call (Backend::resample) combines them, the
// last dimension first and each tap's value * weight summed left to right with every product
// rounded, which is the order of PyTorch's CPU kernels (bilinear: h0 * (w0 * a + w1 * b) +
// h1 * (w0 * c + w1 * d)). The gradient is one call of the transpose (resample_backward), and the
// gradient of that is the resampling again, so create_graph differentiates to any order. "area"
// is adaptive average pooling. The argument checks and their messages are
// torch/nn/functional.py's and then ATen's, in their order.
#include "ember/interpolate.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "autograd/node.h"
#include "backend/backend.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/grad_mode.h"
#include "ember/ops.h"
#include "kernels/kmath.h"

namespace ember {

namespace {

enum class Mode { Nearest, NearestExact, Linear, Bilinear, Bicubic, Trilinear, Area, Lanczos, Unknown };

Mode parse_mode(std::string_view mode) {
  if (mode == "nearest") return Mode::Nearest;
  if (mode == "nearest-exact") return Mode::NearestExact;
  if (mode == "linear") return Mode::Linear;
  if (mode == "bilinear") return Mode::Bilinear;
  if (mode == "bicubic") return Mode::Bicubic;
  if (mode == "trilinear") return Mode::Trilinear;
  if (mode == "area") return Mode::Area;
  if (mode == "lanczos") return Mode::Lanczos;
  return Mode::Unknown;
}

std::string int_list(IntList values) { return detail::shape_str(values); }

std::string float_list(const std::vector<double>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + detail::python_float(values[i]);
  return out + "]";
}

// Python's int(x) of a float (interpolate's output size when the scale is recomputed).
int64_t python_int(double x) {
  EMBER_CHECK(!std::isnan(x), "cannot convert float NaN to integer");
  EMBER_CHECK(!std::isinf(x), "cannot convert float infinity to integer");
  EMBER_CHECK(x > -9.2233720368547758e18 && x < 9.2233720368547758e18, "ember: output size ", detail::python_float(x),
              " does not fit in int64");
  return static_cast<int64_t>(x);
}

// c10::checked_convert<int64_t>(double): compute_output_size's conversion of input * scale.
int64_t checked_int64(double x) {
  EMBER_CHECK(!std::isnan(x) && x > -9.2233720368547758e18 && x < 9.2233720368547758e18,
              "value cannot be converted to type int64_t without overflow");
  return static_cast<int64_t>(x);
}

// ---- ATen's index rules (UpSample.h) ------------------------------------------------------------

// compute_scales_value<scalar_t>: 1 / scale when a positive scale was given, else in / out. The
// scale is a plain double here, 0 standing for none (ATen also ignores a scale that is not > 0).
template <typename T>
T compute_scales_value(double scale, int64_t input_size, int64_t output_size) {
  return scale > 0. ? static_cast<T>(1.0 / scale) : static_cast<T>(input_size) / static_cast<T>(output_size);
}

template <typename T>
T area_pixel_compute_scale(int64_t input_size, int64_t output_size, bool align_corners, double scale) {
  if (align_corners) {
    return output_size > 1 ? static_cast<T>(input_size - 1) / static_cast<T>(output_size - 1) : static_cast<T>(0);
  }
  return compute_scales_value<T>(scale, input_size, output_size);
}

template <typename T>
T area_pixel_compute_source_index(T scale, int64_t dst_index, bool align_corners, bool cubic) {
  if (align_corners) return scale * static_cast<T>(dst_index);
  // scale * (dst + 0.5) - 0.5, fused where the host has FMA: PyTorch's kernels are compiled with
  // contraction (its AVX2/AVX-512 builds and CUDA), and this is the rounding they give.
  const T src = kmath::fma(scale, static_cast<T>(dst_index) + static_cast<T>(0.5), static_cast<T>(-0.5));
  return (!cubic && src < static_cast<T>(0)) ? static_cast<T>(0) : src;
}

// guard_index_and_lambda: the floor goes through float (floorf), as ATen's does for every type.
template <typename T>
void guard_index_and_lambda(T real_index, int64_t input_size, int64_t& index, T& lambda) {
  index = std::min(static_cast<int64_t>(std::floor(static_cast<float>(real_index))), input_size - 1);
  lambda = std::min(std::max(real_index - static_cast<T>(index), static_cast<T>(0)), static_cast<T>(1));
}

// nearest_idx: copies at the same size, halves at twice the size, else floor(dst * scale) in float.
int64_t nearest_idx(int64_t dst, int64_t input_size, int64_t output_size, double scale) {
  if (output_size == input_size) return dst;
  if (output_size == 2 * input_size) return dst >> 1;
  const float s = compute_scales_value<float>(scale, input_size, output_size);
  return std::min(static_cast<int64_t>(std::floor(static_cast<float>(dst) * s)), input_size - 1);
}

// nearest_exact_idx: floor((dst + 0.5) * scale), the product in double rounded to float by floorf.
int64_t nearest_exact_idx(int64_t dst, int64_t input_size, int64_t output_size, double scale) {
  const float s = compute_scales_value<float>(scale, input_size, output_size);
  const double at = (static_cast<double>(dst) + 0.5) * static_cast<double>(s);
  return std::min(static_cast<int64_t>(std::floor(static_cast<float>(at))), input_size - 1);
}

template <typename T>
T cubic_convolution1(T x, T a) {
  return ((a + 2) * x - (a + 3)) * x * x + 1;
}

template <typename T>
T cubic_convolution2(T x, T a) {
  return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
}

// get_cubic_upsample_coefficients, A = -0.75.
template <typename T>
void cubic_coefficients(T coeffs[4], T t) {
  const T a = static_cast<T>(-0.75);
  coeffs[0] = cubic_convolution2<T>(static_cast<T>(t + 1.0), a);
  coeffs[1] = cubic_convolution1<T>(t, a);
  const T x2 = static_cast<T>(1.0 - t);
  coeffs[2] = cubic_convolution1<T>(x2, a);
  coeffs[3] = cubic_convolution2<T>(static_cast<T>(x2 + 1.0), a);
}

// One resized dimension's table, as the backend takes it: output position j reads input
// positions index[t * out + j] with weights weight[t * out + j], t < taps (no weights: the nearest
// modes, one tap of weight 1).
template <typename T>
struct Taps {
  int64_t taps = 1;
  std::vector<int64_t> index;
  std::vector<T> weight;
};

template <typename T>
Taps<T> linear_taps(int64_t input_size, int64_t output_size, bool align_corners, double scale) {
  const auto n = static_cast<size_t>(output_size);
  Taps<T> taps{2, std::vector<int64_t>(2 * n), std::vector<T>(2 * n)};
  const T ratio = area_pixel_compute_scale<T>(input_size, output_size, align_corners, scale);
  for (int64_t i = 0; i < output_size; ++i) {
    const auto s = static_cast<size_t>(i);
    if (output_size == input_size) {  // compute_source_index_and_lambda's copy
      taps.index[s] = taps.index[n + s] = i;
      taps.weight[s] = static_cast<T>(1);
      taps.weight[n + s] = static_cast<T>(0);
      continue;
    }
    const T real = area_pixel_compute_source_index<T>(ratio, i, align_corners, /*cubic=*/false);
    int64_t i0 = 0;
    T lambda1{};
    guard_index_and_lambda(real, input_size, i0, lambda1);
    taps.index[s] = i0;
    taps.index[n + s] = i0 + (i0 < input_size - 1 ? 1 : 0);
    taps.weight[s] = static_cast<T>(1.) - lambda1;
    taps.weight[n + s] = lambda1;
  }
  return taps;
}

template <typename T>
Taps<T> cubic_taps(int64_t input_size, int64_t output_size, bool align_corners, double scale) {
  const auto n = static_cast<size_t>(output_size);
  Taps<T> taps{4, std::vector<int64_t>(4 * n), std::vector<T>(4 * n)};
  const T ratio = area_pixel_compute_scale<T>(input_size, output_size, align_corners, scale);
  for (int64_t i = 0; i < output_size; ++i) {
    const auto s = static_cast<size_t>(i);
    const T real = area_pixel_compute_source_index<T>(ratio, i, align_corners, /*cubic=*/true);
    int64_t index = 0;
    T lambda{};
    guard_index_and_lambda(real, input_size, index, lambda);
    T coeffs[4];
    cubic_coefficients<T>(coeffs, lambda);
    for (size_t j = 0; j < 4; ++j) {
      taps.index[j * n + s] = std::clamp<int64_t>(index - 1 + static_cast<int64_t>(j), 0, input_size - 1);
      taps.weight[j * n + s] = coeffs[j];
    }
  }
  return taps;
}

template <typename T>
Taps<T> nearest_taps(int64_t input_size, int64_t output_size, double scale, bool exact) {
  Taps<T> taps{1, std::vector<int64_t>(static_cast<size_t>(output_size)), {}};
  for (int64_t j = 0; j < output_size; ++j) {
    taps.index[static_cast<size_t>(j)] =
        exact ? nearest_exact_idx(j, input_size, output_size, scale) : nearest_idx(j, input_size, output_size, scale);
  }
  return taps;
}

// The tables of one interpolate call on its device, shared by its forward node and every node the
// backward passes record: the backward of the resampling is its transpose, whose own backward is
// the resampling again (both are linear), so gradients of any order are these two kernels.
struct ResampleTables {
  std::vector<Tensor> index, weight;  // weight[i] undefined for the nearest modes
  std::vector<int64_t> input_sizes, output_sizes;
  Dtype dtype = kFloat32;  // the input's
  Device device;
  const char* name = "";           // PyTorch's grad_fn name, UpsampleBilinear2DBackward0
  const char* backward_name = "";  // the backward's own node, UpsampleBilinear2DBackwardBackward0
};

const char* node_name(Mode mode, int64_t spatial, bool of_backward) {
  static const char* const names[][3][2] = {
      {{"UpsampleNearest1DBackward0", "UpsampleNearest1DBackwardBackward0"},
       {"UpsampleNearest2DBackward0", "UpsampleNearest2DBackwardBackward0"},
       {"UpsampleNearest3DBackward0", "UpsampleNearest3DBackwardBackward0"}},
      {{"UpsampleNearestExact1DBackward0", "UpsampleNearestExact1DBackwardBackward0"},
       {"UpsampleNearestExact2DBackward0", "UpsampleNearestExact2DBackwardBackward0"},
       {"UpsampleNearestExact3DBackward0", "UpsampleNearestExact3DBackwardBackward0"}},
  };
  const int b = of_backward ? 1 : 0;
  switch (mode) {
    case Mode::Nearest:
      return names[0][spatial - 1][b];
    case Mode::NearestExact:
      return names[1][spatial - 1][b];
    case Mode::Linear:
      return of_backward ? "UpsampleLinear1DBackwardBackward0" : "UpsampleLinear1DBackward0";
    case Mode::Bilinear:
      return of_backward ? "UpsampleBilinear2DBackwardBackward0" : "UpsampleBilinear2DBackward0";
    case Mode::Bicubic:
      return of_backward ? "UpsampleBicubic2DBackwardBackward0" : "UpsampleBicubic2DBackward0";
    default:
      return of_backward ? "UpsampleTrilinear3DBackwardBackward0" : "UpsampleTrilinear3DBackward0";
  }
}

std::vector<TensorView> views_of(const std::vector<Tensor>& tensors) {
  std::vector<TensorView> views;
  views.reserve(tensors.size());
  for (const Tensor& t : tensors) views.push_back(t.defined() ? view_of(t) : TensorView{});
  return views;
}

Tensor resample_forward(const Tensor& input, const std::shared_ptr<const ResampleTables>& tables);

// The gradient of the resampling: grad_x from the output's gradient, one backend call, in the
// computation type (a 16-bit gradient is summed in float and rounded once, as PyTorch's kernels
// do), recorded as a differentiable op when the backward pass itself records (create_graph).
Tensor resample_gradient(const Tensor& grad, const std::shared_ptr<const ResampleTables>& tables) {
  const Tensor g = grad.to(tables->dtype).contiguous();
  const Dtype compute = tables->dtype == kFloat64 ? kFloat64 : kFloat32;
  Tensor gx = detail::make_tensor(tables->input_sizes, compute, tables->device);
  const std::vector<TensorView> index = views_of(tables->index), weight = views_of(tables->weight);
  backend_for(tables->device).resample_backward(view_of(g), index, weight, view_of(gx));
  if (compute != tables->dtype) {
    NoGradGuard no_grad;
    gx = gx.to(tables->dtype);
  }
  if (autograd::needs_grad({&g})) {
    autograd::record(gx, tables->backward_name, {&g},
                     [tables](const Tensor& gg) { return std::vector<Tensor>{resample_forward(gg, tables)}; });
  }
  return gx;
}

Tensor resample_forward(const Tensor& input, const std::shared_ptr<const ResampleTables>& tables) {
  const Tensor x = input.to(tables->dtype).contiguous();
  Tensor out = detail::make_tensor(tables->output_sizes, tables->dtype, tables->device);
  const std::vector<TensorView> index = views_of(tables->index), weight = views_of(tables->weight);
  backend_for(tables->device).resample(view_of(x), index, weight, view_of(out));
  if (autograd::needs_grad({&x})) {
    autograd::record(out, tables->name, {&x},
                     [tables](const Tensor& g) { return std::vector<Tensor>{resample_gradient(g, tables)}; });
  }
  return out;
}

// The tables of every resized dimension in the computation type T (double for float64, else
// float), uploaded to the input's device.
template <typename T>
std::shared_ptr<ResampleTables> make_tables(const Tensor& input, Mode mode, IntList output_size,
                                            const std::vector<double>& scales, bool align_corners) {
  auto tables = std::make_shared<ResampleTables>();
  const int64_t spatial = input.dim() - 2;
  tables->dtype = input.dtype();
  tables->device = input.device();
  tables->input_sizes = input.sizes().vec();
  tables->output_sizes = {input.size(0), input.size(1)};
  tables->name = node_name(mode, spatial, false);
  tables->backward_name = node_name(mode, spatial, true);
  const TensorOptions index_options = TensorOptions().dtype(kInt64).device(input.device());
  const TensorOptions weight_options =
      TensorOptions().dtype(std::is_same_v<T, double> ? kFloat64 : kFloat32).device(input.device());
  for (int64_t i = 0; i < spatial; ++i) {
    const double scale = scales.empty() ? 0.0 : scales[static_cast<size_t>(i)];
    const int64_t in = input.size(i + 2), size = output_size[static_cast<size_t>(i)];
    tables->output_sizes.push_back(size);
    Taps<T> taps;
    switch (mode) {
      case Mode::Nearest:
      case Mode::NearestExact:
        taps = nearest_taps<T>(in, size, scale, mode == Mode::NearestExact);
        break;
      case Mode::Bicubic:
        taps = cubic_taps<T>(in, size, align_corners, scale);
        break;
      default:
        taps = linear_taps<T>(in, size, align_corners, scale);
        break;
    }
    tables->index.push_back(tensor(taps.index, index_options).reshape({taps.taps, size}));
    tables->weight.push_back(taps.weight.empty() ? Tensor()
                                                 : tensor(taps.weight, weight_options).reshape({taps.taps, size}));
  }
  return tables;
}

// ---- ATen's checks -------------------------------------------------------------------------------

// upsample_{1,2,3}d_common_check and the meta functions' "Non-empty" check.
void check_sizes(const Tensor& input, IntList output_size) {
  const int64_t spatial = input.dim() - 2;
  bool positive = true;
  for (int64_t i = 0; i < spatial; ++i) {
    positive = positive && input.size(i + 2) > 0 && output_size[static_cast<size_t>(i)] > 0;
  }
  const auto o = [&](size_t i) { return output_size[i]; };
  if (spatial == 1) {
    EMBER_CHECK(positive, "Input and output sizes should be greater than 0, but got input (W: ", input.size(2),
                ") and output (W: ", o(0), ")");
  } else if (spatial == 2) {
    EMBER_CHECK(positive, "Input and output sizes should be greater than 0, but got input (H: ", input.size(2),
                ", W: ", input.size(3), ") output (H: ", o(0), ", W: ", o(1), ")");
  } else {
    EMBER_CHECK(positive, "Input and output sizes should be greater than 0, but got input (D: ", input.size(2),
                ", H: ", input.size(3), ", W: ", input.size(4), ") output (D: ", o(0), ", H: ", o(1), ", W: ", o(2),
                ")");
  }
  EMBER_CHECK(input.size(1) != 0, "Non-empty ", input.dim(), "D data tensor expected but got a tensor with sizes ",
              detail::shape_str(input.sizes()));
}

// The kernels' dtype dispatch: floating types, and uint8 for nearest. The names are those of the
// CPU kernels PyTorch 2.x reports.
void check_dtype(const Tensor& input, Mode mode) {
  const Dtype dtype = input.dtype();
  if (is_floating_point(dtype)) return;
  const int64_t ndim = input.dim();
  const char* kernel = "compute_indices_weights_linear";
  switch (mode) {
    case Mode::Nearest:
    case Mode::NearestExact:
      if (dtype == kUInt8) return;
      kernel = ndim == 4 ? "upsample_nearest2d_channels_last" : "compute_indices_weights_nearest";
      break;
    case Mode::Bilinear:
      kernel = "upsample_bilinear2d_channels_last";
      break;
    case Mode::Bicubic:
      kernel = "compute_indices_weights_cubic";
      break;
    default:
      break;
  }
  if (dtype == kUInt8 && (mode == Mode::Bilinear || mode == Mode::Bicubic)) {
    detail::fail("interpolate: mode '", mode == Mode::Bilinear ? "bilinear" : "bicubic",
                 "' on uint8 tensors is not supported by ember (PyTorch rounds and saturates); convert the input "
                 "to a floating type first");
  }
  detail::fail("\"", kernel, "\" not implemented for '", scalar_type_name(dtype), "'");
}

// One backend call each way (cpu/resample.cpp, cuda/resample.cu): the kernels combine the taps in
// PyTorch's order, so the values are those of the composed form, mul and add op by op.
Tensor resample(const Tensor& input, Mode mode, IntList output_size, const std::vector<double>& scales,
                bool align_corners) {
  check_sizes(input, output_size);
  check_dtype(input, mode);
  const auto tables = input.dtype() == kFloat64 ? make_tables<double>(input, mode, output_size, scales, align_corners)
                                                : make_tables<float>(input, mode, output_size, scales, align_corners);
  return resample_forward(input, tables);
}

}  // namespace

Tensor interpolate(const Tensor& input, IntList size, const std::vector<double>& scale_factor, std::string_view mode,
                   std::optional<bool> align_corners, std::optional<bool> recompute_scale_factor, bool antialias) {
  detail::OpContext context("interpolate", {{"input", &input}});
  detail::check_defined(input, "interpolate");
  const Mode m = parse_mode(mode);
  bool align = false;
  if (m == Mode::Nearest || m == Mode::Area || m == Mode::NearestExact) {
    EMBER_CHECK(!align_corners.has_value(),
                "align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | "
                "trilinear");
  } else {
    align = align_corners.value_or(false);
  }
  const int64_t ndim = input.dim();
  const int64_t spatial = std::max<int64_t>(ndim - 2, 0);
  std::vector<int64_t> output_size;
  std::vector<double> scales;
  // list(input.shape[2:])
  const std::string shape = int_list(ndim > 2 ? input.sizes().last(static_cast<size_t>(spatial)) : IntList());
  EMBER_CHECK(size.empty() || scale_factor.empty(), "only one of size or scale_factor should be defined");
  if (!size.empty()) {
    if (size.size() == 1) {
      output_size.assign(static_cast<size_t>(spatial), size[0]);
    } else {
      EMBER_CHECK(static_cast<int64_t>(size.size()) == spatial,
                  "Input and output must have the same number of spatial dimensions, but got input with spatial "
                  "dimensions of ",
                  shape, " and output size of ", int_list(size),
                  ". Please provide input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, "
                  "...,oK) format.");
      output_size = size.vec();
    }
  } else {
    EMBER_CHECK(!scale_factor.empty(), "either size or scale_factor should be defined");
    if (scale_factor.size() == 1) {
      scales.assign(static_cast<size_t>(spatial), scale_factor[0]);
    } else {
      EMBER_CHECK(static_cast<int64_t>(scale_factor.size()) == spatial,
                  "Input and scale_factor must have the same number of spatial dimensions, but got input with "
                  "spatial dimensions of ",
                  shape, " and scale_factor of shape ", float_list(scale_factor),
                  ". Please provide input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, "
                  "...,sK) format.");
      scales = scale_factor;
    }
  }
  EMBER_CHECK(!(recompute_scale_factor.value_or(false) && !size.empty()),
              "recompute_scale_factor is not meaningful with an explicit size.");
  bool recompute = recompute_scale_factor.value_or(false);
  // "area" always takes an explicit size: the recompute path makes one.
  if (m == Mode::Area && output_size.empty() && size.empty()) recompute = true;
  const bool from_scales = size.empty();
  if (recompute && from_scales) {
    output_size.clear();
    for (int64_t i = 0; i < spatial; ++i) {
      output_size.push_back(python_int(static_cast<double>(input.size(i + 2)) * scales[static_cast<size_t>(i)]));
    }
    scales.clear();
  }
  const bool aa_mode = m == Mode::Bilinear || m == Mode::Bicubic || m == Mode::Lanczos;
  EMBER_CHECK(!antialias || (aa_mode && ndim == 4),
              "Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a 4-D tensor as "
              "input");
  if (m == Mode::Lanczos && ndim == 4) {
    EMBER_CHECK(!align, "Lanczos mode does not support align_corners=True");
    EMBER_CHECK(antialias, "Lanczos mode requires antialias=True");
  }
  EMBER_CHECK(!antialias, "interpolate: antialias=True (PyTorch's _upsample_", mode,
              "2d_aa) is not supported by ember");
  // ATen's compute_output_size: floor(input * scale) when the scales are kept.
  if (output_size.empty() && !scales.empty()) {
    for (int64_t i = 0; i < spatial; ++i) {
      output_size.push_back(checked_int64(static_cast<double>(input.size(i + 2)) * scales[static_cast<size_t>(i)]));
    }
  }
  const bool nearest = m == Mode::Nearest || m == Mode::NearestExact;
  if ((nearest && ndim >= 3 && ndim <= 5) || (m == Mode::Linear && ndim == 3) || (m == Mode::Bilinear && ndim == 4) ||
      (m == Mode::Bicubic && ndim == 4) || (m == Mode::Trilinear && ndim == 5)) {
    return resample(input, m, output_size, scales, align);
  }
  if (m == Mode::Area && ndim == 3) return adaptive_avg_pool1d(input, output_size);
  if (m == Mode::Area && ndim == 4) return adaptive_avg_pool2d(input, output_size);
  EMBER_CHECK(!(m == Mode::Area && ndim == 5),
              "interpolate: mode 'area' on a 5-D input (adaptive_avg_pool3d) is not supported by ember");
  const auto needs = [&](int64_t got, Mode want, const char* name, const char* needed) {
    EMBER_CHECK(!(ndim == got && m == want), "Got ", got, "D input, but ", name, " mode needs ", needed, " input");
  };
  needs(3, Mode::Bilinear, "bilinear", "4D");
  needs(3, Mode::Trilinear, "trilinear", "5D");
  needs(4, Mode::Linear, "linear", "3D");
  needs(4, Mode::Trilinear, "trilinear", "5D");
  needs(5, Mode::Linear, "linear", "3D");
  needs(5, Mode::Bilinear, "bilinear", "4D");
  detail::fail("Input Error: Only 3D, 4D and 5D input Tensors supported (got ", ndim,
               "D) for the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact "
               "(got ",
               mode, ")");
}

}  // namespace ember
