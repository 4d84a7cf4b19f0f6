#pragma once
// The loops every CPU element-wise kernel runs (unary.cpp, binary.cpp), as CUDA's unary.cu and
// binary.cu share elementwise.cuh.
//
// The math lives in kernels/elementwise_ops.h (shared with CUDA); these files only loop. Every
// op goes through for_each_element: when the output is contiguous and each input is either
// contiguous or a broadcast scalar (all strides 0), the whole range is one run with strides
// 1/0; otherwise the shape is simplified by kernels::StridedIndexer and walked row by row.
// The row functions specialise the common stride patterns into plain indexed loops that the
// compiler vectorises (Half/BFloat16 included: kernels::convert is branch-free; vector_libm.h
// lets GCC call glibc's vector exp, log, ...). Nothing on this path allocates, so a tiny op
// costs tens of nanoseconds.
#include <algorithm>
#include <array>
#include <type_traits>

#include "backend/backend.h"
#include "backend/cpu/dispatch.h"
#include "backend/cpu/vector_libm.h"
#include "base/parallel.h"
#include "core/check.h"
#include "kernels/elementwise_ops.h"
#include "kernels/indexer.h"

namespace ember::cpu::elementwise {

using kernels::convert;

// Failures are out of line, so that the checks on the hot path stay a compare and a branch.
[[noreturn, gnu::cold, gnu::noinline]] inline void fail_shape(const char* op, const TensorView& in,
                                                              const TensorView& out) {
  detail::fail("[", op, "] operand of shape ", detail::shape_str(in.sizes), " was not broadcast to the output shape ",
               detail::shape_str(out.sizes));
}

[[noreturn, gnu::cold, gnu::noinline]] inline void fail_dtype(const char* op, const char* what, Dtype actual,
                                                              Dtype expected) {
  detail::fail("[", op, "] ", what, " has dtype ", dtype_name(actual), ", expected ", dtype_name(expected));
}

[[noreturn, gnu::cold, gnu::noinline]] inline void fail_not_implemented(const char* op, Dtype dtype) {
  detail::fail("\"", op, "\" not implemented for '", scalar_type_name(dtype), "'");
}

inline void check_dtype(Dtype actual, Dtype expected, const char* op, const char* what) {
  if (actual != expected) [[unlikely]] {
    fail_dtype(op, what, actual, expected);
  }
}

/// Inputs must arrive broadcast to the output's sizes.
inline void check_shape(const char* op, const TensorView& in, const TensorView& out) {
  const size_t nd = out.sizes.size();
  bool same = in.sizes.size() == nd;
  // A plain loop: std::equal becomes a memcmp call, which costs more than these few compares.
  for (size_t d = 0; same && d < nd; ++d) same = in.sizes[d] == out.sizes[d];
  if (!same) [[unlikely]] {
    fail_shape(op, in, out);
  }
}

/// Calls row(offsets, strides, count) over every element of views[0]'s shape, on several
/// threads when the work is large. views[0] is the output; the others must have its sizes.
/// offsets[k] is operand k's element offset at the start of a run, strides[k] its stride
/// along the run.
///
/// This is the per-call overhead of every element-wise op, so shapes are read once: a single
/// pass checks the sizes and finds whether each operand is contiguous or a broadcast scalar.
/// When all are (and the output is contiguous) the whole range is one run with strides 1/0;
/// otherwise StridedIndexer simplifies the shape and the runs are its rows.
template <size_t N, typename Row>
void for_each_element(const char* op, const std::array<const TensorView*, N>& views, const Row& row) {
  const TensorView& out = *views[0];
  const size_t nd = out.sizes.size();
  const int64_t* sizes = out.sizes.data();
  const int64_t* strides[N];
  for (size_t k = 0; k < N; ++k) {
    if (k > 0) check_shape(op, *views[k], out);
    strides[k] = views[k]->strides.data();
  }
  bool contiguous[N];
  bool all_zero[N];
  for (size_t k = 0; k < N; ++k) contiguous[k] = all_zero[k] = true;
  int64_t numel = 1;
  for (size_t d = nd; d-- > 0;) {
    if (sizes[d] == 1) continue;
    for (size_t k = 0; k < N; ++k) {
      contiguous[k] = contiguous[k] && strides[k][d] == numel;
      all_zero[k] = all_zero[k] && strides[k][d] == 0;
    }
    numel *= sizes[d];
  }
  if (numel == 0) return;

  int64_t flat[N];
  bool flat_ok = contiguous[0];
  for (size_t k = 0; k < N; ++k) {
    flat[k] = contiguous[k] ? 1 : 0;
    flat_ok = flat_ok && (contiguous[k] || all_zero[k]);
  }
  if (flat_ok) {
    base::parallel_for(numel, base::kGrainSize, [&](int64_t begin, int64_t end) {
      int64_t off[N];
      for (size_t k = 0; k < N; ++k) off[k] = begin * flat[k];
      row(static_cast<const int64_t*>(off), static_cast<const int64_t*>(flat), end - begin);
    });
    return;
  }

  kernels::StridedIndexer<static_cast<int>(N), kernels::kMaxInputDims> ix;
  EMBER_CHECK(ix.build(static_cast<int64_t>(nd), sizes, strides, /*memory_order=*/true), "[", op,
              "] too many non-mergeable dimensions in shape ", detail::shape_str(out.sizes));
  int64_t inner[N];
  for (size_t k = 0; k < N; ++k) inner[k] = ix.inner_stride(static_cast<int>(k));
  base::parallel_for(numel, base::kGrainSize, [&](int64_t begin, int64_t end) {
    kernels::for_each_row(ix, begin, end, [&](const int64_t* off, int64_t count) { row(off, inner, count); });
  });
}

// ---- row loops --------------------------------------------------------------------------------
// C is the computation type: elements are converted to C, f computes, the result is converted
// to the output type O. Each row works on a local copy of f: through the reference the compiler
// cannot tell that writing the output leaves a functor's parameters (LeakyReLU's slope, clamp's
// bounds) unchanged, so it reloads them per element and the loop stays scalar (13x slower).

template <typename C, typename O, typename T, typename F>
void unary_row(O* out, int64_t so, const T* x, int64_t sx, int64_t n, const F& fn) {
  const F f = fn;
  if (so == 1 && sx == 1) {
    for (int64_t i = 0; i < n; ++i) out[i] = convert<O>(f(convert<C>(x[i])));
  } else if (so == 1 && sx == 0) {
    std::fill_n(out, n, convert<O>(f(convert<C>(x[0]))));
  } else {
    for (int64_t i = 0; i < n; ++i) out[i * so] = convert<O>(f(convert<C>(x[i * sx])));
  }
}

template <typename C, typename O, typename T, typename F>
void binary_row(O* out, int64_t so, const T* a, int64_t sa, const T* b, int64_t sb, int64_t n, const F& fn) {
  const F f = fn;
  if (so == 1 && sa == 1 && sb == 1) {
    for (int64_t i = 0; i < n; ++i) out[i] = convert<O>(f(convert<C>(a[i]), convert<C>(b[i])));
  } else if (so == 1 && sa == 1 && sb == 0) {
    const C bv = convert<C>(b[0]);
    for (int64_t i = 0; i < n; ++i) out[i] = convert<O>(f(convert<C>(a[i]), bv));
  } else if (so == 1 && sa == 0 && sb == 1) {
    const C av = convert<C>(a[0]);
    for (int64_t i = 0; i < n; ++i) out[i] = convert<O>(f(av, convert<C>(b[i])));
  } else if (so == 1 && sa == 0 && sb == 0) {
    std::fill_n(out, n, convert<O>(f(convert<C>(a[0]), convert<C>(b[0]))));
  } else {
    for (int64_t i = 0; i < n; ++i) out[i * so] = convert<O>(f(convert<C>(a[i * sa]), convert<C>(b[i * sb])));
  }
}

// ---- typed drivers ----------------------------------------------------------------------------

/// out = f(x) elementwise: x of type T, computed in C, stored as O.
template <typename T, typename C, typename O, typename F>
void unary_loop(const char* op, const TensorView& x, const TensorView& out, const F& f) {
  const T* xp = x.ptr<T>();
  O* op_data = out.ptr<O>();
  for_each_element<2>(op, {&out, &x}, [=](const int64_t* off, const int64_t* st, int64_t n) {
    unary_row<C>(op_data + off[0], st[0], xp + off[1], st[1], n, f);
  });
}

/// out = f(a, b) elementwise.
template <typename T, typename C, typename O, typename F>
void binary_loop(const char* op, const TensorView& a, const TensorView& b, const TensorView& out, const F& f) {
  const T* ap = a.ptr<T>();
  const T* bp = b.ptr<T>();
  O* op_data = out.ptr<O>();
  for_each_element<3>(op, {&out, &a, &b}, [=](const int64_t* off, const int64_t* st, int64_t n) {
    binary_row<C>(op_data + off[0], st[0], ap + off[1], st[1], bp + off[2], st[2], n, f);
  });
}

/// The output element type of Op on inputs of type T (computed as Args): bool for
/// comparisons and logical ops, T otherwise.
template <typename Op, typename T, typename... Args>
using output_t = std::conditional_t<std::is_same_v<std::invoke_result_t<Op, Args...>, bool>, bool, T>;

}  // namespace ember::cpu::elementwise
