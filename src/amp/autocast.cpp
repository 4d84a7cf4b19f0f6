// Autocast's per-thread state and its casts (include/ember/amp/autocast.h, autocast_policy.h).
#include "ember/amp/autocast.h"

#include <memory>
#include <string>
#include <unordered_map>
#include <utility>

#include "amp/autocast_policy.h"
#include "core/check.h"
#include "ember/cuda.h"
#include "ember/warning.h"

namespace ember::amp {

namespace {

constexpr Dtype kDefaultDtype[kNumDeviceTypes] = {kBFloat16, kFloat16, kFloat16};  // cpu, cuda, mps

/// A float32 parameter's lower-precision copy, and the parameter itself, weakly: the key is the
/// parameter's address, which a new tensor may reuse once the parameter is gone.
struct CacheEntry {
  std::weak_ptr<ember::detail::TensorImpl> source;
  Tensor cast;
};

struct ThreadState {
  detail::State current{{}, {kDefaultDtype[0], kDefaultDtype[1], kDefaultDtype[2]}, 0, true};
  uint8_t active = 0;  // enabled and not excluded, a bit per device type: what ops read
  int nesting = 0;
  std::unordered_map<const ember::detail::TensorImpl*, CacheEntry> cache;

  /// Recomputes `active` after `current` changed.
  void refresh() {
    active = 0;
    for (int i = 0; i < kNumDeviceTypes; ++i) {
      if (current.enabled[i] && (current.excluded & (1u << i)) == 0) active |= static_cast<uint8_t>(1u << i);
    }
  }
};

ThreadState& state() {
  thread_local ThreadState s;
  return s;
}

int index_of(DeviceType t) { return static_cast<int>(t); }

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  return out;
}

bool is_lower_precision(Dtype d) { return d == kFloat16 || d == kBFloat16; }

DeviceType parse_device_type(std::string_view name) {
  for (int i = 0; i < kNumDeviceTypes; ++i) {
    const auto type = static_cast<DeviceType>(i);
    if (device_type_name(type) == name) return type;
  }
  ::ember::detail::fail("User specified an unsupported autocast device_type '", name, "'");
}

}  // namespace

bool is_autocast_available(DeviceType device_type) { return index_of(device_type) < kNumDeviceTypes; }

bool is_autocast_enabled(DeviceType device_type) { return state().current.enabled[index_of(device_type)]; }

void set_autocast_enabled(DeviceType device_type, bool enabled) {
  ThreadState& s = state();
  s.current.enabled[index_of(device_type)] = enabled;
  s.refresh();
}

Dtype get_autocast_dtype(DeviceType device_type) { return state().current.dtype[index_of(device_type)]; }

void set_autocast_dtype(DeviceType device_type, Dtype dtype) {
  EMBER_CHECK(is_lower_precision(dtype), "set_autocast_dtype: autocast's dtype must be torch.float16 or ",
              "torch.bfloat16, got ", dtype_name(dtype));
  state().current.dtype[index_of(device_type)] = dtype;
}

bool is_autocast_cache_enabled() { return state().current.cache_enabled; }
void set_autocast_cache_enabled(bool enabled) { state().current.cache_enabled = enabled; }
void clear_autocast_cache() { state().cache.clear(); }

autocast::autocast(std::string_view device_type, std::optional<Dtype> dtype, bool enabled,
                   std::optional<bool> cache_enabled)
    : autocast(parse_device_type(device_type), dtype, enabled, cache_enabled) {}

autocast::autocast(DeviceType device_type, std::optional<Dtype> dtype, bool enabled, std::optional<bool> cache_enabled)
    : device_type_(device_type),
      dtype_(dtype.value_or(get_autocast_dtype(device_type))),
      enabled_(enabled),
      previous_enabled_(is_autocast_enabled(device_type)),
      previous_dtype_(get_autocast_dtype(device_type)),
      previous_cache_enabled_(is_autocast_cache_enabled()) {
  const std::string name = upper(device_type_name(device_type));
  if (enabled_ && device_type == kCUDA && !cuda::is_available()) {
    warn("CUDA is not available. Disabling autocast.");
    enabled_ = false;
  } else if (enabled_ && !is_lower_precision(dtype_)) {
    warn("In " + name + " autocast, but the target dtype is not supported. Disabling autocast.\n" + name +
         " Autocast only supports dtypes of torch.bfloat16, torch.float16 currently.");
    enabled_ = false;
  }
  ThreadState& s = state();
  // A disabled region still sets the dtype (torch.autocast does), but only a dtype autocast can use.
  if (is_lower_precision(dtype_)) s.current.dtype[index_of(device_type)] = dtype_;
  s.current.enabled[index_of(device_type)] = enabled_;
  s.refresh();
  ++s.nesting;
  s.current.cache_enabled = cache_enabled.value_or(s.current.cache_enabled);
}

autocast::~autocast() {
  ThreadState& s = state();
  if (--s.nesting == 0) s.cache.clear();
  s.current.enabled[index_of(device_type_)] = previous_enabled_;
  s.current.dtype[index_of(device_type_)] = previous_dtype_;
  s.current.cache_enabled = previous_cache_enabled_;
  s.refresh();
}

namespace detail {

uint8_t active_device_types() { return state().active; }

ExcludeGuard::ExcludeGuard(DeviceType type) : type_(type) {
  ThreadState& s = state();
  const auto bit = static_cast<uint8_t>(1u << index_of(type));
  previous_ = (s.current.excluded & bit) != 0;
  s.current.excluded |= bit;
  s.refresh();
}

ExcludeGuard::~ExcludeGuard() {
  ThreadState& s = state();
  const auto bit = static_cast<uint8_t>(1u << index_of(type_));
  s.current.excluded = previous_ ? (s.current.excluded | bit) : (s.current.excluded & ~bit);
  s.refresh();
}

NoAutocastGuard::NoAutocastGuard() : previous_(state().current.excluded) {
  ThreadState& s = state();
  s.current.excluded = static_cast<uint8_t>((1u << kNumDeviceTypes) - 1);
  s.refresh();
}

NoAutocastGuard::~NoAutocastGuard() {
  ThreadState& s = state();
  s.current.excluded = previous_;
  s.refresh();
}

State current_state() { return state().current; }

StateGuard::StateGuard(const State& in_force) : previous_(current_state()) {
  state().current = in_force;
  state().refresh();
}

StateGuard::~StateGuard() {
  state().current = previous_;
  state().refresh();
}

namespace {
bool eligible(const Tensor& t, DeviceType type) {
  return t.defined() && t.is_floating_point() && t.dtype() != kDouble && t.device().type() == type;
}
}  // namespace

Dtype target_dtype(CastPolicy policy, DeviceType type, std::initializer_list<const Tensor*> tensors) {
  const Dtype lower = get_autocast_dtype(type);
  switch (policy) {
    case CastPolicy::LowerPrecision:
      return lower;
    case CastPolicy::Float32:
      return kFloat;
    case CastPolicy::Promote: {
      Dtype widest = lower;
      for (const Tensor* t : tensors) {
        if (t != nullptr && eligible(*t, type)) widest = promote_types(widest, t->dtype());
      }
      return widest;
    }
  }
  return lower;
}

Tensor cast(const Tensor& t, DeviceType type, Dtype dtype) {
  if (!eligible(t, type) || t.dtype() == dtype) return t;
  ThreadState& s = state();
  // PyTorch's cache: float32 leaves that require grad (parameters) going to the region's dtype.
  const bool cacheable = s.current.cache_enabled && dtype == s.current.dtype[index_of(type)] && t.dtype() == kFloat &&
                         t.requires_grad() && t.is_leaf() && !t.is_view();
  if (!cacheable) return t.to(dtype);
  auto it = s.cache.find(t.impl_ptr().get());
  if (it != s.cache.end() && !it->second.source.expired() && it->second.cast.dtype() == dtype) return it->second.cast;
  Tensor copy = t.to(dtype);
  s.cache[t.impl_ptr().get()] = CacheEntry{t.impl_ptr(), copy};
  return copy;
}

}  // namespace detail

}  // namespace ember::amp
