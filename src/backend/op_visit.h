#pragma once
// From an element-wise op's enum value to its functor type: visit_op(op, f) calls
// f.template operator()<kernels::Name>("name") for the entry of kernels/op_list.h that `op` names.
// Each backend's unary() and binary() is one such call around its own loop (cpu/unary.cpp,
// cuda/unary.cu, ...), so the table from op to functor is written once, here.
#include "backend/backend.h"
#include "core/check.h"
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

}  // namespace ember
