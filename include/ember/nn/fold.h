#pragma once
/// torch.nn.Unfold / Fold and torch.nn.functional.unfold / fold (im2col and col2im), composed of
/// ember's ops: unfold gathers every window's elements from the zero-padded input with one
/// index_select, and fold, its adjoint, adds the columns into a zero-padded output with one
/// scatter_add and crops the padding. So both are differentiable on every device, each the
/// other's gradient. Sizes are one value (both dimensions) or a [height, width] pair.
#include <cstdint>
#include <string>
#include <vector>

#include "ember/nn/module.h"
#include "ember/tensor.h"

namespace ember::nn {

namespace functional {

/// input [N, C, H, W] or unbatched [C, H, W] -> [N, C*kh*kw, L] (or [C*kh*kw, L]): column l holds
/// the window at block l (row-major over the L = out_h * out_w blocks), ordered channel, then
/// kernel row, then kernel column, as PyTorch's im2col.
Tensor unfold(const Tensor& input, IntList kernel_size, IntList dilation = {1}, IntList padding = {0},
              IntList stride = {1});
/// input [N, C*kh*kw, L] or unbatched [C*kh*kw, L] -> [N, C, output_size] (or [C, output_size]):
/// sums every column's elements into their places, as PyTorch's col2im.
Tensor fold(const Tensor& input, IntList output_size, IntList kernel_size, IntList dilation = {1},
            IntList padding = {0}, IntList stride = {1});

}  // namespace functional

/// torch.nn.Unfold(kernel_size, dilation=1, padding=0, stride=1).
class Unfold : public Module {
 public:
  explicit Unfold(std::vector<int64_t> kernel_size, std::vector<int64_t> dilation = {1},
                  std::vector<int64_t> padding = {0}, std::vector<int64_t> stride = {1});
  std::string name() const override { return "Unfold"; }
  Tensor forward(const Tensor& input) override;
  std::vector<int64_t> kernel_size, dilation, padding, stride;
};

/// torch.nn.Fold(output_size, kernel_size, dilation=1, padding=0, stride=1).
class Fold : public Module {
 public:
  Fold(std::vector<int64_t> output_size, std::vector<int64_t> kernel_size, std::vector<int64_t> dilation = {1},
       std::vector<int64_t> padding = {0}, std::vector<int64_t> stride = {1});
  std::string name() const override { return "Fold"; }
  Tensor forward(const Tensor& input) override;
  std::vector<int64_t> output_size, kernel_size, dilation, padding, stride;
};

}  // namespace ember::nn
