// Parametrizations (torch.nn.utils.parametrize, and weight_norm / spectral_norm of
// torch.nn.utils.parametrizations). How the value reaches the layers' forward: the comment at the
// top of include/ember/nn/parametrize.h.
#include "ember/nn/parametrize.h"

#include <algorithm>
#include <mutex>
#include <set>
#include <utility>

#include "autograd/node.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/grad_mode.h"
#include "ember/nn/containers.h"
#include "ember/ops.h"

namespace ember::nn {

/// What the parametrize functions do to a module's private lists (declared a friend in module.h).
struct ParametrizeAccess {
  using Named = std::vector<std::pair<std::string, Tensor>>;
  static Named& parameters(Module& m) { return m.parameters_; }
  static Named& buffers(Module& m) { return m.buffers_; }
  static auto& children(Module& m) { return m.children_; }
  static const auto& children(const Module& m) { return m.children_; }
  static void set_parametrized(Module& m, const std::string& name, std::function<void()> refresh) {
    m.set_parametrized(name, std::move(refresh));
  }
  static void unset_parametrized(Module& m, const std::string& name) { m.unset_parametrized(name); }
  static std::string type_name(const Module& m) { return m.type_name(); }
  static Tensor& slot(ParametrizationList& list) { return list.slot_; }
  static Tensor take_checked_value(ParametrizationList& list) { return std::exchange(list.checked_value_, Tensor()); }
};

namespace {

std::string torch_size(IntList sizes) { return "torch.Size(" + detail::shape_str(sizes) + ")"; }

bool same_sizes(IntList a, IntList b) { return std::equal(a.begin(), a.end(), b.begin(), b.end()); }

// Makes the slot (the TensorImpl a layer's member shares) show `value`: its data, geometry and
// autograd history. A fresh AutogradMeta holds only the grad_fn, so nothing else of the value's
// autograd state (hooks, retain_grad) is shared.
void show_value(const Tensor& slot, Tensor value) {
  if (value.requires_grad() && value.is_leaf()) {
    // The parametrization returned an original as it is: an alias with a node of its own, so the
    // slot never shares a leaf's accumulator.
    Tensor alias = ember::detail::make_view(value, value.impl().sizes, value.impl().strides, value.storage_offset());
    value = autograd::record_view_of(alias, value, "AliasBackward0", [](const Tensor& g) { return g; });
  }
  ember::detail::TensorImpl& dst = slot.impl();
  const ember::detail::TensorImpl& src = value.impl();
  dst.storage = src.storage;
  dst.sizes = src.sizes;
  dst.strides = src.strides;
  dst.offset = src.offset;
  dst.numel = src.numel;
  dst.dtype = src.dtype;
  dst.view_base = src.view_base;
  dst.view_version = src.view_version;
  dst.view_creation = src.view_creation;
  dst.view_output_nr = src.view_output_nr;
  if (src.autograd && src.autograd->grad_fn) {
    auto meta = std::make_shared<AutogradMeta>();
    meta->grad_fn = src.autograd->grad_fn;
    dst.autograd = std::move(meta);
  } else {
    dst.autograd = nullptr;
  }
}

// Makes the slot a plain leaf holding `data`'s storage again (remove_parametrizations).
void make_plain(Tensor slot, const Tensor& data, bool requires_grad) {
  ember::detail::TensorImpl& dst = slot.impl();
  dst.autograd = nullptr;
  dst.view_base.reset();
  dst.view_creation = ember::detail::TensorImpl::ViewCreation::Default;
  dst.view_output_nr = 0;
  replace_tensor_data(slot, data);
  if (requires_grad) slot.requires_grad_(true);
}

std::shared_ptr<ModuleDict> parametrization_dict(const Module& module) {
  for (const auto& [name, child] : ParametrizeAccess::children(module)) {
    if (name == "parametrizations") return std::dynamic_pointer_cast<ModuleDict>(child);
  }
  return nullptr;
}

void erase_child(Module& module, const std::string& name) {
  auto& kids = ParametrizeAccess::children(module);
  std::erase_if(kids, [&](const auto& item) { return item.first == name; });
}

// Where a module keeps `name`: its parameter list, its buffer list, or neither.
std::pair<ParametrizeAccess::Named*, ParametrizeAccess::Named::iterator> find_tensor(Module& module,
                                                                                     const std::string& name) {
  for (ParametrizeAccess::Named* list : {&ParametrizeAccess::parameters(module), &ParametrizeAccess::buffers(module)}) {
    auto it = std::find_if(list->begin(), list->end(), [&](const auto& item) { return item.first == name; });
    if (it != list->end()) return {list, it};
  }
  return {nullptr, {}};
}

// parametrize::Cached's state: how many guards are alive, and the lists whose slot already shows
// a value computed under them. Process-wide, as PyTorch's _cache.
std::mutex cache_mutex;
int cache_depth = 0;
std::set<const ParametrizationList*> cached_lists;

// The refresher a parametrized module runs before each call (Module::set_parametrized).
void refresh(const std::shared_ptr<ParametrizationList>& list) {
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    if (cache_depth > 0 && !cached_lists.insert(list.get()).second) return;
  }
  show_value(ParametrizeAccess::slot(*list), list->value());
}

// Runs a parametrization module on one tensor, through operator() as PyTorch's module call.
Tensor call_on(Module& parametrization, const Tensor& x) { return parametrization(x); }

}  // namespace

// ---------------------------------------------------------------- Parametrization

Tensor Parametrization::forward(const std::vector<Tensor>& originals) {
  EMBER_CHECK(originals.size() == 1, name(), ".forward() takes 1 tensor but ", originals.size(), " were given");
  return forward(originals[0]);
}

std::optional<Originals> Parametrization::right_inverse(const Tensor& /*value*/) { return std::nullopt; }

// ---------------------------------------------------------------- ParametrizationList

ParametrizationList::ParametrizationList(std::shared_ptr<Module> parametrization, const Tensor& original,
                                         bool is_parameter, bool unsafe_flag)
    : unsafe(unsafe_flag) {
  EMBER_CHECK(parametrization != nullptr, "ParametrizationList requires one or more modules.");
  EMBER_CHECK(original.defined(), "register_parametrization: the tensor to parametrize is None");
  register_module("0", parametrization);
  std::optional<Originals> inverse;
  {
    NoGradGuard no_grad;
    if (auto* with_inverse = dynamic_cast<Parametrization*>(parametrization.get())) {
      inverse = with_inverse->right_inverse(original);
    }
  }
  const bool keep_grad = original.requires_grad();
  auto add_original = [&](const std::string& key, const Tensor& value) {
    // A new leaf (Parameter(value) in PyTorch): sharing storage, never the slot's own impl.
    Tensor leaf = value.detach();
    if (is_parameter) {
      originals_.push_back(register_parameter(key, leaf, keep_grad));
    } else {
      leaf.requires_grad_(keep_grad);
      originals_.push_back(register_buffer(key, leaf));
    }
  };
  if (!inverse || std::holds_alternative<Tensor>(*inverse)) {
    const Tensor value = inverse ? std::get<Tensor>(*inverse) : original;
    EMBER_CHECK(value.defined(),
                "'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). Got "
                "NoneType");
    EMBER_CHECK(value.dtype() == original.dtype(),
                "When `right_inverse` outputs one tensor, it may not change the dtype.\noriginal.dtype: ",
                dtype_name(original.dtype()), "\nright_inverse(original).dtype: ", dtype_name(value.dtype()));
    EMBER_CHECK(value.device() == original.device(),
                "When `right_inverse` outputs one tensor, it may not change the device.\noriginal.device: ",
                original.device().str(), "\nright_inverse(original).device: ", value.device().str());
    is_tensor_ = true;
    // PyTorch sets the original Parameter to right_inverse's result (original.set_(new)).
    Tensor leaf = original.detach();
    if (!value.is_same(original)) replace_tensor_data(leaf, value.detach());
    add_original("original", leaf);
  } else {
    is_tensor_ = false;
    const auto& values = std::get<std::vector<Tensor>>(*inverse);
    for (size_t i = 0; i < values.size(); ++i) {
      EMBER_CHECK(values[i].defined(),
                  "'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). Got element ", i,
                  " of the sequence with type NoneType.");
      add_original("original" + std::to_string(i), values[i]);
    }
  }
  if (!unsafe) {
    Tensor z = value();
    EMBER_CHECK(z.defined(), "A parametrization must return a tensor. Got NoneType.");
    EMBER_CHECK(z.dtype() == original.dtype(),
                "Registering a parametrization may not change the dtype of the tensor, unless `unsafe` flag is "
                "enabled.\nunparametrized dtype: ",
                dtype_name(original.dtype()), "\nparametrized dtype: ", dtype_name(z.dtype()));
    EMBER_CHECK(same_sizes(z.sizes(), original.sizes()),
                "Registering a parametrization may not change the shape of the tensor, unless `unsafe` flag is "
                "enabled.\nunparametrized shape: ",
                torch_size(original.sizes()), "\nparametrized shape: ", torch_size(z.sizes()));
    checked_value_ = z;
  }
}

Tensor ParametrizationList::forward(const Tensor& /*input*/) {
  detail::fail("ParametrizationList.forward() takes no input; use value()");
}

Tensor ParametrizationList::value() {
  const auto& list = child_list();
  Tensor x;
  if (is_tensor_) {
    x = call_on(*list[0].second, originals_[0]);
  } else {
    auto* multi = dynamic_cast<Parametrization*>(list[0].second.get());
    EMBER_CHECK(multi != nullptr, "a parametrization over ", originals_.size(),
                " originals must be an nn::Parametrization");
    x = multi->forward(originals_);
  }
  for (size_t i = 1; i < list.size(); ++i) x = call_on(*list[i].second, x);
  return x;
}

void ParametrizationList::right_inverse(const Tensor& new_value) {
  NoGradGuard no_grad;
  const auto& list = child_list();
  Originals value = new_value;
  for (size_t i = list.size(); i-- > 0;) {
    auto* with_inverse = dynamic_cast<Parametrization*>(list[i].second.get());
    std::optional<Originals> next;
    if (with_inverse && std::holds_alternative<Tensor>(value))
      next = with_inverse->right_inverse(std::get<Tensor>(value));
    EMBER_CHECK(next.has_value(), "parametrization ", list[i].second->name(), " does not implement right_inverse.");
    value = std::move(*next);
  }
  if (is_tensor_) {
    EMBER_CHECK(std::holds_alternative<Tensor>(value), "`right_inverse` should return a tensor. Got tuple");
    const Tensor& t = std::get<Tensor>(value);
    EMBER_CHECK(t.dtype() == originals_[0].dtype(), "The tensor returned by `right_inverse` has dtype ",
                dtype_name(t.dtype()), " while `original` has dtype ", dtype_name(originals_[0].dtype()));
    replace_tensor_data(originals_[0], t.detach());
    return;
  }
  EMBER_CHECK(std::holds_alternative<std::vector<Tensor>>(value),
              "'right_inverse' must return a sequence of tensors. Got Tensor.");
  const auto& values = std::get<std::vector<Tensor>>(value);
  EMBER_CHECK(values.size() == originals_.size(), "'right_inverse' must return a sequence of tensors of length ",
              originals_.size(), ". Got a sequence of length ", values.size(), ".");
  for (size_t i = 0; i < values.size(); ++i) {
    EMBER_CHECK(values[i].dtype() == originals_[i].dtype(), "Tensor ", i, " returned by `right_inverse` has dtype ",
                dtype_name(values[i].dtype()), " while `original", i, "` has dtype ",
                dtype_name(originals_[i].dtype()));
    replace_tensor_data(originals_[i], values[i].detach());
  }
}

void ParametrizationList::append(std::shared_ptr<Module> parametrization) {
  EMBER_CHECK(parametrization != nullptr, "ParametrizationList.append: the module is null");
  register_module(std::to_string(child_list().size()), std::move(parametrization));
}

// ---------------------------------------------------------------- register / remove

namespace utils::parametrize {

Cached::Cached() {
  std::lock_guard<std::mutex> lock(cache_mutex);
  ++cache_depth;
}

Cached::~Cached() {
  std::lock_guard<std::mutex> lock(cache_mutex);
  if (--cache_depth == 0) cached_lists.clear();
}

bool is_parametrized(const Module& module, const std::optional<std::string>& tensor_name) {
  auto dict = parametrization_dict(module);
  if (!dict) return false;
  return tensor_name ? dict->contains(*tensor_name) : !dict->empty();
}

std::shared_ptr<ParametrizationList> parametrizations_of(const Module& module, const std::string& tensor_name) {
  EMBER_CHECK(is_parametrized(module, tensor_name), "Module ", ParametrizeAccess::type_name(module),
              " does not have a parametrization on ", tensor_name);
  return std::static_pointer_cast<ParametrizationList>(parametrization_dict(module)->at(tensor_name));
}

Module& register_parametrization(Module& module, const std::string& tensor_name,
                                 std::shared_ptr<Module> parametrization, bool unsafe) {
  EMBER_CHECK(parametrization != nullptr, "register_parametrization: the parametrization is null");
  parametrization->train(module.is_training());
  if (is_parametrized(module, tensor_name)) {
    auto list = parametrizations_of(module, tensor_name);
    if (!unsafe) {
      const Tensor y = list->value();
      const Tensor x = call_on(*parametrization, y);
      EMBER_CHECK(x.defined(), "A parametrization must return a tensor. Got NoneType.");
      EMBER_CHECK(x.dtype() == y.dtype(),
                  "Registering a parametrization may not change the dtype of the tensor, unless the `unsafe` flag is "
                  "enabled.\nmodule.",
                  tensor_name, ".dtype: ", dtype_name(y.dtype()), "\nparametrization(module.", tensor_name,
                  ").dtype: ", dtype_name(x.dtype()));
      EMBER_CHECK(same_sizes(x.sizes(), y.sizes()),
                  "Registering a parametrization may not change the shape of the tensor, unless the `unsafe` flag is "
                  "enabled.\nmodule.",
                  tensor_name, ".shape: ", torch_size(y.sizes()), "\nparametrization(module.", tensor_name,
                  ").shape: ", torch_size(x.sizes()));
      if (auto* with_inverse = dynamic_cast<Parametrization*>(parametrization.get())) {
        if (std::optional<Originals> z = with_inverse->right_inverse(x)) {
          EMBER_CHECK(std::holds_alternative<Tensor>(*z),
                      "parametrization.right_inverse must return a tensor. Got: tuple");
          const Tensor& zt = std::get<Tensor>(*z);
          EMBER_CHECK(zt.dtype() == y.dtype(),
                      "The tensor returned by parametrization.right_inverse must have the same dtype as module.",
                      tensor_name, ", unless the `unsafe` flag is enabled.\nmodule.", tensor_name,
                      ".dtype: ", dtype_name(y.dtype()), "\nreturned dtype: ", dtype_name(zt.dtype()));
          EMBER_CHECK(same_sizes(zt.sizes(), y.sizes()),
                      "The tensor returned by parametrization.right_inverse must have the same shape as module.",
                      tensor_name, ", unless the `unsafe` flag is enabled.\nmodule.", tensor_name,
                      ".shape: ", torch_size(y.sizes()), "\nreturned shape: ", torch_size(zt.sizes()));
        }
      }
    }
    list->append(std::move(parametrization));
    list->unsafe = list->unsafe || unsafe;
    show_value(ParametrizeAccess::slot(*list), list->value());
    return module;
  }

  auto [where, it] = find_tensor(module, tensor_name);
  EMBER_CHECK(where != nullptr, "Module '", ParametrizeAccess::type_name(module),
              "' does not have a parameter, a buffer, or a parametrized element with name '", tensor_name, "'");
  const bool is_parameter = where == &ParametrizeAccess::parameters(module);
  const Tensor slot = it->second;
  EMBER_CHECK(slot.defined(), "register_parametrization: module '", ParametrizeAccess::type_name(module), "' has '",
              tensor_name, "' set to None");
  // Everything that can fail happens in the constructor, before the module changes.
  auto list = std::make_shared<ParametrizationList>(std::move(parametrization), slot, is_parameter, unsafe);
  Tensor value = ParametrizeAccess::take_checked_value(*list);
  if (!value.defined()) value = list->value();

  if (is_parameter && slot.grad().defined() && list->is_tensor()) list->original().set_grad(slot.grad());
  where->erase(it);
  auto dict = parametrization_dict(module);
  if (!dict) {
    dict = std::make_shared<ModuleDict>();
    module.register_module("parametrizations", dict);
  }
  dict->insert(tensor_name, list);
  ParametrizeAccess::slot(*list) = slot;
  ParametrizeAccess::set_parametrized(module, tensor_name, [list] { refresh(list); });
  show_value(slot, value);
  return module;
}

Module& remove_parametrizations(Module& module, const std::string& tensor_name, bool leave_parametrized) {
  EMBER_CHECK(is_parametrized(module, tensor_name), "Module ", ParametrizeAccess::type_name(module),
              " does not have a parametrization on ", tensor_name);
  auto list = parametrizations_of(module, tensor_name);
  Tensor slot = ParametrizeAccess::slot(*list);
  // The original's kind: a parameter when the originals are parameters; PyTorch registers a
  // value computed from several originals as a parameter only when it requires grad.
  bool is_parameter = !ParametrizeAccess::parameters(*list).empty();
  Tensor data;
  bool requires_grad = false;
  Tensor grad;
  if (list->is_tensor()) {
    Tensor original = list->original();
    if (leave_parametrized) {
      Tensor t;
      {
        NoGradGuard no_grad;
        t = list->value();
      }
      // original.set_(t): the original now holds the parametrized value.
      replace_tensor_data(original, t.detach());
    }
    data = original;
    requires_grad = original.requires_grad();
    grad = original.grad();
  } else {
    EMBER_CHECK(leave_parametrized,
                "Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized in terms of a "
                "sequence of tensors.");
    const Tensor t = list->value();
    data = t.detach();
    requires_grad = t.requires_grad();
    is_parameter = requires_grad;
  }

  ParametrizeAccess::unset_parametrized(module, tensor_name);
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    cached_lists.erase(list.get());
  }
  auto dict = parametrization_dict(module);
  erase_child(*dict, tensor_name);
  if (dict->empty()) erase_child(module, "parametrizations");
  // The layer's member (the slot) becomes the plain tensor again, sharing the original's storage.
  make_plain(slot, data, requires_grad && is_parameter);
  if (is_parameter) {
    module.register_parameter(tensor_name, slot, requires_grad);
    if (grad.defined()) slot.set_grad(grad);
  } else {
    if (requires_grad) slot.requires_grad_(true);
    module.register_buffer(tensor_name, slot);
  }
  return module;
}

}  // namespace utils::parametrize

// ---------------------------------------------------------------- weight_norm, spectral_norm

namespace utils::parametrizations {

namespace {

// PyTorch's norm_except_dim(v, 2, dim): the 2-norm over every dimension but `dim`, shaped to
// broadcast against v (size(dim) at dim, ones elsewhere); over the whole tensor for dim -1.
Tensor norm_except_dim(const Tensor& v, int64_t dim) {
  if (dim == -1) return vector_norm(v, 2.0);
  const int64_t d = ember::detail::wrap_dim(dim, v.dim());
  std::vector<int64_t> shape(static_cast<size_t>(v.dim()), 1);
  shape[static_cast<size_t>(d)] = v.size(d);
  const Tensor rows = v.transpose(0, d).reshape({v.size(d), -1});
  return vector_norm(rows, 2.0, {1}).reshape(shape);
}

// F.normalize(x, dim=0, eps) of a vector: x / max(||x||, eps).
Tensor normalize_vector(const Tensor& x, double eps) { return x / clamp(vector_norm(x, 2.0, {0}, true), eps); }

}  // namespace

Tensor WeightNorm::forward(const std::vector<Tensor>& originals) {
  EMBER_CHECK(originals.size() == 2, "_WeightNorm.forward() takes 2 tensors (weight_g, weight_v) but ",
              originals.size(), " were given");
  const Tensor& g = originals[0];
  const Tensor& v = originals[1];
  EMBER_CHECK(v.device() == g.device(), "weight_norm: expected v_in and g_in to be on the same device, but v_in is on ",
              v.device().str(), " and g_in is on ", g.device().str());
  return v * (g / norm_except_dim(v, dim));
}

std::optional<Originals> WeightNorm::right_inverse(const Tensor& weight) {
  return Originals(std::vector<Tensor>{norm_except_dim(weight, dim), weight});
}

SpectralNorm::SpectralNorm(const Tensor& weight, int64_t n_power_iterations_, int64_t dim_, double eps_) : eps(eps_) {
  const int64_t ndim = weight.dim();
  if (dim_ >= ndim || dim_ < -ndim) {
    detail::fail("Dimension out of range (expected to be in range of [-", ndim, ", ", ndim - 1, "] but got ", dim_,
                 ")");
  }
  EMBER_CHECK(n_power_iterations_ > 0,
              "Expected n_power_iterations to be positive, but got n_power_iterations=", n_power_iterations_);
  dim = dim_ >= 0 ? dim_ : dim_ + ndim;
  if (ndim > 1) {
    n_power_iterations = n_power_iterations_;
    NoGradGuard no_grad;
    const Tensor weight_mat = reshape_weight_to_matrix(weight.detach());
    const TensorOptions options = weight.options();
    // Drawn in PyTorch's order: u (rows) then v (columns).
    Tensor u0 = randn({weight_mat.size(0)}, options);
    Tensor v0 = randn({weight_mat.size(1)}, options);
    u = register_buffer("_u", normalize_vector(u0, eps));
    v = register_buffer("_v", normalize_vector(v0, eps));
    power_method(weight_mat, 15);
  }
}

Tensor SpectralNorm::reshape_weight_to_matrix(const Tensor& weight) const {
  EMBER_CHECK(weight.dim() > 1, "Expected weight to have more than 1 dimension, got ", weight.dim());
  Tensor w = weight;
  if (dim != 0) {
    std::vector<int64_t> order{dim};
    for (int64_t d = 0; d < weight.dim(); ++d) {
      if (d != dim) order.push_back(d);
    }
    w = w.permute(order);
  }
  return w.flatten(1);
}

void SpectralNorm::power_method(const Tensor& weight_mat, int64_t iterations) {
  EMBER_CHECK(weight_mat.dim() > 1, "Expected weight_mat to have more than 1 dimension, got ", weight_mat.dim());
  NoGradGuard no_grad;
  const Tensor mat = weight_mat.detach();
  for (int64_t i = 0; i < iterations; ++i) {
    // In place, as PyTorch's normalize(..., out=self._u): every handle to the buffers follows.
    u.copy_(normalize_vector(matmul(mat, v), eps));
    v.copy_(normalize_vector(matmul(mat.t(), u), eps));
  }
}

Tensor SpectralNorm::forward(const Tensor& weight) {
  if (weight.dim() == 1) return normalize_vector(weight, eps);
  const Tensor weight_mat = reshape_weight_to_matrix(weight);
  if (is_training()) power_method(weight_mat, n_power_iterations);
  // Copies, so that the next call's in-place power iteration leaves this call's graph intact.
  const Tensor u_now = u.clone();
  const Tensor v_now = v.clone();
  const Tensor sigma = (u_now * matmul(weight_mat, v_now)).sum();
  return weight / sigma;
}

Module& weight_norm(Module& module, const std::string& name, std::optional<int64_t> dim) {
  parametrize::register_parametrization(module, name, std::make_shared<WeightNorm>(dim), /*unsafe=*/true);
  // State dicts of the older torch.nn.utils.weight_norm name g and v "<name>_g" and "<name>_v":
  // they load into the originals, as PyTorch's compatibility hook arranges.
  module.register_load_state_dict_pre_hook([name](StateDict& state, const std::string& prefix) {
    const std::string g_key = prefix + name + "_g";
    const std::string v_key = prefix + name + "_v";
    if (!state.contains(g_key) || !state.contains(v_key)) return;
    const Tensor g = state.at(g_key);
    const Tensor v = state.at(v_key);
    state.erase(g_key);
    state.erase(v_key);
    state.insert(prefix + "parametrizations." + name + ".original0", g);
    state.insert(prefix + "parametrizations." + name + ".original1", v);
  });
  return module;
}

Module& spectral_norm(Module& module, const std::string& name, int64_t n_power_iterations, double eps,
                      std::optional<int64_t> dim) {
  auto [where, it] = find_tensor(module, name);
  Tensor weight;
  if (where != nullptr) {
    weight = it->second;
  } else if (parametrize::is_parametrized(module, name)) {
    weight = ParametrizeAccess::slot(*parametrize::parametrizations_of(module, name));
  }
  EMBER_CHECK(weight.defined(), "Module '", ParametrizeAccess::type_name(module),
              "' has no parameter or buffer with name '", name, "'");
  const int64_t chosen = dim.value_or(module.name().starts_with("ConvTranspose") ? 1 : 0);
  parametrize::register_parametrization(module, name,
                                        std::make_shared<SpectralNorm>(weight, n_power_iterations, chosen, eps));
  return module;
}

}  // namespace utils::parametrizations

}  // namespace ember::nn
