// The singular value decomposition's front end (ember/linalg.h): torch.linalg.svd, svdvals,
// torch.svd and torch.linalg.norm, on the linalg family's kernel (backend/cpu/linalg.cpp:
// LAPACK's gesdd; backend/cuda/linalg.cpp: cuSOLVER's gesvd), with PyTorch's checks, messages and
// gradient (torch/csrc/autograd/FunctionsManual.cpp's svd_backward), written with ember's ops so
// that it is differentiable in turn.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "autograd/node.h"
#include "backend/backend.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/grad_mode.h"
#include "ember/linalg.h"
#include "ember/ops.h"

namespace ember {

using autograd::SavedTensor;
using detail::check_defined;
using detail::make_tensor;

namespace {

constexpr const char* kNodeName = "LinalgSvdBackward0";

Tensor mT(const Tensor& x) { return x.transpose(-2, -1); }

/// The identity k x k on x's device, in x's dtype.
Tensor identity_like(const Tensor& x, int64_t k) { return eye(k, k, TensorOptions(x.dtype()).device(x.device())); }

/// diag_embed: v [*, k] onto the diagonals of [*, k, k] zeros.
Tensor diag_embed(const Tensor& v) { return v.unsqueeze(-1) * identity_like(v, v.size(-1)); }

/// PyTorch's checks of an SVD's input, in its order.
void check_svd_input(const Tensor& A) {
  check_defined(A, "linalg.svd");
  EMBER_CHECK(A.dim() >= 2, "linalg.svd: The input tensor A must have at least 2 dimensions.");
  EMBER_CHECK(A.is_floating_point(), "linalg.svd: Expected a floating point or complex tensor as input. Got ",
              scalar_type_name(A.dtype()));
  EMBER_CHECK(A.dtype() == kFloat32 || A.dtype() == kFloat64, "\"linalg_svd_", device_type_name(A.device().type()),
              "\" not implemented for '", scalar_type_name(A.dtype()), "'");
}

/// LAPACK's verdicts, read once on the host (the one wait for the device), raised as PyTorch's
/// _linalg_check_errors raises them; a batch names its first failing matrix.
void check_info(const Tensor& info, bool batched) {
  const Tensor host = info.to(Device(DeviceType::CPU));
  const int32_t* codes = host.data_ptr<int32_t>();
  for (int64_t b = 0; b < host.numel(); ++b) {
    const int32_t code = codes[b];
    if (code == 0) continue;
    const std::string where = batched ? ": (Batch element " + std::to_string(b) + ")" : "";
    // LAPACK 3.10 and later refuse non-finite input as an illegal fourth argument.
    EMBER_CHECK(code != -4, "linalg.svd", where,
                ": The algorithm failed to converge because the input matrix contained non-finite values.");
    EMBER_CHECK(code >= 0, "linalg.svd", where, ": Argument ", -code,
                " has illegal value. Most certainly there is a bug in the implementation calling the backend "
                "library.");
    detail::fail("linalg.svd", where,
                 ": The algorithm failed to converge because the input matrix is ill-conditioned or has too many "
                 "repeated singular values (error code: ",
                 code, ").");
  }
}

struct Decomposition {
  Tensor U, S, Vh;  // U and Vh undefined for the values alone
};

/// The decomposition itself, without recording: a copy of A for the kernel to overwrite, one
/// backend call for the whole batch, then the verdicts.
Decomposition decompose(const Tensor& A, bool full_matrices, bool vectors) {
  NoGradGuard no_grad;
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n);
  const std::vector<int64_t> batch_sizes(A.sizes().begin(), A.sizes().end() - 2);
  int64_t batch = 1;
  for (int64_t size : batch_sizes) batch *= size;
  const auto with = [&](std::initializer_list<int64_t> last) {
    std::vector<int64_t> sizes = batch_sizes;
    sizes.insert(sizes.end(), last);
    return sizes;
  };
  Decomposition d;
  d.S = make_tensor(with({k}), A.dtype(), A.device());
  if (vectors) {
    d.U = make_tensor(with({m, full_matrices ? m : k}), A.dtype(), A.device());
    d.Vh = make_tensor(with({full_matrices ? n : k, n}), A.dtype(), A.device());
  }
  if (A.numel() == 0) {
    // Nothing to decompose; the full bases of matrices with a zero dimension are identities.
    if (vectors && full_matrices) {
      d.U.copy_(identity_like(A, m));
      d.Vh.copy_(identity_like(A, n));
    }
    return d;
  }
  Tensor work = make_tensor(A.sizes(), A.dtype(), A.device());
  work.copy_(A);
  const Tensor info = make_tensor({batch}, kInt32, A.device());
  TensorView u_view, vh_view;  // no data: values only
  if (vectors) {
    u_view = view_of(d.U.reshape({batch, m, d.U.size(-1)}));
    vh_view = view_of(d.Vh.reshape({batch, d.Vh.size(-2), n}));
  }
  backend_for(A.device())
      .svd(view_of(work.reshape({batch, m, n})), full_matrices, u_view, view_of(d.S.reshape({batch, k})), vh_view,
           view_of(info));
  check_info(info, A.dim() > 2);
  return d;
}

/// PyTorch's svd_backward for real matrices: the gradient of A from those of U, S and Vh (any of
/// them undefined when nothing reached it), for the reduced decomposition.
Tensor svd_backward(const Tensor& gU, const Tensor& gS, const Tensor& gVh, const Tensor& U, const Tensor& S,
                    const Tensor& Vh) {
  if (!gS.defined() && !gU.defined() && !gVh.defined()) return Tensor();
  const int64_t m = U.size(-2), n = Vh.size(-1);
  // The values alone: U diag(gS) Vh, which needs no distinct singular values.
  if (!gU.defined() && !gVh.defined()) {
    return m >= n ? matmul(U, gS.unsqueeze(-1) * Vh) : matmul(U * gS.unsqueeze(-2), Vh);
  }
  const auto skew = [](const Tensor& X) { return X - mT(X); };
  const Tensor UhgU = gU.defined() ? skew(matmul(mT(U), gU)) : Tensor();
  const Tensor VhgV = gVh.defined() ? skew(matmul(Vh, mT(gVh))) : Tensor();
  // E[j][k] = S_k^2 - S_j^2 off the diagonal and 1 on it, where the numerators are 0.
  const Tensor S2 = S * S;
  const Tensor E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + identity_like(S, S.size(-1));
  Tensor gA;
  if (gU.defined()) {
    gA = gVh.defined() ? (UhgU * S.unsqueeze(-2) + S.unsqueeze(-1) * VhgV) / E : (UhgU / E) * S.unsqueeze(-2);
  } else {
    gA = S.unsqueeze(-1) * (VhgV / E);
  }
  if (gS.defined()) gA = gA + diag_embed(gS);
  if (m > n && gU.defined()) {
    // U gA Vh plus the part of gU outside U's columns: (I - U U^T) gU S^-1 Vh.
    gA = matmul(U, gA);
    const Tensor gUSinv = gU / S.unsqueeze(-2);
    gA = gA + gUSinv - matmul(U, matmul(mT(U), gUSinv));
    return matmul(gA, Vh);
  }
  if (m < n && gVh.defined()) {
    // U (gA Vh + S^-1 gVh (I - V Vh)).
    gA = matmul(gA, Vh);
    const Tensor SinvgVh = gVh / S.unsqueeze(-1);
    gA = gA + SinvgVh - matmul(matmul(SinvgVh, mT(Vh)), Vh);
    return matmul(U, gA);
  }
  return m >= n ? matmul(U, matmul(gA, Vh)) : matmul(matmul(U, gA), Vh);
}

/// Makes `out` the output of `collector`'s slot `slot`: a node of its own that hands its gradient
/// on to that slot, so that the collector sees which of U, S and Vh received one.
void attach_output(const Tensor& out, const std::shared_ptr<autograd::Node>& collector, uint32_t slot) {
  auto node = autograd::make_node(kNodeName, std::span<const Tensor* const>(),
                                  [](const Tensor& g) { return std::vector<Tensor>{g}; });
  node->next.push_back({collector, slot});
  node->inputs.push_back(autograd::InputMeta{Dims(out.sizes()), out.dtype(), out.device()});
  autograd::set_grad_fn(out, std::move(node));
}

/// Records the decomposition of A as one node with three outputs (PyTorch's LinalgSvdBackward0).
/// Its outputs are saved detached (they refer to the node); a backward pass with create_graph
/// attaches them to it again, each to its own slot, so the gradient is differentiable in turn.
void record_svd(Decomposition& d, const Tensor& A, bool full_matrices) {
  const SavedTensor saved_u = SavedTensor::output(d.U), saved_s = SavedTensor::output(d.S),
                    saved_vh = SavedTensor::output(d.Vh);
  const Tensor* inputs[] = {&A};
  auto collector = autograd::make_node(kNodeName, inputs, nullptr);
  collector->slots = 3;
  const std::weak_ptr<autograd::Node> weak_self = collector;  // weak: the node owns this closure
  const std::vector<int64_t> a_sizes = A.sizes().vec();
  const bool empty = A.numel() == 0;
  collector->gather = [saved_u, saved_s, saved_vh, weak_self, full_matrices, a_sizes,
                       empty](std::vector<Tensor>& grads) -> std::vector<Tensor> {
    Tensor U, S, Vh;
    {
      NoGradGuard no_grad;  // the saved tensors as saved; attached below if recording
      U = saved_u.get();
      S = saved_s.get();
      Vh = saved_vh.get();
    }
    if (empty) return {zeros(a_sizes, TensorOptions(S.dtype()).device(S.device()))};
    if (GradMode::is_enabled()) {
      const std::shared_ptr<autograd::Node> self = weak_self.lock();
      U = U.detach();
      S = S.detach();
      Vh = Vh.detach();
      attach_output(U, self, 0);
      attach_output(S, self, 1);
      attach_output(Vh, self, 2);
    }
    const int64_t k = S.size(-1);
    Tensor gU = grads[0], gS = grads[1], gVh = grads[2];
    if (full_matrices) {
      // Only the first k columns of U and rows of Vh are determined by A.
      if (gU.defined()) gU = gU.narrow(-1, 0, k);
      if (gVh.defined()) gVh = gVh.narrow(-2, 0, k);
      U = U.narrow(-1, 0, k);
      Vh = Vh.narrow(-2, 0, k);
    }
    return {svd_backward(gU, gS, gVh, U, S, Vh)};
  };
  attach_output(d.U, collector, 0);
  attach_output(d.S, collector, 1);
  attach_output(d.Vh, collector, 2);
}

/// torch.linalg.svd's work, shared by svdvals and torch.svd. The vectors are computed whenever a
/// gradient will be needed, as PyTorch's svdvals does.
Decomposition svd_impl(const Tensor& A, bool full_matrices, bool vectors) {
  check_svd_input(A);
  const bool record = autograd::needs_grad({&A});
  Decomposition d = decompose(A, full_matrices, vectors || record);
  if (record) record_svd(d, A, full_matrices);
  return d;
}

/// PyTorch's dtype check of linalg.norm's matrix path (check_linalg_norm_dtype).
void check_norm_dtype(Dtype from, Dtype to) {
  EMBER_CHECK(is_floating_point(to), "linalg.matrix_norm: dtype should be floating point or complex, but got ",
              scalar_type_name(to));
  EMBER_CHECK(promote_types(from, to) == to, "linalg.matrix_norm: the dtype of the input (", scalar_type_name(from),
              ") should be convertible without narrowing to the specified dtype (", scalar_type_name(to), ")");
}

std::string dims_str(IntList dims) { return detail::shape_str(dims); }

}  // namespace

namespace linalg {

std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& A, bool full_matrices) {
  detail::OpContext context("linalg_svd", {{"A", &A}});
  Decomposition d = svd_impl(A, full_matrices, /*vectors=*/true);
  return {d.U, d.S, d.Vh};
}

Tensor svdvals(const Tensor& A) {
  detail::OpContext context("linalg_svdvals", {{"A", &A}});
  return svd_impl(A, /*full_matrices=*/false, /*vectors=*/false).S;
}

Tensor norm(const Tensor& x, std::optional<double> ord, IntList dims, bool keepdim, std::optional<Dtype> dtype) {
  detail::OpContext context("linalg_norm", {{"input", &x}});
  check_defined(x, "linalg.norm");
  if (!dims.empty()) {
    EMBER_CHECK(dims.size() == 1 || dims.size() == 2,
                "linalg.norm: If dim is specified, it must be of length 1 or 2. Got ", dims_str(dims));
  } else if (ord) {
    EMBER_CHECK(x.dim() == 1 || x.dim() == 2,
                "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got ", x.dim(), "D.");
  }
  // Without an ord this is the 2-norm of the elements, which is also the Frobenius norm.
  if (ord && (dims.size() == 2 || (dims.empty() && x.dim() == 2))) {
    const std::vector<int64_t> matrix_dims = dims.empty() ? std::vector<int64_t>{0, 1} : dims.vec();
    if (!dtype) return ember::matrix_norm(x, *ord, matrix_dims, keepdim);
    EMBER_CHECK(x.is_floating_point(), "linalg.matrix_norm: Expected a floating point or complex tensor as input. Got ",
                scalar_type_name(x.dtype()));
    check_norm_dtype(x.dtype(), *dtype);
    return ember::matrix_norm(x.to(*dtype), *ord, matrix_dims, keepdim);
  }
  return ember::vector_norm(x, ord.value_or(2.0), dims, keepdim, dtype);
}

Tensor norm(const Tensor& x, double ord, IntList dims, bool keepdim, std::optional<Dtype> dtype) {
  return norm(x, std::optional<double>(ord), dims, keepdim, dtype);
}

Tensor norm(const Tensor& x, std::string_view ord, IntList dims, bool keepdim, std::optional<Dtype> dtype) {
  detail::OpContext context("linalg_norm", {{"input", &x}});
  check_defined(x, "linalg.norm");
  if (!dims.empty()) {
    EMBER_CHECK(dims.size() == 1 || dims.size() == 2,
                "linalg.norm: If dim is specified, it must be of length 1 or 2. Got ", dims_str(dims));
  } else {
    EMBER_CHECK(x.dim() == 1 || x.dim() == 2,
                "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got ", x.dim(), "D.");
  }
  const std::vector<int64_t> matrix_dims = dims.empty() ? std::vector<int64_t>{0, 1} : dims.vec();
  if (!dtype || x.dim() < 2) return ember::matrix_norm(x, ord, matrix_dims, keepdim);
  EMBER_CHECK(x.is_floating_point(), "linalg.matrix_norm: Expected a floating point or complex tensor as input. Got ",
              scalar_type_name(x.dtype()));
  check_norm_dtype(x.dtype(), *dtype);
  return ember::matrix_norm(x.to(*dtype), ord, matrix_dims, keepdim);
}

Tensor matrix_norm(const Tensor& A, std::string_view ord, IntList dims, bool keepdim) {
  return ember::matrix_norm(A, ord, dims, keepdim);
}

Tensor matrix_norm(const Tensor& A, double ord, IntList dims, bool keepdim) {
  return ember::matrix_norm(A, ord, dims, keepdim);
}

Tensor vector_norm(const Tensor& x, double ord, IntList dims, bool keepdim, std::optional<Dtype> dtype) {
  return ember::vector_norm(x, ord, dims, keepdim, dtype);
}

}  // namespace linalg

Tensor svdvals(const Tensor& A) { return linalg::svdvals(A); }

std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& input, bool some, bool compute_uv) {
  detail::OpContext context("svd", {{"input", &input}});
  check_defined(input, "svd");
  EMBER_CHECK(input.dim() >= 2, "linalg.svd: input should have at least 2 dimensions, but has ", input.dim(),
              " dimensions instead");
  if (compute_uv) {
    Decomposition d = svd_impl(input, /*full_matrices=*/!some, /*vectors=*/true);
    return {d.U, d.S, mT(d.Vh)};
  }
  // The values alone; U and V are zeros of the full sizes, as PyTorch returns them.
  Tensor S = svd_impl(input, /*full_matrices=*/false, /*vectors=*/false).S;
  const int64_t m = input.size(-2), n = input.size(-1);
  std::vector<int64_t> sizes = input.sizes().vec();
  sizes.back() = m;
  Tensor U = zeros(sizes, TensorOptions(input.dtype()).device(input.device()));
  sizes[sizes.size() - 2] = n;
  sizes.back() = n;
  Tensor V = zeros(sizes, TensorOptions(input.dtype()).device(input.device()));
  return {U, S, V};
}

}  // namespace ember
