// Factories: tensors from data, filled tensors, ranges and random tensors.
#include "ember/factories.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "core/check.h"
#include "core/tensor_internal.h"

namespace ember {

using detail::make_tensor;

namespace {

// Applies requires_grad from the options once the tensor is filled.
Tensor finish(Tensor t, const TensorOptions& options) {
  if (options.requires_grad()) t.requires_grad_(true);
  return t;
}

// Host data of `dtype` → a new tensor on the options' device.
Tensor upload(const void* host, IntList sizes, Dtype dtype, const TensorOptions& options) {
  Tensor cpu = make_tensor(sizes, dtype, Device(DeviceType::CPU));
  if (cpu.nbytes()) std::memcpy(cpu.data_ptr(), host, cpu.nbytes());
  Tensor out = cpu.to(options.device(), options.dtype_or(dtype));
  return finish(out, options);
}

// Walks a nested list: checks it is rectangular, records sizes, and collects the scalars.
void flatten_nested(const NestedList& node, size_t depth, Dims& sizes, std::vector<Scalar>& values,
                    Scalar::Kind& kind) {
  if (!node.is_list()) {
    EMBER_CHECK(depth == sizes.size(), "tensor(): the nested list is ragged: expected a list at depth ", depth,
                " but found a number");
    values.push_back(node.scalar());
    if (node.scalar().kind() > kind) kind = node.scalar().kind();
    return;
  }
  const int64_t n = static_cast<int64_t>(node.items().size());
  if (depth == sizes.size()) {
    EMBER_CHECK(values.empty(), "tensor(): the nested list is ragged: expected a number at depth ", depth,
                " but found a list");
    sizes.push_back(n);
  } else {
    EMBER_CHECK(sizes[depth] == n, "tensor(): the nested list is ragged: expected sequence of length ", sizes[depth],
                " at dim ", depth, " (got ", n, ")");
  }
  for (const NestedList& child : node.items()) flatten_nested(child, depth + 1, sizes, values, kind);
}

template <typename T>
Tensor from_scalars(const std::vector<Scalar>& values, IntList sizes, const TensorOptions& options) {
  auto host = std::make_unique<T[]>(values.size());  // not std::vector: vector<bool> has no data()
  for (size_t i = 0; i < values.size(); ++i) host[i] = values[i].to<T>();
  return upload(host.get(), sizes, dtype_v<T>, options);
}

Tensor from_scalar_list(const std::vector<Scalar>& values, IntList sizes, Dtype dtype, const TensorOptions& options) {
  switch (dtype) {
    case Dtype::Bool:
      return from_scalars<bool>(values, sizes, options);
    case Dtype::UInt8:
      return from_scalars<uint8_t>(values, sizes, options);
    case Dtype::Int8:
      return from_scalars<int8_t>(values, sizes, options);
    case Dtype::Int16:
      return from_scalars<int16_t>(values, sizes, options);
    case Dtype::Int32:
      return from_scalars<int32_t>(values, sizes, options);
    case Dtype::Int64:
      return from_scalars<int64_t>(values, sizes, options);
    case Dtype::Float16:
      return from_scalars<Half>(values, sizes, options);
    case Dtype::BFloat16:
      return from_scalars<BFloat16>(values, sizes, options);
    case Dtype::Float32:
      return from_scalars<float>(values, sizes, options);
    case Dtype::Float64:
      return from_scalars<double>(values, sizes, options);
  }
  detail::fail("tensor(): unknown dtype");
}

Dtype dtype_for_kind(Scalar::Kind kind) {
  switch (kind) {
    case Scalar::Kind::Bool:
      return kBool;
    case Scalar::Kind::Int:
      return kInt64;
    case Scalar::Kind::Float:
      return kFloat32;
  }
  return kFloat32;
}

Tensor random_tensor(IntList sizes, const TensorOptions& options, Dtype default_dtype, const RandomArgs& args) {
  Tensor out = make_tensor(sizes, options.dtype_or(default_dtype), options.device());
  backend_for(out.device()).random(view_of(out), args);
  return finish(out, options);
}

TensorOptions merge(const Tensor& like, const std::optional<TensorOptions>& options) {
  TensorOptions o = TensorOptions().dtype(like.dtype()).device(like.device());
  if (!options) return o;
  if (options->has_dtype()) o = o.dtype(options->dtype());
  if (options->has_device()) o = o.device(options->device());
  return o.requires_grad(options->requires_grad());
}

}  // namespace

Tensor tensor(NestedList data, const TensorOptions& options) {
  Dims sizes;
  std::vector<Scalar> values;
  Scalar::Kind kind = Scalar::Kind::Bool;
  flatten_nested(data, 0, sizes, values, kind);
  if (values.empty() && data.is_list()) kind = Scalar::Kind::Float;  // tensor({}) is an empty float tensor
  Dtype dtype = options.dtype_or(dtype_for_kind(kind));
  return from_scalar_list(values, sizes, dtype, options.dtype(dtype));
}

Tensor tensor(std::initializer_list<NestedList> data, const TensorOptions& options) {
  return tensor(NestedList(data), options);
}

Tensor tensor(const std::vector<double>& data, const TensorOptions& options) {
  const int64_t n = static_cast<int64_t>(data.size());
  return upload(data.data(), IntList(&n, 1), kFloat64, options.dtype(options.dtype_or(kFloat32)));
}

Tensor tensor(const std::vector<float>& data, const TensorOptions& options) {
  const int64_t n = static_cast<int64_t>(data.size());
  return upload(data.data(), IntList(&n, 1), kFloat32, options.dtype(options.dtype_or(kFloat32)));
}

Tensor tensor(const std::vector<int64_t>& data, const TensorOptions& options) {
  const int64_t n = static_cast<int64_t>(data.size());
  return upload(data.data(), IntList(&n, 1), kInt64, options.dtype(options.dtype_or(kInt64)));
}

Tensor tensor(const std::vector<bool>& data, const TensorOptions& options) {
  std::vector<uint8_t> bytes(data.begin(), data.end());
  const int64_t n = static_cast<int64_t>(data.size());
  return upload(bytes.data(), IntList(&n, 1), kBool, options.dtype(options.dtype_or(kBool)));
}

Tensor from_blob_copy(const void* data, IntList sizes, Dtype dtype, const TensorOptions& options) {
  return upload(data, sizes, dtype, options.dtype(options.dtype_or(dtype)));
}

Tensor empty(IntList sizes, const TensorOptions& options) {
  return finish(make_tensor(sizes, options.dtype(), options.device()), options);
}

Tensor empty_strided(IntList sizes, IntList strides, const TensorOptions& options) {
  EMBER_CHECK(sizes.size() == strides.size(), "empty_strided: mismatch in length of strides and shape");
  int64_t span = 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    EMBER_CHECK(sizes[i] >= 0 && strides[i] >= 0, "empty_strided: negative sizes and strides are not supported");
    if (sizes[i] == 0) span = 0;
    if (span) span += (sizes[i] - 1) * strides[i];
  }
  Tensor base = make_tensor({&span, 1}, options.dtype(), options.device());
  return finish(base.as_strided(sizes, strides, 0), options);
}

Tensor zeros(IntList sizes, const TensorOptions& options) { return full(sizes, 0, options.dtype(options.dtype())); }
Tensor ones(IntList sizes, const TensorOptions& options) { return full(sizes, 1, options.dtype(options.dtype())); }

Tensor full(IntList sizes, const Scalar& value, const TensorOptions& options) {
  Tensor out = make_tensor(sizes, options.dtype_or(dtype_for_kind(value.kind())), options.device());
  out.fill_(value);
  return finish(out, options);
}

Tensor scalar_tensor(const Scalar& value, const TensorOptions& options) { return full({}, value, options); }

Tensor arange(const Scalar& end, const TensorOptions& options) { return arange(0, end, 1, options); }

Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, const TensorOptions& options) {
  const bool any_float = start.is_floating_point() || end.is_floating_point() || step.is_floating_point();
  const Dtype dtype = options.dtype_or(any_float ? kFloat32 : kInt64);
  const double s = start.to_double(), e = end.to_double(), st = step.to_double();
  EMBER_CHECK(st != 0, "step must be nonzero");
  EMBER_CHECK(std::isfinite(s) && std::isfinite(e), "unsupported range: ", s, " -> ", e);
  EMBER_CHECK((st > 0 && e >= s) || (st < 0 && e <= s), "upper bound and larger bound inconsistent with step sign");
  int64_t n;
  if (any_float) {
    n = static_cast<int64_t>(std::ceil((e - s) / st));
  } else {
    const int64_t si = start.to_int64(), ei = end.to_int64(), sti = step.to_int64();
    n = (ei - si + sti + (sti > 0 ? -1 : 1)) / sti;  // exact integer ceil
  }
  // Computed in double, as PyTorch's CPU kernel does, then converted once.
  std::vector<double> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) values[i] = s + st * static_cast<double>(i);
  if (!any_float) {
    std::vector<int64_t> ints(values.size());
    for (int64_t i = 0; i < n; ++i) ints[i] = start.to_int64() + step.to_int64() * i;
    return upload(ints.data(), {&n, 1}, kInt64, options.dtype(dtype));
  }
  return upload(values.data(), {&n, 1}, kFloat64, options.dtype(dtype));
}

Tensor linspace(double start, double end, int64_t steps, const TensorOptions& options) {
  EMBER_CHECK(steps >= 0, "number of steps must be non-negative");
  const Dtype dtype = options.dtype_or(kFloat32);
  std::vector<double> values(static_cast<size_t>(steps));
  // PyTorch fills the first half forwards from start and the second half backwards from end,
  // computing in the output's precision (float for float32).
  auto fill = [&]<typename C>() {
    const C from = static_cast<C>(start), to = static_cast<C>(end);
    const C step = steps > 1 ? (to - from) / static_cast<C>(steps - 1) : C(0);
    const int64_t halfway = steps / 2;
    for (int64_t i = 0; i < steps; ++i) {
      values[i] = static_cast<double>(i < halfway ? from + step * static_cast<C>(i)
                                                  : to - step * static_cast<C>(steps - i - 1));
    }
  };
  if (dtype == kFloat64 || !is_floating_point(dtype)) {
    fill.template operator()<double>();
  } else {
    fill.template operator()<float>();
  }
  return upload(values.data(), {&steps, 1}, kFloat64, options.dtype(dtype));
}

Tensor eye(int64_t n, std::optional<int64_t> m_opt, const TensorOptions& options) {
  const int64_t m = m_opt.value_or(n);
  EMBER_CHECK(n >= 0, "n must be greater or equal to 0, got ", n);
  EMBER_CHECK(m >= 0, "m must be greater or equal to 0, got ", m);
  std::vector<double> values(static_cast<size_t>(n * m), 0.0);
  for (int64_t i = 0; i < std::min(n, m); ++i) values[i * m + i] = 1.0;
  const int64_t sizes[2] = {n, m};
  return upload(values.data(), sizes, kFloat64, options.dtype(options.dtype()));
}

Tensor rand(IntList sizes, const TensorOptions& options) {
  return random_tensor(sizes, options, kFloat32, {Distribution::Uniform, 0.0, 1.0});
}

Tensor randn(IntList sizes, const TensorOptions& options) {
  return random_tensor(sizes, options, kFloat32, {Distribution::Normal, 0.0, 1.0});
}

Tensor randint(int64_t low, int64_t high, IntList sizes, const TensorOptions& options) {
  EMBER_CHECK(low < high, "random_ expects 'from' to be less than 'to', but got from=", low, " >= to=", high);
  return random_tensor(sizes, options, kInt64,
                       {Distribution::RandInt, static_cast<double>(low), static_cast<double>(high)});
}

Tensor randint(int64_t high, IntList sizes, const TensorOptions& options) { return randint(0, high, sizes, options); }

Tensor randperm(int64_t n, const TensorOptions& options) {
  EMBER_CHECK(n >= 0, "n must be non-negative, got", n);
  Tensor out = make_tensor({&n, 1}, options.dtype_or(kInt64), options.device());
  backend_for(out.device()).randperm(view_of(out));
  return finish(out, options);
}

Tensor empty_like(const Tensor& like, std::optional<TensorOptions> options) {
  return empty(like.sizes(), merge(like, options));
}
Tensor zeros_like(const Tensor& like, std::optional<TensorOptions> options) {
  return zeros(like.sizes(), merge(like, options));
}
Tensor ones_like(const Tensor& like, std::optional<TensorOptions> options) {
  return ones(like.sizes(), merge(like, options));
}
Tensor full_like(const Tensor& like, const Scalar& value, std::optional<TensorOptions> options) {
  return full(like.sizes(), value, merge(like, options));
}
Tensor rand_like(const Tensor& like, std::optional<TensorOptions> options) {
  return rand(like.sizes(), merge(like, options));
}
Tensor randn_like(const Tensor& like, std::optional<TensorOptions> options) {
  return randn(like.sizes(), merge(like, options));
}
Tensor randint_like(const Tensor& like, int64_t low, int64_t high, std::optional<TensorOptions> options) {
  return randint(low, high, like.sizes(), merge(like, options));
}

void manual_seed(uint64_t seed) {
  for (DeviceType type : {DeviceType::CPU, DeviceType::CUDA, DeviceType::MPS}) {
    if (Backend* b = find_backend(type)) b->manual_seed(seed);
  }
}

uint64_t initial_seed() { return backend_for(Device(DeviceType::CPU)).initial_seed(0); }

Tensor get_rng_state() {
  const std::vector<uint8_t> bytes = backend_for(Device(DeviceType::CPU)).rng_state(0);
  Tensor state = empty({static_cast<int64_t>(bytes.size())}, kUInt8);
  std::copy(bytes.begin(), bytes.end(), state.data_ptr<uint8_t>());
  return state;
}

void set_rng_state(const Tensor& state) {
  detail::check_defined(state, "set_rng_state");
  EMBER_CHECK(state.dtype() == kUInt8 && state.dim() == 1 && state.device().is_cpu(),
              "set_rng_state: expected a 1-D uint8 CPU tensor from get_rng_state(), got ",
              scalar_type_name(state.dtype()), " ", detail::shape_str(state.sizes()), " on ", state.device().str());
  const Tensor bytes = state.contiguous();
  backend_for(Device(DeviceType::CPU))
      .set_rng_state(0, {bytes.data_ptr<uint8_t>(), static_cast<size_t>(bytes.numel())});
}

}  // namespace ember
