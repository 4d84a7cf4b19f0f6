#pragma once
// The optimizer configurations the device suites step on a device and on the CPU: every
// optimizer, with the options that take their update down different paths (momentum, Nesterov,
// dampening, maximize, amsgrad, centered, weight decay).
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ember/optim/optimizers.h"
#include "ember/tensor.h"

namespace ember_test {

using OptimizerFactory = std::function<std::unique_ptr<ember::optim::Optimizer>(std::vector<ember::Tensor>)>;

inline std::vector<std::pair<std::string, OptimizerFactory>> optimizer_cases() {
  using namespace ember::optim;
  return {
      {"SGD", [](auto p) { return std::make_unique<SGD>(p, SGDOptions{.lr = 0.1}); }},
      {"SGD momentum weight_decay",
       [](auto p) { return std::make_unique<SGD>(p, SGDOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-2}); }},
      {"SGD nesterov",
       [](auto p) { return std::make_unique<SGD>(p, SGDOptions{.lr = 0.05, .momentum = 0.9, .nesterov = true}); }},
      {"SGD dampening maximize",
       [](auto p) {
         return std::make_unique<SGD>(p, SGDOptions{.lr = 0.05, .momentum = 0.5, .dampening = 0.3, .maximize = true});
       }},
      {"Adam", [](auto p) { return std::make_unique<Adam>(p, AdamOptions{.lr = 0.01}); }},
      {"Adam weight_decay amsgrad",
       [](auto p) { return std::make_unique<Adam>(p, AdamOptions{.lr = 0.01, .weight_decay = 0.1, .amsgrad = true}); }},
      {"AdamW", [](auto p) { return std::make_unique<AdamW>(p, AdamWOptions{.lr = 0.01}); }},
      {"AdamW amsgrad maximize",
       [](auto p) { return std::make_unique<AdamW>(p, AdamWOptions{.lr = 0.01, .amsgrad = true, .maximize = true}); }},
      {"Adadelta", [](auto p) { return std::make_unique<Adadelta>(p, AdadeltaOptions{.weight_decay = 0.1}); }},
      {"RMSprop", [](auto p) { return std::make_unique<RMSprop>(p, RMSpropOptions{.lr = 0.01}); }},
      {"RMSprop centered momentum",
       [](auto p) {
         return std::make_unique<RMSprop>(
             p, RMSpropOptions{.lr = 0.01, .weight_decay = 0.01, .momentum = 0.5, .centered = true});
       }},
  };
}

}  // namespace ember_test
