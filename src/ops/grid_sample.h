#pragma once
// grid_sample's front end (src/ops/grid_sample.cpp), for torch.nn.functional.grid_sample
// (src/nn/vision.cpp), which parses the mode names and align_corners' default.
#include "backend/backend.h"  // GridSampleArgs
#include "ember/tensor.h"

namespace ember::ops {

/// PyTorch's grid_sampler: `input` [N, C, H, W] (or [N, C, D, H, W]) sampled at `grid`
/// [N, H_out, W_out, 2] (or [N, D_out, H_out, W_out, 3]), with ATen's checks and messages in
/// its order, one backend call forward and one recorded node (GridSampler2DBackward0 or
/// GridSampler3DBackward0) whose backward is one backend call. float16 and bfloat16 are
/// computed in float32. A backward pass that records itself (create_graph) differentiates the
/// composed form instead (the same taps as ember ops), so that second derivatives exist.
Tensor grid_sample(const Tensor& input, const Tensor& grid, const GridSampleArgs& args);

}  // namespace ember::ops
