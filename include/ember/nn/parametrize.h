#pragma once
/// Parametrizations: torch.nn.utils.parametrize (register_parametrization,
/// remove_parametrizations, is_parametrized) and the two of torch.nn.utils.parametrizations built
/// on it, weight_norm and spectral_norm.
///
///   auto fc = std::make_shared<nn::Linear>(20, 40);
///   nn::utils::parametrizations::weight_norm(*fc);      // fc->weight = g * v / ||v||
///   fc->state_dict().keys();  // bias, parametrizations.weight.original0 (g), ...original1 (v)
///   Tensor y = (*fc)(x);      // the weight is recomputed from g and v for this call
///
/// How the parametrized value reaches forward. Layers read their tensors through members
/// (Linear::weight is a Tensor, i.e. a handle to one TensorImpl, which the module's parameter
/// list shares), and PyTorch's mechanism, a property computed on every attribute read, has no
/// C++ counterpart. So the member's TensorImpl itself (the "slot") is made to show the value:
///  - registering moves the tensor out of the module's parameters (or buffers) into
///    `parametrizations.<name>` (a ModuleDict child holding a ParametrizationList, which holds the
///    originals as parameters "original" or "original0", "original1", ... and the
///    parametrization modules as children "0", "1", ...), so named_parameters() and state_dict()
///    have PyTorch's keys in PyTorch's order; the originals are new leaves (sharing the slot's
///    storage where right_inverse leaves the value as it is);
///  - the module is given a refresher for the name (Module::set_parametrized), which operator()
///    runs in each call after the forward pre-hooks, right before forward: it computes the ParametrizationList's value
///    from the originals (with grad mode as it is) and rebinds the slot to it — storage, geometry,
///    dtype and autograd history (a fresh AutogradMeta holding the value's grad_fn). The layer's
///    unchanged forward then reads a non-leaf whose gradient flows to the originals, exactly as
///    PyTorch's forward reads a computed weight. Saved tensors alias storage, not the slot, so a
///    later refresh does not disturb a graph already recorded.
///  - removing computes the value once more (without grad) and makes the slot a plain leaf again,
///    registered as a parameter (or buffer) at the end of the list, as PyTorch re-registers it.
/// Consequences: a parametrization is applied when the module is called through operator()
/// (directly or by a parent that calls its children that way), once per call. Between calls the
/// member holds the value of the last call (or of registration), so a read after an optimizer
/// step, or after to(), shows the previous value until the next call; forward() called directly
/// runs no refresh. The originals are the tensors to optimize: parameters() lists them, and an
/// optimizer built before the registration still holds the slot, which is no longer a leaf.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ember/nn/module.h"
#include "ember/tensor.h"

namespace ember::nn {

/// What right_inverse returns: one tensor (registered as "original") or a sequence of them
/// ("original0", "original1", ...), as PyTorch tells a Tensor from a tuple.
using Originals = std::variant<Tensor, std::vector<Tensor>>;

/// The base of a parametrization with a right inverse or with several originals. Any Module with
/// a single-tensor forward can be a parametrization; deriving from this one adds right_inverse
/// (which computes the originals from a value when the parametrization is registered) and a
/// forward over several originals.
class Parametrization : public Module {
 public:
  using Module::forward;
  /// The value from the originals right_inverse returned as a sequence. By default, forward of
  /// the only one.
  virtual Tensor forward(const std::vector<Tensor>& originals);
  /// The originals for `value`, or std::nullopt when there is no right inverse (PyTorch's
  /// NotImplementedError, or no right_inverse method): the value itself is then the original.
  virtual std::optional<Originals> right_inverse(const Tensor& value);
};

/// PyTorch's ParametrizationList: the originals of one parametrized tensor and the
/// parametrizations applied to them in order.
class ParametrizationList : public Module {
 public:
  /// Computes the originals from `original` (the parametrized tensor's current value) through
  /// the parametrization's right_inverse and, unless `unsafe`, checks that the parametrization
  /// keeps the dtype and shape. `is_parameter`: the originals become parameters, else buffers.
  ParametrizationList(std::shared_ptr<Module> parametrization, const Tensor& original, bool is_parameter, bool unsafe);
  std::string name() const override { return "ParametrizationList"; }
  /// A ParametrizationList takes no input; value() is its forward.
  Tensor forward(const Tensor& input) override;

  /// The parametrized value: the first parametrization over the originals, then each other one
  /// over the result (PyTorch's ParametrizationList.forward()).
  Tensor value();
  /// Sets the originals from a value through every right_inverse, last parametrization first
  /// (what assigning to a parametrized attribute does in PyTorch).
  void right_inverse(const Tensor& value);
  /// Adds a parametrization applied after the others.
  void append(std::shared_ptr<Module> parametrization);

  size_t size() const { return child_list().size(); }
  std::shared_ptr<Module> operator[](size_t index) const { return child_list().at(index).second; }
  /// True when right_inverse gave one tensor ("original"), false for a sequence.
  bool is_tensor() const { return is_tensor_; }
  int64_t ntensors() const { return static_cast<int64_t>(originals_.size()); }
  /// "original" (is_tensor) or "original<i>".
  Tensor original(int64_t index = 0) const { return originals_.at(static_cast<size_t>(index)); }
  bool unsafe = false;

 private:
  friend struct ParametrizeAccess;
  bool is_tensor_ = true;
  std::vector<Tensor> originals_;
  Tensor checked_value_;  // the value computed by the constructor's check, used once
  Tensor slot_;           // the handle the module's layer reads (see the top of this file)
};

namespace utils::parametrize {

/// Parametrizes `module`'s parameter or buffer `tensor_name` (or adds `parametrization` after
/// those already there): from now on each call of the module computes the tensor as
/// parametrization(originals). Returns `module`. PyTorch's checks and messages.
Module& register_parametrization(Module& module, const std::string& tensor_name,
                                 std::shared_ptr<Module> parametrization, bool unsafe = false);
template <typename M>
std::shared_ptr<M> register_parametrization(std::shared_ptr<M> module, const std::string& tensor_name,
                                            std::shared_ptr<Module> parametrization, bool unsafe = false) {
  register_parametrization(static_cast<Module&>(*module), tensor_name, std::move(parametrization), unsafe);
  return module;
}

/// torch.nn.utils.parametrize.cached(): while a Cached is alive (in any thread), each
/// parametrized tensor is computed at its first call and reused by later calls, instead of
/// being recomputed at every call (a parametrized layer called in a loop, as an RNN's step).
/// Guards nest; the values are dropped when the outermost one ends.
class Cached {
 public:
  Cached();
  ~Cached();
  Cached(const Cached&) = delete;
  Cached& operator=(const Cached&) = delete;
};

/// Whether `module` has a parametrization on `tensor_name` (any, when not given).
bool is_parametrized(const Module& module, const std::optional<std::string>& tensor_name = std::nullopt);

/// module.parametrizations[tensor_name]; throws when the tensor is not parametrized.
std::shared_ptr<ParametrizationList> parametrizations_of(const Module& module, const std::string& tensor_name);

/// Removes the parametrizations on `tensor_name`. With `leave_parametrized` the tensor keeps its
/// current parametrized value, otherwise it becomes its original (possible only with one
/// original). The layer's member is a plain parameter (buffer) again, registered last.
Module& remove_parametrizations(Module& module, const std::string& tensor_name, bool leave_parametrized = true);
template <typename M>
std::shared_ptr<M> remove_parametrizations(std::shared_ptr<M> module, const std::string& tensor_name,
                                           bool leave_parametrized = true) {
  remove_parametrizations(static_cast<Module&>(*module), tensor_name, leave_parametrized);
  return module;
}

}  // namespace utils::parametrize

namespace utils::parametrizations {

/// torch.nn.utils.parametrizations._WeightNorm: w = g * v / ||v||, the norm over every dimension
/// but `dim` (over all of them for dim -1, which weight_norm's dim=None gives).
class WeightNorm : public Parametrization {
 public:
  explicit WeightNorm(std::optional<int64_t> dim = 0) : dim(dim.value_or(-1)) {}
  std::string name() const override { return "_WeightNorm"; }
  using Parametrization::forward;
  /// forward(g, v).
  Tensor forward(const std::vector<Tensor>& originals) override;
  /// (g, v) = (norm_except_dim(weight), weight).
  std::optional<Originals> right_inverse(const Tensor& weight) override;
  int64_t dim;
};

/// torch.nn.utils.parametrizations._SpectralNorm: w / sigma, sigma the largest singular value of
/// the weight seen as a matrix [size(dim), rest], estimated by power iteration on the buffers
/// _u and _v (n_power_iterations steps per call in training mode, none in eval mode).
class SpectralNorm : public Parametrization {
 public:
  /// Draws _u and _v from the normal distribution (the global generator), normalizes them and
  /// runs 15 power iterations, as PyTorch does. A 1-D weight gets no buffers and is normalized.
  explicit SpectralNorm(const Tensor& weight, int64_t n_power_iterations = 1, int64_t dim = 0, double eps = 1e-12);
  std::string name() const override { return "_SpectralNorm"; }
  using Parametrization::forward;
  Tensor forward(const Tensor& weight) override;
  std::optional<Originals> right_inverse(const Tensor& value) override { return value; }

  /// The weight as a matrix [size(dim), product of the other sizes].
  Tensor reshape_weight_to_matrix(const Tensor& weight) const;
  /// `iterations` power-iteration steps on _u and _v (in place, no gradient).
  void power_method(const Tensor& weight_mat, int64_t iterations);

  int64_t dim;
  double eps;
  int64_t n_power_iterations = 1;
  Tensor u, v;  // the buffers _u and _v (undefined for a 1-D weight)
};

/// Weight normalization (torch.nn.utils.parametrizations.weight_norm): `name` becomes
/// g * v / ||v|| with originals g (original0, the norm per slice along `dim`) and v (original1).
/// dim std::nullopt takes the norm over the whole tensor. load_state_dict also takes the older
/// torch.nn.utils.weight_norm's keys "<name>_g" and "<name>_v" for the originals.
Module& weight_norm(Module& module, const std::string& name = "weight", std::optional<int64_t> dim = 0);
template <typename M>
std::shared_ptr<M> weight_norm(std::shared_ptr<M> module, const std::string& name = "weight",
                               std::optional<int64_t> dim = 0) {
  weight_norm(static_cast<Module&>(*module), name, dim);
  return module;
}

/// Spectral normalization (torch.nn.utils.parametrizations.spectral_norm). dim std::nullopt is
/// 1 for the ConvTranspose layers and 0 otherwise.
Module& spectral_norm(Module& module, const std::string& name = "weight", int64_t n_power_iterations = 1,
                      double eps = 1e-12, std::optional<int64_t> dim = std::nullopt);
template <typename M>
std::shared_ptr<M> spectral_norm(std::shared_ptr<M> module, const std::string& name = "weight",
                                 int64_t n_power_iterations = 1, double eps = 1e-12,
                                 std::optional<int64_t> dim = std::nullopt) {
  spectral_norm(static_cast<Module&>(*module), name, n_power_iterations, eps, dim);
  return module;
}

}  // namespace utils::parametrizations

}  // namespace ember::nn
