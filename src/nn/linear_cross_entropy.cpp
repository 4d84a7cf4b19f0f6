// linear_cross_entropy: the reference path (torch/nn/functional.py with options=None: linear,
// reshape to [N, C, d1, ...], cross_entropy), the chunked path (options set: the batch in
// chunks of rows, each chunk's logits made, reduced and dropped before the next), and the
// LinearCrossEntropyLoss module over them.
//
// The chunked path's node is PyTorch's: for "mean" and "sum" the gradients are computed in the
// forward pass, chunk by chunk, and backward scales them by the upstream gradient (so no
// logits are kept for backward); for "none" backward runs the chunks again with the upstream
// gradient folded into each row's weight.
#include "ember/nn/linear_cross_entropy.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "autograd/node.h"
#include "core/check.h"
#include "ember/factories.h"
#include "ember/grad_mode.h"
#include "ember/ops.h"
#include "ember/warning.h"

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

const char* reduction_text(Reduction reduction) {
  switch (reduction) {
    case Reduction::None:
      return "none";
    case Reduction::Sum:
      return "sum";
    case Reduction::Mean:
      break;
  }
  return "mean";
}

bool is_low_precision(Dtype dtype) { return dtype == kFloat16 || dtype == kBFloat16; }

/// Python's int.bit_length().
int64_t bit_length(int64_t value) {
  const auto magnitude = static_cast<uint64_t>(value < 0 ? -value : value);
  return static_cast<int64_t>(std::bit_width(magnitude));
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// The N of "aspect_ratio:N" (1 for "aspect_ratio"); 0 when the text is not such a method.
int64_t aspect_ratio_factor(const std::string& method) {
  const size_t colon = method.find(':');
  const std::string name = method.substr(0, colon);
  const std::string factor = colon == std::string::npos ? "1" : method.substr(colon + 1);
  if (name != "aspect_ratio" || factor.empty() || factor.size() > 18) return 0;
  if (!std::all_of(factor.begin(), factor.end(), [](unsigned char c) { return std::isdigit(c) != 0; })) return 0;
  return std::stoll(factor);
}

/// LinearCrossEntropyOptions.__post_init__'s checks.
void check_options(const LinearCrossEntropyOptions& options) {
  const std::string& policy = options.acc_policy;
  EMBER_CHECK(policy == "auto" || policy == "accurate" || policy == "compact", "invalid acc_policy: '", policy,
              "'; expected one of 'auto', 'accurate', 'compact'");
  if (options.chunking_method && *options.chunking_method != "auto") {
    EMBER_CHECK(aspect_ratio_factor(*options.chunking_method) > 0, "invalid chunking_method: '",
                *options.chunking_method, "'");
  }
  EMBER_CHECK(!options.batch_chunk_size || *options.batch_chunk_size > 0,
              "batch_chunk_size must be positive int or None, got ", options.batch_chunk_size.value_or(0));
  EMBER_CHECK(!options.acc_dtype || is_floating_point(*options.acc_dtype),
              "acc_dtype must be one of {None, torch.float16, torch.bfloat16, torch.float32, torch.float64}, got ",
              options.acc_dtype ? dtype_name(*options.acc_dtype) : "None",
              ". Pass acc_dtype=None to let the op pick automatically.");
}

/// The options resolved for one call (LinearCrossEntropyOptions._adjust): the rows per chunk and
/// the dtype the chunks compute in.
struct ResolvedChunking {
  int64_t chunk_rows = 1;
  Dtype acc_dtype = kFloat32;
};

ResolvedChunking resolve(const LinearCrossEntropyOptions& options, int64_t rows, int64_t in_features,
                         int64_t num_classes, Dtype dtype, Device device, bool probabilities) {
  std::optional<std::string> method = options.chunking_method;
  const bool method_was_auto = method == "auto";
  // An explicit batch_chunk_size switches the automatic heuristic off.
  if (method_was_auto && options.batch_chunk_size) method.reset();
  std::string policy = options.acc_policy;
  if (policy == "auto") policy = device.is_cpu() && is_low_precision(dtype) ? "accurate" : "compact";
  if (method == "auto") method = "aspect_ratio";
  int64_t chunk_rows = options.batch_chunk_size ? std::min(*options.batch_chunk_size, rows) : rows;
  if (method) {
    const int64_t factor = aspect_ratio_factor(*method);
    const int64_t aim = ceil_div(rows, ceil_div(num_classes, in_features));
    chunk_rows = std::min((int64_t{1} << bit_length(aim - 1)) / factor, rows);
    // The automatic compact chunking stays at or below the reference path's peak memory.
    if (method_was_auto && policy == "compact") {
      int64_t limit = probabilities ? rows / 2 : rows * num_classes / (4 * in_features);
      limit = limit >= 1 ? int64_t{1} << (bit_length(limit) - 1) : 1;
      chunk_rows = std::max<int64_t>(1, std::min(chunk_rows, limit));
    }
    EMBER_CHECK(!options.batch_chunk_size || *options.batch_chunk_size == chunk_rows,
                "batch_chunk_size (=", options.batch_chunk_size.value_or(0), ") and chunking_method ('", *method,
                "') give different chunk sizes (", options.batch_chunk_size.value_or(0), " vs ", chunk_rows,
                "); pass only one.");
  }
  Dtype acc_dtype = dtype;
  if (options.acc_dtype) {
    acc_dtype = *options.acc_dtype;
  } else if (options.acc_policy == "auto" && is_low_precision(dtype)) {
    acc_dtype = kFloat32;
  }
  EMBER_CHECK(acc_dtype == dtype || (is_low_precision(dtype) && acc_dtype == kFloat32),
              "linear_cross_entropy supports float32 acc_dtype with float16/bfloat16 inputs, but got ",
              dtype_name(acc_dtype), " acc_dtype and ", dtype_name(dtype), " inputs.");
  return {std::max<int64_t>(1, chunk_rows), acc_dtype};
}

/// One chunked call: batched input [N, F], linear_weight [C, F], linear_bias [C] or undefined,
/// the target (class indices [N] or probabilities [N, C]) and the class weights, all detached
/// and in the accumulation dtype (the target's indices stay int64).
struct ChunkedCall {
  Tensor input, linear_weight, linear_bias, target, class_weight;
  bool probabilities = false;
  Reduction reduction = Reduction::Mean;
  int64_t ignore_index = -100;
  int64_t chunk_rows = 1;
};

struct ChunkedResult {
  Tensor loss;  // the reduced loss, or the per-row losses for "none"
  Tensor grad_input, grad_linear_weight, grad_linear_bias;
};

/// Runs the chunks: the loss, and with `want_grads` the gradients of the loss scaled per row by
/// `row_grad` (the upstream gradient of "none"; undefined for the reductions, whose own scale
/// is used).
ChunkedResult run_chunks(const ChunkedCall& call, bool want_grads, const Tensor& row_grad) {
  NoGradGuard no_grad;
  const int64_t rows = call.input.size(0);
  const TensorOptions acc = call.input.options();
  // Each row's weight in the loss: w[target] (or 1) for class indices, 0 where ignored; the
  // target's weighted mass sum_c w_c t_c for probabilities.
  Tensor row_weight, index_target, weighted_target;
  if (call.probabilities) {
    weighted_target = call.class_weight.defined() ? call.target * call.class_weight : call.target;
    row_weight = weighted_target.sum({1});
  } else {
    const Tensor ignored = call.target == call.ignore_index;
    index_target = where(ignored, zeros_like(call.target), call.target);
    row_weight = call.class_weight.defined() ? call.class_weight.index_select(0, index_target) : ones({rows}, acc);
    row_weight = where(ignored, zeros_like(row_weight), row_weight);
  }
  // The factor of each row's loss in the result: "mean" divides by the weights' total (the row
  // count for probabilities; NaN when it is 0, as cross_entropy's 0/0).
  Tensor row_scale = ones({rows}, acc);
  if (call.reduction == Reduction::Mean) {
    const Tensor total = call.probabilities ? full({}, static_cast<double>(rows), acc) : row_weight.sum();
    row_scale = row_scale / total;
  }
  if (row_grad.defined()) row_scale = row_scale * row_grad.to(acc.dtype());

  std::vector<Tensor> losses, grad_inputs;
  Tensor grad_weight = want_grads ? zeros_like(call.linear_weight) : Tensor();
  Tensor grad_bias = want_grads && call.linear_bias.defined() ? zeros_like(call.linear_bias) : Tensor();
  for (int64_t start = 0; start < rows; start += call.chunk_rows) {
    const int64_t length = std::min(call.chunk_rows, rows - start);
    const Tensor x = call.input.narrow(0, start, length);
    Tensor logits = matmul(x, call.linear_weight.t());
    if (call.linear_bias.defined()) logits = logits + call.linear_bias;
    const Tensor lse = logsumexp(logits, {1});
    const Tensor weights = row_weight.narrow(0, start, length);
    Tensor picked;  // sum_c (weighted) target_c * logits_c per row
    if (call.probabilities) {
      picked = (weighted_target.narrow(0, start, length) * logits).sum({1});
    } else {
      picked = weights * logits.gather(1, index_target.narrow(0, start, length).unsqueeze(1)).squeeze(1);
    }
    losses.push_back(lse * weights - picked);
    if (!want_grads) continue;
    // d loss / d logits = scale * (softmax * weight - weighted one-hot (or weighted target)).
    const Tensor scale = row_scale.narrow(0, start, length).unsqueeze(1);
    Tensor grad_logits = exp(logits - lse.unsqueeze(1)) * (weights.unsqueeze(1) * scale);
    if (call.probabilities) {
      grad_logits = grad_logits - weighted_target.narrow(0, start, length) * scale;
    } else {
      grad_logits = grad_logits.scatter_add(1, index_target.narrow(0, start, length).unsqueeze(1),
                                            -(weights.unsqueeze(1) * scale));
    }
    grad_inputs.push_back(matmul(grad_logits, call.linear_weight));
    grad_weight = grad_weight + matmul(grad_logits.t(), x);
    if (grad_bias.defined()) grad_bias = grad_bias + grad_logits.sum({0});
  }
  ChunkedResult result;
  const Tensor per_row = losses.empty() ? zeros({0}, acc) : cat(losses);
  result.loss = call.reduction == Reduction::None ? per_row : (per_row * row_scale).sum();
  if (want_grads) {
    result.grad_input = grad_inputs.empty() ? zeros_like(call.input) : cat(grad_inputs);
    result.grad_linear_weight = grad_weight;
    result.grad_linear_bias = grad_bias;
  }
  return result;
}

/// The chunked path for an input that passed the shared checks and the applicability test.
Tensor chunked_linear_cross_entropy(const Tensor& input, const Tensor& linear_weight, const Tensor& target,
                                    const Tensor& linear_bias, const Tensor& weight, Reduction reduction,
                                    int64_t ignore_index, const LinearCrossEntropyOptions& options) {
  const bool batched = input.dim() == 2;
  const bool probabilities = is_floating_point(target.dtype());
  const Tensor input2 = batched ? input : input.unsqueeze(0);
  const Tensor target2 = batched ? target : target.unsqueeze(0);
  const ResolvedChunking chunking = resolve(options, input2.size(0), input2.size(1), linear_weight.size(0),
                                            input.dtype(), input.device(), probabilities);
  const Dtype acc = chunking.acc_dtype;
  const auto in_acc = [acc](const Tensor& t) { return t.defined() ? t.detach().to(acc) : Tensor(); };
  auto call = std::make_shared<ChunkedCall>();
  call->input = in_acc(input2);
  call->linear_weight = in_acc(linear_weight);
  call->linear_bias = in_acc(linear_bias);
  call->target = probabilities ? in_acc(target2) : target2.detach();
  call->class_weight = in_acc(weight);
  call->probabilities = probabilities;
  call->reduction = reduction;
  call->ignore_index = ignore_index;
  call->chunk_rows = chunking.chunk_rows;

  // The loss comes back in the input's dtype whatever the chunks computed in, as PyTorch's.
  const Dtype loss_dtype = input.dtype();
  const bool needs_grad = autograd::needs_grad({&input, &linear_weight, &linear_bias});
  const bool want_input = input.requires_grad(), want_weight = linear_weight.requires_grad(),
             want_bias = linear_bias.defined() && linear_bias.requires_grad();
  const Dtype input_dtype = input.dtype(), weight_dtype = linear_weight.dtype();
  const std::vector<int64_t> input_sizes = input.sizes().vec();

  if (reduction == Reduction::None) {
    Tensor loss = run_chunks(*call, false, Tensor()).loss.to(loss_dtype);
    if (!batched) loss = loss.squeeze(0);
    if (needs_grad) {
      autograd::record(loss, "LinearCrossEntropyChunkedNoReductionBackward0", {&input, &linear_weight, &linear_bias},
                       [call, batched, want_input, want_weight, want_bias, input_dtype, weight_dtype,
                        input_sizes](const Tensor& grad) {
                         const ChunkedResult r = run_chunks(*call, true, batched ? grad : grad.unsqueeze(0));
                         return std::vector<Tensor>{
                             want_input ? r.grad_input.to(input_dtype).reshape(input_sizes) : Tensor(),
                             want_weight ? r.grad_linear_weight.to(weight_dtype) : Tensor(),
                             want_bias ? r.grad_linear_bias.to(weight_dtype) : Tensor()};
                       });
    }
    return loss;
  }

  ChunkedResult result = run_chunks(*call, needs_grad, Tensor());
  Tensor loss = result.loss.to(loss_dtype);
  if (!needs_grad) return loss;
  // The gradients, made in forward, wait in the node; without allow_retain_graph backward hands
  // them out once, as PyTorch's.
  struct Precomputed {
    Tensor grad_input, grad_linear_weight, grad_linear_bias;
    bool consumed = false;
  };
  auto saved = std::make_shared<Precomputed>();
  saved->grad_input = want_input ? result.grad_input.to(input_dtype).reshape(input_sizes) : Tensor();
  saved->grad_linear_weight = want_weight ? result.grad_linear_weight.to(weight_dtype) : Tensor();
  saved->grad_linear_bias = want_bias ? result.grad_linear_bias.to(weight_dtype) : Tensor();
  autograd::record(loss, "LinearCrossEntropyChunkedBackward0", {&input, &linear_weight, &linear_bias},
                   [saved, allow_retain = options.allow_retain_graph](const Tensor& grad) {
                     EMBER_CHECK(allow_retain || !saved->consumed,
                                 "linear_cross_entropy chunked backward called twice; retain_graph=True / double "
                                 "backward are not supported.");
                     std::vector<Tensor> grads;
                     for (const Tensor* g : {&saved->grad_input, &saved->grad_linear_weight, &saved->grad_linear_bias})
                       grads.push_back(g->defined() ? *g * grad.detach() : Tensor());
                     if (!allow_retain) {
                       *saved = Precomputed();
                       saved->consumed = true;
                     }
                     return grads;
                   });
  return loss;
}

/// Whether PyTorch's options take the chunked path for these arguments (and its warning when
/// they do not).
bool chunked_path_applies(const Tensor& input, const Tensor& linear_weight, const Tensor& target,
                          const Tensor& linear_bias, Reduction reduction, double label_smoothing,
                          const std::vector<int64_t>& out_features, const std::vector<int64_t>& logits_shape) {
  const bool grad_mode = GradMode::is_enabled();
  const bool chunkable_probabilities =
      target.sizes().vec() == logits_shape && target.dtype() == input.dtype() && !(target.requires_grad() && grad_mode);
  const bool applies =
      label_smoothing == 0.0 && (target.dtype() == kInt64 || chunkable_probabilities) && out_features.empty();
  if (!applies) {
    std::ostringstream message;
    message << "linear_cross_entropy: ``options`` ignored; chunked path needs reduction in {'mean','sum','none'}, "
               "label_smoothing == 0, target.dtype == int64 (or a probability target with dtype matching input and "
               "requires_grad == False), out_features == (). Got reduction='"
            << reduction_text(reduction) << "', label_smoothing=" << float_text(label_smoothing)
            << ", target.dtype=" << dtype_name(target.dtype()) << ", out_features=" << tuple_text(out_features)
            << ", tracing=False, target.requires_grad=" << (target.requires_grad() ? "True" : "False")
            << ", linear_bias.shape=" << (linear_bias.defined() ? tuple_text(linear_bias.sizes()) : "None") << ".";
    warn(message.str());
  }
  (void)linear_weight;
  return applies;
}

}  // namespace

namespace functional {

Tensor linear_cross_entropy(const Tensor& input, const Tensor& linear_weight, const Tensor& target,
                            const Tensor& linear_bias, const Tensor& weight, Reduction reduction,
                            std::optional<int64_t> ignore_index, double label_smoothing,
                            const std::optional<LinearCrossEntropyOptions>& options) {
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
  if (options) {
    check_options(*options);
    if (chunked_path_applies(input, linear_weight, target, linear_bias, reduction, label_smoothing, out_features,
                             logits_shape)) {
      return chunked_linear_cross_entropy(input, linear_weight, target, linear_bias, weight, reduction,
                                          ignore_index.value_or(-100), *options);
    }
  }

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
      label_smoothing(options.label_smoothing),
      options(options.options) {
  EMBER_CHECK(!weight.defined() || (weight.dim() == 1 && weight.size(0) == num_classes), "expected weight shape to be ",
              tuple_text({num_classes}), ", got ", weight.defined() ? tuple_text(weight.sizes()) : std::string("()"));
  EMBER_CHECK(label_smoothing >= 0 && label_smoothing <= 1.0, "expected label_smoothing to be in range [0, 1], got ",
              float_text(label_smoothing));
  if (this->options) check_options(*this->options);
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
                                          ignore_index, label_smoothing, options);
}

}  // namespace ember::nn
