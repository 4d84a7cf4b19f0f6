// CpuBackend::grid_sample and grid_sample_backward: 4-D ([N, C, H, W], grid [N, Ho, Wo, 2]) and
// 5-D ([N, C, D, H, W], grid [N, Do, Ho, Wo, 3]) inputs, nearest, bilinear and bicubic taps with
// PyTorch's padding rules (kernels/grid_sample_ops.h), float32 and float64.
//
// The forward pass runs one task per block of output rows (a sample's grid row: Wo points): it
// first lists each point's corners (the pixels it reads, with their weights: 4 for bilinear, 16
// for bicubic, 8 for trilinear, only the ones inside the input), then walks the channels, each
// writing its output row contiguously. The lists live in a buffer made once per task.
//
// The backward pass runs one task per sample, since a sample's points add into its own slice of
// grad_x only (no two tasks write the same element, and the sums keep one order whatever the
// thread count); each point writes its grad_grid entries once, after summing over the channels.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/grid_sample_views.h"
#include "base/parallel.h"
#include "core/check.h"
#include "kernels/grid_sample_ops.h"

namespace ember::cpu {
namespace {

using kernels::grid_geometry_of;
using kernels::GridCorners;
template <int S>
using Geometry = kernels::GridGeometry<S>;

template <typename T, int S, int K>
void forward_typed(const TensorView& xv, const TensorView& gridv, const GridSampleArgs& args, const TensorView& outv) {
  using Corners = GridCorners<T, S, K>;
  constexpr int kCorners = Corners::kCount;
  const Geometry<S> geo = grid_geometry_of<S>(xv, gridv);
  const T* x = xv.ptr<const T>();
  const T* grid = gridv.ptr<const T>();
  T* out = outv.ptr<T>();
  const int64_t width = geo.out_size[S - 1];
  const int64_t rows_per_sample = geo.points / width;
  const int64_t row_work = std::max<int64_t>(1, width * geo.channels * kCorners);
  base::parallel_for(geo.n * rows_per_sample, std::max<int64_t>(1, base::kGrainSize / row_work),
                     [&](int64_t begin, int64_t end) {
                       std::vector<int64_t> offsets(static_cast<size_t>(width * kCorners));
                       std::vector<T> weights(static_cast<size_t>(width * kCorners));
                       std::vector<int> counts(static_cast<size_t>(width));
                       for (int64_t row = begin; row < end; ++row) {
                         const int64_t sample = row / rows_per_sample;
                         const int64_t first_point = (row % rows_per_sample) * width;
                         for (int64_t w = 0; w < width; ++w) {
                           int64_t at[S];
                           const T* coords = grid + geo.grid_offset(sample, first_point + w, at);
                           const Corners corners = kernels::grid_corners_of<T, S, K>(coords, geo, args);
                           int64_t* offset = offsets.data() + w * kCorners;
                           T* weight = weights.data() + w * kCorners;
                           int count = 0;
                           for (int j = 0; j < kCorners; ++j)
                             if (corners.corner(j, offset + count, weight + count, nullptr)) ++count;
                           counts[static_cast<size_t>(w)] = count;
                         }
                         const T* x_sample = x + sample * geo.x_sample;
                         T* out_row = out + sample * geo.channels * geo.points + first_point;
                         for (int64_t c = 0; c < geo.channels; ++c) {
                           const T* plane = x_sample + c * geo.x_channel;
                           T* out_c = out_row + c * geo.points;
                           for (int64_t w = 0; w < width; ++w) {
                             const int64_t* offset = offsets.data() + w * kCorners;
                             const T* weight = weights.data() + w * kCorners;
                             T acc = 0;
                             for (int j = 0; j < counts[static_cast<size_t>(w)]; ++j)
                               acc += weight[j] * plane[offset[j]];
                             out_c[w] = acc;
                           }
                         }
                       }
                     });
}

template <typename T, int S, int K>
void backward_typed(const TensorView& gv, const TensorView& xv, const TensorView& gridv, const GridSampleArgs& args,
                    const TensorView& grad_xv, const TensorView& grad_gridv) {
  using Corners = GridCorners<T, S, K>;
  constexpr int kCorners = Corners::kCount;
  const Geometry<S> geo = grid_geometry_of<S>(xv, gridv);
  const T* g = gv.ptr<const T>();
  const T* x = xv.ptr<const T>();
  const T* grid = gridv.ptr<const T>();
  T* grad_x = grad_xv.ptr<T>();        // null when not wanted
  T* grad_grid = grad_gridv.ptr<T>();  // null when not wanted
  const int64_t g_sample = gv.strides[0], g_channel = gv.strides[1];
  int64_t g_stride[S];
  for (int d = 0; d < S; ++d) g_stride[d] = gv.strides[2 + d];
  const int64_t grad_x_per_sample = grad_xv.numel() / std::max<int64_t>(1, geo.n);
  const int64_t sample_work = std::max<int64_t>(1, geo.points * geo.channels * kCorners);
  base::parallel_for(geo.n, std::max<int64_t>(1, base::kGrainSize / sample_work), [&](int64_t begin, int64_t end) {
    for (int64_t sample = begin; sample < end; ++sample) {
      // x and grad_x are both contiguous (checked), so x's offsets are grad_x's too.
      T* grad_x_sample = grad_x == nullptr ? nullptr : grad_x + sample * grad_x_per_sample;
      if (grad_x_sample != nullptr) std::fill_n(grad_x_sample, grad_x_per_sample, T(0));
      const T* x_sample = x + sample * geo.x_sample;
      for (int64_t p = 0; p < geo.points; ++p) {
        int64_t at[S];
        const T* coords = grid + geo.grid_offset(sample, p, at);
        const Corners corners = kernels::grid_corners_of<T, S, K>(coords, geo, args);
        int64_t offset[kCorners];
        T weight[kCorners];
        T slopes[kCorners][S];
        int count = 0;
        for (int j = 0; j < kCorners; ++j)
          if (corners.corner(j, offset + count, weight + count, slopes[count])) ++count;
        int64_t g_point = sample * g_sample;
        for (int d = 0; d < S; ++d) g_point += at[d] * g_stride[d];
        T grad_coord[S] = {};
        for (int64_t c = 0; c < geo.channels; ++c) {
          const T gc = g[g_point + c * g_channel];
          if (grad_x_sample != nullptr) {
            T* plane = grad_x_sample + c * geo.x_channel;
            for (int j = 0; j < count; ++j) plane[offset[j]] += weight[j] * gc;
          }
          if (grad_grid != nullptr && K > 1) {
            const T* plane = x_sample + c * geo.x_channel;
            for (int j = 0; j < count; ++j) {
              const T v = plane[offset[j]] * gc;
              for (int d = 0; d < S; ++d) grad_coord[d] += v * slopes[j][d];
            }
          }
        }
        if (grad_grid != nullptr) {
          T* out = grad_grid + (sample * geo.points + p) * S;
          for (int d = 0; d < S; ++d) out[S - 1 - d] = grad_coord[d];  // x (W) first
        }
      }
    }
  });
}

}  // namespace

void CpuBackend::grid_sample(const TensorView& x, const TensorView& grid, const GridSampleArgs& args,
                             const TensorView& out) {
  grid_sample_views::check_forward(x, grid, out);
  EMBER_CHECK(out.data != nullptr || out.numel() == 0, "grid_sample: out has no data");
  if (out.numel() == 0) return;
  grid_sample_views::dispatch(x, args, "grid_sample",
                              [&]<typename T, int S, int K>() { forward_typed<T, S, K>(x, grid, args, out); });
}

void CpuBackend::grid_sample_backward(const TensorView& grad_out, const TensorView& x, const TensorView& grid,
                                      const GridSampleArgs& args, const TensorView& grad_x,
                                      const TensorView& grad_grid) {
  grid_sample_views::check_backward(grad_out, x, grid, grad_x, grad_grid);
  if (grad_x.data == nullptr && grad_grid.data == nullptr) return;
  if (grad_out.numel() == 0) {  // no channels or no points: the gradients are zero
    grid_sample_views::dispatch(x, args, "grid_sample_backward", [&]<typename T, int S, int K>() {
      if (grad_x.data != nullptr) std::fill_n(grad_x.ptr<T>(), grad_x.numel(), T(0));
      if (grad_grid.data != nullptr) std::fill_n(grad_grid.ptr<T>(), grad_grid.numel(), T(0));
    });
    return;
  }
  grid_sample_views::dispatch(x, args, "grid_sample_backward", [&]<typename T, int S, int K>() {
    backward_typed<T, S, K>(grad_out, x, grid, args, grad_x, grad_grid);
  });
}

}  // namespace ember::cpu
