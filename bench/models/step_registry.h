#pragma once
// The model families' training steps, for bench/models/bench_models.cpp. Each family's file in
// this folder (<family>_step.cpp) registers one or more steps; bench/models/<family>_pytorch.py
// defines the same steps in PyTorch (same configuration, batch, loss and optimizer), and
// bench/compare_models.sh runs the two alternately and prints the ratios and peak memory.
//
//   EMBER_BENCH_MODEL_STEP(resnet18, "batch 16, 3x64x64, 10 classes, SGD momentum 0.9") {
//     ... build the model, optimizer and one fixed batch on `device` ...
//     return [=]() mutable { ... zero_grad, forward, loss, backward, step ... };
//   }
#include <functional>
#include <string>
#include <vector>

#include "ember/ember.h"

namespace ember_bench {

/// One training step, ready to run: everything it touches was made by its setup.
using Step = std::function<void()>;

struct ModelStep {
  std::string name;    // as given to --family, e.g. "resnet18"
  std::string config;  // what is trained: input, batch, loss, optimizer
  std::function<Step(const ember::Device&)> setup;
};

inline std::vector<ModelStep>& model_steps() {
  static std::vector<ModelStep> steps;
  return steps;
}

inline bool register_model_step(ModelStep step) {
  model_steps().push_back(std::move(step));
  return true;
}

}  // namespace ember_bench

#define EMBER_BENCH_MODEL_STEP(NAME, CONFIG)                            \
  static ember_bench::Step NAME##_setup(const ember::Device& device);   \
  [[maybe_unused]] static const bool NAME##_registered =                \
      ember_bench::register_model_step({#NAME, CONFIG, &NAME##_setup}); \
  static ember_bench::Step NAME##_setup([[maybe_unused]] const ember::Device& device)
