#include "backend/backend.h"

#include <array>
#include <mutex>

#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/tensor.h"
#include "kernels/optim_ops.h"

namespace ember {

// One name function per op enum, generated from the op lists.
#define EMBER_NAME_FN(Enum, LIST)           \
  const char* op_name(Enum op) {            \
    switch (op) { LIST(EMBER_CASE_##Enum) } \
    return "?";                             \
  }
#define EMBER_CASE_UnaryOp(name, str) \
  case UnaryOp::name:                 \
    return str;
#define EMBER_CASE_BinaryOp(name, str) \
  case BinaryOp::name:                 \
    return str;
#define EMBER_CASE_ReduceOp(name, str) \
  case ReduceOp::name:                 \
    return str;
#define EMBER_CASE_ActivationOp(name, str) \
  case ActivationOp::name:                 \
    return str;
#define EMBER_CASE_ScanOp(name, str) \
  case ScanOp::name:                 \
    return str;
EMBER_NAME_FN(UnaryOp, EMBER_UNARY_OPS)
EMBER_NAME_FN(BinaryOp, EMBER_BINARY_OPS)
EMBER_NAME_FN(ReduceOp, EMBER_REDUCE_OPS)
EMBER_NAME_FN(ActivationOp, EMBER_ACTIVATION_OPS)
EMBER_NAME_FN(ScanOp, EMBER_SCAN_OPS)
#undef EMBER_NAME_FN
#undef EMBER_CASE_UnaryOp
#undef EMBER_CASE_BinaryOp
#undef EMBER_CASE_ReduceOp
#undef EMBER_CASE_ActivationOp
#undef EMBER_CASE_ScanOp

bool is_comparison(BinaryOp op) {
  switch (op) {
#define EMBER_CASE(name, str) \
  case BinaryOp::name:        \
    return true;
    EMBER_COMPARE_BINARY_OPS(EMBER_CASE)
#undef EMBER_CASE
    default:
      return false;
  }
}

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

bool TensorView::is_contiguous() const { return detail::is_contiguous_layout(sizes, strides); }

TensorView view_of(const Tensor& t) {
  const detail::TensorImpl& impl = t.impl();
  const Device device = impl.storage->device();
  return TensorView{impl.data(), impl.sizes, impl.strides, impl.dtype, device.has_index() ? device.index() : 0};
}

void* Backend::allocate_pinned(size_t /*nbytes*/) {
  detail::fail("pinned memory needs an accelerator backend; ", device_type_name(type()), " has none");
}
void Backend::free_pinned(void* /*ptr*/) noexcept {}

const char* pool2d_name(PoolKind kind, bool backward) {
  switch (kind) {
    case PoolKind::Max:
      return backward ? "max_pool2d_backward" : "max_pool2d";
    case PoolKind::Avg:
      return backward ? "avg_pool2d_backward" : "avg_pool2d";
    case PoolKind::AdaptiveAvg:
      return backward ? "adaptive_avg_pool2d_backward" : "adaptive_avg_pool2d";
  }
  return backward ? "pool2d_backward" : "pool2d";
}

void check_pool2d_args(const Pool2dArgs& args, const char* op) {
  if (args.kind == PoolKind::AdaptiveAvg) return;
  for (int d = 0; d < 2; ++d) {
    EMBER_CHECK(args.kernel[d] > 0 && args.stride[d] > 0 && args.padding[d] >= 0 && args.dilation[d] > 0, "[", op,
                "] invalid window: kernel, stride and dilation must be positive and padding non-negative");
  }
}

namespace {
void check_planes(const TensorView& x, const TensorView& out, const char* op) {
  EMBER_CHECK(x.ndim() == 4 && out.ndim() == 4, "[", op, "] expects 4-D tensors [N, C, H, W]");
  EMBER_CHECK(x.sizes[0] == out.sizes[0] && x.sizes[1] == out.sizes[1], "[", op,
              "] input and output disagree on N or C");
}
}  // namespace

void check_pool2d_views(const TensorView& x, const TensorView& out, const TensorView& indices, const Pool2dArgs& args) {
  const char* op = pool2d_name(args.kind, /*backward=*/false);
  check_planes(x, out, op);
  EMBER_CHECK(x.is_contiguous() && out.is_contiguous(), "[", op, "] expects contiguous tensors");
  EMBER_CHECK(x.dtype == out.dtype, "[", op, "] input and output dtypes differ");
  check_pool2d_args(args, op);
  if (args.kind == PoolKind::Max && indices.data != nullptr) {
    EMBER_CHECK(indices.dtype == kInt64 && indices.is_contiguous() && indices.numel() == out.numel(), "[", op,
                "] indices must be a contiguous int64 tensor shaped like the output");
  }
}

void check_pool2d_backward_views(const TensorView& grad_out, const TensorView& indices, const TensorView& grad_x,
                                 const Pool2dArgs& args) {
  const char* op = pool2d_name(args.kind, /*backward=*/true);
  check_planes(grad_x, grad_out, op);
  EMBER_CHECK(grad_out.is_contiguous() && grad_x.is_contiguous(), "[", op, "] expects contiguous tensors");
  EMBER_CHECK(grad_out.dtype == grad_x.dtype, "[", op, "] gradient dtypes differ");
  check_pool2d_args(args, op);
  if (args.kind == PoolKind::Max) {
    EMBER_CHECK(indices.data != nullptr && indices.dtype == kInt64 && indices.is_contiguous() &&
                    indices.numel() == grad_out.numel(),
                "[", op, "] needs the contiguous int64 indices of the forward pass");
  }
}

void check_softmax_views(const TensorView& x, const TensorView& out, bool log) {
  const char* name = log ? "log_softmax" : "softmax";
  EMBER_CHECK(x.is_contiguous() && out.is_contiguous(), "[", name, "] expects contiguous tensors");
  EMBER_CHECK(x.dtype == out.dtype, "[", name, "] input and output dtypes differ");
}

void check_fused_update_views(const char* op, const TensorView& param, std::initializer_list<const TensorView*> others,
                              const TensorView& skip) {
  EMBER_CHECK(
      skip.data == nullptr || (skip.dtype == kBool && skip.numel() == 1 && skip.device_index == param.device_index),
      "[", op, "] skip must be a single bool on the parameter's device");
  EMBER_CHECK(param.dtype == kFloat32 || param.dtype == kFloat64, "[", op,
              "] fused update needs float32 or float64, got ", dtype_name(param.dtype));
  EMBER_CHECK(param.is_contiguous(), "[", op, "] parameter must be contiguous");
  for (const TensorView* v : others) {
    if (v->data == nullptr) continue;
    EMBER_CHECK(v->dtype == param.dtype && v->numel() == param.numel() && v->is_contiguous() &&
                    v->device_index == param.device_index,
                "[", op, "] state and gradient must be contiguous and match the parameter's dtype, size and device");
  }
}

void check_sgd_step(const char* op, const TensorView& param, const TensorView& grad, const TensorView& momentum_buffer,
                    const kernels::SgdStep& step, const TensorView& skip) {
  check_fused_update_views(op, param, {&grad, &momentum_buffer}, skip);
  EMBER_CHECK(step.momentum == 0 || momentum_buffer.data != nullptr, "[", op, "] momentum needs a buffer");
}

void check_adam_step(const char* op, const TensorView& param, const TensorView& grad, const TensorView& exp_avg,
                     const TensorView& exp_avg_sq, const TensorView& max_exp_avg_sq, const kernels::AdamStep& step,
                     const TensorView& skip) {
  check_fused_update_views(op, param, {&grad, &exp_avg, &exp_avg_sq, &max_exp_avg_sq}, skip);
  EMBER_CHECK(exp_avg.data != nullptr && exp_avg_sq.data != nullptr && (!step.amsgrad || max_exp_avg_sq.data), "[", op,
              "] missing state");
}

void check_adadelta_step(const char* op, const TensorView& param, const TensorView& grad, const TensorView& square_avg,
                         const TensorView& acc_delta, const TensorView& skip) {
  check_fused_update_views(op, param, {&grad, &square_avg, &acc_delta}, skip);
  EMBER_CHECK(square_avg.data != nullptr && acc_delta.data != nullptr, "[", op, "] missing state");
}

void check_rmsprop_step(const char* op, const TensorView& param, const TensorView& grad, const TensorView& square_avg,
                        const TensorView& grad_avg, const TensorView& momentum_buffer, const kernels::RmspropStep& step,
                        const TensorView& skip) {
  check_fused_update_views(op, param, {&grad, &square_avg, &grad_avg, &momentum_buffer}, skip);
  EMBER_CHECK(square_avg.data != nullptr && (!step.centered || grad_avg.data != nullptr) &&
                  (step.momentum <= 0 || momentum_buffer.data != nullptr),
              "[", op, "] missing state");
}

namespace {
void check_multi_tensor_update(const char* op, std::span<const OptimTensors> tensors, size_t steps) {
  EMBER_CHECK(steps == tensors.size(), "[", op, "] expects one step per tensor, got ", steps, " steps for ",
              tensors.size(), " tensors");
  for (const OptimTensors& t : tensors) {
    EMBER_CHECK(t.param.dtype == tensors[0].param.dtype && t.param.device_index == tensors[0].param.device_index, "[",
                op, "] every parameter must have one dtype and lie on one device: got ", dtype_name(t.param.dtype),
                " on device ", t.param.device_index, " after ", dtype_name(tensors[0].param.dtype), " on device ",
                tensors[0].param.device_index);
  }
}
}  // namespace

void check_multi_tensor_step(const char* op, std::span<const OptimTensors> tensors,
                             std::span<const kernels::SgdStep> steps, const TensorView& skip) {
  check_multi_tensor_update(op, tensors, steps.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const OptimTensors& t = tensors[i];
    check_sgd_step(op, t.param, t.grad, t.state[0], steps[i], skip);
  }
}

void check_multi_tensor_step(const char* op, std::span<const OptimTensors> tensors,
                             std::span<const kernels::AdamStep> steps, const TensorView& skip) {
  check_multi_tensor_update(op, tensors, steps.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const OptimTensors& t = tensors[i];
    check_adam_step(op, t.param, t.grad, t.state[0], t.state[1], t.state[2], steps[i], skip);
  }
}

void check_multi_tensor_step(const char* op, std::span<const OptimTensors> tensors,
                             std::span<const kernels::AdadeltaStep> steps, const TensorView& skip) {
  check_multi_tensor_update(op, tensors, steps.size());
  for (const OptimTensors& t : tensors) check_adadelta_step(op, t.param, t.grad, t.state[0], t.state[1], skip);
}

void check_multi_tensor_step(const char* op, std::span<const OptimTensors> tensors,
                             std::span<const kernels::RmspropStep> steps, const TensorView& skip) {
  check_multi_tensor_update(op, tensors, steps.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const OptimTensors& t = tensors[i];
    check_rmsprop_step(op, t.param, t.grad, t.state[0], t.state[1], t.state[2], steps[i], skip);
  }
}

void check_cross_entropy_views(const char* op, const TensorView& logits, const TensorView& target,
                               const TensorView& weight) {
  EMBER_CHECK(logits.ndim() == 2 && logits.is_contiguous() && (logits.dtype == kFloat32 || logits.dtype == kFloat64),
              "[", op, "] expects contiguous float32 or float64 logits of shape [N, C]");
  EMBER_CHECK(
      target.ndim() == 1 && target.dtype == kInt64 && target.is_contiguous() && target.sizes[0] == logits.sizes[0], "[",
      op, "] expects int64 targets of shape [N]");
  EMBER_CHECK(weight.data == nullptr ||
                  (weight.dtype == logits.dtype && weight.is_contiguous() && weight.numel() == logits.sizes[1]),
              "[", op, "] expects a weight of shape [C] and the logits' dtype");
}

namespace {

/// The recurrent cells' view checks: gates [B, G H] twice, a state [B, H] and a result, [2, B, H]
/// (a pair of states) or [B, H]; all contiguous, of one floating dtype.
std::pair<int64_t, int64_t> check_cell_views(const char* op, int64_t gates, const TensorView& input_gates,
                                             const TensorView& hidden_gates, const TensorView& state,
                                             const TensorView& result, bool result_is_pair) {
  const Dtype dtype = input_gates.dtype;
  EMBER_CHECK(input_gates.ndim() == 2 && input_gates.sizes[1] % gates == 0 && (dtype == kFloat32 || dtype == kFloat64),
              "[", op, "] expects float32 or float64 gates of shape [B, ", gates, "H]");
  const int64_t batch = input_gates.sizes[0], hidden = input_gates.sizes[1] / gates;
  auto matches = [&](const TensorView& v, std::initializer_list<int64_t> sizes) {
    return v.dtype == dtype && v.is_contiguous() && same_dims(v.sizes, IntList(sizes));
  };
  const bool result_ok = result_is_pair ? matches(result, {2, batch, hidden}) : matches(result, {batch, hidden});
  EMBER_CHECK(matches(input_gates, {batch, gates * hidden}) && matches(hidden_gates, {batch, gates * hidden}) &&
                  matches(state, {batch, hidden}) && result_ok,
              "[", op, "] expects contiguous views of one dtype: gates [", batch, ", ", gates * hidden,
              "] twice, a state [", batch, ", ", hidden, "] and ",
              result_is_pair ? "a pair of states [2, " : "an output [", batch, ", ", hidden, "]");
  return {batch, hidden};
}

}  // namespace

std::pair<int64_t, int64_t> check_lstm_cell_views(const char* op, const TensorView& input_gates,
                                                  const TensorView& hidden_gates, const TensorView& state,
                                                  const TensorView& pair) {
  return check_cell_views(op, 4, input_gates, hidden_gates, state, pair, true);
}

std::pair<int64_t, int64_t> check_gru_cell_views(const char* op, const TensorView& input_gates,
                                                 const TensorView& hidden_gates, const TensorView& state,
                                                 const TensorView& out) {
  return check_cell_views(op, 3, input_gates, hidden_gates, state, out, false);
}

}  // namespace ember
