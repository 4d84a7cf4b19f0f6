#pragma once
/// Power-average pooling: torch.nn.functional.lp_pool1d / lp_pool2d and the LPPool1d and LPPool2d
/// layers, composed as PyTorch composes them: the average pool of x^p over each window, then
/// (sign(s) * relu(|s|) * window size)^(1/p), so a window whose p-th powers sum to zero gives 0.
/// A norm_type of +inf is the max pool of |x| and -inf the negated max pool of -|x|; 0 is refused.
/// Inputs are [N, C, L] / [C, L] (1-D) and [N, C, H, W] / [C, H, W] (2-D); the windows have no
/// padding, and `stride` empty means kernel_size, as PyTorch's stride=None.
#include <cstdint>
#include <string>
#include <vector>

#include "ember/nn/module.h"
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

/// torch.nn.LPPool1d(norm_type, kernel_size, stride=None, ceil_mode=False).
class LPPool1d : public Module {
 public:
  LPPool1d(double norm_type, std::vector<int64_t> kernel_size, std::vector<int64_t> stride = {},
           bool ceil_mode = false);
  std::string name() const override { return "LPPool1d"; }
  Tensor forward(const Tensor& input) override;
  double norm_type;
  std::vector<int64_t> kernel_size, stride;
  bool ceil_mode;
};

/// torch.nn.LPPool2d(norm_type, kernel_size, stride=None, ceil_mode=False).
class LPPool2d : public Module {
 public:
  LPPool2d(double norm_type, std::vector<int64_t> kernel_size, std::vector<int64_t> stride = {},
           bool ceil_mode = false);
  std::string name() const override { return "LPPool2d"; }
  Tensor forward(const Tensor& input) override;
  double norm_type;
  std::vector<int64_t> kernel_size, stride;
  bool ceil_mode;
};

}  // namespace ember::nn
