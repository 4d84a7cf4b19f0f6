// The padding layers and nn::functional::pad, over ember::pad (src/ops/padding.cpp).
#include "ember/nn/padding.h"

#include "core/check.h"
#include "ember/pad.h"

namespace ember::nn {

namespace functional {

Tensor pad(const Tensor& input, IntList pad, std::string_view mode, std::optional<double> value) {
  return ember::pad(input, pad, mode, value);
}

}  // namespace functional

Tensor ConstantPadNd::forward(const Tensor& input) { return functional::pad(input, padding, "constant", value); }

Tensor ReflectionPadNd::forward(const Tensor& input) { return functional::pad(input, padding, "reflect"); }

Tensor ReplicationPadNd::forward(const Tensor& input) { return functional::pad(input, padding, "replicate"); }

Tensor CircularPadNd::forward(const Tensor& input) {
  EMBER_CHECK(input.dim() == dims_ + 1 || input.dim() == dims_ + 2, "expected ", dims_ + 1, "D or ", dims_ + 2,
              "D input (got ", input.dim(), "D input)");
  return functional::pad(input, padding, "circular");
}

}  // namespace ember::nn
