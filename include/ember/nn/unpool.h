#pragma once
/// Max unpooling: torch.nn.functional.max_unpool1d / 2d / 3d and the MaxUnpool1d / 2d / 3d
/// layers, the partial inverse of max pooling: each input value goes to the position its index
/// (from max_pool*d(..., return_indices)) names within its plane of the output, and every other
/// output element is zero. Built on ember::scatter, whose gradient reads the output's gradient
/// back at the indices. Inputs are [N, C, *spatial] or [C, *spatial].
#include <cstdint>
#include <optional>
#include <string>

#include "ember/nn/module.h"
#include "ember/nn/modules.h"
#include "ember/nn/sizes.h"
#include "ember/tensor.h"

namespace ember::nn {

namespace functional {

/// The output size along each spatial dimension is (in - 1) * stride - 2 * padding + kernel_size
/// unless `output_size` (the spatial sizes, or with N and C in front) asks for another within
/// stride of it. `stride` empty means kernel_size; sizes are one value or one per dimension.
Tensor max_unpool1d(const Tensor& input, const Tensor& indices, IntList kernel_size, IntList stride = {},
                    IntList padding = {0}, IntList output_size = {});
Tensor max_unpool2d(const Tensor& input, const Tensor& indices, IntList kernel_size, IntList stride = {},
                    IntList padding = {0}, IntList output_size = {});
Tensor max_unpool3d(const Tensor& input, const Tensor& indices, IntList kernel_size, IntList stride = {},
                    IntList padding = {0}, IntList output_size = {});

}  // namespace functional

/// The options of nn.MaxUnpool<D>d after kernel_size: stride (kernel_size when absent) and padding.
template <size_t D>
struct MaxUnpoolOptions {
  detail::DesignatedOnly designated_only = {};
  std::optional<ExpandingSize<D>> stride = std::nullopt;
  ExpandingSize<D> padding = 0;
};
using MaxUnpool1dOptions = MaxUnpoolOptions<1>;
using MaxUnpool2dOptions = MaxUnpoolOptions<2>;
using MaxUnpool3dOptions = MaxUnpoolOptions<3>;

/// torch.nn.MaxUnpool<D>d(kernel_size, stride=None, padding=0), with forward(input, indices) and
/// forward(input, indices, output_size). No parameters or buffers.
///   nn::MaxUnpool2d unpool(2);                    unpool.forward(y, indices, {5, 5});
///   nn::MaxUnpool3d(3, {.stride = 2, .padding = 1});
template <size_t D>
class MaxUnpool : public Module {
 public:
  explicit MaxUnpool(ExpandingSize<D> kernel_size, MaxUnpoolOptions<D> options = {});
  MaxUnpool(ExpandingSize<D> kernel_size, ExpandingSize<D> stride, ExpandingSize<D> padding = 0)
      : MaxUnpool(std::move(kernel_size),
                  MaxUnpoolOptions<D>{.stride = std::move(stride), .padding = std::move(padding)}) {}
  std::string name() const override;
  /// A single tensor is not enough to unpool: this throws, naming forward(input, indices).
  Tensor forward(const Tensor& input) override;
  Tensor forward(const Tensor& input, const Tensor& indices, IntList output_size = {});

  ExpandingSize<D> kernel_size, stride, padding;
};
using MaxUnpool1d = MaxUnpool<1>;
using MaxUnpool2d = MaxUnpool<2>;
using MaxUnpool3d = MaxUnpool<3>;

extern template class MaxUnpool<1>;
extern template class MaxUnpool<2>;
extern template class MaxUnpool<3>;

}  // namespace ember::nn
