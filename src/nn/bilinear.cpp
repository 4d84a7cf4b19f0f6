// Bilinear and functional::bilinear (include/ember/nn/bilinear.h): PyTorch's checks (ATen's
// bilinear), then the form as one matrix product: t[m, o, j] = sum_i x1[m, i] A[o, i, j], and
// y[m, o] = sum_j t[m, o, j] x2[m, j].
#include "ember/nn/bilinear.h"

#include <cmath>
#include <vector>

#include "core/check.h"
#include "ember/factories.h"
#include "ember/nn/init.h"
#include "ember/ops.h"

namespace ember::nn {

namespace functional {

Tensor bilinear(const Tensor& input1, const Tensor& input2, const Tensor& weight, const Tensor& bias) {
  ember::detail::OpContext context("bilinear",
                                   {{"input1", &input1}, {"input2", &input2}, {"weight", &weight}, {"bias", &bias}});
  if (bias.defined()) {
    EMBER_CHECK(input1.dtype() == input2.dtype() && input1.dtype() == weight.dtype() && input1.dtype() == bias.dtype(),
                "All tensors must have the same dtype, got input1: ", cpp_type_name(input1.dtype()),
                ", input2: ", cpp_type_name(input2.dtype()), ", weight: ", cpp_type_name(weight.dtype()),
                ", bias: ", cpp_type_name(bias.dtype()));
  } else {
    EMBER_CHECK(input1.dtype() == input2.dtype() && input1.dtype() == weight.dtype(),
                "All tensors must have the same dtype, got input1: ", cpp_type_name(input1.dtype()),
                ", input2: ", cpp_type_name(input2.dtype()), ", weight: ", cpp_type_name(weight.dtype()));
  }
  EMBER_CHECK(input1.dim() == input2.dim(), "bilinear(): input dimensions do not match: got ", input1.dim(), " and ",
              input2.dim());
  for (int64_t d = 0; d + 1 < input1.dim(); ++d) {
    EMBER_CHECK(input1.size(d) == input2.size(d), "bilinear(): input batch dimensions do not match at dim ", d,
                ": got ", input1.size(d), " and ", input2.size(d));
  }
  EMBER_CHECK(input1.size(-1) == weight.size(1), "bilinear(): input1 size does not match weight size: got ",
              input1.size(-1), " but expected ", weight.size(1));
  EMBER_CHECK(input2.size(-1) == weight.size(2), "bilinear(): input2 size does not match weight size: got ",
              input2.size(-1), " but expected ", weight.size(2));
  EMBER_CHECK(!bias.defined() || bias.size(0) == weight.size(0),
              "bilinear(): bias size does not match weight size: got ", bias.size(0), " but expected ", weight.size(0));
  const int64_t out = weight.size(0), in1 = weight.size(1), in2 = weight.size(2);
  std::vector<int64_t> output_size(input1.sizes().begin(), input1.sizes().end() - 1);
  output_size.push_back(out);
  const Tensor x1 = input1.reshape({-1, in1});
  const Tensor x2 = input2.reshape({-1, in2});
  const Tensor a = weight.permute({1, 0, 2}).reshape({in1, out * in2});
  const Tensor t = ember::mm(x1, a).view({-1, out, in2});
  Tensor y = ember::sum(t * x2.unsqueeze(1), {2}).reshape(output_size);
  if (bias.defined()) y = y + bias;
  return y;
}

}  // namespace functional

Bilinear::Bilinear(int64_t in1_features, int64_t in2_features, int64_t out_features, bool bias)
    : in1_features(in1_features), in2_features(in2_features), out_features(out_features) {
  EMBER_CHECK(in1_features >= 0 && in2_features >= 0 && out_features >= 0,
              "Trying to create tensor with negative dimension: Bilinear(in1_features=", in1_features,
              ", in2_features=", in2_features, ", out_features=", out_features, ")");
  weight = register_parameter("weight", empty({out_features, in1_features, in2_features}));
  if (bias) this->bias = register_parameter("bias", empty({out_features}));
  reset_parameters();
}

void Bilinear::reset_parameters() {
  EMBER_CHECK(in1_features > 0, "in1_features must be > 0, but got (in1_features=", in1_features, ")");
  const double bound = 1.0 / std::sqrt(static_cast<double>(weight.size(1)));
  init::uniform_(weight, -bound, bound);
  if (bias.defined()) init::uniform_(bias, -bound, bound);
}

Tensor Bilinear::forward(const Tensor& input1, const Tensor& input2) {
  return functional::bilinear(input1, input2, weight, bias);
}

}  // namespace ember::nn
