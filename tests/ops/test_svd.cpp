// The singular value decomposition (src/ops/svd.cpp, backend/cpu/linalg.cpp): torch.linalg.svd,
// svdvals, torch.svd, and matrix_norm / linalg.norm's 2, -2 and "nuc", against PyTorch's values
// and gradients (tools/gen_svd_golden.py). Singular vectors are compared after normalising each
// pair's sign to PyTorch's, and gradients only of losses that do not depend on those signs (or on
// a full basis's extra columns); plus errors, empty inputs, batches run on several threads,
// finite differences (first and second order) and the stand-in device against the CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/linalg.h"
#include "support/devices.h"
#include "support/error_of.h"
#include "support/gradcheck.h"

namespace {

using namespace ember;
using ember_test::error_of;

const io::SafetensorsData& golden() {
  static const io::SafetensorsData data =
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/ops/golden/svd_golden.safetensors");
  return data;
}

const Tensor& g(const std::string& name) { return golden().at(name); }

/// Fails with the largest difference when got and want differ by more than atol + rtol |want|.
::testing::AssertionResult close(const Tensor& got, const Tensor& want, double rtol, double atol) {
  if (got.sizes().vec() != want.sizes().vec()) {
    return ::testing::AssertionFailure() << "sizes " << ember_test::detail::sizes_string(got.sizes()) << " vs "
                                         << ember_test::detail::sizes_string(want.sizes());
  }
  const Tensor a = got.detach().to(kFloat64), b = want.detach().to(kFloat64);
  if (allclose(a, b, rtol, atol)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "max |difference| " << amax(abs(a - b)).item<double>() << "\ngot\n"
                                       << a << "\nwant\n"
                                       << b;
}

Tensor mT(const Tensor& x) { return x.transpose(-2, -1); }

/// (U, Vh) with each singular pair's sign flipped to agree with the reference's U.
std::tuple<Tensor, Tensor> sign_normalised(const Tensor& U, const Tensor& Vh, const Tensor& U_ref) {
  const Tensor signs = sign(sum(U * U_ref, {-2}));
  return {U * signs.unsqueeze(-2), Vh * signs.unsqueeze(-1)};
}

Tensor reconstruct(const Tensor& U, const Tensor& S, const Tensor& Vh) {
  const int64_t k = S.size(-1);
  return matmul(U.narrow(-1, 0, k) * S.unsqueeze(-2), Vh.narrow(-2, 0, k));
}

Tensor identity(int64_t n) { return eye(n, n, kFloat64); }

double max_abs(const Tensor& x) { return amax(abs(x)).item<double>(); }

const std::vector<std::string> kCases = {"square", "tall", "wide", "batched_tall", "batched_wide", "column"};

TEST(Svd, MatchesPyTorchsDecompositions) {
  for (const std::string& name : kCases) {
    SCOPED_TRACE(name);
    const Tensor a = g(name + ".a");
    const int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n);
    for (const bool full : {false, true}) {
      SCOPED_TRACE(full ? "full_matrices" : "reduced");
      const auto [U, S, Vh] = linalg::svd(a, full);
      EXPECT_EQ(U.size(-1), full ? m : k);
      EXPECT_EQ(Vh.size(-2), full ? n : k);
      EXPECT_TRUE(close(S, g(name + ".s"), 1e-13, 1e-13));
      const auto [u, vh] = sign_normalised(U.narrow(-1, 0, k), Vh.narrow(-2, 0, k), g(name + ".u"));
      EXPECT_TRUE(close(u, g(name + ".u"), 1e-10, 1e-11));
      EXPECT_TRUE(close(vh, g(name + ".vh"), 1e-10, 1e-11));
      EXPECT_TRUE(close(reconstruct(U, S, Vh), a, 1e-12, 1e-13));
      // Orthonormal columns of U and rows of Vh, the full bases' extra ones included.
      EXPECT_LT(max_abs(matmul(mT(U), U) - identity(U.size(-1))), 1e-13);
      EXPECT_LT(max_abs(matmul(Vh, mT(Vh)) - identity(Vh.size(-2))), 1e-13);
    }
    EXPECT_TRUE(close(linalg::svdvals(a), g(name + ".s"), 1e-13, 1e-13));
    EXPECT_TRUE(close(svdvals(a), g(name + ".s"), 1e-13, 1e-13));
  }
}

TEST(Svd, Float32MatchesPyTorchToItsPrecision) {
  for (const std::string& name : kCases) {
    SCOPED_TRACE(name);
    const Tensor a = g(name + ".a").to(kFloat32);
    const auto [U, S, Vh] = linalg::svd(a, false);
    EXPECT_EQ(S.dtype(), kFloat32);
    EXPECT_EQ(U.dtype(), kFloat32);
    EXPECT_TRUE(close(S, g(name + ".s32"), 1e-5, 1e-5));
    EXPECT_TRUE(close(reconstruct(U, S, Vh), a, 1e-5, 1e-5));
    EXPECT_TRUE(close(linalg::svdvals(a), g(name + ".s32"), 1e-5, 1e-5));
  }
}

/// d/da of loss(a) by backward.
template <typename Loss>
Tensor gradient(const Tensor& a, Loss loss) {
  const Tensor leaf = a.clone().requires_grad_();
  loss(leaf).backward();
  return leaf.grad();
}

TEST(Svd, GradientsOfSignInvariantLossesMatchPyTorch) {
  for (const std::string& name : kCases) {
    SCOPED_TRACE(name);
    const Tensor a = g(name + ".a");
    const Tensor w_s = g(name + ".w_s"), w_f = g(name + ".w_f"), w_u = g(name + ".w_u"), w_v = g(name + ".w_v");
    // The values alone: U diag(w) Vh, through svdvals and through svd's S.
    EXPECT_TRUE(close(gradient(a, [&](const Tensor& x) { return (w_s * linalg::svdvals(x)).sum(); }), g(name + ".g_s"),
                      1e-12, 1e-12));
    EXPECT_TRUE(close(gradient(a, [&](const Tensor& x) { return (w_s * std::get<1>(linalg::svd(x, false))).sum(); }),
                      g(name + ".g_s"), 1e-12, 1e-12));
    // A function of the matrix: U, S and Vh's gradients together.
    EXPECT_TRUE(close(gradient(a,
                               [&](const Tensor& x) {
                                 const auto [U, S, Vh] = linalg::svd(x, false);
                                 return (w_f * matmul(U * (S * S + S).unsqueeze(-2), Vh)).sum();
                               }),
                      g(name + ".g_f"), 1e-11, 1e-12));
    // U alone and Vh alone.
    EXPECT_TRUE(
        close(gradient(a, [&](const Tensor& x) { return (w_u * square(std::get<0>(linalg::svd(x, false)))).sum(); }),
              g(name + ".g_u"), 1e-11, 1e-12));
    EXPECT_TRUE(
        close(gradient(a, [&](const Tensor& x) { return (w_v * square(std::get<2>(linalg::svd(x, false)))).sum(); }),
              g(name + ".g_v"), 1e-11, 1e-12));
    // Full bases: only their first k columns / rows carry a gradient, as in PyTorch.
    EXPECT_TRUE(close(gradient(a,
                               [&](const Tensor& x) {
                                 const auto [U, S, Vh] = linalg::svd(x, true);
                                 return (g(name + ".w_full") * U * U).sum() + (g(name + ".w_vfull") * Vh * Vh).sum();
                               }),
                      g(name + ".g_full"), 1e-11, 1e-12));
    // torch.svd's V is Vh transposed: the same gradient through it.
    EXPECT_TRUE(
        close(gradient(a, [&](const Tensor& x) { return (mT(w_v) * square(std::get<2>(ember::svd(x)))).sum(); }),
              g(name + ".g_v"), 1e-11, 1e-12));
  }
}

TEST(Svd, NodeNamesAreLinalgSvdBackward0) {
  const Tensor a = g("square.a").clone().requires_grad_();
  const auto [U, S, Vh] = linalg::svd(a);
  EXPECT_EQ(U.grad_fn_name(), "LinalgSvdBackward0");
  EXPECT_EQ(S.grad_fn_name(), "LinalgSvdBackward0");
  EXPECT_EQ(Vh.grad_fn_name(), "LinalgSvdBackward0");
  EXPECT_EQ(linalg::svdvals(a).grad_fn_name(), "LinalgSvdBackward0");
  EXPECT_EQ(std::get<2>(ember::svd(a)).grad_fn_name(), "TransposeBackward0");
  EXPECT_EQ(matrix_norm(a, 2.0).grad_fn_name(), "AmaxBackward0");
  EXPECT_EQ(matrix_norm(a, -2.0).grad_fn_name(), "AminBackward0");
  EXPECT_EQ(matrix_norm(a, "nuc").grad_fn_name(), "SumBackward1");
  EXPECT_FALSE(linalg::svdvals(a.detach()).requires_grad());
}

TEST(Svd, TorchSvdReturnsVAndZerosWithoutVectors) {
  const Tensor a = g("tall.a");  // 5 x 3
  const auto [U, S, V] = ember::svd(a);
  EXPECT_EQ(U.sizes().vec(), (std::vector<int64_t>{5, 3}));
  EXPECT_EQ(V.sizes().vec(), (std::vector<int64_t>{3, 3}));
  EXPECT_TRUE(close(matmul(U * S.unsqueeze(-2), mT(V)), a, 1e-12, 1e-13));
  const auto [Uf, Sf, Vf] = ember::svd(a, /*some=*/false);
  EXPECT_EQ(Uf.sizes().vec(), (std::vector<int64_t>{5, 5}));
  EXPECT_EQ(Vf.sizes().vec(), (std::vector<int64_t>{3, 3}));
  const auto [Uz, Sz, Vz] = ember::svd(g("wide.a"), true, /*compute_uv=*/false);  // 3 x 5
  EXPECT_EQ(Uz.sizes().vec(), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(Vz.sizes().vec(), (std::vector<int64_t>{5, 5}));
  EXPECT_EQ(count_nonzero(Uz).item<int64_t>() + count_nonzero(Vz).item<int64_t>(), 0);
  EXPECT_TRUE(close(Sz, g("wide.s"), 1e-13, 1e-13));
}

TEST(Svd, MatrixNormsFromSingularValuesMatchPyTorch) {
  const Tensor x = g("mn.x");
  const int cases = std::stoi(golden().metadata.at("matrix_norm_cases"));
  ASSERT_GT(cases, 0);
  for (int i = 0; i < cases; ++i) {
    const std::string name = "mn" + std::to_string(i);
    const std::string spec = golden().metadata.at(name);
    SCOPED_TRACE(name + ": " + spec);
    const std::string ord = spec.substr(0, spec.find(','));
    int64_t d0 = 0, d1 = 0, keepdim = 0;
    ASSERT_EQ(std::sscanf(spec.c_str() + ord.size() + 1, "%ld,%ld,%ld", &d0, &d1, &keepdim), 3);
    const Tensor leaf = x.clone().requires_grad_();
    const Tensor y = ord == "nuc" ? matrix_norm(leaf, "nuc", {d0, d1}, keepdim != 0)
                                  : matrix_norm(leaf, std::stod(ord), {d0, d1}, keepdim != 0);
    EXPECT_TRUE(close(y, g(name + ".y"), 1e-13, 1e-13));
    y.backward(g(name + ".gy"));
    EXPECT_TRUE(close(leaf.grad(), g(name + ".gx"), 1e-12, 1e-12));
  }
}

TEST(Svd, LinalgNormMatchesPyTorch) {
  const Tensor y = g("norm.x");
  EXPECT_TRUE(close(linalg::norm(y, 2), g("norm.ord2"), 1e-13, 1e-13));
  EXPECT_TRUE(close(linalg::norm(y, -2.0), g("norm.ordm2"), 1e-13, 1e-13));
  EXPECT_TRUE(close(linalg::norm(y, "nuc"), g("norm.nuc"), 1e-13, 1e-13));
  EXPECT_TRUE(close(linalg::norm(y), g("norm.none"), 1e-13, 1e-13));
  EXPECT_TRUE(close(linalg::norm(y, "nuc", {1, 0}, true), g("norm.nuc_keepdim"), 1e-13, 1e-13));
  // A vector's norm and the vector path with one dim are vector_norm's.
  EXPECT_TRUE(close(linalg::norm(y, 0, {1}), vector_norm(y, 0, {1}), 0, 0));
  EXPECT_TRUE(close(linalg::norm(y.flatten(), 3.0), vector_norm(y.flatten(), 3.0), 0, 0));
  EXPECT_TRUE(close(linalg::matrix_norm(y, "nuc"), g("norm.nuc"), 1e-13, 1e-13));
  EXPECT_TRUE(close(linalg::norm(y.to(kFloat32), 2, {}, false, kFloat64), g("norm.ord2"), 1e-6, 1e-6));
  EXPECT_EQ(linalg::norm(y.to(kFloat32), 2, {}, false, kFloat64).dtype(), kFloat64);
}

TEST(Svd, EmptyInputs) {
  // A matrix with no rows: no singular values, identity for the full right basis.
  const auto [U, S, Vh] = linalg::svd(zeros({0, 3}, kFloat64));
  EXPECT_EQ(U.sizes().vec(), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(S.numel(), 0);
  EXPECT_TRUE(close(Vh, identity(3), 0, 0));
  const auto [Ub, Sb, Vhb] = linalg::svd(zeros({2, 3, 0}, kFloat64), false);
  EXPECT_EQ(Ub.sizes().vec(), (std::vector<int64_t>{2, 3, 0}));
  EXPECT_EQ(Vhb.sizes().vec(), (std::vector<int64_t>{2, 0, 0}));
  EXPECT_EQ(linalg::svdvals(zeros({0, 4, 4})).sizes().vec(), (std::vector<int64_t>{0, 4}));
  EXPECT_TRUE(close(matrix_norm(zeros({2, 0, 3}), 2.0), zeros({2}), 0, 0));
  EXPECT_TRUE(close(matrix_norm(zeros({2, 0, 3}), "nuc"), zeros({2}), 0, 0));
  EXPECT_EQ(error_of([] {
              matrix_norm(zeros({0, 3}), -2.0);
            }),
            "amin(): Expected reduction dim -1 to have non-zero size.");
  const Tensor leaf = zeros({0, 3}, kFloat64).requires_grad_();
  linalg::svdvals(leaf).sum().backward();
  EXPECT_EQ(leaf.grad().sizes().vec(), (std::vector<int64_t>{0, 3}));
}

TEST(Svd, BatchesOnSeveralThreadsMatchOneMatrixAtATime) {
  manual_seed(3);
  const Tensor a = randn({16, 40, 30}, kFloat64);
  const auto [U, S, Vh] = linalg::svd(a, false);
  for (int64_t b = 0; b < a.size(0); b += 5) {
    const auto [u, s, vh] = linalg::svd(a[b], false);
    // One matrix alone runs where the BLAS under LAPACK may use threads: equal to rounding.
    EXPECT_TRUE(close(S[b], s, 1e-14, 1e-14));
    EXPECT_TRUE(close(U[b], u, 1e-12, 1e-13));
    EXPECT_TRUE(close(Vh[b], vh, 1e-12, 1e-13));
  }
  // A view that is not contiguous (the transposes) decomposes like its copy.
  EXPECT_TRUE(close(linalg::svdvals(mT(a)), linalg::svdvals(mT(a).contiguous()), 0, 0));
  // A batch broadcast from fewer matrices (stride 0) is copied before LAPACK overwrites it. (The
  // values alone come from another LAPACK path than with the vectors: svdvals, not S.)
  EXPECT_TRUE(
      close(linalg::svdvals(a.expand({2, 16, 40, 30})), linalg::svdvals(a).unsqueeze(0).expand({2, 16, 30}), 0, 0));
}

TEST(Svd, FiniteDifferences) {
  manual_seed(5);
  for (const std::vector<int64_t>& sizes : std::vector<std::vector<int64_t>>{{4, 4}, {5, 3}, {2, 3, 5}}) {
    const Tensor a = randn(sizes, kFloat64);
    const std::string what = ember_test::detail::sizes_string(sizes);
    test::gradcheck("svdvals " + what, [](const std::vector<Tensor>& in) { return linalg::svdvals(in[0]); }, {a});
    const auto matrix_function = [](const std::vector<Tensor>& in) {
      const auto [U, S, Vh] = linalg::svd(in[0], false);
      return matmul(U * (S * S).unsqueeze(-2), Vh);
    };
    test::gradcheck("U diag(S^2) Vh " + what, matrix_function, {a});
    test::gradcheck("U U^T, full " + what,
                    [](const std::vector<Tensor>& in) {
                      const auto [U, S, Vh] = linalg::svd(in[0], true);
                      const int64_t k = S.size(-1);
                      return matmul(U.narrow(-1, 0, k), mT(U.narrow(-1, 0, k))) +
                             matmul(mT(Vh.narrow(-2, 0, k)), Vh.narrow(-2, 0, k)).sum();
                    },
                    {a});
    test::gradgradcheck("svdvals " + what, [](const std::vector<Tensor>& in) { return linalg::svdvals(in[0]); }, {a});
    test::gradgradcheck("U diag(S^2) Vh " + what, matrix_function, {a});
  }
  const Tensor x = randn({3, 4}, kFloat64);
  test::gradcheck("matrix_norm 2", [](const std::vector<Tensor>& in) { return matrix_norm(in[0], 2.0); }, {x});
  test::gradcheck("matrix_norm nuc", [](const std::vector<Tensor>& in) { return matrix_norm(in[0], "nuc"); }, {x});
}

TEST(Svd, RepeatedSingularValuesKeepFiniteValueGradients) {
  // The identity's singular values are all 1: the values' gradient U diag(g) Vh needs no
  // distinct values (the vectors' does), so the nuclear norm's gradient is U Vh, here I.
  const Tensor leaf = eye(3, 3, kFloat64).requires_grad_();
  matrix_norm(leaf, "nuc").backward();
  EXPECT_TRUE(close(leaf.grad(), identity(3), 0, 1e-15));
}

TEST(Svd, Errors) {
  EXPECT_EQ(error_of([] { linalg::svd(ones({3})); }),
            "linalg.svd: The input tensor A must have at least 2 dimensions.");
  EXPECT_EQ(error_of([] { linalg::svdvals(ones({3})); }),
            "linalg.svd: The input tensor A must have at least 2 dimensions.");
  EXPECT_EQ(error_of([] { ember::svd(ones({3})); }),
            "linalg.svd: input should have at least 2 dimensions, but has 1 dimensions instead");
  EXPECT_EQ(error_of([] {
              linalg::svd(ones({3, 3}, kInt64));
            }),
            "linalg.svd: Expected a floating point or complex tensor as input. Got Long");
  EXPECT_EQ(error_of([] {
              ember::svd(ones({2, 2}, kInt32));
            }),
            "linalg.svd: Expected a floating point or complex tensor as input. Got Int");
  EXPECT_EQ(error_of([] { linalg::svd(ones({3, 3}, kFloat16)); }), "\"linalg_svd_cpu\" not implemented for 'Half'");
  EXPECT_EQ(error_of([] {
              linalg::svd(ones({3, 3}, kBool));
            }),
            "linalg.svd: Expected a floating point or complex tensor as input. Got Bool");
  Tensor nan_batch = randn({3, 4, 4}, kFloat64);
  nan_batch[1][0][0].fill_(std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(error_of([&] { linalg::svd(nan_batch); }),
            "linalg.svd: (Batch element 1): The algorithm failed to converge because the input matrix contained "
            "non-finite values.");
  EXPECT_EQ(error_of([&] { matrix_norm(nan_batch, 2.0); }),
            "linalg.svd: (Batch element 1): The algorithm failed to converge because the input matrix contained "
            "non-finite values.");
  EXPECT_EQ(error_of([&] { linalg::svdvals(nan_batch[1].to(kFloat32)); }),
            "linalg.svd: The algorithm failed to converge because the input matrix contained non-finite values.");
  // matrix_norm and linalg.norm's own checks, in PyTorch's words.
  EXPECT_EQ(error_of([] { matrix_norm(ones({3, 3}), 3.0); }), "linalg.matrix_norm: Order 3 not supported.");
  EXPECT_EQ(error_of([] { matrix_norm(ones({3, 3}), -2.5); }), "linalg.matrix_norm: Order -2.5 not supported.");
  EXPECT_EQ(error_of([] { matrix_norm(ones({3, 3}), "abc"); }), "linalg.matrix_norm: Order abc not supported.");
  EXPECT_EQ(error_of([] {
              matrix_norm(ones({3, 3}, kFloat16), 2.0);
            }),
            "linalg.matrix_norm: Low precision dtypes not supported. Got Half");
  EXPECT_EQ(error_of([] {
              matrix_norm(ones({3, 3}, kFloat16), "nuc");
            }),
            "linalg.matrix_norm: Low precision dtypes not supported. Got Half");
  EXPECT_EQ(error_of([] {
              matrix_norm(ones({3, 3}, kInt64), 2.0);
            }),
            "linalg.matrix_norm: Expected a floating point or complex tensor as input. Got Long");
  EXPECT_EQ(error_of([] {
              matrix_norm(ones({3, 3}), 2.0, {1, 1});
            }),
            "linalg.matrix_norm: dims must be different. Got (1, 1)");
  EXPECT_EQ(error_of([] {
              matrix_norm(ones({3, 3}), "nuc", {1, -1});
            }),
            "linalg.matrix_norm: dims must be different. Got (1, 1)");
  EXPECT_EQ(error_of([] {
              matrix_norm(ones({3, 3, 3}), 2.0, {0, 1, 2});
            }),
            "linalg.matrix_norm: dim must be a 2-tuple. Got 0 1 2");
  EXPECT_EQ(error_of([] { matrix_norm(ones({3}), "nuc"); }),
            "linalg.matrix_norm: The input tensor A must have at least 2 dimensions.");
  EXPECT_EQ(error_of([] {
              linalg::norm(ones({3, 3, 3}), 2);
            }),
            "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got 3D.");
  EXPECT_EQ(error_of([] {
              linalg::norm(ones({3, 3, 3}), "nuc");
            }),
            "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got 3D.");
  EXPECT_EQ(error_of([] {
              linalg::norm(ones({3, 3}), 2, {0, 1, 2});
            }),
            "linalg.norm: If dim is specified, it must be of length 1 or 2. Got [0, 1, 2]");
  EXPECT_EQ(error_of([] { linalg::norm(ones({3}), "fro"); }),
            "linalg.matrix_norm: The input tensor A must have at least 2 dimensions.");
  EXPECT_EQ(error_of([] {
              linalg::norm(ones({3, 3}), 2, {}, false, kInt64);
            }),
            "linalg.matrix_norm: dtype should be floating point or complex, but got Long");
  EXPECT_EQ(error_of([] {
              linalg::norm(ones({3, 3}, kFloat64), 2, {}, false, kFloat32);
            }),
            "linalg.matrix_norm: the dtype of the input (Double) should be convertible without narrowing to the "
            "specified dtype (Float)");
}

class SvdDevice : public ember_test::DeviceTest {};

TEST_P(SvdDevice, MatchesTheCpu) {
  manual_seed(11);
  for (const Dtype dtype : {kFloat64, kFloat32}) {
    const double tol = dtype == kFloat64 ? 1e-12 : 1e-4;
    for (const std::vector<int64_t>& sizes : std::vector<std::vector<int64_t>>{{2, 5, 3}, {3, 4}, {2, 3, 6}}) {
      SCOPED_TRACE(ember_test::detail::sizes_string(sizes));
      const Tensor a = randn(sizes, dtype);
      for (const bool full : {false, true}) {
        const auto [U, S, Vh] = linalg::svd(a.to(device()), full);
        const auto [Uc, Sc, Vhc] = linalg::svd(a, full);
        EXPECT_EQ(U.device(), device());
        EXPECT_EQ(Vh.device(), device());
        EXPECT_CLOSE_TO_CPU(S, Sc, tol, tol);
        const int64_t k = Sc.size(-1);
        const auto [u, vh] = sign_normalised(U.narrow(-1, 0, k).to(Device(DeviceType::CPU)),
                                             Vh.narrow(-2, 0, k).to(Device(DeviceType::CPU)), Uc.narrow(-1, 0, k));
        EXPECT_TRUE(close(u, Uc.narrow(-1, 0, k), tol * 100, tol * 100));
        EXPECT_TRUE(close(vh, Vhc.narrow(-2, 0, k), tol * 100, tol * 100));
      }
      EXPECT_CLOSE_TO_CPU(matrix_norm(a.to(device()), 2.0), matrix_norm(a, 2.0), tol, tol);
      EXPECT_CLOSE_TO_CPU(matrix_norm(a.to(device()), "nuc", {0, -1}, true), matrix_norm(a, "nuc", {0, -1}, true), tol,
                          tol);
    }
  }
  const Tensor a = randn({2, 4, 3}, kFloat64);
  Tensor leaf_cpu = a.clone().requires_grad_(), leaf_dev = a.to(device()).requires_grad_();
  const auto loss = [](const Tensor& x) {
    const auto [U, S, Vh] = linalg::svd(x, true);
    return (matmul(U.narrow(-1, 0, 3) * S.unsqueeze(-2), Vh) * x).sum() + matrix_norm(x, -2.0).sum() +
           linalg::svdvals(x).sum();
  };
  loss(leaf_cpu).backward();
  loss(leaf_dev).backward();
  EXPECT_CLOSE_TO_CPU(leaf_dev.grad(), leaf_cpu.grad(), 1e-12, 1e-12);
  Tensor nan_input = a.clone();
  nan_input[0][1][1].fill_(std::numeric_limits<double>::quiet_NaN());
  if (device().is_cuda()) return;  // cuSOLVER does not refuse non-finite input as LAPACK does
  EXPECT_EQ(error_of([&] { linalg::svdvals(nan_input.to(device())); }),
            "linalg.svd: (Batch element 0): The algorithm failed to converge because the input matrix contained "
            "non-finite values.");
}

EMBER_INSTANTIATE_DEVICE_SUITE(SvdDevice);

}  // namespace
