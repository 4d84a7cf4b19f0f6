#pragma once
/// torch.nn's activation layers beyond ReLU, GELU, SiLU, Tanh, Sigmoid, Softmax and LogSoftmax
/// (modules.h), and their torch.nn.functional forms: PyTorch's names, arguments, defaults and
/// parameter names. The math is ember's ops (ember/ops.h: elu, leaky_relu, ...).
///
/// Each layer takes its optional arguments positionally, in PyTorch's order, or as one
/// `<Layer>Options` struct written with designated initializers:
///   nn::LeakyReLU(0.2, true);                    nn::LeakyReLU({.negative_slope = 0.2, .inplace = true});
///   nn::Hardtanh(-2.0, 2.0);                     nn::Hardtanh({.min_val = -2.0, .max_val = 2.0});
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ember/nn/module.h"
#include "ember/nn/modules.h"
#include "ember/nn/sizes.h"
#include "ember/ops.h"
#include "ember/tensor.h"

namespace ember::nn {
namespace functional {

/// With `inplace`, these write the result into `input` (its handle sees the change), as
/// torch.nn.functional's inplace=True does.
Tensor elu(const Tensor& input, double alpha = 1.0, bool inplace = false);
Tensor selu(const Tensor& input, bool inplace = false);
Tensor celu(const Tensor& input, double alpha = 1.0, bool inplace = false);
Tensor leaky_relu(const Tensor& input, double negative_slope = 0.01, bool inplace = false);
Tensor hardtanh(const Tensor& input, double min_val = -1.0, double max_val = 1.0, bool inplace = false);
Tensor relu6(const Tensor& input, bool inplace = false);
Tensor threshold(const Tensor& input, double threshold, double value, bool inplace = false);
Tensor hardsigmoid(const Tensor& input, bool inplace = false);
Tensor hardswish(const Tensor& input, bool inplace = false);
Tensor mish(const Tensor& input, bool inplace = false);
Tensor rrelu(const Tensor& input, double lower = 1.0 / 8.0, double upper = 1.0 / 3.0, bool training = false,
             bool inplace = false);
Tensor softplus(const Tensor& input, double beta = 1.0, double threshold = 20.0);
Tensor hardshrink(const Tensor& input, double lambd = 0.5);
Tensor softshrink(const Tensor& input, double lambd = 0.5);
Tensor logsigmoid(const Tensor& input);
Tensor softsign(const Tensor& input);
Tensor tanhshrink(const Tensor& input);
Tensor glu(const Tensor& input, int64_t dim = -1);
Tensor prelu(const Tensor& input, const Tensor& weight);
Tensor softmin(const Tensor& input, int64_t dim);

}  // namespace functional

/// The options of nn.ELU and nn.CELU.
struct ELUOptions {
  detail::DesignatedOnly designated_only = {};
  double alpha = 1.0;
  bool inplace = false;
};
using CELUOptions = ELUOptions;

// The layers whose only option is `inplace` take InplaceOptions (modules.h).
using SELUOptions = InplaceOptions;
using ReLU6Options = InplaceOptions;
using HardsigmoidOptions = InplaceOptions;
using HardswishOptions = InplaceOptions;
using MishOptions = InplaceOptions;

class ELU : public Module {
 public:
  explicit ELU(double alpha = 1.0, bool inplace = false) : alpha(alpha), inplace(inplace) {}
  explicit ELU(ELUOptions options) : ELU(options.alpha, options.inplace) {}
  std::string name() const override { return "ELU"; }
  Tensor forward(const Tensor& input) override { return functional::elu(input, alpha, inplace); }
  double alpha;
  bool inplace;
};

class SELU : public Module {
 public:
  explicit SELU(bool inplace = false) : inplace(inplace) {}
  explicit SELU(SELUOptions options) : SELU(options.inplace) {}
  std::string name() const override { return "SELU"; }
  Tensor forward(const Tensor& input) override { return functional::selu(input, inplace); }
  bool inplace;
};

class CELU : public Module {
 public:
  explicit CELU(double alpha = 1.0, bool inplace = false) : alpha(alpha), inplace(inplace) {}
  explicit CELU(CELUOptions options) : CELU(options.alpha, options.inplace) {}
  std::string name() const override { return "CELU"; }
  Tensor forward(const Tensor& input) override { return functional::celu(input, alpha, inplace); }
  double alpha;
  bool inplace;
};

/// The options of nn.LeakyReLU.
struct LeakyReLUOptions {
  detail::DesignatedOnly designated_only = {};
  double negative_slope = 0.01;
  bool inplace = false;
};

class LeakyReLU : public Module {
 public:
  explicit LeakyReLU(double negative_slope = 0.01, bool inplace = false)
      : negative_slope(negative_slope), inplace(inplace) {}
  explicit LeakyReLU(LeakyReLUOptions options) : LeakyReLU(options.negative_slope, options.inplace) {}
  std::string name() const override { return "LeakyReLU"; }
  Tensor forward(const Tensor& input) override { return functional::leaky_relu(input, negative_slope, inplace); }
  double negative_slope;
  bool inplace;
};

/// The options of nn.Hardtanh.
struct HardtanhOptions {
  detail::DesignatedOnly designated_only = {};
  double min_val = -1.0;
  double max_val = 1.0;
  bool inplace = false;
};

class Hardtanh : public Module {
 public:
  /// min_val must not exceed max_val.
  explicit Hardtanh(double min_val = -1.0, double max_val = 1.0, bool inplace = false);
  explicit Hardtanh(HardtanhOptions options) : Hardtanh(options.min_val, options.max_val, options.inplace) {}
  std::string name() const override { return "Hardtanh"; }
  Tensor forward(const Tensor& input) override { return functional::hardtanh(input, min_val, max_val, inplace); }
  double min_val, max_val;
  bool inplace;
};

class ReLU6 : public Module {
 public:
  explicit ReLU6(bool inplace = false) : inplace(inplace) {}
  explicit ReLU6(ReLU6Options options) : ReLU6(options.inplace) {}
  std::string name() const override { return "ReLU6"; }
  Tensor forward(const Tensor& input) override { return functional::relu6(input, inplace); }
  bool inplace;
};

/// The options of nn.Threshold after threshold and value.
using ThresholdOptions = InplaceOptions;

/// x where x > threshold, else value.
class Threshold : public Module {
 public:
  Threshold(double threshold, double value, bool inplace = false)
      : threshold(threshold), value(value), inplace(inplace) {}
  Threshold(double threshold, double value, ThresholdOptions options) : Threshold(threshold, value, options.inplace) {}
  std::string name() const override { return "Threshold"; }
  Tensor forward(const Tensor& input) override { return functional::threshold(input, threshold, value, inplace); }
  double threshold, value;
  bool inplace;
};

class Hardsigmoid : public Module {
 public:
  explicit Hardsigmoid(bool inplace = false) : inplace(inplace) {}
  explicit Hardsigmoid(HardsigmoidOptions options) : Hardsigmoid(options.inplace) {}
  std::string name() const override { return "Hardsigmoid"; }
  Tensor forward(const Tensor& input) override { return functional::hardsigmoid(input, inplace); }
  bool inplace;
};

class Hardswish : public Module {
 public:
  explicit Hardswish(bool inplace = false) : inplace(inplace) {}
  explicit Hardswish(HardswishOptions options) : Hardswish(options.inplace) {}
  std::string name() const override { return "Hardswish"; }
  Tensor forward(const Tensor& input) override { return functional::hardswish(input, inplace); }
  bool inplace;
};

class Mish : public Module {
 public:
  explicit Mish(bool inplace = false) : inplace(inplace) {}
  explicit Mish(MishOptions options) : Mish(options.inplace) {}
  std::string name() const override { return "Mish"; }
  Tensor forward(const Tensor& input) override { return functional::mish(input, inplace); }
  bool inplace;
};

/// The options of nn.RReLU.
struct RReLUOptions {
  detail::DesignatedOnly designated_only = {};
  double lower = 1.0 / 8.0;
  double upper = 1.0 / 3.0;
  bool inplace = false;
};

/// Randomized leaky ReLU: a slope from U(lower, upper) per negative element while training,
/// (lower + upper) / 2 in eval().
class RReLU : public Module {
 public:
  explicit RReLU(double lower = 1.0 / 8.0, double upper = 1.0 / 3.0, bool inplace = false);
  explicit RReLU(RReLUOptions options) : RReLU(options.lower, options.upper, options.inplace) {}
  std::string name() const override { return "RReLU"; }
  Tensor forward(const Tensor& input) override {
    return functional::rrelu(input, lower, upper, is_training(), inplace);
  }
  double lower, upper;
  bool inplace;
};

/// The options of nn.Softplus.
struct SoftplusOptions {
  detail::DesignatedOnly designated_only = {};
  double beta = 1.0;
  double threshold = 20.0;
};

class Softplus : public Module {
 public:
  explicit Softplus(double beta = 1.0, double threshold = 20.0) : beta(beta), threshold(threshold) {}
  explicit Softplus(SoftplusOptions options) : Softplus(options.beta, options.threshold) {}
  std::string name() const override { return "Softplus"; }
  Tensor forward(const Tensor& input) override { return functional::softplus(input, beta, threshold); }
  double beta, threshold;
};

/// The options of nn.Hardshrink and nn.Softshrink.
struct HardshrinkOptions {
  detail::DesignatedOnly designated_only = {};
  double lambd = 0.5;
};
using SoftshrinkOptions = HardshrinkOptions;

class Hardshrink : public Module {
 public:
  explicit Hardshrink(double lambd = 0.5) : lambd(lambd) {}
  explicit Hardshrink(HardshrinkOptions options) : Hardshrink(options.lambd) {}
  std::string name() const override { return "Hardshrink"; }
  Tensor forward(const Tensor& input) override { return functional::hardshrink(input, lambd); }
  double lambd;
};

class Softshrink : public Module {
 public:
  explicit Softshrink(double lambd = 0.5) : lambd(lambd) {}
  explicit Softshrink(SoftshrinkOptions options) : Softshrink(options.lambd) {}
  std::string name() const override { return "Softshrink"; }
  Tensor forward(const Tensor& input) override { return functional::softshrink(input, lambd); }
  double lambd;
};

class LogSigmoid : public Module {
 public:
  std::string name() const override { return "LogSigmoid"; }
  Tensor forward(const Tensor& input) override { return functional::logsigmoid(input); }
};

class Softsign : public Module {
 public:
  std::string name() const override { return "Softsign"; }
  Tensor forward(const Tensor& input) override { return functional::softsign(input); }
};

class Tanhshrink : public Module {
 public:
  std::string name() const override { return "Tanhshrink"; }
  Tensor forward(const Tensor& input) override { return functional::tanhshrink(input); }
};

/// The options of nn.GLU.
struct GLUOptions {
  detail::DesignatedOnly designated_only = {};
  int64_t dim = -1;
};

/// a * sigmoid(b) for the halves a, b of the input along `dim`.
class GLU : public Module {
 public:
  explicit GLU(int64_t dim = -1) : dim(dim) {}
  explicit GLU(GLUOptions options) : GLU(options.dim) {}
  std::string name() const override { return "GLU"; }
  Tensor forward(const Tensor& input) override { return functional::glu(input, dim); }
  int64_t dim;
};

/// The options of nn.PReLU.
struct PReLUOptions {
  detail::DesignatedOnly designated_only = {};
  int64_t num_parameters = 1;
  double init = 0.25;
};

/// x > 0 ? x : weight x with a learned weight of num_parameters values (1, or the channel count),
/// each initialised to `init`.
class PReLU : public Module {
 public:
  explicit PReLU(int64_t num_parameters = 1, double init = 0.25);
  explicit PReLU(PReLUOptions options) : PReLU(options.num_parameters, options.init) {}
  std::string name() const override { return "PReLU"; }
  Tensor forward(const Tensor& input) override { return functional::prelu(input, weight); }
  /// Refills the weight with `init`, as PyTorch's reset_parameters().
  void reset_parameters();
  int64_t num_parameters;
  double init;
  Tensor weight;
};

class Softmin : public Module {
 public:
  explicit Softmin(int64_t dim) : dim(dim) {}
  explicit Softmin(SoftminOptions options) : Softmin(options.dim) {}
  std::string name() const override { return "Softmin"; }
  Tensor forward(const Tensor& input) override { return functional::softmin(input, dim); }
  int64_t dim;
};

/// Softmax over the channels of each spatial position: input [C, H, W] or [N, C, H, W].
class Softmax2d : public Module {
 public:
  std::string name() const override { return "Softmax2d"; }
  Tensor forward(const Tensor& input) override;
};

/// Returns its input; any constructor arguments are ignored, as in PyTorch.
class Identity : public Module {
 public:
  Identity() = default;
  template <typename... Ignored>
  explicit Identity(const Ignored&... /*ignored*/) {}
  std::string name() const override { return "Identity"; }
  Tensor forward(const Tensor& input) override { return input; }
};

/// Splits dimension `dim` into `sizes` (one of which may be -1), as torch.nn.Unflatten. Both
/// arguments are required, as in PyTorch: `nn::Unflatten(1, {2, 5})`.
class Unflatten : public Module {
 public:
  Unflatten(int64_t dim, SizeList sizes) : dim(dim), sizes(sizes.vec()) {}
  std::string name() const override { return "Unflatten"; }
  Tensor forward(const Tensor& input) override { return input.unflatten(dim, sizes); }
  int64_t dim;
  std::vector<int64_t> sizes;
};

}  // namespace ember::nn
