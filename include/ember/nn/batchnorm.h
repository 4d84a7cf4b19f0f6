#pragma once
/// Batch normalisation: torch.nn.functional.batch_norm and the BatchNorm1d / BatchNorm2d layers.
#include <cstdint>
#include <optional>
#include <string>

#include "ember/nn/module.h"
#include "ember/nn/modules.h"
#include "ember/tensor.h"

namespace ember::nn {

namespace functional {

/// Normalises `input` [N, C, *] per channel C, then scales by weight and shifts by bias (either
/// may be undefined). When training, uses the batch's mean and biased variance and, when the
/// running statistics are defined, updates them in place (no autograd) as
/// running = (1 - momentum) * running + momentum * batch, with the UNBIASED variance; otherwise
/// uses running_mean and running_var. float16/bfloat16 inputs compute in float32 and may use
/// float32 parameters, as in PyTorch.
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = Tensor(), const Tensor& bias = Tensor(), bool training = false,
                  double momentum = 0.1, double eps = 1e-5);

}  // namespace functional

/// The options of nn.BatchNorm1d/2d/3d after num_features, PyTorch's names and defaults:
///   nn::BatchNorm2d(64, {.momentum = 0.01});     nn::BatchNorm1d(8, {.affine = false});
struct BatchNormOptions {
  detail::DesignatedOnly designated_only = {};
  double eps = 1e-5;
  std::optional<double> momentum = 0.1;  // std::nullopt: a cumulative average
  bool affine = true;
  bool track_running_stats = true;
};
using BatchNorm1dOptions = BatchNormOptions;
using BatchNorm2dOptions = BatchNormOptions;
using BatchNorm3dOptions = BatchNormOptions;

/// What BatchNorm1d and BatchNorm2d share (PyTorch's _BatchNorm). Parameters weight (ones) and
/// bias (zeros) exist when affine; buffers running_mean (zeros), running_var (ones) and
/// num_batches_tracked (int64, 0-dim) exist when track_running_stats, so state_dict keys are
/// PyTorch's. momentum = nullopt averages cumulatively (1 / num_batches_tracked).
class BatchNormBase : public Module {
 public:
  Tensor forward(const Tensor& input) override;
  /// Running statistics back to zeros / ones and num_batches_tracked to 0.
  void reset_running_stats();

  int64_t num_features;
  double eps;
  std::optional<double> momentum;
  bool affine, track_running_stats;
  Tensor weight, bias;                                    // undefined unless affine
  Tensor running_mean, running_var, num_batches_tracked;  // undefined unless track_running_stats

 protected:
  BatchNormBase(int64_t num_features, double eps, std::optional<double> momentum, bool affine,
                bool track_running_stats);
  /// Throws PyTorch's message when the input has the wrong number of dimensions.
  virtual void check_input_dim(const Tensor& input) const = 0;
};

/// Input [N, C] or [N, C, L].
class BatchNorm1d : public BatchNormBase {
 public:
  explicit BatchNorm1d(int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1,
                       bool affine = true, bool track_running_stats = true)
      : BatchNormBase(num_features, eps, momentum, affine, track_running_stats) {}
  BatchNorm1d(int64_t num_features, BatchNormOptions options)
      : BatchNormBase(num_features, options.eps, options.momentum, options.affine, options.track_running_stats) {}
  std::string name() const override { return "BatchNorm1d"; }

 protected:
  void check_input_dim(const Tensor& input) const override;
};

/// Input [N, C, H, W].
class BatchNorm2d : public BatchNormBase {
 public:
  explicit BatchNorm2d(int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1,
                       bool affine = true, bool track_running_stats = true)
      : BatchNormBase(num_features, eps, momentum, affine, track_running_stats) {}
  BatchNorm2d(int64_t num_features, BatchNormOptions options)
      : BatchNormBase(num_features, options.eps, options.momentum, options.affine, options.track_running_stats) {}
  std::string name() const override { return "BatchNorm2d"; }

 protected:
  void check_input_dim(const Tensor& input) const override;
};

}  // namespace ember::nn
