#pragma once
/// The singular value decomposition and what is built on it (src/ops/svd.cpp), with PyTorch's
/// results, gradients and messages:
///   torch.svd             -> ember::svd                 (returns V; `some` picks the reduced form)
///   torch.linalg.svd      -> ember::linalg::svd         (returns Vh; `full_matrices`)
///   torch.linalg.svdvals  -> ember::linalg::svdvals     (also ember::svdvals)
///   torch.linalg.norm     -> ember::linalg::norm        (ember::norm is torch.norm)
///   torch.linalg.matrix_norm / vector_norm -> ember::linalg::matrix_norm / vector_norm, the same
///   functions as ember::matrix_norm / vector_norm (ember/ops.h), here for code written against
///   libtorch's torch::linalg. matrix_norm's 2, -2 and "nuc" are its largest, smallest and summed
///   singular values.
///
/// Singular vectors are unique only up to the sign of each pair (u_i, v_i): ember's may differ
/// from PyTorch's by such signs (both come from LAPACK's gesdd on the CPU, but from different
/// builds). A loss of U or V must not depend on those signs for its gradient to mean anything,
/// as in PyTorch. The gradients follow PyTorch's svd_backward and assume distinct singular values
/// (and, for the vectors of a non-square matrix, full rank).
#include <optional>
#include <string_view>
#include <tuple>

#include "ember/dtype.h"
#include "ember/small_vector.h"
#include "ember/tensor.h"

namespace ember {

/// torch.svd: (U, S, V) with input = U diag(S) V^T, over the last two dimensions of a float32 or
/// float64 tensor [*, m, n]. With some, U is [*, m, k] and V [*, n, k] (k = min(m, n)); without,
/// U is [*, m, m] and V [*, n, n]. With compute_uv false, U and V are zero-filled [*, m, m] and
/// [*, n, n] (and carry no gradient). V is a transposed view of the decomposition's Vh.
std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& input, bool some = true, bool compute_uv = true);

/// torch.linalg.svdvals: the singular values [*, k] in descending order.
Tensor svdvals(const Tensor& A);

namespace linalg {

/// torch.linalg.svd: (U, S, Vh) with A = U diag(S) Vh. full_matrices (the default, as in PyTorch)
/// gives U [*, m, m] and Vh [*, n, n]; otherwise U [*, m, k] and Vh [*, k, n].
std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& A, bool full_matrices = true);

/// torch.linalg.svdvals.
Tensor svdvals(const Tensor& A);

/// torch.linalg.norm. With dims of two entries (or none, and a 2-D input with an ord given) it is
/// matrix_norm; otherwise vector_norm over dims (all of them when empty: PyTorch's dim=None), with
/// ord 2 when none is given. dtype converts the input first.
Tensor norm(const Tensor& x, std::optional<double> ord = std::nullopt, IntList dims = {}, bool keepdim = false,
            std::optional<Dtype> dtype = std::nullopt);
/// The same with a numeric ord (so that norm(x, 0) is the 0-"norm", not a null string).
Tensor norm(const Tensor& x, double ord, IntList dims = {}, bool keepdim = false,
            std::optional<Dtype> dtype = std::nullopt);
/// torch.linalg.norm with ord "fro" or "nuc": a matrix norm over dims (the input's two dims when
/// empty, which must then be 2-D).
Tensor norm(const Tensor& x, std::string_view ord, IntList dims = {}, bool keepdim = false,
            std::optional<Dtype> dtype = std::nullopt);

/// torch.linalg.matrix_norm and vector_norm: ember::matrix_norm and ember::vector_norm.
Tensor matrix_norm(const Tensor& A, std::string_view ord = "fro", IntList dims = {-2, -1}, bool keepdim = false);
Tensor matrix_norm(const Tensor& A, double ord, IntList dims = {-2, -1}, bool keepdim = false);
Tensor vector_norm(const Tensor& x, double ord = 2.0, IntList dims = {}, bool keepdim = false,
                   std::optional<Dtype> dtype = std::nullopt);

}  // namespace linalg

}  // namespace ember
