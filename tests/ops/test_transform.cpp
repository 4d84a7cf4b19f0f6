// flip, roll, rot90, repeat, tile, repeat_interleave, tril/triu, diagonal, diag, trace, movedim,
// outer, cross (src/ops/transform.cpp): values and gradients against PyTorch's
// (tools/gen_transform_norm_golden.py), views, errors, and the stand-in device against the CPU.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ember/ember.h"
#include "support/devices.h"
#include "support/error_of.h"
#include "support/transform_norm_golden.h"

namespace {

using namespace ember;
using ember_test::error_of;
using ember_test::GoldenCase;
using ember_test::GoldenOp;
using ember_test::int_list;
using Inputs = std::map<std::string, Tensor>;

std::map<std::string, std::function<GoldenOp(const GoldenCase&)>> transform_ops() {
  return {
      {"flip",
       [](const GoldenCase& c) -> GoldenOp {
         return [d = int_list(c.options.at("dims"))](const Inputs& in) { return flip(in.at("x"), d); };
       }},
      {"fliplr", [](const GoldenCase&) -> GoldenOp { return [](const Inputs& in) { return fliplr(in.at("x")); }; }},
      {"flipud", [](const GoldenCase&) -> GoldenOp { return [](const Inputs& in) { return flipud(in.at("x")); }; }},
      {"roll",
       [](const GoldenCase& c) -> GoldenOp {
         return [s = int_list(c.options.at("shifts")), d = int_list(c.options.at("dims"))](const Inputs& in) {
           return in.at("x").roll(s, d);
         };
       }},
      {"rot90",
       [](const GoldenCase& c) -> GoldenOp {
         return
             [k = c.num("k"), d = int_list(c.options.at("dims"))](const Inputs& in) { return rot90(in.at("x"), k, d); };
       }},
      {"repeat",
       [](const GoldenCase& c) -> GoldenOp {
         return [r = int_list(c.options.at("repeats"))](const Inputs& in) { return in.at("x").repeat(r); };
       }},
      {"tile",
       [](const GoldenCase& c) -> GoldenOp {
         return [r = int_list(c.options.at("reps"))](const Inputs& in) { return tile(in.at("x"), r); };
       }},
      {"repeat_interleave",
       [](const GoldenCase& c) -> GoldenOp {
         if (c.options.count("counts")) {
           return [counts = int_list(c.options.at("counts")), d = c.num("dim")](const Inputs& in) {
             return repeat_interleave(in.at("x"), tensor(counts), d);
           };
         }
         const bool flattened = c.num("dim") == -1;
         return [r = c.num("repeats"), d = c.num("dim"), flattened](const Inputs& in) {
           return flattened ? repeat_interleave(in.at("x"), r) : repeat_interleave(in.at("x"), r, d);
         };
       }},
      {"tril",
       [](const GoldenCase& c) -> GoldenOp {
         return [k = c.num("diagonal")](const Inputs& in) { return tril(in.at("x"), k); };
       }},
      {"triu",
       [](const GoldenCase& c) -> GoldenOp {
         return [k = c.num("diagonal")](const Inputs& in) { return in.at("x").triu(k); };
       }},
      {"diagonal",
       [](const GoldenCase& c) -> GoldenOp {
         return [o = c.num("offset"), a = c.num("dim1"), b = c.num("dim2")](const Inputs& in) {
           return diagonal(in.at("x"), o, a, b);
         };
       }},
      {"diag",
       [](const GoldenCase& c) -> GoldenOp {
         return [k = c.num("diagonal")](const Inputs& in) { return diag(in.at("x"), k); };
       }},
      {"trace", [](const GoldenCase&) -> GoldenOp { return [](const Inputs& in) { return trace(in.at("x")); }; }},
      {"movedim",
       [](const GoldenCase& c) -> GoldenOp {
         return [s = int_list(c.options.at("source")), d = int_list(c.options.at("destination"))](const Inputs& in) {
           return movedim(in.at("x"), s, d);
         };
       }},
      {"outer",
       [](const GoldenCase&) -> GoldenOp { return [](const Inputs& in) { return outer(in.at("a"), in.at("b")); }; }},
      {"cross",
       [](const GoldenCase& c) -> GoldenOp {
         return [d = c.num("dim")](const Inputs& in) { return cross(in.at("a"), in.at("b"), d); };
       }},
  };
}

TEST(Transform, MatchesPyTorchValuesAndGradients) { EXPECT_GE(ember_test::check_golden_cases(transform_ops()), 50); }

TEST(Transform, DiagonalAndMovedimAreViews) {
  Tensor m = arange(12, kFloat64).reshape({3, 4});
  Tensor d = diagonal(m, 1);
  EXPECT_TRUE(equal(d, tensor({1.0, 6.0, 11.0}, kFloat64)));
  EXPECT_EQ(d.data_ptr(), static_cast<char*>(m.data_ptr()) + sizeof(double));  // shares storage
  Tensor moved = movedim(arange(24).reshape({2, 3, 4}), {0}, {2});
  EXPECT_EQ(moved.sizes().vec(), (std::vector<int64_t>{3, 4, 2}));
  EXPECT_TRUE(equal(diagonal(m, 5), zeros({0}, kFloat64)));  // past the matrix: empty
}

TEST(Transform, GridsAndBroadcasting) {
  auto grid = meshgrid({arange(3), arange(2)});
  EXPECT_EQ(grid[0].sizes().vec(), (std::vector<int64_t>{3, 2}));
  EXPECT_TRUE(equal(grid[0], tensor({{0, 0}, {1, 1}, {2, 2}})));
  auto xy = meshgrid({arange(3), arange(2)}, "xy");
  EXPECT_EQ(xy[0].sizes().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(equal(xy[1], tensor({{0, 0, 0}, {1, 1, 1}})));
  auto b = broadcast_tensors({ones({3, 1}), ones({4})});
  EXPECT_EQ(b[0].sizes().vec(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(b[1].sizes().vec(), (std::vector<int64_t>{3, 4}));
  EXPECT_TRUE(equal(repeat_interleave(tensor({1, 2}), tensor({2, 1})), tensor({1, 1, 2})));
}

TEST(Transform, ErrorsNameTheProblem) {
  EXPECT_EQ(error_of([] {
              repeat(ones({2, 3}), {2});
            }),
            "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
  EXPECT_EQ(error_of([] { roll(ones({2, 3}), {1, 2}, {0}); }), "shifts and dimensions must align. shifts: 2, dims:1");
  EXPECT_EQ(error_of([] {
              rot90(ones({2, 3}), 1, {0, 0});
            }),
            "expected rotation dims to be different, but got dim0 = 0 and dim1 = 0");
  EXPECT_EQ(error_of([] { diag(ones({2, 2, 2})); }), "diag(): Supports 1D or 2D tensors. Got 3D");
  EXPECT_EQ(error_of([] { trace(ones({3})); }), "trace: expected a matrix, but got tensor with dim 1");
  EXPECT_EQ(error_of([] {
              cross(ones({2, 4}), ones({2, 4}));
            }),
            "linalg.cross: inputs dimension -1 must have length 3. Got 4 and 4");
  EXPECT_EQ(error_of([] { tril(ones({3})); }), "tril: input tensor must have at least 2 dimensions");
  EXPECT_EQ(error_of([] { flip(ones({2, 3}), {0, 0}); }), "dim 0 appears multiple times in the list of dims");
}

class TransformDevice : public ember_test::DeviceTest {};

TEST_P(TransformDevice, MatchesTheCpu) {
  const Tensor x = randn({3, 4, 5}, kFloat64);
  EXPECT_CLOSE_TO_CPU(flip(x.to(device()), {0, 2}), flip(x, {0, 2}), 0, 0);
  EXPECT_CLOSE_TO_CPU(roll(x.to(device()), {2, -1}, {1, 2}), roll(x, {2, -1}, {1, 2}), 0, 0);
  EXPECT_CLOSE_TO_CPU(rot90(x.to(device()), 3, {1, 2}), rot90(x, 3, {1, 2}), 0, 0);
  EXPECT_CLOSE_TO_CPU(x.to(device()).repeat({1, 2, 1, 3}), x.repeat({1, 2, 1, 3}), 0, 0);
  EXPECT_CLOSE_TO_CPU(repeat_interleave(x.to(device()), 2, 1), repeat_interleave(x, 2, 1), 0, 0);
  EXPECT_CLOSE_TO_CPU(triu(x.to(device()), -1), triu(x, -1), 0, 0);
  EXPECT_CLOSE_TO_CPU(diagonal(x.to(device()), 1, 1, 2).contiguous(), diagonal(x, 1, 1, 2).contiguous(), 0, 0);
  EXPECT_CLOSE_TO_CPU(diag(x[0][0].to(device()), -2), diag(x[0][0], -2), 0, 0);
  EXPECT_CLOSE_TO_CPU(cross(x.narrow(2, 0, 3).to(device()), x.narrow(2, 1, 3).to(device())),
                      cross(x.narrow(2, 0, 3), x.narrow(2, 1, 3)), 1e-15, 1e-15);
}

EMBER_INSTANTIATE_DEVICE_SUITE(TransformDevice);

}  // namespace
