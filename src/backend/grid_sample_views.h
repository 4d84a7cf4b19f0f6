#pragma once
// What the CPU and CUDA grid_sample kernels (cpu/grid_sample.cpp, cuda/grid_sample.cu) check of
// the views they are handed, and how they pick a kernel instance: host code both share.
#include <cstdint>

#include "backend/backend.h"
#include "core/check.h"

namespace ember::grid_sample_views {

/// x [N, C, *spatial] (4-D or 5-D, no empty spatial dimension) and grid [N, *out_spatial, rank - 2]
/// of one dtype.
inline void check_input_and_grid(const TensorView& x, const TensorView& grid, const char* op) {
  const int64_t rank = x.ndim();
  EMBER_CHECK((rank == 4 || rank == 5) && grid.ndim() == rank && grid.sizes[rank - 1] == rank - 2 &&
                  grid.sizes[0] == x.sizes[0] && grid.dtype == x.dtype,
              op, ": expects x [N, C, *spatial] (4-D or 5-D) and grid [N, *out_spatial, ", rank - 2, "] of one dtype");
  for (int64_t d = 2; d < rank; ++d) EMBER_CHECK(x.sizes[d] > 0, op, ": x has an empty spatial dimension");
}

/// Whether `v` is an [N, C, *out_spatial] view in x's dtype (an output or its gradient).
inline bool is_sampled_shape(const TensorView& v, const TensorView& x, const TensorView& grid) {
  bool matches = v.ndim() == x.ndim() && v.dtype == x.dtype && v.sizes[0] == x.sizes[0] && v.sizes[1] == x.sizes[1];
  for (int64_t d = 2; matches && d < x.ndim(); ++d) matches = v.sizes[d] == grid.sizes[d - 1];
  return matches;
}

/// The forward pass's views: out is contiguous.
inline void check_forward(const TensorView& x, const TensorView& grid, const TensorView& out) {
  check_input_and_grid(x, grid, "grid_sample");
  EMBER_CHECK(is_sampled_shape(out, x, grid) && out.is_contiguous(),
              "grid_sample: out must be a contiguous [N, C, *out_spatial] view in x's dtype");
}

/// The backward pass's views: grad_out with any strides; grad_x (x then contiguous too) and
/// grad_grid contiguous, each optional (no data).
inline void check_backward(const TensorView& grad_out, const TensorView& x, const TensorView& grid,
                           const TensorView& grad_x, const TensorView& grad_grid) {
  check_input_and_grid(x, grid, "grid_sample_backward");
  EMBER_CHECK(is_sampled_shape(grad_out, x, grid),
              "grid_sample_backward: grad_out must be an [N, C, *out_spatial] view in x's dtype");
  EMBER_CHECK(grad_x.data == nullptr ||
                  (grad_x.dtype == x.dtype && grad_x.sizes == x.sizes && grad_x.is_contiguous() && x.is_contiguous()),
              "grid_sample_backward: grad_x must be contiguous with x's sizes and dtype, and x contiguous");
  EMBER_CHECK(grad_grid.data == nullptr ||
                  (grad_grid.dtype == x.dtype && grad_grid.sizes == grid.sizes && grad_grid.is_contiguous()),
              "grid_sample_backward: grad_grid must be contiguous with grid's sizes and dtype");
}

/// Runs f.template operator()<T, S, K>() for x's dtype T (float or double), its spatial rank S
/// and the mode's taps per axis K (1 nearest, 2 bilinear, 4 bicubic).
template <typename F>
void dispatch(const TensorView& x, const GridSampleArgs& args, const char* op, const F& f) {
  EMBER_CHECK(x.dtype == kFloat32 || x.dtype == kFloat64, op, ": the kernel takes float32 or float64, got ",
              dtype_name(x.dtype));
  const auto with_type = [&]<typename T>() {
    const auto with_rank = [&]<int S>() {
      switch (args.mode) {
        case GridSampleMode::Nearest:
          return f.template operator()<T, S, 1>();
        case GridSampleMode::Bilinear:
          return f.template operator()<T, S, 2>();
        case GridSampleMode::Bicubic:
          return f.template operator()<T, S, 4>();
      }
    };
    if (x.ndim() == 4) {
      with_rank.template operator()<2>();
    } else {
      with_rank.template operator()<3>();
    }
  };
  if (x.dtype == kFloat32) {
    with_type.template operator()<float>();
  } else {
    with_type.template operator()<double>();
  }
}

}  // namespace ember::grid_sample_views
