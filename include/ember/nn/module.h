#pragma once
/// ember::nn::Module: the base of every layer, as torch.nn.Module. A module owns named parameters,
/// buffers and child modules, in registration order; names of nested entries are dotted
/// ("0.weight", "fc1.bias") exactly as PyTorch forms them, so state_dict keys match PyTorch's.
///
/// Calling a module (operator()) runs its hooks around forward, as torch.nn.Module.__call__ does:
/// forward pre-hooks (each may replace the input), forward, forward hooks (each may replace the
/// output), and, when backward hooks are registered, identity nodes named
/// BackwardHookFunctionBackward around the input and the output that hand grad_output and
/// grad_input to them. A module with no hooks costs one pointer check more than forward().
/// Calling forward() directly runs no hooks (and no parametrization, ember/nn/parametrize.h).
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ember/device.h"
#include "ember/dtype.h"
#include "ember/tensor.h"

namespace ember::nn {

/// Name → tensor pairs in a fixed order (PyTorch's OrderedDict of a state_dict).
class StateDict {
 public:
  using Item = std::pair<std::string, Tensor>;

  StateDict() = default;
  /// The items in this order; the keys must be unique.
  explicit StateDict(std::vector<Item> items) : items_(std::move(items)) {}

  /// Adds `key`, or replaces its tensor where it stands.
  void insert(std::string key, Tensor value);
  /// Removes `key`; false when there was none.
  bool erase(std::string_view key);
  bool contains(std::string_view key) const;
  /// The tensor stored under `key`; throws ember::Error when there is none.
  const Tensor& at(std::string_view key) const;
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  std::vector<std::string> keys() const;
  const std::vector<Item>& items() const { return items_; }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

 private:
  std::vector<Item> items_;
};

/// What load_state_dict reports (PyTorch's _IncompatibleKeys): the model's keys the state lacked
/// and the state's keys the model has no place for, in PyTorch's order (module by module, depth
/// first; a module's parameters then buffers, and the state's keys in the state's order).
struct IncompatibleKeys {
  std::vector<std::string> missing_keys;
  std::vector<std::string> unexpected_keys;
  /// PyTorch's repr: "<All keys matched successfully>" or
  /// "_IncompatibleKeys(missing_keys=['a'], unexpected_keys=[])".
  std::string to_string() const;
};

class Module;
struct ModuleHooks;        // internal: a module's hooks and parametrized tensors (src/nn/module.cpp)
struct ParametrizeAccess;  // internal: what nn::utils::parametrize does to a module (src/nn/parametrize.cpp)

/// Returned by the register_*_hook methods (torch.utils.hooks.RemovableHandle): remove()
/// unregisters the hook; removing twice, or after the module is gone, does nothing.
class RemovableHandle {
 public:
  RemovableHandle() = default;
  void remove();
  /// The hook's id, unique in the process.
  uint64_t id() const { return id_; }

 private:
  friend class Module;
  RemovableHandle(std::weak_ptr<ModuleHooks> hooks, uint64_t id) : hooks_(std::move(hooks)), id_(id) {}
  std::weak_ptr<ModuleHooks> hooks_;
  uint64_t id_ = 0;
};

/// hook(module, input): std::nullopt keeps the input, a tensor replaces it for forward and for
/// the hooks after it (register_forward_pre_hook).
using ForwardPreHook = std::function<std::optional<Tensor>(Module& module, const Tensor& input)>;
/// hook(module, input, output), with the input forward received: std::nullopt keeps the output,
/// a tensor replaces it (register_forward_hook).
using ForwardHook = std::function<std::optional<Tensor>(Module& module, const Tensor& input, const Tensor& output)>;
/// hook(module, grad_output), called when the gradient of the module's output is known:
/// std::nullopt keeps it, a tensor replaces it (undefined: no gradient flows on).
using BackwardPreHook = std::function<std::optional<Tensor>(Module& module, const Tensor& grad_output)>;
/// hook(module, grad_input, grad_output), called when the gradient of the module's input is
/// known (grad_input is undefined when the input does not require grad): std::nullopt keeps
/// grad_input, a tensor replaces it.
using BackwardHook =
    std::function<std::optional<Tensor>(Module& module, const Tensor& grad_input, const Tensor& grad_output)>;
/// hook(state, prefix): called by load_state_dict before the module loads, with the entries under
/// its prefix (full keys, "fc.weight" for prefix "fc."), which it may rename, add or remove; its
/// children then load from what it leaves (torch's _register_load_state_dict_pre_hook).
using LoadStateDictPreHook = std::function<void(StateDict& state, const std::string& prefix)>;

class Module : public std::enable_shared_from_this<Module> {
 public:
  Module() = default;
  virtual ~Module() = default;
  // Modules are shared (std::shared_ptr<T>); copying one would alias its parameters silently.
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// The class name, used in messages ("Error(s) in loading state_dict for Linear").
  virtual std::string name() const { return "Module"; }

  /// The computation of a single-input module. The base class throws, as PyTorch does.
  virtual Tensor forward(const Tensor& input);
  /// Calls forward with the hooks and parametrizations around it (torch.nn.Module.__call__).
  Tensor operator()(const Tensor& input) { return hooks_ ? call_with_hooks(input) : forward(input); }

  // ---- hooks (torch.nn.Module.register_*_hook, without kwargs); `prepend` puts the hook before
  // the others of its kind. Each returns a handle whose remove() unregisters the hook. ----
  RemovableHandle register_forward_pre_hook(ForwardPreHook hook, bool prepend = false);
  /// `always_call`: also run when forward (or a hook) throws, with an undefined output if there
  /// is none yet; an error in the hook itself is then a warning.
  RemovableHandle register_forward_hook(ForwardHook hook, bool prepend = false, bool always_call = false);
  RemovableHandle register_full_backward_pre_hook(BackwardPreHook hook, bool prepend = false);
  RemovableHandle register_full_backward_hook(BackwardHook hook, bool prepend = false);
  RemovableHandle register_load_state_dict_pre_hook(LoadStateDictPreHook hook);

  // ---- registration; names must be non-empty, contain no '.', and be unique in this module ----
  /// Registers `tensor` as a parameter (a leaf that requires grad unless told otherwise) and
  /// returns the handle that the module and its optimizers share.
  Tensor register_parameter(const std::string& name, Tensor tensor, bool requires_grad = true);
  Tensor register_buffer(const std::string& name, Tensor tensor);
  /// Registers a child; a child already registered under `name` is replaced in its place (as
  /// PyTorch's add_module). The replacement reaches forward only in modules that run their
  /// children from the registered list (Sequential, ModuleList/Dict users), not through a member.
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_child(name, module);
    return module;
  }

  // ---- traversal, in registration order, recursing depth-first like PyTorch ----
  /// Shared parameters appear once, under the first name that reaches them.
  std::vector<std::pair<std::string, Tensor>> named_parameters(bool recurse = true) const;
  std::vector<Tensor> parameters(bool recurse = true) const;
  std::vector<std::pair<std::string, Tensor>> named_buffers(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const;
  std::vector<std::shared_ptr<Module>> children() const;
  /// This module (named `prefix`) followed by every descendant, with dotted names; a module
  /// reached twice is listed once unless `remove_duplicate` is false.
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_modules(const std::string& prefix = "",
                                                                             bool remove_duplicate = true);
  std::vector<std::shared_ptr<Module>> modules(bool remove_duplicate = true);
  /// The descendant at dotted path `target` ("" is this module); PyTorch's AttributeError text
  /// ("Linear has no attribute `foo`") when there is none.
  std::shared_ptr<Module> get_submodule(const std::string& target);
  /// The parameter (buffer) at dotted path `target` ("block.1.weight").
  Tensor get_parameter(const std::string& target);
  Tensor get_buffer(const std::string& target);

  /// Calls fn on every child's subtree (children first), then on this module; returns *this.
  Module& apply(const std::function<void(Module&)>& fn);
  /// Sets requires_grad on every parameter of the tree; returns *this.
  Module& requires_grad_(bool requires_grad = true);

  // ---- mode ----
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // ---- moving: every parameter, buffer and gradient changes in place, so every Tensor handle
  // to them (an optimizer's, the user's) stays valid. to(Dtype) converts floating-point tensors
  // only, as in PyTorch; integer buffers keep their dtype. ----
  void to(Device device);
  void to(Dtype dtype);
  void to(Device device, Dtype dtype);

  /// Clears every parameter's gradient (set_to_none, PyTorch's default) or fills it with zeros.
  void zero_grad(bool set_to_none = true);

  /// Parameters and buffers of the whole tree, detached but sharing storage, in PyTorch's order.
  StateDict state_dict() const;
  /// Copies values from `state` into the existing tensors (in place, no gradient recorded).
  /// Throws PyTorch's "Error(s) in loading state_dict for ..." listing missing keys, unexpected
  /// keys (both only when strict) and size mismatches (in both modes); nothing is changed when it
  /// throws. Returns the missing and unexpected keys (empty when strict, or it would have thrown).
  IncompatibleKeys load_state_dict(const StateDict& state, bool strict = true);

 protected:
  /// The children as stored, for containers.
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& child_list() const { return children_; }
  void add_child(const std::string& name, std::shared_ptr<Module> module);

 private:
  friend struct ParametrizeAccess;
  friend class RemovableHandle;

  Tensor call_with_hooks(const Tensor& input);
  ModuleHooks& hooks();
  /// Parametrized tensors (nn::utils::parametrize): `refresh` recomputes the value that the
  /// layer's handle for `name` shows, and runs in each call after the forward pre-hooks.
  void set_parametrized(const std::string& name, std::function<void()> refresh);
  void unset_parametrized(const std::string& name);
  bool has_parametrized(const std::string& name) const;
  /// name() with "Parametrized" in front while a tensor is parametrized (PyTorch's class swap).
  std::string type_name() const;
  void check_new_name(const std::string& name, const char* what) const;
  void collect_state(const std::string& prefix, StateDict& out) const;
  template <typename Visit>
  void visit_tensors(Visit&& visit);

  std::vector<std::pair<std::string, Tensor>> parameters_;
  std::vector<std::pair<std::string, Tensor>> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
  std::shared_ptr<ModuleHooks> hooks_;  // null until a hook or parametrization is added
};

/// Replaces the contents of `target`'s TensorImpl (storage, geometry, dtype) with those of
/// `source`, keeping the impl object and its autograd state, so every handle to `target` sees
/// the new data. Used by Module::to; `target` must be a leaf.
void replace_tensor_data(const Tensor& target, const Tensor& source);

}  // namespace ember::nn
