#pragma once
/// torch.nn.ModuleDict, ParameterList and ParameterDict: containers that register what they hold,
/// so that it shows in parameters(), state_dict() ("<key>.weight" for a ModuleDict's module,
/// "0", "1", ... or the key for a parameter), to(), train() and zero_grad() as in PyTorch.
/// Entries keep their insertion order. Module has no way to unregister an entry, so these
/// containers have no pop / clear / erase; a ModuleDict may replace a key's module in place.
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ember/nn/module.h"
#include "ember/tensor.h"

namespace ember::nn {

/// Modules under string keys, registered as children named by their keys (so the keys follow
/// PyTorch's module-name rules: not empty, no '.'). Iterating yields (key, module) pairs.
class ModuleDict : public Module {
 public:
  using Item = std::pair<std::string, std::shared_ptr<Module>>;

  ModuleDict() = default;
  /// The modules in the given order (as an OrderedDict or a list of pairs in PyTorch).
  explicit ModuleDict(const std::vector<Item>& modules) { update(modules); }
  ModuleDict(std::initializer_list<Item> modules) : ModuleDict(std::vector<Item>(modules)) {}
  std::string name() const override { return "ModuleDict"; }

  /// md[key] = module: a new key goes last; an existing key keeps its place and gets `module`.
  void insert(const std::string& key, std::shared_ptr<Module> module);
  /// insert() of each pair in order.
  void update(const std::vector<Item>& modules);
  /// The module under `key`; a missing key throws Python's KeyError text ('key').
  std::shared_ptr<Module> at(const std::string& key) const;
  std::shared_ptr<Module> operator[](const std::string& key) const { return at(key); }
  bool contains(const std::string& key) const;
  size_t size() const { return child_list().size(); }
  bool empty() const { return child_list().empty(); }
  std::vector<std::string> keys() const;
  std::vector<std::shared_ptr<Module>> values() const { return children(); }
  std::vector<Item> items() const { return named_children(); }
  auto begin() const { return child_list().begin(); }
  auto end() const { return child_list().end(); }
};

/// Parameters registered under "0", "1", ... in order. Each tensor becomes a parameter (a leaf
/// that requires grad; a non-leaf is detached first, as Parameter(tensor) does). Not callable.
class ParameterList : public Module {
 public:
  ParameterList() = default;
  explicit ParameterList(const std::vector<Tensor>& values) { extend(values); }
  std::string name() const override { return "ParameterList"; }
  /// Throws "ParameterList should not be called.", as PyTorch.
  Tensor forward(const Tensor& input) override;

  /// Registers `value` as parameter "<size()>" and returns the registered handle.
  Tensor append(const Tensor& value);
  void extend(const std::vector<Tensor>& values);
  /// The i-th parameter; negative i counts from the end; "index i is out of range" otherwise.
  Tensor operator[](int64_t index) const;
  size_t size() const { return values_.size(); }
  bool empty() const { return values_.empty(); }
  auto begin() const { return values_.begin(); }
  auto end() const { return values_.end(); }

 private:
  std::vector<Tensor> values_;  // the registered handles, in order
};

/// Parameters registered under their string keys, in insertion order (PyTorch's ParameterDict
/// given an OrderedDict or a list of pairs; a plain Python dict would be sorted by key first).
/// Each tensor becomes a parameter as in ParameterList. Not callable.
class ParameterDict : public Module {
 public:
  using Item = std::pair<std::string, Tensor>;

  ParameterDict() = default;
  explicit ParameterDict(const std::vector<Item>& parameters) { update(parameters); }
  ParameterDict(std::initializer_list<Item> parameters) : ParameterDict(std::vector<Item>(parameters)) {}
  std::string name() const override { return "ParameterDict"; }
  /// Throws "ParameterDict should not be called.", as PyTorch.
  Tensor forward(const Tensor& input) override;

  /// Registers `value` as parameter `key` and returns the registered handle. A key that is
  /// already present is an error (PyTorch would replace it; Module cannot replace a parameter).
  Tensor insert(const std::string& key, const Tensor& value);
  void update(const std::vector<Item>& parameters);
  /// The parameter under `key`; a missing key throws PyTorch's AttributeError text.
  Tensor at(const std::string& key) const;
  Tensor operator[](const std::string& key) const { return at(key); }
  /// The parameter under `key`, or `default_value` when there is none.
  Tensor get(const std::string& key, const Tensor& default_value = Tensor()) const;
  bool contains(const std::string& key) const;
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  std::vector<std::string> keys() const;
  std::vector<Tensor> values() const;
  const std::vector<Item>& items() const { return items_; }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

 private:
  std::vector<Item> items_;  // the registered handles under their keys, in order
};

}  // namespace ember::nn
