#pragma once
// From an element-wise op's enum value to its functor type: visit_op(op, f) calls
// f.template operator()<kernels::Name>("name") for the entry of kernels/op_list.h that `op` names.
// Each backend's unary() and binary() is one such call around its own loop (cpu/unary.cpp,
// cuda/unary.cu, ...), so the table from op to functor is written once, here.
#include "backend/backend.h"
#include "core/check.h"
#include "kernels/activation_ops.h"
#include "kernels/elementwise_ops.h"

namespace ember {

template <typename F>
void visit_op(UnaryOp op, F&& f) {
  switch (op) {
#define EMBER_CASE(Name, str) \
  case UnaryOp::Name:         \
    return f.template operator()<kernels::Name>(str);
    EMBER_UNARY_OPS(EMBER_CASE)
#undef EMBER_CASE
  }
  detail::fail("[unary] unknown op ", static_cast<int>(op));
}

template <typename F>
void visit_op(BinaryOp op, F&& f) {
  switch (op) {
#define EMBER_CASE(Name, str) \
  case BinaryOp::Name:        \
    return f.template operator()<kernels::Name>(str);
    EMBER_BINARY_OPS(EMBER_CASE)
#undef EMBER_CASE
  }
  detail::fail("[binary] unknown op ", static_cast<int>(op));
}

/// Calls f(forward, backward, "name") with the functors of activation `op` for computation type C
/// (kernels/activation_ops.h), their parameters taken from `args` (backend.h says which).
template <typename C, typename F>
void visit_activation(ActivationOp op, const ActivationArgs& args, F&& f) {
  namespace act = kernels::activation;
  const double* p = args.p;
  const auto c = [](double v) { return static_cast<C>(v); };
  switch (op) {
    case ActivationOp::Elu: {
      const C negative = c(p[0] * p[1]), positive = c(p[1]), input_scale = c(p[2]);
      return f(act::Elu<C>{negative, positive, input_scale}, act::EluBackward<C>{negative, positive, input_scale},
               "elu");
    }
    case ActivationOp::LeakyRelu:
      return f(act::LeakyRelu<C>{c(p[0])}, act::LeakyReluBackward<C>{c(p[0])}, "leaky_relu");
    case ActivationOp::Hardtanh:
      return f(act::Hardtanh<C>{c(p[0]), c(p[1])}, act::HardtanhBackward<C>{c(p[0]), c(p[1])}, "hardtanh");
    case ActivationOp::Softplus:
      return f(act::Softplus<C>{c(p[0]), c(p[1])}, act::SoftplusBackward<C>{c(p[0]), c(p[1])}, "softplus");
    case ActivationOp::Threshold:
      return f(act::Threshold<C>{c(p[0]), c(p[1])}, act::ThresholdBackward<C>{c(p[0]), c(p[1])}, "threshold");
    case ActivationOp::Hardshrink:
      return f(act::Hardshrink<C>{c(p[0])}, act::HardshrinkBackward<C>{c(p[0])}, "hardshrink");
    case ActivationOp::Softshrink:
      return f(act::Softshrink<C>{c(p[0])}, act::SoftshrinkBackward<C>{c(p[0])}, "softshrink");
    case ActivationOp::Hardsigmoid:
      return f(act::Hardsigmoid<C>{}, act::HardsigmoidBackward<C>{}, "hardsigmoid");
    case ActivationOp::Hardswish:
      return f(act::Hardswish<C>{}, act::HardswishBackward<C>{}, "hardswish");
    case ActivationOp::Mish:
      return f(act::Mish<C>{}, act::MishBackward<C>{}, "mish");
    case ActivationOp::LogSigmoid:
      return f(act::LogSigmoid<C>{}, act::LogSigmoidBackward<C>{}, "log_sigmoid");
  }
  detail::fail("[activation] unknown op ", static_cast<int>(op));
}

}  // namespace ember
