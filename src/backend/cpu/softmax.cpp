// CpuBackend::softmax and softmax_backward: softmax and log-softmax along the last dimension of a
// contiguous tensor, and their gradients (one pass for a row's sum, one for its outputs).
//
// Rows are handled in L1-sized blocks (softmax_rows.h): each row's maximum, then x - max for the
// whole block, exp over the block as one flat vectorised loop (so short rows vectorise as well
// as long ones), then each row's sum and the scaling. Subtracting the maximum keeps exp in range;
// a row that is -inf everywhere (or holds a NaN) yields NaN, as in PyTorch. float16 and bfloat16
// are computed in float.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/dispatch.h"
#include "backend/cpu/softmax_rows.h"
#include "base/parallel.h"
#include "core/check.h"

namespace ember::cpu {
namespace {

using namespace rowwise;

// A block of rows (x and y may alias); t, maxes and sums are scratch.
template <typename S, typename T>
void softmax_block(const T* x, T* y, int64_t rows, int64_t n, bool log, S* t, S* maxes, S* sums) {
  row_stats(x, rows, n, t, maxes, sums);
  for (int64_t r = 0; r < rows; ++r) {
    const S sum = sums[r];
    const T* xr = x + r * n;
    const S* tr = t + r * n;
    T* yr = y + r * n;
    if (log) {
      const S max = maxes[r], log_sum = std::log(sum);
      for (int64_t i = 0; i < n; ++i) yr[i] = T(static_cast<S>(xr[i]) - max - log_sum);
    } else {
      // One reciprocal and a multiply per element, as PyTorch's vectorised CPU kernel does: a
      // vector divide costs several times more and buys half an ulp.
      const S scale = S(1) / sum;
      for (int64_t i = 0; i < n; ++i) yr[i] = T(tr[i] * scale);
    }
  }
}

template <typename T>
void softmax_rows(const T* x, T* y, int64_t rows, int64_t n, bool log) {
  using S = compute_t<T>;  // float for the 16-bit types: widened once, rounded once
  for_each_row_block<S>(rows, n, [&](int64_t r, int64_t count, S* t, S* maxes, S* sums) {
    softmax_block(x + r * n, y + r * n, count, n, log, t, maxes, sums);
  });
}

// One row of the gradient: the row's sum in double (8 accumulators, so that it vectorises), then
// one pass for the outputs. Log is a template argument so that neither loop tests it.
template <bool Log, typename T>
void softmax_backward_row(const T* yr, const T* gr, T* out, int64_t n) {
  using S = compute_t<T>;
  const auto term = [&](int64_t i) {
    const double gv = static_cast<double>(static_cast<S>(gr[i]));
    return Log ? gv : gv * static_cast<double>(static_cast<S>(yr[i]));
  };
  double acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += term(i + j);
  double tail = 0;
  for (; i < n; ++i) tail += term(i);
  const S sum =
      static_cast<S>(((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])) + tail);
  for (int64_t k = 0; k < n; ++k) {
    if constexpr (Log) {
      out[k] = T(static_cast<S>(gr[k]) - std::exp(static_cast<S>(yr[k])) * sum);
    } else {
      out[k] = T(static_cast<S>(yr[k]) * (static_cast<S>(gr[k]) - sum));
    }
  }
}

template <typename T>
void softmax_backward_rows(const T* y, const T* g, T* gx, int64_t rows, int64_t n, bool log) {
  base::parallel_for(rows, std::max<int64_t>(1, base::kGrainSize / std::max<int64_t>(1, n)),
                     [&](int64_t begin, int64_t end) {
                       for (int64_t r = begin; r < end; ++r) {
                         if (log) {
                           softmax_backward_row<true>(y + r * n, g + r * n, gx + r * n, n);
                         } else {
                           softmax_backward_row<false>(y + r * n, g + r * n, gx + r * n, n);
                         }
                       }
                     });
}

}  // namespace

void CpuBackend::softmax_backward(const TensorView& y, const TensorView& g, const TensorView& grad_x, bool log) {
  const char* name = log ? "log_softmax_backward" : "softmax_backward";
  EMBER_CHECK(y.is_contiguous() && g.is_contiguous() && grad_x.is_contiguous() && g.dtype == y.dtype &&
                  grad_x.dtype == y.dtype && g.sizes == y.sizes && grad_x.sizes == y.sizes,
              name, ": the kernel takes contiguous views of one dtype and y's sizes");
  const int64_t n = y.ndim() == 0 ? 1 : y.sizes[y.ndim() - 1];
  const int64_t total = y.numel();
  if (total == 0) return;
  dispatch_floating(y.dtype, name, [&]<typename T>() {
    softmax_backward_rows(y.ptr<const T>(), g.ptr<const T>(), grad_x.ptr<T>(), total / n, n, log);
  });
}

void CpuBackend::softmax(const TensorView& x, const TensorView& out, bool log) {
  const char* name = log ? "log_softmax" : "softmax";
  check_softmax_views(x, out, log);
  const int64_t n = x.ndim() == 0 ? 1 : x.sizes[x.ndim() - 1];
  const int64_t total = x.numel();
  if (total == 0) return;
  dispatch_floating(x.dtype, name,
                    [&]<typename T>() { softmax_rows(x.ptr<const T>(), out.ptr<T>(), total / n, n, log); });
}

}  // namespace ember::cpu
