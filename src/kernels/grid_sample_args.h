#pragma once
// grid_sample's modes and arguments: named here, below the backend interface that takes them
// (backend/backend.h) and the pixel arithmetic (kernels/grid_sample_ops.h) that carries them out.
#include <cstdint>

namespace ember {

/// grid_sample's interpolation and padding (torch.nn.functional.grid_sample's mode and
/// padding_mode), for 4-D inputs with a [N, H, W, 2] grid and 5-D ones with a [N, D, H, W, 3] grid.
enum class GridSampleMode : uint8_t { Bilinear, Nearest, Bicubic };
enum class GridSamplePadding : uint8_t { Zeros, Border, Reflection };
struct GridSampleArgs {
  GridSampleMode mode = GridSampleMode::Bilinear;
  GridSamplePadding padding = GridSamplePadding::Zeros;
  bool align_corners = false;
};

}  // namespace ember
