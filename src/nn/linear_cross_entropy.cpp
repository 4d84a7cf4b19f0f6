// linear_cross_entropy's reference path (torch/nn/functional.py with options=None): linear,
// reshape to [N, C, d1, ...], cross_entropy; and the LinearCrossEntropyLoss module over it.
#include "ember/nn/linear_cross_entropy.h"

#include <charconv>
#include <sstream>
#include <string>
#include <vector>

#include "core/check.h"
#include "ember/ops.h"

namespace ember::nn {

namespace {

/// A Python tuple's repr: "(3,)", "(3, 4)", "()".
std::string tuple_text(IntList values) {
  std::ostringstream os;
  os << '(';
  for (size_t i = 0; i < values.size(); ++i) os << (i ? ", " : "") << values[i];
  if (values.size() == 1) os << ',';
  os << ')';
  return os.str();
}

/// A Python float's repr for ordinary values: the shortest round-trip digits, with ".0" for
/// whole numbers.
std::string float_text(double value) {
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  std::string text(buffer, result.ptr);
  if (text.find_first_of(".eni") == std::string::npos) text += ".0";
  return text;
}

}  // namespace

namespace functional {

Tensor linear_cross_entropy(const Tensor& input, const Tensor& linear_weight, const Tensor& target,
                            const Tensor& linear_bias, const Tensor& weight, Reduction reduction,
                            std::optional<int64_t> ignore_index, double label_smoothing) {
  EMBER_CHECK(input.defined() && linear_weight.defined() && target.defined(),
              "linear_cross_entropy(): expected input, linear_weight and target to be defined");
  EMBER_CHECK(input.dim() >= 1 && input.dim() <= 2, "expected input with dimensionality 1 or 2, got ", input.dim());
  EMBER_CHECK(linear_weight.dim() >= 2, "expected linear_weight with dimensionality at least 2, got ",
              linear_weight.dim());
  const int64_t in_features = input.size(-1);
  EMBER_CHECK(in_features == linear_weight.size(-1),
              "expected equal input and linear_weight last dimensions (in_features), got ", in_features, " and ",
              linear_weight.size(-1), ", respectively");
  const int64_t num_classes = linear_weight.size(0);
  const std::vector<int64_t> out_features(linear_weight.sizes().begin() + 1, linear_weight.sizes().end() - 1);
  std::vector<int64_t> class_shape = {num_classes};  // (C, d1, ..., dK)
  class_shape.insert(class_shape.end(), out_features.begin(), out_features.end());
  EMBER_CHECK(!linear_bias.defined() || linear_bias.sizes().vec() == class_shape, "expected linear_bias shape ",
              tuple_text(class_shape), ", got ", tuple_text(linear_bias.sizes()));
  EMBER_CHECK(out_features.empty() || input.dim() == 2, "K-dimensional loss defined by linear_weight shape ",
              tuple_text(linear_weight.sizes()), " requires batched input, (N, ", in_features,
              "), got unbatched input with shape ", tuple_text(input.sizes()));
  std::vector<int64_t> logits_shape(input.sizes().begin(), input.sizes().end() - 1);
  logits_shape.insert(logits_shape.end(), class_shape.begin(), class_shape.end());
  // As cross_entropy, a target of the logits' shape holds probabilities.
  const bool probabilities = target.sizes().vec() == logits_shape;
  EMBER_CHECK(!(probabilities && ignore_index.has_value()),
              "ignore_index cannot be specified when target contains probabilities");

  int64_t rows = num_classes;
  for (int64_t d : out_features) rows *= d;
  const Tensor flat_weight = out_features.empty() ? linear_weight : linear_weight.reshape({rows, in_features});
  const Tensor flat_bias = out_features.empty() || !linear_bias.defined() ? linear_bias : linear_bias.reshape({rows});
  const Tensor logits = linear(input, flat_weight, flat_bias).reshape(logits_shape);
  return cross_entropy(logits, target, reduction, label_smoothing, weight, ignore_index.value_or(-100));
}

}  // namespace functional

LinearCrossEntropyLoss::LinearCrossEntropyLoss(int64_t in_features, int64_t num_classes,
                                               LinearCrossEntropyLossOptions options)
    : num_classes(num_classes),
      out_features(options.out_features.vec()),
      reduction(options.reduction),
      weight(options.weight),
      ignore_index(options.ignore_index),
      label_smoothing(options.label_smoothing) {
  EMBER_CHECK(!weight.defined() || (weight.dim() == 1 && weight.size(0) == num_classes), "expected weight shape to be ",
              tuple_text({num_classes}), ", got ", weight.defined() ? tuple_text(weight.sizes()) : std::string("()"));
  EMBER_CHECK(label_smoothing >= 0 && label_smoothing <= 1.0, "expected label_smoothing to be in range [0, 1], got ",
              float_text(label_smoothing));
  if (weight.defined()) register_buffer("weight", weight);
  int64_t outputs = num_classes;
  for (int64_t d : out_features) outputs *= d;
  linear = register_module("linear", std::make_shared<Linear>(in_features, outputs, options.bias));
}

Tensor LinearCrossEntropyLoss::forward(const Tensor& input, const Tensor& target) {
  std::vector<int64_t> weight_shape = {num_classes};
  weight_shape.insert(weight_shape.end(), out_features.begin(), out_features.end());
  const Tensor bias = linear->bias.defined() ? linear->bias.reshape(weight_shape) : Tensor();
  weight_shape.push_back(linear->in_features);
  return functional::linear_cross_entropy(input, linear->weight.reshape(weight_shape), target, bias, weight, reduction,
                                          ignore_index, label_smoothing);
}

}  // namespace ember::nn
