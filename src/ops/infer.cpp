#include "ops/infer.h"

#include <algorithm>

#include "backend/backend.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/ops.h"

namespace ember {

namespace {

Dtype promote_opt(const std::optional<Dtype>& a, Dtype b) { return a ? promote_types(*a, b) : b; }

enum class Category { Bool, Integral, Floating };
Category category(Dtype d) {
  if (d == kBool) return Category::Bool;
  return is_floating_point(d) ? Category::Floating : Category::Integral;
}

// PyTorch's combine_categories: a lower-priority group only matters when it is of a higher
// category than the higher-priority group.
std::optional<Dtype> combine(const std::optional<Dtype>& higher, const std::optional<Dtype>& lower) {
  if (!higher) return lower;
  if (!lower) return higher;
  if (category(*higher) == Category::Floating) return higher;
  if (*higher == kBool || category(*lower) == Category::Floating) return promote_types(*higher, *lower);
  return higher;
}

}  // namespace

namespace ops {

void ResultTypeState::add(const Tensor& t) {
  auto& slot = t.dim() == 0 ? zero_dim_result : dim_result;
  slot = promote_opt(slot, t.dtype());
}

void ResultTypeState::add(const Scalar& s) {
  Dtype d = s.is_floating_point() ? kFloat32 : s.is_integral() ? kInt64 : kBool;
  wrapped_result = promote_opt(wrapped_result, d);
}

Dtype ResultTypeState::result() const { return combine(dim_result, combine(zero_dim_result, wrapped_result)).value(); }

Device common_device(std::initializer_list<const Tensor*> operands) {
  std::optional<Device> common;
  for (const Tensor* t : operands) {
    if (!t->is_cpu()) {
      common = t->device();
      break;
    }
  }
  if (!common) return Device(DeviceType::CPU);
  for (const Tensor* t : operands) {
    if (t->device() == *common) continue;
    if (t->is_cpu() && t->dim() == 0) continue;  // a CPU scalar may join a GPU op
    detail::fail("Expected all tensors to be on the same device, but found at least two devices, ", *common, " and ",
                 t->device(), "!");
  }
  return *common;
}

void check_same_device(const char* method, std::initializer_list<std::pair<const char*, const Tensor*>> args) {
  const Tensor* first = nullptr;
  for (const auto& [name, t] : args) {
    if (!t->defined()) continue;
    if (!first) {
      first = t;
      continue;
    }
    EMBER_CHECK(t->device() == first->device(), "Expected all tensors to be on the same device, but got ", name,
                " is on ", t->device(), ", different from other tensors on ", first->device(),
                " (when checking argument in method ", method, ")");
  }
}

Tensor prepare_operand(const Tensor& t, Dtype dtype, IntList sizes, Device device) {
  // A 0-dim CPU tensor may join a GPU op (common_device); it is copied over, as the kernel reads
  // every operand on the op's device.
  Tensor converted = t.dtype() == dtype && t.device() == device ? t : t.to(device, dtype);
  return same_dims(converted.sizes(), sizes) ? converted : converted.expand(sizes);
}

Tensor wrap_scalar(const Scalar& s, Dtype dtype, Device device) {
  return full({}, s, TensorOptions().dtype(dtype).device(device));
}

Dtype to_floating(Dtype d) { return is_floating_point(d) ? d : kFloat32; }

}  // namespace ops

Dtype result_type(const Tensor& a, const Tensor& b) {
  ops::ResultTypeState s;
  s.add(a);
  s.add(b);
  return s.result();
}

Dtype result_type(const Tensor& a, const Scalar& b) {
  ops::ResultTypeState s;
  s.add(a);
  s.add(b);
  return s.result();
}

Dims broadcast_shapes(IntList a, IntList b) {
  const size_t n = std::max(a.size(), b.size());
  Dims out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    EMBER_CHECK(da == db || da == 1 || db == 1, "The size of tensor a (", da, ") must match the size of tensor b (", db,
                ") at non-singleton dimension ", i);
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace ember
