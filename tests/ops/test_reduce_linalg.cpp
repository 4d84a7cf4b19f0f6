// Front-end semantics of reductions, matrix products, joining, indexing and softmax.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "ember/ember.h"
#include "support/error_of.h"

namespace {

using namespace ember;

std::vector<double> values(const Tensor& t) {
  Tensor c = t.to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

using ember_test::error_of;

TEST(Reduce, SumMeanProdOverDims) {
  Tensor x = arange(6, kFloat32).view({2, 3});
  EXPECT_EQ(x.sum().item<float>(), 15.f);
  EXPECT_EQ(values(x.sum({0})), (std::vector<double>{3, 5, 7}));
  EXPECT_EQ(values(x.sum({1})), (std::vector<double>{3, 12}));
  EXPECT_EQ(x.sum({1}, true).sizes().vec(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(values(x.sum({0, 1})), (std::vector<double>{15}));
  EXPECT_EQ(values(x.mean({-1})), (std::vector<double>{1, 4}));
  EXPECT_EQ(values(prod(x + 1, 1)), (std::vector<double>{6, 120}));
  EXPECT_EQ(tensor({1, 2}).sum().dtype(), kInt64);
  EXPECT_EQ(tensor({1, 2}, kInt8).sum().dtype(), kInt64);
  EXPECT_EQ(tensor({true, true}).sum().item<int64_t>(), 2);
  EXPECT_NE(error_of([] {
              tensor({1, 2}).mean();
            }).find("Input dtype must be either a floating point"),
            std::string::npos);
  EXPECT_NE(error_of([&] { x.sum({0, 0}); }).find("appears multiple times"), std::string::npos);
  EXPECT_EQ(zeros({0}).sum().item<float>(), 0.f);
  EXPECT_TRUE(std::isnan(zeros({0}).mean().item<float>()));
}

TEST(Reduce, MaxMinArgmaxWithIndices) {
  Tensor x = tensor({{1.f, 7.f, 3.f}, {9.f, 2.f, 9.f}});
  EXPECT_EQ(x.max().item<float>(), 9.f);
  EXPECT_EQ(x.min().item<float>(), 1.f);
  auto [v, i] = max(x, 1);
  EXPECT_EQ(values(v), (std::vector<double>{7, 9}));
  EXPECT_EQ(values(i), (std::vector<double>{1, 0}));  // first occurrence on ties
  EXPECT_EQ(i.dtype(), kInt64);
  EXPECT_EQ(x.argmax().item<int64_t>(), 3);
  EXPECT_EQ(values(x.argmin(0)), (std::vector<double>{0, 1, 0}));
  EXPECT_EQ(x.argmax(std::nullopt, true).sizes().vec(), (std::vector<int64_t>{1, 1}));
  EXPECT_TRUE(std::isnan(tensor({1.f, NAN, 3.f}).max().item<float>()));
  EXPECT_NE(error_of([] { zeros({0}).max(); }).find("numel() == 0"), std::string::npos);
}

TEST(Reduce, VarAndStdUseBesselsCorrection) {
  Tensor x = tensor({1.0, 2.0, 3.0, 4.0}, kFloat64);
  EXPECT_DOUBLE_EQ(x.var().item<double>(), 5.0 / 3.0);
  EXPECT_DOUBLE_EQ(x.var({}, 0).item<double>(), 1.25);
  EXPECT_DOUBLE_EQ(x.std().item<double>(), std::sqrt(5.0 / 3.0));
  Tensor m = tensor({{1.f, 3.f}, {2.f, 6.f}});
  EXPECT_EQ(values(m.var({0})), (std::vector<double>{0.5, 4.5}));
}

TEST(Matmul, RanksFollowPyTorch) {
  Tensor a = arange(6, kFloat32).view({2, 3});
  Tensor b = arange(12, kFloat32).view({3, 4});
  Tensor c = matmul(a, b);
  EXPECT_EQ(c.sizes().vec(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(values(c), (std::vector<double>{20, 23, 26, 29, 56, 68, 80, 92}));
  EXPECT_EQ(values(matmul(tensor({1.f, 2.f}), tensor({3.f, 4.f}))), (std::vector<double>{11}));
  EXPECT_EQ(matmul(tensor({1.f, 2.f}), tensor({3.f, 4.f})).dim(), 0);
  EXPECT_EQ(values(matmul(a, tensor({1.f, 1.f, 1.f}))), (std::vector<double>{3, 12}));
  EXPECT_EQ(values(matmul(tensor({1.f, 1.f}), a)), (std::vector<double>{3, 5, 7}));
  Tensor batch = arange(24, kFloat32).view({2, 3, 4});
  Tensor r = matmul(batch, b.t());  // [2,3,4] @ [4,3]
  EXPECT_EQ(r.sizes().vec(), (std::vector<int64_t>{2, 3, 3}));
  EXPECT_TRUE(allclose(r.select(0, 1), matmul(batch.select(0, 1), b.t())));
  EXPECT_TRUE(allclose(bmm(batch, batch.transpose(1, 2)).select(0, 0), mm(batch[0], batch[0].t())));
  EXPECT_EQ(error_of([&] { mm(a, a); }), "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)");
  EXPECT_EQ(error_of([&] { mm(a, b.to(kFloat64)); }),
            "expected m1 and m2 to have the same dtype, but got: float != double");
  EXPECT_EQ(values(mm(tensor({{1, 2}}), tensor({{3}, {4}}))), (std::vector<double>{11}));
}

// [..., n, k] @ [k, m] runs as one product over the folded rows, as in PyTorch: the same values as
// a batch of products, PyTorch's mm/mv messages, and a result that owns its storage.
TEST(Matmul, FoldsLeadingDimsOfABatchByAMatrix) {
  manual_seed(3);
  Tensor x = randn({2, 3, 5, 4});
  Tensor w = randn({6, 4});
  Tensor y = matmul(x, w.t());
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 3, 5, 6}));
  EXPECT_TRUE(y.is_contiguous());
  EXPECT_FALSE(y.is_view());
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 3; ++j) EXPECT_TRUE(allclose(y[i][j], mm(x[i][j], w.t()), 1e-5, 1e-6));
  }
  Tensor permuted = x.permute({2, 0, 1, 3});  // rows that cannot be viewed as one matrix
  EXPECT_TRUE(allclose(matmul(permuted, w.t()), y.permute({2, 0, 1, 3}), 1e-5, 1e-6));
  Tensor v = matmul(x, w[0]);
  EXPECT_EQ(v.sizes().vec(), (std::vector<int64_t>{2, 3, 5}));
  EXPECT_TRUE(allclose(v, y.select(3, 0), 1e-5, 1e-6));
  EXPECT_EQ(matmul(zeros({2, 0, 4}), w.t()).sizes().vec(), (std::vector<int64_t>{2, 0, 6}));
  EXPECT_EQ(matmul(zeros({2, 3, 0}), zeros({0, 6})).sizes().vec(), (std::vector<int64_t>{2, 3, 6}));
  EXPECT_EQ(error_of([&] {
              matmul(randn({2, 3, 4}), randn({5, 3}));
            }),
            "mat1 and mat2 shapes cannot be multiplied (6x4 and 5x3)");
  EXPECT_EQ(error_of([&] {
              matmul(randn({2, 3, 4}), randn({5}));
            }),
            "size mismatch, got input (6), mat (6x4), vec (5)");
  EXPECT_EQ(error_of([&] {
              nn::functional::linear(randn({2, 3, 4}), randn({5, 3}));
            }),
            "mat1 and mat2 shapes cannot be multiplied (6x4 and 3x5)");
  EXPECT_EQ(error_of([&] {
              matmul(randn({3, 4}), randn({2, 5, 3}));
            }),
            "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [2, 5].");
  EXPECT_EQ(error_of([&] {
              matmul(randn({2, 1, 3, 4}), randn({3, 5, 3}));
            }),
            "Expected size for first two dimensions of batch2 tensor to be: [6, 4] but got: [6, 5].");
}

// The weight's gradient through a folded product is one product over all rows, stored the way the
// weight is (contiguous for Linear's weight.t()), and equals the sum of the per-batch gradients.
TEST(Matmul, FoldedGradientOfTheMatrixIsOneProduct) {
  manual_seed(5);
  Tensor x = randn({4, 3, 5}).requires_grad_();
  Tensor w = randn({2, 5}).requires_grad_();
  Tensor g = randn({4, 3, 2});
  Tensor y = matmul(x, w.t());
  EXPECT_EQ(y.grad_fn_name(), "UnsafeViewBackward0");
  y.backward(g);
  Tensor expected_w = zeros({2, 5});
  for (int64_t i = 0; i < 4; ++i) expected_w = expected_w + mm(g[i].t(), x.detach()[i]);
  EXPECT_TRUE(w.grad().is_contiguous());
  EXPECT_TRUE(allclose(w.grad(), expected_w, 1e-5, 1e-6));
  EXPECT_TRUE(allclose(x.grad(), matmul(g, w.detach()), 1e-5, 1e-6));
}

TEST(Joining, CatAndStack) {
  Tensor a = tensor({{1, 2}});
  Tensor b = tensor({{3, 4}, {5, 6}});
  EXPECT_EQ(values(cat({a, b})), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(values(cat({b, b}, 1)), (std::vector<double>{3, 4, 3, 4, 5, 6, 5, 6}));
  EXPECT_EQ(cat({a, b.to(kFloat32)}).dtype(), kFloat32);
  EXPECT_EQ(error_of([&] {
              cat({a, b}, 1);
            }),
            "Sizes of tensors must match except in dimension 1. Expected size 1 but got size 2 for tensor number 1 "
            "in the list.");
  Tensor s = stack({tensor({1, 2}), tensor({3, 4})}, 1);
  EXPECT_EQ(s.sizes().vec(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(values(s), (std::vector<double>{1, 3, 2, 4}));
  EXPECT_EQ(error_of([] {
              stack({tensor({1}), tensor({1, 2})});
            }),
            "stack expects each tensor to be equal size, but got [1] at entry 0 and [2] at entry 1");
}

TEST(Indexing, SelectGatherScatter) {
  Tensor x = arange(6, kFloat32).view({2, 3});
  EXPECT_EQ(values(x.index_select(1, tensor({2, 0}))), (std::vector<double>{2, 0, 5, 3}));
  EXPECT_EQ(values(x.index_select(0, tensor({1}))), (std::vector<double>{3, 4, 5}));
  EXPECT_EQ(values(x.gather(1, tensor({{0, 0}, {2, 1}}))), (std::vector<double>{0, 0, 5, 4}));
  Tensor acc = zeros({3}).scatter_add(0, tensor({0, 2, 0}), tensor({1.f, 2.f, 3.f}));
  EXPECT_EQ(values(acc), (std::vector<double>{4, 0, 2}));
  EXPECT_NE(error_of([&] { x.index_select(1, tensor({3})); }).find("index out of range in self"), std::string::npos);
  EXPECT_NE(error_of([&] { x.gather(1, tensor({{5}})); }).find("out of bounds"), std::string::npos);
  EXPECT_NE(error_of([&] { x.index_select(0, tensor({0.f})); }).find("int32/int64"), std::string::npos);
}

TEST(Softmax, RowsSumToOneAndLogSoftmaxMatches) {
  Tensor x = tensor({{1.f, 2.f, 3.f}, {1000.f, 1000.f, 1000.f}});
  Tensor p = softmax(x, 1);
  EXPECT_TRUE(allclose(p.sum({1}), ones({2})));
  EXPECT_NEAR(values(p)[2], std::exp(3.0) / (std::exp(1.0) + std::exp(2.0) + std::exp(3.0)), 1e-6);
  EXPECT_NEAR(values(p)[4], 1.0 / 3, 1e-6);  // stable for large inputs
  EXPECT_TRUE(allclose(log_softmax(x, 1), log(p), 1e-5, 1e-6));
  Tensor q = softmax(x, 0);  // a non-last dim
  EXPECT_TRUE(allclose(q.sum({0}), ones({3})));
  EXPECT_NE(error_of([] { softmax(tensor({1, 2}), 0); }).find("not implemented for 'Long'"), std::string::npos);
}

TEST(Compare, EqualAndAllclose) {
  EXPECT_TRUE(equal(tensor({1, 2}), tensor({1, 2})));
  EXPECT_FALSE(equal(tensor({1, 2}), tensor({1, 3})));
  EXPECT_FALSE(equal(tensor({1, 2}), tensor({1, 2, 3})));
  EXPECT_TRUE(allclose(tensor({1.f}), tensor({1.f + 1e-7f})));
  EXPECT_FALSE(allclose(tensor({1.f}), tensor({1.1f})));
  EXPECT_FALSE(allclose(tensor({NAN}), tensor({NAN})));
  EXPECT_TRUE(allclose(tensor({NAN}), tensor({NAN}), 1e-5, 1e-8, true));
  EXPECT_TRUE(allclose(tensor({INFINITY}), tensor({INFINITY})));
}

}  // namespace

namespace {

// bfloat16 products take oneDNN's native path on CPUs with AVX512-BF16 and the widening path
// elsewhere; both sum in float32 and round once. With small integers every sum is exact, so either
// path must give the float32 product rounded to bfloat16, bit for bit, in every layout.
TEST(BFloat16Matmul, RoundsTheFloat32ProductOnceInEveryLayout) {
  using namespace ember;
  manual_seed(7);
  const Tensor a = randint(-4, 5, {3, 70, 96}).to(kFloat32);
  const Tensor b = randint(-4, 5, {3, 96, 50}).to(kFloat32);
  auto check = [](const Tensor& x, const Tensor& y, const char* what) {
    const Tensor want = matmul(x, y).to(kBFloat16);
    const Tensor got = matmul(x.to(kBFloat16), y.to(kBFloat16));
    EXPECT_EQ(got.dtype(), kBFloat16) << what;
    EXPECT_TRUE(equal(got, want)) << what;
  };
  check(a, b, "batched, row-major");
  check(a[0], b[0], "2-D");
  check(a[1], b[1].t().contiguous().t(), "right operand transposed");
  check(a[2].t().contiguous().t(), b[2], "left operand transposed");
  check(a[0].slice(0, 0, 70, 2), b[0], "every other row");
  // Beyond exact sums, the two paths differ only in the order of the float32 sums.
  const Tensor x = randn({64, 784}), w = randn({512, 784});
  const Tensor near = matmul(x.to(kBFloat16), w.t().to(kBFloat16)).to(kFloat32);
  const Tensor wide = matmul(x.to(kBFloat16).to(kFloat32), w.t().to(kBFloat16).to(kFloat32));
  EXPECT_TRUE(allclose(near, wide, 1.0 / 128, 1e-3));
}

}  // namespace
