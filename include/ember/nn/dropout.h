#pragma once
/// torch.nn's dropout layers beyond Dropout (modules.h): the channel-wise Dropout1d, Dropout2d and
/// Dropout3d, AlphaDropout and FeatureAlphaDropout, and their torch.nn.functional forms, with
/// PyTorch's names, arguments, defaults, input-rank rules, warnings and errors.
///
/// The masks are drawn from ember's generator (rand < 1 - p), so they are not PyTorch's random
/// stream; what is PyTorch's is everything else: which elements share a mask (one value per
/// (sample, channel) for the channel-wise forms), the scaling, and the result being the input
/// times the mask (plus a constant for the alpha forms), so the gradient is the mask times the
/// scale.
#include <string>

#include "ember/nn/module.h"
#include "ember/nn/modules.h"
#include "ember/tensor.h"

namespace ember::nn {
namespace functional {

/// Zeroes whole channels of input [N, C, L] or [C, L] with probability p while training and
/// scales the rest by 1 / (1 - p). Other ranks are an error.
Tensor dropout1d(const Tensor& input, double p = 0.5, bool training = true, bool inplace = false);
/// Channel-wise dropout for [N, C, H, W] (and, as PyTorch, a 3-D input read as [N, C, L], with a
/// warning; other ranks warn that they are deprecated).
Tensor dropout2d(const Tensor& input, double p = 0.5, bool training = true, bool inplace = false);
/// Channel-wise dropout for [N, C, D, H, W] or [C, D, H, W] (other ranks warn and are read as
/// unbatched).
Tensor dropout3d(const Tensor& input, double p = 0.5, bool training = true, bool inplace = false);
/// Dropout that keeps SELU's self-normalising mean and variance: a dropped element becomes
/// -alpha' (SELU's negative saturation) and the result is a * x + b per element. Note PyTorch's
/// default training = false.
Tensor alpha_dropout(const Tensor& input, double p = 0.5, bool training = false, bool inplace = false);
/// alpha_dropout with one mask value per (sample, channel) of input [N, C, *].
Tensor feature_alpha_dropout(const Tensor& input, double p = 0.5, bool training = false, bool inplace = false);

}  // namespace functional

// libtorch's names for the options of each dropout layer: all DropoutOptions.
using Dropout1dOptions = DropoutOptions;
using Dropout2dOptions = DropoutOptions;
using Dropout3dOptions = DropoutOptions;
using AlphaDropoutOptions = DropoutOptions;
using FeatureAlphaDropoutOptions = DropoutOptions;

/// What the dropout layers share (PyTorch's _DropoutNd): p in [0, 1] and inplace, given
/// positionally or as DropoutOptions (ember/nn/modules.h): nn::Dropout2d({.p = 0.2}).
class DropoutNd : public Module {
 public:
  double p;
  bool inplace;

 protected:
  DropoutNd(double p, bool inplace);
};

/// Channel-wise dropout of [N, C, L] or [C, L] while training; identity in eval().
class Dropout1d : public DropoutNd {
 public:
  explicit Dropout1d(double p = 0.5, bool inplace = false) : DropoutNd(p, inplace) {}
  explicit Dropout1d(DropoutOptions options) : DropoutNd(options.p, options.inplace) {}
  std::string name() const override { return "Dropout1d"; }
  Tensor forward(const Tensor& input) override { return functional::dropout1d(input, p, is_training(), inplace); }
};

/// Channel-wise dropout of [N, C, H, W] while training; identity in eval().
class Dropout2d : public DropoutNd {
 public:
  explicit Dropout2d(double p = 0.5, bool inplace = false) : DropoutNd(p, inplace) {}
  explicit Dropout2d(DropoutOptions options) : DropoutNd(options.p, options.inplace) {}
  std::string name() const override { return "Dropout2d"; }
  Tensor forward(const Tensor& input) override { return functional::dropout2d(input, p, is_training(), inplace); }
};

/// Channel-wise dropout of [N, C, D, H, W] or [C, D, H, W] while training; identity in eval().
class Dropout3d : public DropoutNd {
 public:
  explicit Dropout3d(double p = 0.5, bool inplace = false) : DropoutNd(p, inplace) {}
  explicit Dropout3d(DropoutOptions options) : DropoutNd(options.p, options.inplace) {}
  std::string name() const override { return "Dropout3d"; }
  Tensor forward(const Tensor& input) override { return functional::dropout3d(input, p, is_training(), inplace); }
};

/// Alpha dropout while training; identity in eval(). As in PyTorch, `inplace` is stored but the
/// layer never works in place.
class AlphaDropout : public DropoutNd {
 public:
  explicit AlphaDropout(double p = 0.5, bool inplace = false) : DropoutNd(p, inplace) {}
  explicit AlphaDropout(DropoutOptions options) : DropoutNd(options.p, options.inplace) {}
  std::string name() const override { return "AlphaDropout"; }
  Tensor forward(const Tensor& input) override { return functional::alpha_dropout(input, p, is_training()); }
};

/// Channel-wise alpha dropout while training; identity in eval(). `inplace` is stored but unused,
/// as in PyTorch.
class FeatureAlphaDropout : public DropoutNd {
 public:
  explicit FeatureAlphaDropout(double p = 0.5, bool inplace = false) : DropoutNd(p, inplace) {}
  explicit FeatureAlphaDropout(DropoutOptions options) : DropoutNd(options.p, options.inplace) {}
  std::string name() const override { return "FeatureAlphaDropout"; }
  Tensor forward(const Tensor& input) override { return functional::feature_alpha_dropout(input, p, is_training()); }
};

}  // namespace ember::nn
