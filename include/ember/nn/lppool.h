#pragma once
/// Power-average pooling: torch.nn.functional.lp_pool1d / lp_pool2d and the LPPool1d and LPPool2d
/// layers, composed as PyTorch composes them: the average pool of x^p over each window, then
/// (sign(s) * relu(|s|) * window size)^(1/p), so a window whose p-th powers sum to zero gives 0.
/// A norm_type of +inf is the max pool of |x| and -inf the negated max pool of -|x|; 0 is refused.
/// Inputs are [N, C, L] / [C, L] (1-D) and [N, C, H, W] / [C, H, W] (2-D); the windows have no
/// padding, and `stride` empty means kernel_size, as PyTorch's stride=None.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ember/nn/module.h"
#include "ember/nn/modules.h"
#include "ember/nn/sizes.h"
#include "ember/tensor.h"

namespace ember::nn {

namespace functional {

/// kernel_size and stride are one value each.
Tensor lp_pool1d(const Tensor& input, double norm_type, IntList kernel_size, IntList stride = {},
                 bool ceil_mode = false);
/// kernel_size and stride are one value (both dimensions) or a [height, width] pair.
Tensor lp_pool2d(const Tensor& input, double norm_type, IntList kernel_size, IntList stride = {},
                 bool ceil_mode = false);

}  // namespace functional

/// The options of nn.LPPool1d after norm_type and kernel_size.
struct LPPool1dOptions {
  detail::DesignatedOnly designated_only = {};
  ExpandingSize<1> stride = {};  // {}: kernel_size
  bool ceil_mode = false;
};

/// torch.nn.LPPool1d(norm_type, kernel_size, stride=None, ceil_mode=False). The stored sizes
/// hold one value (stride empty when omitted).
///   nn::LPPool1d(2, 3, 2);                       nn::LPPool1d(2, 3, {.ceil_mode = true});
class LPPool1d : public Module {
 public:
  LPPool1d(double norm_type, ExpandingSize<1> kernel_size, LPPool1dOptions options);
  /// PyTorch's positional order (a template only so that the options form wins a call GCC 12
  /// reads as either, as MaxPool1d's).
  template <int = 0>
  LPPool1d(double norm_type, ExpandingSize<1> kernel_size, ExpandingSize<1> stride = {}, bool ceil_mode = false)
      : LPPool1d(norm_type, std::move(kernel_size),
                 LPPool1dOptions{.stride = std::move(stride), .ceil_mode = ceil_mode}) {}
  std::string name() const override { return "LPPool1d"; }
  Tensor forward(const Tensor& input) override;
  double norm_type;
  std::vector<int64_t> kernel_size, stride;
  bool ceil_mode;
};

/// The options of nn.LPPool2d after norm_type and kernel_size.
struct LPPool2dOptions {
  detail::DesignatedOnly designated_only = {};
  ExpandingSize<2> stride = {};  // {}: kernel_size
  bool ceil_mode = false;
};

/// torch.nn.LPPool2d(norm_type, kernel_size, stride=None, ceil_mode=False). The stored sizes
/// hold two values (stride empty when omitted).
class LPPool2d : public Module {
 public:
  LPPool2d(double norm_type, ExpandingSize<2> kernel_size, LPPool2dOptions options);
  template <int = 0>
  LPPool2d(double norm_type, ExpandingSize<2> kernel_size, ExpandingSize<2> stride = {}, bool ceil_mode = false)
      : LPPool2d(norm_type, std::move(kernel_size),
                 LPPool2dOptions{.stride = std::move(stride), .ceil_mode = ceil_mode}) {}
  std::string name() const override { return "LPPool2d"; }
  Tensor forward(const Tensor& input) override;
  double norm_type;
  std::vector<int64_t> kernel_size, stride;
  bool ceil_mode;
};

}  // namespace ember::nn
