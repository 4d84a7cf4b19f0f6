// CpuBackend::scan: cumsum, cumprod, logcumsumexp, cummax and cummin along one dimension of a
// contiguous view (kernels/scan_ops.h has the steps, shared with CUDA).
//
// The view is seen as [outer, n, inner] with the scanned dimension in the middle. With inner == 1
// each row is a sequential loop; otherwise a task takes one outer slice and a run of inner
// positions and walks n, keeping the running values of the run in an array, so the innermost
// loop is over contiguous memory and vectorises. Threads split the outer slices and inner runs.
// A reverse scan walks n from the last position to the first.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/dispatch.h"
#include "base/parallel.h"
#include "core/check.h"
#include "kernels/scan_ops.h"

namespace ember::cpu {
namespace {

struct ScanShape {
  int64_t outer = 1, n = 1, inner = 1;
};

ScanShape shape_of(const TensorView& x, int64_t dim) {
  ScanShape s;
  for (int64_t d = 0; d < x.ndim(); ++d) {
    if (d < dim)
      s.outer *= x.sizes[d];
    else if (d == dim)
      s.n = x.sizes[d];
    else
      s.inner *= x.sizes[d];
  }
  return s;
}

// Inner positions per task, so that each task covers about a grain of elements.
constexpr int64_t kInnerRun = 256;

// Calls body(o, j0, j1) over every outer slice o and run [j0, j1) of inner positions, in parallel.
template <typename Body>
void for_each_run(const ScanShape& s, const Body& body) {
  const int64_t runs = (s.inner + kInnerRun - 1) / kInnerRun;
  const int64_t tasks = s.outer * runs;
  const int64_t per_task = std::min(s.inner, kInnerRun) * s.n;
  base::parallel_for(tasks, std::max<int64_t>(1, base::kGrainSize / std::max<int64_t>(1, per_task)),
                     [&](int64_t begin, int64_t end) {
                       for (int64_t t = begin; t < end; ++t) {
                         const int64_t o = t / runs, j0 = (t % runs) * kInnerRun;
                         body(o, j0, std::min(s.inner, j0 + kInnerRun));
                       }
                     });
}

template <typename T, typename Step>
void accumulate_typed(const TensorView& x, const TensorView& out, const ScanShape& s, bool reverse, const Step& step) {
  using A = kernels::scan_host_acc_t<T>;
  const T* in = x.ptr<const T>();
  T* dst = out.ptr<T>();
  const int64_t n = s.n, inner = s.inner;
  for_each_run(s, [&](int64_t o, int64_t j0, int64_t j1) {
    const T* xo = in + o * n * inner;
    T* yo = dst + o * n * inner;
    if (inner == 1) {
      A running = Step::init();
      for (int64_t k = 0; k < n; ++k) {
        const int64_t i = reverse ? n - 1 - k : k;
        running = step(running, static_cast<A>(xo[i]));
        yo[i] = static_cast<T>(running);
      }
      return;
    }
    A running[kInnerRun];
    const int64_t w = j1 - j0;
    std::fill(running, running + w, Step::init());
    for (int64_t k = 0; k < n; ++k) {
      const int64_t i = reverse ? n - 1 - k : k;
      const T* xi = xo + i * inner + j0;
      T* yi = yo + i * inner + j0;
      for (int64_t j = 0; j < w; ++j) {
        running[j] = step(running[j], static_cast<A>(xi[j]));
        yi[j] = static_cast<T>(running[j]);
      }
    }
  });
}

template <typename T, bool Max>
void extreme_typed(const TensorView& x, const TensorView& out, const TensorView& indices, const ScanShape& s) {
  using C = compute_t<T>;
  const T* in = x.ptr<const T>();
  T* dst = out.ptr<T>();
  int64_t* idx = indices.ptr<int64_t>();
  const int64_t n = s.n, inner = s.inner;
  const auto takes = [](C v, C current) {
    return Max ? kernels::cummax_takes(v, current) : kernels::cummin_takes(v, current);
  };
  for_each_run(s, [&](int64_t o, int64_t j0, int64_t j1) {
    const int64_t base_offset = o * n * inner;
    for (int64_t j = j0; j < j1; ++j) {
      // Columns one by one: the comparisons branch, so an array of running values gains little.
      T best = in[base_offset + j];
      int64_t best_at = 0;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t at = base_offset + i * inner + j;
        if (takes(static_cast<C>(in[at]), static_cast<C>(best))) {
          best = in[at];
          best_at = i;
        }
        dst[at] = best;
        idx[at] = best_at;
      }
    }
  });
}

}  // namespace

void CpuBackend::scan(ScanOp op, const TensorView& x, int64_t dim, bool reverse, const TensorView& out,
                      const TensorView& indices) {
  EMBER_CHECK(x.is_contiguous() && out.is_contiguous() && out.dtype == x.dtype && out.numel() == x.numel() &&
                  (x.ndim() == 0 ? dim == 0 : dim >= 0 && dim < x.ndim()),
              op_name(op), ": the kernel takes contiguous views of one dtype and a dimension in range");
  EMBER_CHECK(!reverse || (op != ScanOp::Max && op != ScanOp::Min), op_name(op), ": the kernel has no reverse scan");
  if (x.numel() == 0) return;
  const ScanShape s = shape_of(x, dim);
  switch (op) {
    case ScanOp::Sum:
      return dispatch_all(x.dtype, "cumsum", [&]<typename T>() {
        accumulate_typed<T>(x, out, s, reverse, kernels::CumSum<kernels::scan_host_acc_t<T>>{});
      });
    case ScanOp::Prod:
      return dispatch_all(x.dtype, "cumprod", [&]<typename T>() {
        accumulate_typed<T>(x, out, s, reverse, kernels::CumProd<kernels::scan_host_acc_t<T>>{});
      });
    case ScanOp::LogSumExp:
      return dispatch_floating(x.dtype, "logcumsumexp", [&]<typename T>() {
        accumulate_typed<T>(x, out, s, reverse, kernels::LogCumSumExp<kernels::scan_host_acc_t<T>>{});
      });
    case ScanOp::Max:
    case ScanOp::Min:
      EMBER_CHECK(indices.dtype == kInt64 && indices.is_contiguous() && indices.numel() == x.numel(), op_name(op),
                  ": the kernel takes contiguous int64 indices of x's sizes");
      return dispatch_all(x.dtype, op_name(op), [&]<typename T>() {
        if (op == ScanOp::Max)
          extreme_typed<T, true>(x, out, indices, s);
        else
          extreme_typed<T, false>(x, out, indices, s);
      });
  }
}

}  // namespace ember::cpu
