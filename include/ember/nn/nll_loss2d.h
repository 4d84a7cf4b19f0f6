#pragma once
/// torch.nn.NLLLoss2d: PyTorch's deprecated alias of NLLLoss (which takes [N, C, H, W] inputs with
/// [N, H, W] targets as well), with NLLLoss's arguments, defaults and computation.
#include <string>

#include "ember/nn/loss.h"

namespace ember::nn {

using NLLLoss2dOptions = NLLLossOptions;

class NLLLoss2d : public NLLLoss {
 public:
  using NLLLoss::NLLLoss;
  std::string name() const override { return "NLLLoss2d"; }
};

}  // namespace ember::nn
