#pragma once
/// torch.nn's normalisation layers beyond BatchNorm1d/2d, LayerNorm and GroupNorm: RMSNorm,
/// InstanceNorm1d/2d/3d, LocalResponseNorm and BatchNorm3d, and the torch.nn.functional forms
/// rms_norm, instance_norm and local_response_norm, with PyTorch's arguments, defaults, parameter
/// and buffer names, and messages. Each is composed of ember's ops (instance_norm of batch_norm,
/// as ATen's), so autograd and every device come with them.
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ember/nn/batchnorm.h"
#include "ember/nn/module.h"
#include "ember/nn/modules.h"
#include "ember/nn/sizes.h"
#include "ember/tensor.h"

namespace ember::nn {
namespace functional {

/// x / sqrt(mean(x^2 over the trailing normalized_shape dimensions) + eps), times weight (of
/// normalized_shape) when given. eps = nullopt means the machine epsilon of the computation type
/// (float32 for float16 and bfloat16 inputs, which compute in float32).
Tensor rms_norm(const Tensor& input, IntList normalized_shape, const Tensor& weight = Tensor(),
                std::optional<double> eps = std::nullopt);

/// Normalises each (sample, channel) of input [N, C, *] over its spatial values: batch_norm of
/// the input viewed as [1, N C, *]. With use_input_stats (training, or no running statistics) the
/// instance statistics are used, and running_mean / running_var, when given, move towards the
/// batch's average instance statistics with `momentum` (the unbiased variance, as batch_norm);
/// otherwise the running statistics are used. weight and bias [C] may be undefined.
Tensor instance_norm(const Tensor& input, const Tensor& running_mean = Tensor(), const Tensor& running_var = Tensor(),
                     const Tensor& weight = Tensor(), const Tensor& bias = Tensor(), bool use_input_stats = true,
                     double momentum = 0.1, double eps = 1e-5);

/// x / (k + alpha / size * sum of x^2 over `size` neighbouring channels)^beta, for input
/// [N, C, *] (at least 3-D); the window of channel c is [c - size / 2, c + (size - 1) / 2].
Tensor local_response_norm(const Tensor& input, int64_t size, double alpha = 1e-4, double beta = 0.75, double k = 1.0);

}  // namespace functional

/// The options of nn.RMSNorm after normalized_shape.
struct RMSNormOptions {
  detail::DesignatedOnly designated_only = {};
  std::optional<double> eps = std::nullopt;  // nullopt: the machine epsilon of the computation type
  bool elementwise_affine = true;
};

/// torch.nn.RMSNorm: rms_norm over the trailing normalized_shape dimensions (one size or
/// several); with elementwise_affine a parameter "weight" of normalized_shape (ones).
///   nn::RMSNorm(64);                             nn::RMSNorm({8, 64}, {.eps = 1e-6});
class RMSNorm : public Module {
 public:
  explicit RMSNorm(SizeList normalized_shape, std::optional<double> eps = std::nullopt, bool elementwise_affine = true);
  RMSNorm(SizeList normalized_shape, RMSNormOptions options)
      : RMSNorm(std::move(normalized_shape), options.eps, options.elementwise_affine) {}
  /// One braced list alone is the shape (`{8, 64}`), never a list of constructor arguments.
  explicit RMSNorm(std::initializer_list<int64_t> normalized_shape) : RMSNorm(SizeList(normalized_shape)) {}
  std::string name() const override { return "RMSNorm"; }
  Tensor forward(const Tensor& input) override { return functional::rms_norm(input, normalized_shape, weight, eps); }
  /// weight back to ones.
  void reset_parameters();

  std::vector<int64_t> normalized_shape;
  std::optional<double> eps;
  bool elementwise_affine;
  Tensor weight;  // undefined without elementwise_affine
};

/// The options of nn.InstanceNorm1d/2d/3d after num_features, PyTorch's names and defaults.
struct InstanceNormOptions {
  detail::DesignatedOnly designated_only = {};
  double eps = 1e-5;
  std::optional<double> momentum = 0.1;
  bool affine = false;
  bool track_running_stats = false;
  bool bias = true;  // keyword-only in PyTorch
};
using InstanceNorm1dOptions = InstanceNormOptions;
using InstanceNorm2dOptions = InstanceNormOptions;
using InstanceNorm3dOptions = InstanceNormOptions;

/// What InstanceNorm1d/2d/3d share (PyTorch's _InstanceNorm over _NormBase): with affine,
/// parameters weight (ones) and bias (zeros; absent when bias = false); with
/// track_running_stats, buffers running_mean (zeros), running_var (ones) and the int64
/// num_batches_tracked (which, as in PyTorch, instance norm never advances). Training, or without
/// running statistics, uses each instance's statistics (and updates the running ones when
/// tracked); eval() with running statistics uses them. momentum = nullopt counts as 0. An input
/// without the batch dimension is normalised as a batch of one.
class InstanceNormBase : public Module {
 public:
  Tensor forward(const Tensor& input) override;
  /// Running statistics back to zeros / ones and num_batches_tracked to 0.
  void reset_running_stats();
  /// reset_running_stats(), then weight to ones and bias to zeros.
  void reset_parameters();

  int64_t num_features;
  double eps;
  std::optional<double> momentum;
  bool affine, track_running_stats;
  Tensor weight, bias;                                    // undefined unless affine
  Tensor running_mean, running_var, num_batches_tracked;  // undefined unless track_running_stats

 protected:
  InstanceNormBase(int64_t num_features, double eps, std::optional<double> momentum, bool affine,
                   bool track_running_stats, bool bias);
  /// The rank of an input without the batch dimension (2, 3 or 4).
  virtual int64_t no_batch_dim() const = 0;
  /// Throws PyTorch's message when the input has the wrong number of dimensions.
  virtual void check_input_dim(const Tensor& input) const = 0;
};

/// Input [N, C, L] or [C, L].
class InstanceNorm1d : public InstanceNormBase {
 public:
  explicit InstanceNorm1d(int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1,
                          bool affine = false, bool track_running_stats = false, bool bias = true)
      : InstanceNormBase(num_features, eps, momentum, affine, track_running_stats, bias) {}
  InstanceNorm1d(int64_t num_features, InstanceNormOptions options)
      : InstanceNormBase(num_features, options.eps, options.momentum, options.affine, options.track_running_stats,
                         options.bias) {}
  std::string name() const override { return "InstanceNorm1d"; }

 protected:
  int64_t no_batch_dim() const override { return 2; }
  void check_input_dim(const Tensor& input) const override;
};

/// Input [N, C, H, W] or [C, H, W].
class InstanceNorm2d : public InstanceNormBase {
 public:
  explicit InstanceNorm2d(int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1,
                          bool affine = false, bool track_running_stats = false, bool bias = true)
      : InstanceNormBase(num_features, eps, momentum, affine, track_running_stats, bias) {}
  InstanceNorm2d(int64_t num_features, InstanceNormOptions options)
      : InstanceNormBase(num_features, options.eps, options.momentum, options.affine, options.track_running_stats,
                         options.bias) {}
  std::string name() const override { return "InstanceNorm2d"; }

 protected:
  int64_t no_batch_dim() const override { return 3; }
  void check_input_dim(const Tensor& input) const override;
};

/// Input [N, C, D, H, W] or [C, D, H, W].
class InstanceNorm3d : public InstanceNormBase {
 public:
  explicit InstanceNorm3d(int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1,
                          bool affine = false, bool track_running_stats = false, bool bias = true)
      : InstanceNormBase(num_features, eps, momentum, affine, track_running_stats, bias) {}
  InstanceNorm3d(int64_t num_features, InstanceNormOptions options)
      : InstanceNormBase(num_features, options.eps, options.momentum, options.affine, options.track_running_stats,
                         options.bias) {}
  std::string name() const override { return "InstanceNorm3d"; }

 protected:
  int64_t no_batch_dim() const override { return 4; }
  void check_input_dim(const Tensor& input) const override;
};

/// The options of nn.LocalResponseNorm after size.
struct LocalResponseNormOptions {
  detail::DesignatedOnly designated_only = {};
  double alpha = 1e-4;
  double beta = 0.75;
  double k = 1.0;
};

/// torch.nn.LocalResponseNorm: local_response_norm across channels; no parameters.
class LocalResponseNorm : public Module {
 public:
  explicit LocalResponseNorm(int64_t size, double alpha = 1e-4, double beta = 0.75, double k = 1.0)
      : size(size), alpha(alpha), beta(beta), k(k) {}
  LocalResponseNorm(int64_t size, LocalResponseNormOptions options)
      : LocalResponseNorm(size, options.alpha, options.beta, options.k) {}
  std::string name() const override { return "LocalResponseNorm"; }
  Tensor forward(const Tensor& input) override { return functional::local_response_norm(input, size, alpha, beta, k); }
  int64_t size;
  double alpha, beta, k;
};

/// torch.nn.BatchNorm3d: batch norm of input [N, C, D, H, W] (BatchNormBase's parameters,
/// buffers and modes).
class BatchNorm3d : public BatchNormBase {
 public:
  explicit BatchNorm3d(int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1,
                       bool affine = true, bool track_running_stats = true)
      : BatchNormBase(num_features, eps, momentum, affine, track_running_stats) {}
  BatchNorm3d(int64_t num_features, BatchNormOptions options)
      : BatchNormBase(num_features, options.eps, options.momentum, options.affine, options.track_running_stats) {}
  std::string name() const override { return "BatchNorm3d"; }

 protected:
  void check_input_dim(const Tensor& input) const override;
};

}  // namespace ember::nn
