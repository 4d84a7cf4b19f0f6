// all_reduce, broadcast, all_gather and barrier across the ranks of an mpirun job, for every
// dtype, with sizes that divide nothing evenly.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "ember/ember.h"
#include "support/error_of.h"

using namespace ember;
using distributed::ReduceOp;
using ember_test::error_of;
using testing::HasSubstr;

namespace {

const std::vector<Dtype> kAllDtypes = {kBool,  kUInt8,   kInt8,     kInt16,   kInt32,
                                       kInt64, kFloat16, kBFloat16, kFloat32, kFloat64};
const std::vector<int64_t> kSizes = {0, 1, 7, 4099, 1'000'003};

int rank() { return distributed::rank(); }
int world() { return distributed::world_size(); }

// Rank r's contribution: small values, exact in every dtype, different per rank and element.
Tensor contribution(int r, int64_t n, Dtype dtype) {
  std::vector<int64_t> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = (i * (r + 1) + r) % 5;
    values[static_cast<size_t>(i)] = dtype == kBool ? (v & 1) : v;  // bools: a mix that differs by rank
  }
  const Tensor t = n == 0 ? zeros({0}, TensorOptions().dtype(kInt64)) : tensor(values);
  return t.to(dtype);
}

// The reduction computed here from every rank's contribution, in float64 (or bool).
Tensor expected(ReduceOp op, int64_t n, Dtype dtype) {
  const Dtype wide = dtype == kBool ? kBool : kFloat64;
  Tensor acc = contribution(0, n, dtype).to(wide);
  for (int r = 1; r < world(); ++r) {
    const Tensor c = contribution(r, n, dtype).to(wide);
    if (dtype == kBool) {
      acc = (op == ReduceOp::Sum || op == ReduceOp::Max) ? logical_or(acc, c) : logical_and(acc, c);
      continue;
    }
    switch (op) {
      case ReduceOp::Sum:
      case ReduceOp::Avg:
        acc = acc + c;
        break;
      case ReduceOp::Product:
        acc = acc * c;
        break;
      case ReduceOp::Min:
        acc = minimum(acc, c);
        break;
      case ReduceOp::Max:
        acc = maximum(acc, c);
        break;
    }
  }
  if (op == ReduceOp::Avg) acc = acc / static_cast<double>(world());
  return acc;
}

}  // namespace

TEST(MpiCollectives, WorldIsTheLaunchers) {
  ASSERT_TRUE(distributed::launched_by_mpi());
  EXPECT_GE(world(), 2);
  EXPECT_GE(rank(), 0);
  EXPECT_LT(rank(), world());
  EXPECT_EQ(distributed::local_world_size(), world());  // one machine
  EXPECT_EQ(distributed::local_rank(), rank());
  EXPECT_EQ(distributed::default_device(), Device(kCPU));
}

TEST(MpiCollectives, AllReduceEveryDtypeOpAndSize) {
  for (Dtype dtype : kAllDtypes) {
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Product, ReduceOp::Min, ReduceOp::Max, ReduceOp::Avg}) {
      if (op == ReduceOp::Avg && !is_floating_point(dtype)) continue;
      for (int64_t n : kSizes) {
        if (n > 5000 && dtype != kFloat32 && dtype != kInt64) continue;  // the large size once per kind
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " op " + std::to_string(static_cast<int>(op)) + " n " +
                     std::to_string(n));
        Tensor t = contribution(rank(), n, dtype);
        distributed::all_reduce(t, op);
        ASSERT_EQ(t.dtype(), dtype);
        const Tensor want = expected(op, n, dtype);
        if (dtype == kBool) {
          ASSERT_TRUE(equal(t, want));
        } else {
          // Values are below 5 and worlds at most 3, so even a product (4^3) fits in int8.
          ASSERT_TRUE(allclose(t.to(kFloat64), want.to(dtype).to(kFloat64), 1e-6, 1e-6));
        }
      }
    }
  }
}

TEST(MpiCollectives, AllReduceAvgOfFloatsDividesTheSum) {
  Tensor t = full({3}, static_cast<double>(rank() + 1), TensorOptions().dtype(kFloat32));
  distributed::all_reduce(t, ReduceOp::Avg);
  const double mean = (world() + 1) / 2.0;
  EXPECT_TRUE(allclose(t, full({3}, mean, TensorOptions().dtype(kFloat32))));
}

TEST(MpiCollectives, BadArgumentsAreErrorsOnEveryRank) {
  Tensor ints = ones({4}, TensorOptions().dtype(kInt32));
  EXPECT_THAT(error_of([&] { distributed::all_reduce(ints, ReduceOp::Avg); }),
              HasSubstr("ReduceOp::Avg needs a floating-point tensor, got int32"));
  Tensor strided = ones({4, 4}).t();
  EXPECT_THAT(error_of([&] { distributed::all_reduce(strided); }), HasSubstr("Tensors must be contiguous"));
  Tensor leaf = ones({2}).requires_grad_();
  EXPECT_THAT(error_of([&] { distributed::all_reduce(leaf); }), HasSubstr("requires grad"));
  EXPECT_THAT(error_of([&] { distributed::broadcast(ones({2}), world()); }),
              HasSubstr("root rank " + std::to_string(world()) + " is not in [0, " + std::to_string(world() - 1)));
  // None of them started a collective, so the group still works.
  Tensor t = ones({2});
  distributed::all_reduce(t);
  EXPECT_EQ(t[0].item<float>(), static_cast<float>(world()));
}

TEST(MpiCollectives, BroadcastFromEveryRootEveryDtype) {
  for (int root = 0; root < world(); ++root) {
    for (Dtype dtype : kAllDtypes) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " root " + std::to_string(root));
      Tensor t = contribution(rank(), 4099, dtype);
      distributed::broadcast(t, root);
      EXPECT_TRUE(equal(t, contribution(root, 4099, dtype)));
    }
  }
}

TEST(MpiCollectives, AllGatherUnevenFirstDimensions) {
  for (Dtype dtype : {kFloat32, kInt64, kFloat16, kBool}) {
    SCOPED_TRACE(dtype_name(dtype));
    // Rank r holds r rows (rank 0 none) of 3 columns.
    const Tensor mine = contribution(rank(), rank() * 3, dtype).reshape({rank(), 3});
    const std::vector<Tensor> all = distributed::all_gather(mine);
    ASSERT_EQ(static_cast<int>(all.size()), world());
    for (int r = 0; r < world(); ++r) {
      ASSERT_EQ(all[static_cast<size_t>(r)].dtype(), dtype);
      EXPECT_TRUE(equal(all[static_cast<size_t>(r)], contribution(r, r * 3, dtype).reshape({r, 3})));
    }
  }
}

TEST(MpiCollectives, AllGatherRefusesDifferentTrailingShapes) {
  const Tensor mine = zeros({2, rank() + 1});
  EXPECT_THAT(error_of([&] { distributed::all_gather(mine); }),
              HasSubstr("ranks may differ in the first dimension only"));
}

TEST(MpiCollectives, AsyncWorkCompletesInOrderWithOthersInFlight) {
  std::vector<Tensor> tensors;
  std::vector<distributed::Work> works;
  for (int k = 0; k < 8; ++k) {
    tensors.push_back(full({1000 + k}, static_cast<double>(k + rank())));
    works.push_back(distributed::all_reduce_async(tensors.back()));
  }
  for (int k = 0; k < 8; ++k) {
    works[static_cast<size_t>(k)].wait();
    EXPECT_TRUE(works[static_cast<size_t>(k)].is_completed());
    const double want = k * world() + world() * (world() - 1) / 2.0;
    EXPECT_EQ(tensors[static_cast<size_t>(k)][999].item<float>(), static_cast<float>(want));
  }
}

TEST(MpiCollectives, BarrierReturnsOnEveryRank) {
  for (int k = 0; k < 5; ++k) distributed::barrier();
  SUCCEED();
}
