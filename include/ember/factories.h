#pragma once
/// Functions that create tensors. Each takes TensorOptions, a bare Dtype or a bare Device.
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <variant>
#include <vector>

#include "ember/scalar.h"
#include "ember/tensor.h"
#include "ember/tensor_options.h"

namespace ember {

/// A (nested) list of numbers for ember::tensor: {1.f, 2.f}, {{1, 2}, {3, 4}}, true.
/// Float and double literals give float32 and integer literals int64, as in libtorch.
class NestedList {
 public:
  NestedList(bool v) : scalar_(v) {}  // NOLINT: implicit, built from literals
  NestedList(int v) : scalar_(v) {}  // NOLINT
  NestedList(int64_t v) : scalar_(v) {}  // NOLINT
  NestedList(float v) : scalar_(v) {}  // NOLINT
  NestedList(double v) : scalar_(v) {}  // NOLINT
  NestedList(std::initializer_list<NestedList> items) : items_(items), is_list_(true) {}

  bool is_list() const { return is_list_; }
  const Scalar& scalar() const { return scalar_; }
  const std::vector<NestedList>& items() const { return items_; }

 private:
  Scalar scalar_;
  std::vector<NestedList> items_;
  bool is_list_ = false;
};

Tensor tensor(NestedList data, const TensorOptions& options = {});
Tensor tensor(std::initializer_list<NestedList> data, const TensorOptions& options = {});
Tensor tensor(const std::vector<double>& data, const TensorOptions& options = {});
Tensor tensor(const std::vector<float>& data, const TensorOptions& options = {});
Tensor tensor(const std::vector<int64_t>& data, const TensorOptions& options = {});
Tensor tensor(const std::vector<bool>& data, const TensorOptions& options = {});
/// Copies `data` (host memory, `dtype` elements, row-major) into a new tensor of `sizes`.
Tensor from_blob_copy(const void* data, IntList sizes, Dtype dtype, const TensorOptions& options = {});

Tensor empty(IntList sizes, const TensorOptions& options = {});
Tensor empty_strided(IntList sizes, IntList strides, const TensorOptions& options = {});
Tensor zeros(IntList sizes, const TensorOptions& options = {});
Tensor ones(IntList sizes, const TensorOptions& options = {});
/// Filled with `value`; without a dtype the value's kind decides (float → float32, int → int64, bool).
Tensor full(IntList sizes, const Scalar& value, const TensorOptions& options = {});
/// [start, end) in steps of `step`; integer arguments give int64, any float gives float32.
Tensor arange(const Scalar& end, const TensorOptions& options = {});
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1, const TensorOptions& options = {});
Tensor linspace(double start, double end, int64_t steps, const TensorOptions& options = {});
Tensor eye(int64_t n, std::optional<int64_t> m = std::nullopt, const TensorOptions& options = {});
/// Uniform on [0, 1). On the CPU, bit-identical to torch.rand for the same seed.
Tensor rand(IntList sizes, const TensorOptions& options = {});
/// Standard normal.
Tensor randn(IntList sizes, const TensorOptions& options = {});
/// Integers uniform on [low, high); int64 unless a dtype is given.
Tensor randint(int64_t low, int64_t high, IntList sizes, const TensorOptions& options = {});
Tensor randint(int64_t high, IntList sizes, const TensorOptions& options = {});
/// A random permutation of 0..n-1 (int64).
Tensor randperm(int64_t n, const TensorOptions& options = {});

/// The _like forms take sizes, dtype and device from `like`; `options` overrides what it sets.
Tensor empty_like(const Tensor& like, std::optional<TensorOptions> options = std::nullopt);
Tensor zeros_like(const Tensor& like, std::optional<TensorOptions> options = std::nullopt);
Tensor ones_like(const Tensor& like, std::optional<TensorOptions> options = std::nullopt);
Tensor full_like(const Tensor& like, const Scalar& value, std::optional<TensorOptions> options = std::nullopt);
Tensor rand_like(const Tensor& like, std::optional<TensorOptions> options = std::nullopt);
Tensor randn_like(const Tensor& like, std::optional<TensorOptions> options = std::nullopt);
Tensor randint_like(const Tensor& like, int64_t low, int64_t high, std::optional<TensorOptions> options = std::nullopt);

/// A 0-dim tensor holding `value` (float → float32, int → int64, bool → bool).
Tensor scalar_tensor(const Scalar& value, const TensorOptions& options = {});

/// Seeds the default generator of every device type; each random factory is then reproducible.
/// A given seed gives different numbers on different device types, as in PyTorch.
void manual_seed(uint64_t seed);
/// The seed the CPU generator was last seeded with.
uint64_t initial_seed();
/// The CPU generator's whole state as a uint8 tensor (as torch.get_rng_state; the byte layout
/// is ember's own), and its inverse: after set_rng_state(s) the generator draws what it drew
/// after get_rng_state() returned s. A tensor that is not such a state is an ember::Error.
Tensor get_rng_state();
void set_rng_state(const Tensor& state);

}  // namespace ember
