#pragma once
// The reduction every loss ends with, shared by the losses of functional.cpp and loss.cpp.
#include "ember/nn/functional.h"
#include "ember/tensor.h"

namespace ember::nn::functional {

/// The per-element `loss` itself (None), its sum, or its mean over all elements.
inline Tensor reduce_loss(const Tensor& loss, Reduction reduction) {
  switch (reduction) {
    case Reduction::None:
      return loss;
    case Reduction::Sum:
      return loss.sum();
    case Reduction::Mean:
      return loss.mean();
  }
  return loss;
}

}  // namespace ember::nn::functional
