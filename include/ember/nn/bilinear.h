#pragma once
/// torch.nn.Bilinear and torch.nn.functional.bilinear: y = x1^T A x2 + b for every pair of rows,
/// composed of a matrix product and a reduction (so autograd and every device come with them).
#include <cstdint>
#include <string>

#include "ember/nn/module.h"
#include "ember/nn/sizes.h"
#include "ember/tensor.h"

namespace ember::nn {

namespace functional {

/// input1 [*, in1] and input2 [*, in2] with the same leading dimensions (none: one pair), weight
/// [out, in1, in2] and bias [out] or undefined: y[*, o] = sum_ij input1[*, i] weight[o, i, j]
/// input2[*, j] + bias[o]. Every tensor must have the same dtype, as in PyTorch.
Tensor bilinear(const Tensor& input1, const Tensor& input2, const Tensor& weight, const Tensor& bias = Tensor());

}  // namespace functional

/// The options of nn.Bilinear after the three sizes.
struct BilinearOptions {
  detail::DesignatedOnly designated_only = {};
  bool bias = true;
};

/// torch.nn.Bilinear(in1_features, in2_features, out_features, bias=True): weight [out, in1, in2]
/// and bias [out], both drawn from uniform(±1/sqrt(in1_features)), weight first.
class Bilinear : public Module {
 public:
  Bilinear(int64_t in1_features, int64_t in2_features, int64_t out_features, bool bias = true);
  Bilinear(int64_t in1_features, int64_t in2_features, int64_t out_features, BilinearOptions options)
      : Bilinear(in1_features, in2_features, out_features, options.bias) {}
  std::string name() const override { return "Bilinear"; }
  Tensor forward(const Tensor& input1, const Tensor& input2);
  using Module::forward;
  Tensor operator()(const Tensor& input1, const Tensor& input2) { return forward(input1, input2); }
  /// Redraws weight then bias from the global generator, as PyTorch's reset_parameters().
  void reset_parameters();

  int64_t in1_features, in2_features, out_features;
  Tensor weight, bias;  // bias is undefined when built without one
};

}  // namespace ember::nn
