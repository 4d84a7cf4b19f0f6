#pragma once
/// torch.nn.Unfold / Fold and torch.nn.functional.unfold / fold (im2col and col2im), composed of
/// ember's ops: unfold gathers every window's elements from the zero-padded input with one
/// index_select, and fold, its adjoint, adds the columns into a zero-padded output with one
/// scatter_add and crops the padding. So both are differentiable on every device, each the
/// other's gradient. Sizes are one value (both dimensions) or a [height, width] pair.
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "ember/nn/module.h"
#include "ember/nn/sizes.h"
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

/// The options of nn.Unfold after kernel_size and of nn.Fold after output_size and kernel_size:
/// each one value (both dimensions) or a [height, width] pair.
struct UnfoldOptions {
  detail::DesignatedOnly designated_only = {};
  SizeList dilation = 1;
  SizeList padding = 0;
  SizeList stride = 1;
};
using FoldOptions = UnfoldOptions;

/// torch.nn.Unfold(kernel_size, dilation=1, padding=0, stride=1).
///   nn::Unfold(3, 1, 1, 2);                      nn::Unfold(3, {.padding = 1, .stride = 2});
class Unfold : public Module {
 public:
  explicit Unfold(SizeList kernel_size) : Unfold(std::move(kernel_size), UnfoldOptions{}) {}
  /// One braced list alone is the kernel size (`{2, 3}`), never a list of constructor arguments.
  explicit Unfold(std::initializer_list<int64_t> kernel_size) : Unfold(SizeList(kernel_size)) {}
  /// (A template only so that GCC 12 does not also read `{.stride = 2}` as a size.)
  template <int = 0>
  Unfold(SizeList kernel_size, SizeList dilation, SizeList padding = 0, SizeList stride = 1)
      : Unfold(std::move(kernel_size),
               UnfoldOptions{
                   .dilation = std::move(dilation), .padding = std::move(padding), .stride = std::move(stride)}) {}
  Unfold(SizeList kernel_size, UnfoldOptions options);
  std::string name() const override { return "Unfold"; }
  Tensor forward(const Tensor& input) override;
  std::vector<int64_t> kernel_size, dilation, padding, stride;
};

/// torch.nn.Fold(output_size, kernel_size, dilation=1, padding=0, stride=1).
///   nn::Fold({4, 5}, 2, 1, 0, 2);                nn::Fold({4, 5}, 2, {.stride = 2});
class Fold : public Module {
 public:
  /// (A template only so that GCC 12 does not also read `{.stride = 2}` as a size.)
  template <int = 0>
  Fold(SizeList output_size, SizeList kernel_size, SizeList dilation = 1, SizeList padding = 0, SizeList stride = 1)
      : Fold(std::move(output_size), std::move(kernel_size),
             FoldOptions{.dilation = std::move(dilation), .padding = std::move(padding), .stride = std::move(stride)}) {
  }
  Fold(SizeList output_size, SizeList kernel_size, FoldOptions options);
  std::string name() const override { return "Fold"; }
  Tensor forward(const Tensor& input) override;
  std::vector<int64_t> output_size, kernel_size, dilation, padding, stride;
};

}  // namespace ember::nn
