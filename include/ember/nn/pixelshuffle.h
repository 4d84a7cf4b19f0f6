#pragma once
/// torch.nn.PixelShuffle, PixelUnshuffle and ChannelShuffle and their torch.nn.functional forms:
/// rearrangements composed of reshape and permute. As PyTorch's, each result is a new tensor
/// (never a view of the input), of the input's dtype; the checks and messages are PyTorch's.
#include <cstdint>
#include <string>

#include "ember/nn/module.h"
#include "ember/tensor.h"

namespace ember::nn {
namespace functional {

/// [*, C r^2, H, W] -> [*, C, H r, W r]: out[..., c, h r + i, w r + j] = in[..., c r^2 + i r + j, h, w].
Tensor pixel_shuffle(const Tensor& input, int64_t upscale_factor);
/// The inverse of pixel_shuffle: [*, C, H r, W r] -> [*, C r^2, H, W].
Tensor pixel_unshuffle(const Tensor& input, int64_t downscale_factor);
/// [N, C, *] with C = g k: channel i k + j moves to j g + i (the channels of `groups` groups
/// interleaved), as in ShuffleNet.
Tensor channel_shuffle(const Tensor& input, int64_t groups);

}  // namespace functional

class PixelShuffle : public Module {
 public:
  explicit PixelShuffle(int64_t upscale_factor) : upscale_factor(upscale_factor) {}
  std::string name() const override { return "PixelShuffle"; }
  Tensor forward(const Tensor& input) override { return functional::pixel_shuffle(input, upscale_factor); }
  int64_t upscale_factor;
};

class PixelUnshuffle : public Module {
 public:
  explicit PixelUnshuffle(int64_t downscale_factor) : downscale_factor(downscale_factor) {}
  std::string name() const override { return "PixelUnshuffle"; }
  Tensor forward(const Tensor& input) override { return functional::pixel_unshuffle(input, downscale_factor); }
  int64_t downscale_factor;
};

class ChannelShuffle : public Module {
 public:
  explicit ChannelShuffle(int64_t groups) : groups(groups) {}
  std::string name() const override { return "ChannelShuffle"; }
  Tensor forward(const Tensor& input) override { return functional::channel_shuffle(input, groups); }
  int64_t groups;
};

}  // namespace ember::nn
