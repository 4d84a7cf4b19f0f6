// Matrix products: PyTorch's matmul dispatch on ranks, with mm/bmm checks and messages.
#include <algorithm>

#include "amp/autocast_policy.h"
#include "autograd/node.h"
#include "backend/backend.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/ops.h"
#include "ops/infer.h"

namespace ember {

using detail::check_defined;
using detail::make_tensor;

namespace {

std::string dims_str(const Tensor& t) {
  std::string s;
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? "x" : "") + std::to_string(t.size(i));
  return s;
}

void check_same_dtype(const Tensor& a, const Tensor& b) {
  EMBER_CHECK(a.dtype() == b.dtype(), "expected m1 and m2 to have the same dtype, but got: ", cpp_type_name(a.dtype()),
              " != ", cpp_type_name(b.dtype()));
}

// [B,M,K] x [B,K,N] → [B,M,N] on the backend; a and b may be any-strided views.
Tensor batched_product(const Tensor& a, const Tensor& b) {
  Tensor out = make_tensor(std::vector<int64_t>{a.size(0), a.size(1), b.size(2)}, a.dtype(), a.device());
  backend_for(a.device()).matmul(view_of(a), view_of(b), view_of(out));
  return out;
}

// Whether t is a matrix stored transposed, as the weight.t() view of Linear.
bool stored_transposed(const Tensor& t) {
  return t.dim() == 2 && t.size(0) > 1 && t.size(1) > 1 && t.stride(0) == 1 && t.stride(1) == t.size(0);
}

// One node for any matrix product: ga = g @ b^T and gb = a^T @ g, with 1-D operands treated as
// a row (a) or a column (b) vector as matmul does, and broadcast batch dims summed by record.
// An operand stored transposed gets its gradient computed transposed, (b @ g^T)^T or
// (g^T @ a)^T: the gradient that reaches the tensor behind the view is then contiguous, and the
// engine keeps it as that leaf's .grad without copying (PyTorch's mm_mat1/mat2_backward choose
// the same way).
void record_product(Tensor& out, const char* name, const Tensor& a, const Tensor& b) {
  autograd::record(
      out, name, {&a, &b}, [sa = autograd::SavedTensor(a), sb = autograd::SavedTensor(b)](const Tensor& g) {
        Tensor x = sa.get(), y = sb.get();
        const bool a_vec = x.dim() == 1, b_vec = y.dim() == 1;
        Tensor x2 = a_vec ? x.unsqueeze(0) : x;
        Tensor y2 = b_vec ? y.unsqueeze(-1) : y;
        Tensor g2 = g;
        if (a_vec) g2 = g2.unsqueeze(b_vec ? -1 : -2);
        if (b_vec) g2 = g2.unsqueeze(-1);
        Tensor ga, gb;
        const bool plain_matrices = x.dim() <= 2 && y.dim() <= 2;
        // [..., n, k] @ [k, m]: the forward folded a's leading dims into rows, and b's gradient is
        // one product over those rows, not a batch of products summed afterwards.
        const bool folded = x2.dim() >= 3 && y.dim() <= 2;
        if (x.requires_grad()) {
          ga = plain_matrices && stored_transposed(x) ? matmul(y2, g2.t()).t() : matmul(g2, y2.transpose(-1, -2));
        }
        if (y.requires_grad() && folded) {
          const int64_t rows = x2.numel() / std::max<int64_t>(x2.size(-1), 1);
          Tensor x_rows = x2.reshape({rows, x2.size(-1)});
          Tensor g_rows = g2.reshape({rows, g2.size(-1)});
          gb = stored_transposed(y) ? mm(g_rows.t(), x_rows).t() : mm(x_rows.t(), g_rows);
        } else if (y.requires_grad()) {
          gb = plain_matrices && stored_transposed(y) ? matmul(g2.t(), x2).t() : matmul(x2.transpose(-1, -2), g2);
        }
        if (ga.defined() && a_vec) ga = ga.squeeze(-2);
        if (gb.defined() && b_vec) gb = gb.squeeze(-1);
        return std::vector<Tensor>{ga, gb};
      });
}

}  // namespace

Tensor mm(const Tensor& a, const Tensor& b) {
  if (const auto device = amp::detail::autocast_device(a, b)) {
    return amp::detail::autocast_call(amp::detail::CastPolicy::LowerPrecision, *device, mm, a, b);
  }
  detail::OpContext context("mm", {{"input", &a}, {"mat2", &b}});
  check_defined(a, "mm");
  check_defined(b, "mm");
  ops::check_same_device("wrapper_mm", {{"self", &a}, {"mat2", &b}});
  EMBER_CHECK(a.dim() == 2, "self must be a matrix");
  EMBER_CHECK(b.dim() == 2, "mat2 must be a matrix");
  EMBER_CHECK(a.size(1) == b.size(0), "mat1 and mat2 shapes cannot be multiplied (", dims_str(a), " and ", dims_str(b),
              ")");
  check_same_dtype(a, b);
  Tensor out;
  {
    NoGradGuard no_grad;
    out = batched_product(a.unsqueeze(0), b.unsqueeze(0)).squeeze(0);
  }
  detail::forget_base(out);  // a result of its own, not a view of the batched product
  if (autograd::needs_grad({&a, &b})) record_product(out, "MmBackward0", a, b);
  return out;
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  if (const auto device = amp::detail::autocast_device(a, b)) {
    return amp::detail::autocast_call(amp::detail::CastPolicy::LowerPrecision, *device, bmm, a, b);
  }
  detail::OpContext context("bmm", {{"input", &a}, {"mat2", &b}});
  check_defined(a, "bmm");
  check_defined(b, "bmm");
  ops::check_same_device("wrapper_bmm", {{"self", &a}, {"mat2", &b}});
  EMBER_CHECK(a.dim() == 3, "batch1 must be a 3D tensor");
  EMBER_CHECK(b.dim() == 3, "batch2 must be a 3D tensor");
  EMBER_CHECK(a.size(0) == b.size(0), "batch1 and batch2 must have same number of batches, got ", a.size(0), " and ",
              b.size(0));
  EMBER_CHECK(a.size(2) == b.size(1), "Expected size for first two dimensions of batch2 tensor to be: [", a.size(0),
              ", ", a.size(2), "] but got: [", b.size(0), ", ", b.size(1), "].");
  check_same_dtype(a, b);
  Tensor out = batched_product(a, b);
  if (autograd::needs_grad({&a, &b})) record_product(out, "BmmBackward0", a, b);
  return out;
}

namespace {
Tensor matmul_impl(const Tensor& a, const Tensor& b);
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  if (const auto device = amp::detail::autocast_device(a, b)) {
    return amp::detail::autocast_call(amp::detail::CastPolicy::LowerPrecision, *device, matmul, a, b);
  }
  detail::OpContext context("matmul", {{"input", &a}, {"other", &b}});
  check_defined(a, "matmul");
  check_defined(b, "matmul");
  Tensor out;
  if (!autograd::needs_grad({&a, &b})) {
    out = matmul_impl(a, b);
    detail::forget_base(out);  // a result of its own, not a view of the product it was cut from
    return out;
  }
  {
    NoGradGuard no_grad;
    out = matmul_impl(a, b);
  }
  const char* name = a.dim() == 1 && b.dim() == 1   ? "DotBackward0"
                     : a.dim() == 2 && b.dim() == 1 ? "MvBackward0"
                     : a.dim() <= 2 && b.dim() <= 2 ? "MmBackward0"
                                                    : "UnsafeViewBackward0";
  record_product(out, name, a, b);
  return out;
}

namespace {
Tensor matmul_impl(const Tensor& a, const Tensor& b) {
  const int64_t da = a.dim(), db = b.dim();
  EMBER_CHECK(da > 0 && db > 0, "both arguments to matmul need to be at least 1D, but they are ", da, "D and ", db,
              "D");
  if (da == 1 && db == 1) {
    ops::check_same_device("wrapper_dot", {{"self", &a}, {"tensor", &b}});
    EMBER_CHECK(a.dtype() == b.dtype(), "dot : expected both vectors to have same dtype, but found ",
                scalar_type_name(a.dtype()), " and ", scalar_type_name(b.dtype()));
    EMBER_CHECK(a.size(0) == b.size(0), "inconsistent tensor size, expected tensor [", a.size(0), "] and src [",
                b.size(0), "] to have the same number of elements, but got ", a.size(0), " and ", b.size(0),
                " elements respectively");
    return mm(a.unsqueeze(0), b.unsqueeze(1)).reshape(std::vector<int64_t>{});
  }
  if (da == 2 && db == 1) {
    EMBER_CHECK(a.size(1) == b.size(0), "size mismatch, got input (", a.size(0), "), mat (", dims_str(a), "), vec (",
                b.size(0), ")");
    return mm(a, b.unsqueeze(1)).squeeze(1);
  }
  if (da == 1 && db == 2) return mm(a.unsqueeze(0), b).squeeze(0);
  if (da == 2 && db == 2) return mm(a, b);

  // [..., n, k] @ [k, m] or [k]: a's leading dims fold into the rows of one matrix product, as in
  // PyTorch (whose messages for this case are therefore mm's and mv's). A batch of small products
  // would run slower, and Linear on a sequence would pay for it in every layer. reshape copies
  // only when a's rows cannot be viewed as one matrix.
  if (db <= 2) {
    Dims out_sizes = a.sizes().first(static_cast<size_t>(da - 1));
    const int64_t rows = detail::numel_of(out_sizes);
    Tensor out = matmul_impl(a.reshape({rows, a.size(-1)}), b);
    if (db == 2) out_sizes.push_back(b.size(1));
    return out.view(out_sizes);
  }

  // Batched: broadcast the batch dims, fold them into one, multiply, unfold.
  ops::check_same_device("wrapper_bmm", {{"self", &a}, {"mat2", &b}});
  check_same_dtype(a, b);
  Tensor a3 = da == 1 ? a.unsqueeze(0) : a;  // [.., n, k]
  Tensor b3 = db == 1 ? b.unsqueeze(1) : b;  // [.., k, m]
  const int64_t n = a3.size(-2), k = a3.size(-1), k2 = b3.size(-2), m = b3.size(-1);
  IntList batch_a = a3.sizes().first(static_cast<size_t>(a3.dim() - 2));
  IntList batch_b = b3.sizes().first(static_cast<size_t>(b3.dim() - 2));
  Dims batch = broadcast_shapes(batch_a, batch_b);
  const int64_t batch_count = detail::numel_of(batch);
  EMBER_CHECK(k == k2, "Expected size for first two dimensions of batch2 tensor to be: [", batch_count, ", ", k,
              "] but got: [", batch_count, ", ", k2, "].");
  Dims a_sizes = batch, b_sizes = batch;
  a_sizes.push_back(n);
  a_sizes.push_back(k);
  b_sizes.push_back(k);
  b_sizes.push_back(m);
  Tensor a_flat = a3.expand(a_sizes).reshape(std::vector<int64_t>{batch_count, n, k});
  Tensor b_flat = b3.expand(b_sizes).reshape(std::vector<int64_t>{batch_count, k, m});
  Tensor out = batched_product(a_flat, b_flat);
  Dims out_sizes = batch;
  if (da > 1) out_sizes.push_back(n);
  if (db > 1) out_sizes.push_back(m);
  return out.view(out_sizes);
}
}  // namespace

Tensor Tensor::matmul(const Tensor& other) const { return ember::matmul(*this, other); }
Tensor Tensor::mm(const Tensor& other) const { return ember::mm(*this, other); }
Tensor Tensor::bmm(const Tensor& other) const { return ember::bmm(*this, other); }

}  // namespace ember
