#pragma once
// The networks `ember train --model` builds.
#include <memory>
#include <string>
#include <vector>

#include "ember/nn/module.h"

namespace ember::train {

/// The names --model accepts, in the order `ember train --help` lists them.
const std::vector<std::string>& model_names();

/// A freshly initialised network (drawing from ember's default generator):
///   mlp: the PyTorch quickstart network — Flatten, Linear 784→512, ReLU, Linear 512→512, ReLU,
///        Linear 512→10;
///   cnn: the pytorch/examples MNIST network — Conv 1→32 3×3, ReLU, Conv 32→64 3×3, ReLU,
///        MaxPool 2, Dropout 0.25, Flatten, Linear 9216→128, ReLU, Dropout 0.5, Linear 128→10.
/// Both take [N, 1, 28, 28] images and return [N, 10] logits. An unknown name is an ember::Error
/// that lists the known ones.
std::shared_ptr<nn::Module> make_model(const std::string& name);

}  // namespace ember::train
