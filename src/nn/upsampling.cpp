// The upsampling layers and nn::functional's interpolate / upsample*, over ember::interpolate
// (src/ops/interpolate.cpp).
#include "ember/nn/upsampling.h"

#include "core/check.h"
#include "ember/interpolate.h"
#include "ember/warning.h"

namespace ember::nn {

namespace functional {

Tensor interpolate(const Tensor& input, IntList size, const std::vector<double>& scale_factor, std::string_view mode,
                   std::optional<bool> align_corners, std::optional<bool> recompute_scale_factor, bool antialias) {
  return ember::interpolate(input, size, scale_factor, mode, align_corners, recompute_scale_factor, antialias);
}

Tensor upsample(const Tensor& input, IntList size, const std::vector<double>& scale_factor, std::string_view mode,
                std::optional<bool> align_corners) {
  warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.");
  return ember::interpolate(input, size, scale_factor, mode, align_corners);
}

Tensor upsample_nearest(const Tensor& input, IntList size, const std::vector<double>& scale_factor) {
  warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.");
  return ember::interpolate(input, size, scale_factor, "nearest");
}

Tensor upsample_bilinear(const Tensor& input, IntList size, const std::vector<double>& scale_factor) {
  warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.");
  return ember::interpolate(input, size, scale_factor, "bilinear", true);
}

}  // namespace functional

Tensor Upsample::forward(const Tensor& input) {
  return functional::interpolate(input, size, scale_factor, mode, align_corners, recompute_scale_factor);
}

std::string Upsample::extra_repr() const {
  // Python's repr of an int, a float, or a tuple of them.
  std::string info;
  if (!scale_factor.empty()) {
    info = "scale_factor=";
    if (scale_factor.size() == 1) {
      info += ember::detail::python_float(scale_factor[0]);
    } else {
      info += "(";
      for (size_t i = 0; i < scale_factor.size(); ++i)
        info += (i ? ", " : "") + ember::detail::python_float(scale_factor[i]);
      info += ")";
    }
  } else {
    info = "size=";
    if (size.empty()) {
      info += "None";
    } else if (size.size() == 1) {
      info += std::to_string(size[0]);
    } else {
      info += "(";
      for (size_t i = 0; i < size.size(); ++i) info += (i ? ", " : "") + std::to_string(size[i]);
      info += ")";
    }
  }
  return info + ", mode='" + mode + "'";
}

}  // namespace ember::nn
