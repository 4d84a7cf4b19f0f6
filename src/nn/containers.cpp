// ModuleDict, ParameterList and ParameterDict (include/ember/nn/containers.h): thin layers over
// Module's registration, which checks the names (PyTorch's rules and messages).
#include "ember/nn/containers.h"

#include <algorithm>

#include "core/check.h"

namespace ember::nn {

namespace {

/// What Parameter(tensor) makes of a tensor: a leaf (a non-leaf is detached, sharing storage).
Tensor as_parameter(const Tensor& value) { return value.defined() && !value.is_leaf() ? value.detach() : value; }

}  // namespace

// ---------------------------------------------------------------- ModuleDict

void ModuleDict::insert(const std::string& key, std::shared_ptr<Module> module) {
  EMBER_CHECK(module != nullptr, "ModuleDict: module '", key, "' is null");
  // An existing key keeps its place, as assigning to a Python dict's key does. The children are
  // this module's own (non-const) list, which Module hands to containers read-only.
  auto& children = const_cast<std::vector<Item>&>(child_list());
  for (Item& item : children) {
    if (item.first == key) {
      item.second = std::move(module);
      return;
    }
  }
  add_child(key, std::move(module));
}

void ModuleDict::update(const std::vector<Item>& modules) {
  for (const auto& [key, module] : modules) insert(key, module);
}

std::shared_ptr<Module> ModuleDict::at(const std::string& key) const {
  for (const Item& item : child_list()) {
    if (item.first == key) return item.second;
  }
  detail::fail("'", key, "'");  // Python's KeyError(key)
}

bool ModuleDict::contains(const std::string& key) const {
  return std::any_of(child_list().begin(), child_list().end(), [&](const Item& item) { return item.first == key; });
}

std::vector<std::string> ModuleDict::keys() const {
  std::vector<std::string> out;
  for (const Item& item : child_list()) out.push_back(item.first);
  return out;
}

// ---------------------------------------------------------------- ParameterList

Tensor ParameterList::forward(const Tensor& /*input*/) { detail::fail("ParameterList should not be called."); }

Tensor ParameterList::append(const Tensor& value) {
  Tensor p = register_parameter(std::to_string(values_.size()), as_parameter(value));
  values_.push_back(p);
  return p;
}

void ParameterList::extend(const std::vector<Tensor>& values) {
  for (const Tensor& value : values) append(value);
}

Tensor ParameterList::operator[](int64_t index) const {
  const auto n = static_cast<int64_t>(values_.size());
  EMBER_CHECK(index >= -n && index < n, "index ", index, " is out of range");
  return values_[static_cast<size_t>(index < 0 ? index + n : index)];
}

// ---------------------------------------------------------------- ParameterDict

Tensor ParameterDict::forward(const Tensor& /*input*/) { detail::fail("ParameterDict should not be called."); }

Tensor ParameterDict::insert(const std::string& key, const Tensor& value) {
  // PyTorch's register_parameter words these without the ", got: <name>" that Module adds.
  EMBER_CHECK(!key.empty(), "parameter name can't be empty string \"\"");
  EMBER_CHECK(key.find('.') == std::string::npos, "parameter name can't contain \".\"");
  EMBER_CHECK(!contains(key), "ParameterDict: key '", key,
              "' is already present, and ember cannot replace a registered parameter");
  Tensor p = register_parameter(key, as_parameter(value));
  items_.emplace_back(key, p);
  return p;
}

void ParameterDict::update(const std::vector<Item>& parameters) {
  for (const auto& [key, value] : parameters) insert(key, value);
}

Tensor ParameterDict::at(const std::string& key) const {
  for (const Item& item : items_) {
    if (item.first == key) return item.second;
  }
  detail::fail("'ParameterDict' object has no attribute '", key, "'");
}

Tensor ParameterDict::get(const std::string& key, const Tensor& default_value) const {
  return contains(key) ? at(key) : default_value;
}

bool ParameterDict::contains(const std::string& key) const {
  return std::any_of(items_.begin(), items_.end(), [&](const Item& item) { return item.first == key; });
}

std::vector<std::string> ParameterDict::keys() const {
  std::vector<std::string> out;
  for (const Item& item : items_) out.push_back(item.first);
  return out;
}

std::vector<Tensor> ParameterDict::values() const {
  std::vector<Tensor> out;
  for (const Item& item : items_) out.push_back(item.second);
  return out;
}

}  // namespace ember::nn
