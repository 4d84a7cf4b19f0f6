#pragma once
/// The layers of ember::nn (torch.nn's names, arguments and default initialisations).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/nn/functional.h"
#include "ember/nn/module.h"

namespace ember::nn {

/// y = x W^T + b. W: kaiming_uniform_(a = √5); b: uniform(±1/√in_features); drawn in that order.
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  std::string name() const override { return "Linear"; }
  Tensor forward(const Tensor& input) override;
  /// Redraws weight then bias from the global generator, as PyTorch's reset_parameters().
  void reset_parameters();

  int64_t in_features, out_features;
  Tensor weight, bias;  // bias is undefined when built without one
};

class Flatten : public Module {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1) : start_dim(start_dim), end_dim(end_dim) {}
  std::string name() const override { return "Flatten"; }
  Tensor forward(const Tensor& input) override { return functional::flatten(input, start_dim, end_dim); }
  int64_t start_dim, end_dim;
};

class ReLU : public Module {
 public:
  /// With `inplace`, forward writes into its input, as nn.ReLU(inplace=True).
  explicit ReLU(bool inplace = false) : inplace(inplace) {}
  std::string name() const override { return "ReLU"; }
  Tensor forward(const Tensor& input) override { return functional::relu(input, inplace); }
  bool inplace;
};

class GELU : public Module {
 public:
  explicit GELU(std::string approximate = "none");
  std::string name() const override { return "GELU"; }
  Tensor forward(const Tensor& input) override { return functional::gelu(input, approximate); }
  std::string approximate;
};

class SiLU : public Module {
 public:
  std::string name() const override { return "SiLU"; }
  Tensor forward(const Tensor& input) override { return functional::silu(input); }
};

class Tanh : public Module {
 public:
  std::string name() const override { return "Tanh"; }
  Tensor forward(const Tensor& input) override { return functional::tanh(input); }
};

class Sigmoid : public Module {
 public:
  std::string name() const override { return "Sigmoid"; }
  Tensor forward(const Tensor& input) override { return functional::sigmoid(input); }
};

class Softmax : public Module {
 public:
  explicit Softmax(int64_t dim) : dim(dim) {}
  std::string name() const override { return "Softmax"; }
  Tensor forward(const Tensor& input) override { return functional::softmax(input, dim); }
  int64_t dim;
};

class LogSoftmax : public Module {
 public:
  explicit LogSoftmax(int64_t dim) : dim(dim) {}
  std::string name() const override { return "LogSoftmax"; }
  Tensor forward(const Tensor& input) override { return functional::log_softmax(input, dim); }
  int64_t dim;
};

/// Zeroes elements with probability p while training (scaling the rest by 1/(1-p)); identity in eval().
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5);
  std::string name() const override { return "Dropout"; }
  Tensor forward(const Tensor& input) override { return functional::dropout(input, p, is_training()); }
  double p;
};

/// A lookup table [num_embeddings, embedding_dim], initialised from N(0, 1).
class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim);
  std::string name() const override { return "Embedding"; }
  Tensor forward(const Tensor& indices) override { return functional::embedding(indices, weight); }
  int64_t num_embeddings, embedding_dim;
  Tensor weight;
};

/// Normalises over the trailing normalized_shape dimensions; weight ones, bias zeros.
class LayerNorm : public Module {
 public:
  explicit LayerNorm(std::vector<int64_t> normalized_shape, double eps = 1e-5, bool elementwise_affine = true,
                     bool bias = true);
  std::string name() const override { return "LayerNorm"; }
  Tensor forward(const Tensor& input) override;
  std::vector<int64_t> normalized_shape;
  double eps;
  Tensor weight, bias;  // undefined without elementwise_affine (bias also when bias = false)
};

/// torch.nn.GroupNorm: normalises input [N, C, *] over groups of C / num_groups channels; with
/// affine, weight [C] (ones) and bias [C] (zeros) scale and shift each channel.
class GroupNorm : public Module {
 public:
  GroupNorm(int64_t num_groups, int64_t num_channels, double eps = 1e-5, bool affine = true);
  std::string name() const override { return "GroupNorm"; }
  Tensor forward(const Tensor& input) override;
  int64_t num_groups, num_channels;
  double eps;
  Tensor weight, bias;  // undefined without affine
};

/// Runs its children in order; they are named "0", "1", ... as in PyTorch.
class Sequential : public Module {
 public:
  Sequential() = default;
  template <typename... Modules>
  explicit Sequential(std::shared_ptr<Modules>... modules) {
    (push_back(std::move(modules)), ...);
  }
  std::string name() const override { return "Sequential"; }
  Tensor forward(const Tensor& input) override;
  void push_back(std::shared_ptr<Module> module);
  size_t size() const { return child_list().size(); }
  /// The i-th child; negative i counts from the end.
  std::shared_ptr<Module> operator[](int64_t index) const;
};

/// Holds modules so that they are registered (named "0", "1", ...); it has no forward of its own.
class ModuleList : public Module {
 public:
  ModuleList() = default;
  explicit ModuleList(const std::vector<std::shared_ptr<Module>>& modules);
  std::string name() const override { return "ModuleList"; }
  void push_back(std::shared_ptr<Module> module);
  size_t size() const { return child_list().size(); }
  std::shared_ptr<Module> operator[](int64_t index) const;
  auto begin() const { return child_list().begin(); }
  auto end() const { return child_list().end(); }
};

}  // namespace ember::nn
