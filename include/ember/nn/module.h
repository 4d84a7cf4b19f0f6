#pragma once
/// ember::nn::Module: the base of every layer, as torch.nn.Module. A module owns named parameters,
/// buffers and child modules, in registration order; names of nested entries are dotted
/// ("0.weight", "fc1.bias") exactly as PyTorch forms them, so state_dict keys match PyTorch's.
#include <memory>
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

  void insert(std::string key, Tensor value);
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
  Tensor operator()(const Tensor& input) { return forward(input); }

  // ---- registration; names must be non-empty, contain no '.', and be unique in this module ----
  /// Registers `tensor` as a parameter (a leaf that requires grad unless told otherwise) and
  /// returns the handle that the module and its optimizers share.
  Tensor register_parameter(const std::string& name, Tensor tensor, bool requires_grad = true);
  Tensor register_buffer(const std::string& name, Tensor tensor);
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
  /// This module (named "") followed by every descendant, with dotted names.
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_modules();

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
  /// keys (both only when strict) and size mismatches; nothing is changed when it throws.
  void load_state_dict(const StateDict& state, bool strict = true);

 protected:
  /// The children as stored, for containers.
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& child_list() const { return children_; }
  void add_child(const std::string& name, std::shared_ptr<Module> module);

 private:
  void check_new_name(const std::string& name, const char* what) const;
  void collect_state(const std::string& prefix, StateDict& out) const;
  template <typename Visit>
  void visit_tensors(Visit&& visit);

  std::vector<std::pair<std::string, Tensor>> parameters_;
  std::vector<std::pair<std::string, Tensor>> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

/// Replaces the contents of `target`'s TensorImpl (storage, geometry, dtype) with those of
/// `source`, keeping the impl object and its autograd state, so every handle to `target` sees
/// the new data. Used by Module::to; `target` must be a leaf.
void replace_tensor_data(const Tensor& target, const Tensor& source);

}  // namespace ember::nn
