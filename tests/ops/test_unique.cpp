// torch.unique and torch.unique_consecutive, with and without dim: values, inverse and counts
// against PyTorch's (tools/gen_unique_golden.py), PyTorch's error messages, the lexicographic
// order of slices that differ late, and the stand-in device against the CPU.
#include <gtest/gtest.h>

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "support/devices.h"
#include "support/error_of.h"

namespace {

using namespace ember;
using ember_test::error_of;

const io::SafetensorsData& golden() {
  static const io::SafetensorsData data =
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/ops/golden/unique_golden.safetensors");
  return data;
}

struct Call {
  bool consecutive = false;
  std::optional<int64_t> dim;
};

// "op=unique_consecutive,dim=1" (or dim=none).
Call parse_call(const std::string& text) {
  Call call;
  const size_t comma = text.find(',');
  call.consecutive = text.substr(3, comma - 3) == "unique_consecutive";
  const std::string dim = text.substr(comma + 5);
  if (dim != "none") call.dim = std::stoll(dim);
  return call;
}

std::tuple<Tensor, Tensor, Tensor> run(const Call& call, const Tensor& x) {
  return call.consecutive ? unique_consecutive(x, call.dim) : unique(x, /*sorted=*/true, call.dim);
}

// Exact equality including dtype and sizes (the results are selections and integer counts).
::testing::AssertionResult same(const Tensor& got, const Tensor& want) {
  if (got.dtype() != want.dtype()) {
    return ::testing::AssertionFailure() << "dtype " << dtype_name(got.dtype()) << " vs " << dtype_name(want.dtype());
  }
  if (got.sizes().vec() != want.sizes().vec()) return ::testing::AssertionFailure() << "sizes differ";
  if (!equal(got.cpu(), want)) return ::testing::AssertionFailure() << "values differ";
  return ::testing::AssertionSuccess();
}

TEST(Unique, MatchesPyTorch) {
  const auto& data = golden();
  int checked = 0;
  for (int i = 0; data.metadata.count("case" + std::to_string(i)); ++i) {
    const std::string p = "case" + std::to_string(i);
    SCOPED_TRACE(p + ": " + data.metadata.at(p));
    const auto [values, inverse, counts] = run(parse_call(data.metadata.at(p)), data.at(p + ".x"));
    EXPECT_TRUE(same(values, data.at(p + ".values")));
    EXPECT_TRUE(same(inverse, data.at(p + ".inverse")));
    EXPECT_TRUE(same(counts, data.at(p + ".counts")));
    ++checked;
  }
  EXPECT_EQ(checked, 32);
}

TEST(Unique, ErrorsAsPyTorch) {
  const auto& data = golden();
  int checked = 0;
  for (int i = 0; data.metadata.count("error" + std::to_string(i)); ++i) {
    const std::string p = "error" + std::to_string(i);
    SCOPED_TRACE(p + ": " + data.metadata.at(p));
    const Call call = parse_call(data.metadata.at(p));
    EXPECT_EQ(error_of([&] { run(call, data.at(p + ".x")); }), data.metadata.at(p + ".message"));
    ++checked;
  }
  EXPECT_EQ(checked, 14);
}

TEST(Unique, SlicesOrderLexicographically) {
  // Rows that agree on long prefixes and differ in one late column, in every position of a
  // 13-column row (odd, so the pairwise fusing pads a column in several rounds).
  const int64_t columns = 13;
  Tensor rows = zeros({2 * columns + 1, columns}, kInt64);
  for (int64_t r = 0; r < columns; ++r) {
    rows[2 * r + 1].fill_(1);
    rows[2 * r + 1][r].fill_(0);
    rows[2 * r + 2].fill_(1);
    rows[2 * r + 2][columns - 1 - r].fill_(2);
  }
  const Tensor doubled = cat({rows, rows.flip({0})});
  const auto [values, inverse, counts] = unique(doubled, true, 0);
  // Every slice pair a < b in lexicographic order.
  for (int64_t r = 0; r + 1 < values.size(0); ++r) {
    const Tensor a = values[r], b = values[r + 1];
    const Tensor first_difference = nonzero(ne(a, b)).flatten();
    ASSERT_GT(first_difference.numel(), 0) << "rows " << r << " and " << r + 1 << " are equal";
    const int64_t at = first_difference[0].item<int64_t>();
    EXPECT_LT(a[at].item<int64_t>(), b[at].item<int64_t>()) << "rows " << r << ", " << r + 1;
  }
  EXPECT_TRUE(equal(values.index_select(0, inverse), doubled));
  EXPECT_TRUE(equal(counts, full({values.size(0)}, 2, kInt64)));
}

TEST(Unique, NanSlicesAreEachTheirOwn) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor x = tensor(std::vector<double>{1.0, 2.0, nan, 1.0, nan, 1.0, 1.0, 2.0}).view({4, 2});
  const auto [values, inverse, counts] = unique(x, true, 0);
  EXPECT_EQ(values.size(0), 3);
  EXPECT_TRUE(equal(counts, tensor(std::vector<int64_t>{2, 1, 1})));
  EXPECT_TRUE(equal(inverse, tensor(std::vector<int64_t>{0, 1, 2, 0})));
}

TEST(Unique, UniqueDimIsUniqueWithDim) {
  const Tensor x = tensor(std::vector<int64_t>{3, 1, 3, 1, 0, 2}).view({3, 2});
  const auto [v, i, c] = unique_dim(x, 0);
  const auto [v2, i2, c2] = unique(x, true, 0);
  EXPECT_TRUE(equal(v, v2));
  EXPECT_TRUE(equal(i, i2));
  EXPECT_TRUE(equal(c, c2));
  EXPECT_FALSE(std::get<0>(unique(randn({3, 2}, kFloat64).requires_grad_(), true, 1)).requires_grad());
}

class UniqueDevice : public ember_test::DeviceTest {};

TEST_P(UniqueDevice, MatchesTheCpu) {
  manual_seed(3);
  const Tensor base = randint(-2, 2, {5, 6, 4}, kInt64);
  const Tensor x = cat({base, base.slice(1, 0, 3)}, 1).to(kFloat64);
  for (const std::optional<int64_t> dim :
       {std::optional<int64_t>(), std::optional<int64_t>(0), std::optional<int64_t>(1), std::optional<int64_t>(-1)}) {
    for (const bool consecutive : {false, true}) {
      const Call call{consecutive, dim};
      const auto [values, inverse, counts] = run(call, x.to(device()));
      const auto [cpu_values, cpu_inverse, cpu_counts] = run(call, x);
      EXPECT_EQ(values.device(), device());
      EXPECT_TRUE(same(values, cpu_values));
      EXPECT_TRUE(same(inverse, cpu_inverse));
      EXPECT_TRUE(same(counts, cpu_counts));
    }
  }
}

EMBER_INSTANTIATE_DEVICE_SUITE(UniqueDevice);

}  // namespace
