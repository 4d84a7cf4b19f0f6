#pragma once
/// The layers of ember::nn (torch.nn's names, arguments and default initialisations).
///
/// Every layer takes its required arguments, then either PyTorch's optional arguments in
/// PyTorch's order or one `<Layer>Options` struct of them, with PyTorch's names and defaults,
/// written with designated initializers:
///   nn::Linear(10, 5, false);                    nn::Linear(10, 5, {.bias = false});
///   nn::LayerNorm(64, 1e-6);                     nn::LayerNorm({8, 64}, {.eps = 1e-6});
/// Sizes are one number or one per dimension (ember/nn/sizes.h).
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/nn/functional.h"
#include "ember/nn/module.h"
#include "ember/nn/sizes.h"

namespace ember::nn {

/// The options of nn.Linear after in_features and out_features.
struct LinearOptions {
  detail::DesignatedOnly designated_only = {};
  bool bias = true;
};

/// y = x W^T + b. W: kaiming_uniform_(a = √5); b: uniform(±1/√in_features); drawn in that order.
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Linear(int64_t in_features, int64_t out_features, LinearOptions options)
      : Linear(in_features, out_features, options.bias) {}
  std::string name() const override { return "Linear"; }
  Tensor forward(const Tensor& input) override;
  /// Redraws weight then bias from the global generator, as PyTorch's reset_parameters().
  void reset_parameters();

  int64_t in_features, out_features;
  Tensor weight, bias;  // bias is undefined when built without one
};

/// The options of nn.Flatten.
struct FlattenOptions {
  detail::DesignatedOnly designated_only = {};
  int64_t start_dim = 1;
  int64_t end_dim = -1;
};

class Flatten : public Module {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1) : start_dim(start_dim), end_dim(end_dim) {}
  explicit Flatten(FlattenOptions options) : Flatten(options.start_dim, options.end_dim) {}
  std::string name() const override { return "Flatten"; }
  Tensor forward(const Tensor& input) override { return functional::flatten(input, start_dim, end_dim); }
  int64_t start_dim, end_dim;
};

/// The options of the activations whose only argument is `inplace` (nn.ReLU, ReLU6, SELU,
/// Hardsigmoid, Hardswish, Mish, ...; ember/nn/activation.h names one alias per layer).
struct InplaceOptions {
  detail::DesignatedOnly designated_only = {};
  bool inplace = false;
};
using ReLUOptions = InplaceOptions;

class ReLU : public Module {
 public:
  /// With `inplace`, forward writes into its input, as nn.ReLU(inplace=True).
  ///   nn::ReLU(true);                              nn::ReLU({.inplace = true});
  explicit ReLU(bool inplace = false) : inplace(inplace) {}
  explicit ReLU(ReLUOptions options) : ReLU(options.inplace) {}
  std::string name() const override { return "ReLU"; }
  Tensor forward(const Tensor& input) override { return functional::relu(input, inplace); }
  bool inplace;
};

/// The options of nn.GELU.
struct GELUOptions {
  detail::DesignatedOnly designated_only = {};
  std::string approximate = "none";  // or "tanh"
};

class GELU : public Module {
 public:
  /// (A template only so that GCC 12 does not also read `{.approximate = "tanh"}` as a string.)
  template <int = 0>
  explicit GELU(std::string approximate = "none") : GELU(GELUOptions{.approximate = std::move(approximate)}) {}
  explicit GELU(GELUOptions options);
  std::string name() const override { return "GELU"; }
  Tensor forward(const Tensor& input) override { return functional::gelu(input, approximate); }
  std::string approximate;
};

using SiLUOptions = InplaceOptions;

class SiLU : public Module {
 public:
  /// With `inplace`, forward writes into its input, as nn.SiLU(inplace=True).
  explicit SiLU(bool inplace = false) : inplace(inplace) {}
  explicit SiLU(SiLUOptions options) : SiLU(options.inplace) {}
  std::string name() const override { return "SiLU"; }
  Tensor forward(const Tensor& input) override;
  bool inplace;
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

/// The options of nn.Softmax, nn.LogSoftmax and nn.Softmin. PyTorch's dim=None (a deprecated
/// guess from the input's rank) has no counterpart: give the dimension.
struct SoftmaxOptions {
  detail::DesignatedOnly designated_only = {};
  int64_t dim;
};
using LogSoftmaxOptions = SoftmaxOptions;
using SoftminOptions = SoftmaxOptions;

class Softmax : public Module {
 public:
  explicit Softmax(int64_t dim) : dim(dim) {}
  explicit Softmax(SoftmaxOptions options) : Softmax(options.dim) {}
  std::string name() const override { return "Softmax"; }
  Tensor forward(const Tensor& input) override { return functional::softmax(input, dim); }
  int64_t dim;
};

class LogSoftmax : public Module {
 public:
  explicit LogSoftmax(int64_t dim) : dim(dim) {}
  explicit LogSoftmax(LogSoftmaxOptions options) : LogSoftmax(options.dim) {}
  std::string name() const override { return "LogSoftmax"; }
  Tensor forward(const Tensor& input) override { return functional::log_softmax(input, dim); }
  int64_t dim;
};

/// The options of nn.Dropout and of the other dropout layers (ember/nn/dropout.h).
struct DropoutOptions {
  detail::DesignatedOnly designated_only = {};
  double p = 0.5;
  bool inplace = false;
};

/// Zeroes elements with probability p while training (scaling the rest by 1/(1-p)); identity in
/// eval(). With inplace, the result is written into the input while training, as PyTorch's.
///   nn::Dropout(0.1);                            nn::Dropout({.p = 0.1, .inplace = true});
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5, bool inplace = false);
  explicit Dropout(DropoutOptions options) : Dropout(options.p, options.inplace) {}
  std::string name() const override { return "Dropout"; }
  Tensor forward(const Tensor& input) override;
  double p;
  bool inplace;
};

/// The options of nn.Embedding after num_embeddings and embedding_dim.
struct EmbeddingOptions {
  detail::DesignatedOnly designated_only = {};
  /// The row that indices equal to it read without it getting a gradient; it starts as zeros. A
  /// negative value counts from the end (it is stored as num_embeddings + padding_idx).
  std::optional<int64_t> padding_idx = std::nullopt;
  /// Before each lookup, rows named by the indices whose norm_type-norm exceeds max_norm are
  /// rescaled in place to max_norm (torch.embedding_renorm_).
  std::optional<double> max_norm = std::nullopt;
  double norm_type = 2.0;
  /// Each row's gradient is divided by how often the row occurs in the batch of indices.
  bool scale_grad_by_freq = false;
  /// Refused: ember has no sparse gradients.
  bool sparse = false;
};

/// A lookup table [num_embeddings, embedding_dim], initialised from N(0, 1) (the padding_idx
/// row zeroed).
///   nn::Embedding(100, 16);                      nn::Embedding(100, 16, {.padding_idx = 0});
class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim, EmbeddingOptions options = {});
  std::string name() const override { return "Embedding"; }
  Tensor forward(const Tensor& indices) override;
  /// Redraws weight from N(0, 1) and zeroes the padding_idx row, as PyTorch's reset_parameters().
  void reset_parameters();
  int64_t num_embeddings, embedding_dim;
  std::optional<int64_t> padding_idx;
  std::optional<double> max_norm;
  double norm_type;
  bool scale_grad_by_freq, sparse;
  Tensor weight;
};

/// The options of nn.LayerNorm after normalized_shape.
struct LayerNormOptions {
  detail::DesignatedOnly designated_only = {};
  double eps = 1e-5;
  bool elementwise_affine = true;
  bool bias = true;
};

/// Normalises over the trailing normalized_shape dimensions (one size or several); weight ones,
/// bias zeros.
///   nn::LayerNorm(64);                           nn::LayerNorm({8, 64}, {.eps = 1e-6});
class LayerNorm : public Module {
 public:
  explicit LayerNorm(SizeList normalized_shape, double eps = 1e-5, bool elementwise_affine = true, bool bias = true);
  LayerNorm(SizeList normalized_shape, LayerNormOptions options)
      : LayerNorm(std::move(normalized_shape), options.eps, options.elementwise_affine, options.bias) {}
  /// One braced list alone is the shape (`{8, 64}`), never a list of constructor arguments.
  explicit LayerNorm(std::initializer_list<int64_t> normalized_shape) : LayerNorm(SizeList(normalized_shape)) {}
  std::string name() const override { return "LayerNorm"; }
  Tensor forward(const Tensor& input) override;
  std::vector<int64_t> normalized_shape;
  double eps;
  bool elementwise_affine;
  Tensor weight, bias;  // undefined without elementwise_affine (bias also when bias = false)
};

/// The options of nn.GroupNorm after num_groups and num_channels.
struct GroupNormOptions {
  detail::DesignatedOnly designated_only = {};
  double eps = 1e-5;
  bool affine = true;
  bool bias = true;  // keyword-only in PyTorch; without it an affine GroupNorm has weight only
};

/// torch.nn.GroupNorm: normalises input [N, C, *] over groups of C / num_groups channels; with
/// affine, weight [C] (ones) and bias [C] (zeros) scale and shift each channel.
class GroupNorm : public Module {
 public:
  GroupNorm(int64_t num_groups, int64_t num_channels, double eps = 1e-5, bool affine = true);
  GroupNorm(int64_t num_groups, int64_t num_channels, GroupNormOptions options);
  std::string name() const override { return "GroupNorm"; }
  Tensor forward(const Tensor& input) override;
  int64_t num_groups, num_channels;
  double eps;
  bool affine;
  Tensor weight, bias;  // undefined without affine (bias also when bias = false)
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
