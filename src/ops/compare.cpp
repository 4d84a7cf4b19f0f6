// Whole-tensor comparisons: equal and allclose.
#include <cmath>

#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/ops.h"

namespace ember {

bool equal(const Tensor& a, const Tensor& b) {
  detail::check_defined(a, "equal");
  detail::check_defined(b, "equal");
  if (!same_dims(a.sizes(), b.sizes())) return false;
  if (a.numel() == 0) return true;
  return eq(a, b).to(kInt64).sum().item<int64_t>() == a.numel();
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  detail::check_defined(a, "allclose");
  detail::check_defined(b, "allclose");
  const Dtype dtype = promote_types(promote_types(a.dtype(), b.dtype()), kFloat64);
  Tensor x = a.to(dtype), y = b.to(dtype);
  Tensor diff = abs(x - y);
  Tensor tol = abs(y) * rtol + atol;
  Tensor close = le(diff, tol.expand_as(diff));
  Tensor both_nan = logical_and(ne(x, x), ne(y, y));
  Tensor same_inf = eq(x, y);  // equal infinities have nan difference but compare equal
  Tensor ok = logical_or(close, same_inf);
  if (equal_nan) ok = logical_or(ok, both_nan);
  return ok.to(kInt64).sum().item<int64_t>() == ok.numel();
}

}  // namespace ember
