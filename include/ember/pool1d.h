#pragma once
/// 1-D pooling (src/ops/pooling.cpp): the ops behind nn::functional's max_pool1d, avg_pool1d and
/// adaptive_avg_pool1d (ember/nn/pooling.h says what each computes). As in PyTorch, each checks
/// its own arguments and runs the 2-D op on the input with a height of one inserted before the
/// last dimension, so the results, gradients and the 2-D op's remaining messages are the 2-D
/// op's. Inputs are [N, C, L] or unbatched [C, L]; window sizes are lists of one value.
#include <tuple>

#include "ember/tensor.h"

namespace ember {

/// As nn::functional::max_pool1d; `stride` empty means kernel_size.
Tensor max_pool1d(const Tensor& input, IntList kernel_size, IntList stride = {}, IntList padding = {0},
                  IntList dilation = {1}, bool ceil_mode = false);
/// As max_pool1d(return_indices=True): also the int64 position of each maximum along L.
std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, IntList kernel_size, IntList stride = {},
                                                   IntList padding = {0}, IntList dilation = {1},
                                                   bool ceil_mode = false);
/// As nn::functional::avg_pool1d.
Tensor avg_pool1d(const Tensor& input, IntList kernel_size, IntList stride = {}, IntList padding = {0},
                  bool ceil_mode = false, bool count_include_pad = true);
/// As nn::functional::adaptive_avg_pool1d: output_size is one value.
Tensor adaptive_avg_pool1d(const Tensor& input, IntList output_size);

}  // namespace ember
