// CpuBackend::cross_entropy: log_softmax and nll_loss fused, forward and backward, on the row
// statistics softmax uses (softmax_rows.h), so its losses are log_softmax + nll_loss's to the bit;
// label smoothing adds its share inside (kernels/cross_entropy_ops.h, shared with CUDA's
// cross_entropy.cu).
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/dispatch.h"
#include "backend/cpu/softmax_rows.h"
#include "core/check.h"
#include "kernels/cross_entropy_ops.h"

namespace ember::cpu {
namespace {

using namespace rowwise;

// cross_entropy's rows (float and double only: T is its own compute type). The log-probability
// of the target is log_softmax's own expression, so the loss is -log_softmax(x)[t] * w[t] with
// the bits of the two ops run one after the other; label smoothing adds its share of every
// class's term (kernels/cross_entropy_ops.h).
template <typename T>
void cross_entropy_rows(const T* x, const int64_t* target, const T* weight, int64_t ignore_index,
                        double label_smoothing, T* loss, T* row_weight, T* stats, int64_t rows, int64_t n) {
  const auto smoothing = kernels::LabelSmoothing<T>::make(label_smoothing, n);
  for_each_row_block<T>(rows, n, [&](int64_t r0, int64_t count, T* t, T* maxes, T* sums) {
    row_stats(x + r0 * n, count, n, t, maxes, sums);
    for (int64_t k = 0; k < count; ++k) {
      const int64_t r = r0 + k;
      const T max = maxes[k], log_sum = std::log(sums[k]);
      stats[2 * r] = max;
      stats[2 * r + 1] = log_sum;
      const int64_t c = target[r];
      if (c == ignore_index) {
        loss[r] = T(0);
        row_weight[r] = T(0);
        continue;
      }
      const T* xr = x + r * n;
      const T nll = -(xr[c] - max - log_sum);
      loss[r] = weight != nullptr ? nll * weight[c] : nll;
      row_weight[r] = weight != nullptr ? weight[c] : T(1);
      if (label_smoothing > 0.0) {
        T sum = T(0);
        for (int64_t i = 0; i < n; ++i) {
          const T term = -(xr[i] - max - log_sum);
          sum += weight != nullptr ? term * weight[i] : term;
        }
        loss[r] = kernels::smoothed_row_loss(loss[r], sum, smoothing);
      }
    }
  });
}

template <typename T>
void cross_entropy_backward_rows(const T* grad_loss, const T* x, const int64_t* target, const T* weight,
                                 int64_t ignore_index, double label_smoothing, const T* stats, T* grad_x, int64_t rows,
                                 int64_t n) {
  const auto smoothing = kernels::LabelSmoothing<T>::make(label_smoothing, n);
  T weight_total = static_cast<T>(n);
  if (weight != nullptr && label_smoothing > 0.0) {
    weight_total = T(0);
    for (int64_t i = 0; i < n; ++i) weight_total += weight[i];
  }
  base::parallel_for(rows, std::max<int64_t>(1, base::kGrainSize / n), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t c = target[r];
      const bool ignored = c == ignore_index;
      const T max = stats[2 * r], log_sum = stats[2 * r + 1];
      const T* xr = x + r * n;
      T* gr = grad_x + r * n;
      if (label_smoothing > 0.0 && !ignored) {
        const T g = grad_loss[r];
        const T target_weight = weight != nullptr ? weight[c] : T(1);
        for (int64_t i = 0; i < n; ++i) {
          const T probability = kernels::Exp{}(xr[i] - max - log_sum);
          gr[i] = kernels::smoothed_logit_grad(g, probability, target_weight, weight != nullptr ? weight[i] : T(1),
                                               weight_total, i == c, smoothing);
        }
        continue;
      }
      // nll_loss's backward puts s at the target's column (column 0, unweighted, on an ignored
      // row, where it is zero); log_softmax's then subtracts exp(y) times the row's sum, s. An
      // ignored row's gradient is 0 (NaN in a NaN row, as log_softmax's backward makes it) with
      // or without smoothing.
      const int64_t column = ignored ? 0 : c;
      const T g = ignored ? T(0) : grad_loss[r];
      const T s = -(weight != nullptr && !ignored ? g * weight[c] : g);
      for (int64_t i = 0; i < n; ++i) {
        const T probability = kernels::Exp{}(xr[i] - max - log_sum);
        gr[i] = T(0) - probability * s;
      }
      const T target_probability = kernels::Exp{}(xr[column] - max - log_sum);
      gr[column] = s - target_probability * s;
    }
  });
}

/// The CPU checks every target before computing anything, as PyTorch's kernel does.
void check_targets(const TensorView& target, int64_t classes, int64_t ignore_index) {
  const int64_t* t = target.ptr<const int64_t>();
  for (int64_t i = 0, n = target.numel(); i < n; ++i) {
    EMBER_CHECK(t[i] == ignore_index || (t[i] >= 0 && t[i] < classes), "Target ", t[i], " is out of bounds.");
  }
}

}  // namespace

void CpuBackend::cross_entropy(const TensorView& logits, const TensorView& target, const TensorView& weight,
                               int64_t ignore_index, double label_smoothing, const TensorView& loss,
                               const TensorView& row_weight, const TensorView& stats) {
  check_cross_entropy_views("cross_entropy", logits, target, weight);
  const int64_t rows = logits.sizes[0], n = logits.sizes[1];
  if (rows == 0) return;
  EMBER_CHECK(n > 0, "[cross_entropy] expects at least one class");
  check_targets(target, n, ignore_index);
  dispatch_floating(logits.dtype, "cross_entropy", [&]<typename T>() {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      cross_entropy_rows(logits.ptr<const T>(), target.ptr<const int64_t>(), weight.ptr<const T>(), ignore_index,
                         label_smoothing, loss.ptr<T>(), row_weight.ptr<T>(), stats.ptr<T>(), rows, n);
    }
  });
}

void CpuBackend::cross_entropy_backward(const TensorView& grad_loss, const TensorView& logits, const TensorView& target,
                                        const TensorView& weight, int64_t ignore_index, double label_smoothing,
                                        const TensorView& stats, const TensorView& grad_logits) {
  check_cross_entropy_views("cross_entropy_backward", logits, target, weight);
  const int64_t rows = logits.sizes[0], n = logits.sizes[1];
  if (rows == 0 || n == 0) return;
  dispatch_floating(logits.dtype, "cross_entropy_backward", [&]<typename T>() {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      cross_entropy_backward_rows(grad_loss.ptr<const T>(), logits.ptr<const T>(), target.ptr<const int64_t>(),
                                  weight.ptr<const T>(), ignore_index, label_smoothing, stats.ptr<const T>(),
                                  grad_logits.ptr<T>(), rows, n);
    }
  });
}

}  // namespace ember::cpu
