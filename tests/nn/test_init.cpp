// torch.nn.init in full: every initialiser against PyTorch's values for the same seed
// (tools/gen_init_golden.py), including how many generator values each consumes; the
// distributions where only statistics can be compared; gains, fans and PyTorch's messages.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/nn/init.h"
#include "support/collect_warnings.h"
#include "support/error_of.h"
#include "support/golden_cases.h"

namespace {

using namespace ember;
namespace init = ember::nn::init;
using ember_test::error_of;
using ember_test::GoldenCase;

const io::SafetensorsData& golden() {
  static const io::SafetensorsData data =
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/nn/golden/init_golden.safetensors");
  return data;
}

std::vector<int64_t> shape_of(const GoldenCase& c) {
  std::vector<int64_t> shape;
  for (const std::string& part : ember_test::split_commas([&] {
         std::string s = c.options.at("shape");
         for (char& ch : s)
           if (ch == 'x') ch = ',';
         return s;
       }()))
    shape.push_back(std::stoll(part));
  return shape;
}

double real_or(const GoldenCase& c, const std::string& key, double fallback) {
  return c.options.count(key) ? c.real(key) : fallback;
}
std::string text_or(const GoldenCase& c, const std::string& key, const std::string& fallback) {
  return c.options.count(key) ? c.options.at(key) : fallback;
}

void apply(const GoldenCase& c, const Tensor& t) {
  const std::string& fn = c.kind;
  if (fn == "uniform_") {
    init::uniform_(t, real_or(c, "a", 0.0), real_or(c, "b", 1.0));
  } else if (fn == "normal_") {
    init::normal_(t, real_or(c, "mean", 0.0), real_or(c, "std", 1.0));
  } else if (fn == "trunc_normal_") {
    init::trunc_normal_(t, real_or(c, "mean", 0.0), real_or(c, "std", 1.0), real_or(c, "a", -2.0),
                        real_or(c, "b", 2.0));
  } else if (fn == "xavier_uniform_") {
    init::xavier_uniform_(t, real_or(c, "gain", 1.0));
  } else if (fn == "xavier_normal_") {
    init::xavier_normal_(t, real_or(c, "gain", 1.0));
  } else if (fn == "kaiming_uniform_") {
    init::kaiming_uniform_(t, real_or(c, "a", 0.0), text_or(c, "mode", "fan_in"),
                           text_or(c, "nonlinearity", "leaky_relu"));
  } else if (fn == "kaiming_normal_") {
    init::kaiming_normal_(t, real_or(c, "a", 0.0), text_or(c, "mode", "fan_in"),
                          text_or(c, "nonlinearity", "leaky_relu"));
  } else if (fn == "orthogonal_") {
    init::orthogonal_(t, real_or(c, "gain", 1.0));
  } else if (fn == "sparse_") {
    init::sparse_(t, c.real("sparsity"), real_or(c, "std", 0.01));
  } else if (fn == "eye_") {
    init::eye_(t);
  } else if (fn == "dirac_") {
    init::dirac_(t, c.options.count("groups") ? c.num("groups") : 1);
  } else if (fn == "constant_") {
    init::constant_(t, c.real("val"));
  } else {
    ADD_FAILURE() << "unknown initialiser " << fn;
  }
}

/// How far ember may be from PyTorch. Exact where both draw and compute alike; orthogonal_'s QR
/// (ember: Householder in float64; PyTorch: LAPACK in the tensor's dtype) and float32 normal
/// draws of 16 or more values (PyTorch's vectorised Box-Muller) differ by rounding only.
double tolerance(const GoldenCase& c) {
  const bool float32 = c.options.at("dtype") == "float32";
  if (c.kind == "orthogonal_") return float32 ? 2e-6 : 1e-13;
  if (float32 && c.kind.find("normal") != std::string::npos) return 1e-6;
  // float64 normal draws equal PyTorch's bit for bit in the Release build; the sanitizer build
  // (-O1, no -march=native) rounds trunc_normal_'s transform an ulp apart.
  if (c.kind.find("normal") != std::string::npos) return 1e-15;
  return 0.0;
}

TEST(NnInitGolden, ValuesAndDrawsMatchPyTorch) {
  const auto cases = ember_test::golden_cases(golden().metadata);
  ASSERT_EQ(cases.size(), 34u);
  ember_test::CollectWarnings quiet;  // trunc_normal_'s distant-mean case warns
  for (const GoldenCase& c : cases) {
    SCOPED_TRACE(c.description);
    const Dtype dtype = c.options.at("dtype") == "float32" ? kFloat32 : kFloat64;
    manual_seed(static_cast<uint64_t>(c.num("seed")));
    Tensor t = empty(shape_of(c), dtype);
    apply(c, t);
    const Tensor& expected = golden().at(c.prefix + "out");
    ASSERT_EQ(t.sizes().vec(), expected.sizes().vec());
    const double diff = (t.to(kFloat64) - expected.to(kFloat64)).abs().max().item<double>();
    EXPECT_LE(diff, tolerance(c)) << "ember:\n" << t << "\nPyTorch:\n" << expected;
    // The same number of generator values consumed: the next draws agree.
    EXPECT_TRUE(equal(rand({4}, kFloat64), golden().at(c.prefix + "after")));
  }
}

TEST(NnInitGolden, GainsMatchPyTorch) {
  const auto gains = ember_test::golden_cases(golden().metadata, "gain");
  ASSERT_EQ(gains.size(), 15u);
  for (const GoldenCase& g : gains) {
    SCOPED_TRACE(g.description);
    std::vector<std::string> fields =
        ember_test::split_commas(golden().metadata.at(g.prefix.substr(0, g.prefix.size() - 1)));
    std::optional<double> param;
    if (fields[1] != "none") param = std::stod(fields[1]);
    EXPECT_EQ(init::calculate_gain(fields[0], param), std::stod(fields[2]));
  }
}

TEST(NnInit, FansAndMessages) {
  EXPECT_EQ(init::calculate_fan_in_and_fan_out(empty({5, 3, 2, 4})), (std::pair<int64_t, int64_t>{24, 40}));
  EXPECT_EQ(init::calculate_fan_in_and_fan_out(empty({7, 2})), (std::pair<int64_t, int64_t>{2, 7}));
  EXPECT_EQ(error_of([] { init::calculate_fan_in_and_fan_out(empty({4})); }),
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions");
  EXPECT_EQ(error_of([] { init::xavier_normal_(empty({4})); }),
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions");
  EXPECT_EQ(error_of([] { init::calculate_gain("conv4d"); }), "Unsupported nonlinearity conv4d");
  EXPECT_EQ(error_of([] {
              init::kaiming_uniform_(empty({3, 2}), 0, "Fan_X");
            }),
            "Mode fan_x not supported, please use one of ['fan_in', 'fan_out']");
  EXPECT_EQ(error_of([] {
              init::kaiming_normal_(empty({3, 2}), 0, "fan_in", "swish");
            }),
            "Unsupported nonlinearity swish");
  EXPECT_EQ(error_of([] { init::eye_(empty({2, 2, 2})); }), "Only tensors with 2 dimensions are supported");
  EXPECT_EQ(error_of([] { init::dirac_(empty({2, 2})); }), "Only tensors with 3, 4, or 5 dimensions are supported");
  EXPECT_EQ(error_of([] { init::dirac_(empty({5, 2, 3}), 2); }), "dim 0 must be divisible by groups");
  EXPECT_EQ(error_of([] { init::orthogonal_(empty({5})); }), "Only tensors with 2 or more dimensions are supported");
  EXPECT_EQ(error_of([] { init::sparse_(empty({5, 2, 2}), 0.5); }), "Only tensors with 2 dimensions are supported");
  EXPECT_EQ(error_of([] { init::uniform_(empty({3}), 1, 0); }),
            "uniform_ expects to return a [from, to) range, but found from=1 > to=0");
  EXPECT_EQ(error_of([] { init::normal_(empty({3}), 0, -1); }), "normal expects std >= 0.0, but found std -1");
}

TEST(NnInit, WarningsAsPyTorch) {
  ember_test::CollectWarnings warnings;
  Tensor none = empty({0, 3});
  init::kaiming_uniform_(none);
  init::kaiming_normal_(empty({4, 0}), 0, "no such mode");  // the check comes after the no-op
  ASSERT_EQ(warnings.messages().size(), 2u);
  EXPECT_EQ(warnings.messages()[0], "Initializing zero-element tensors is a no-op");
  init::trunc_normal_(empty({3}), 5.0, 1.0);
  EXPECT_EQ(
      warnings.messages().back(),
      "mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values may be incorrect.");
  init::xavier_uniform(empty({3, 3}));
  EXPECT_EQ(warnings.messages().back(),
            "`nn.init.xavier_uniform` is now deprecated in favor of `nn.init.xavier_uniform_`.");
  Tensor w = empty({2, 2});
  EXPECT_TRUE(init::eye(w).is_same(w));
  EXPECT_TRUE(equal(w, ember::eye(2)));
  EXPECT_EQ(warnings.messages().back(), "`nn.init.eye` is now deprecated in favor of `nn.init.eye_`.");
}

TEST(NnInit, DistributionsWithFixedSeeds) {
  manual_seed(1234);
  // trunc_normal_ on both of its paths: inside [a, b], with the truncated normal's moments.
  Tensor wide = init::trunc_normal_(empty({200, 100}), 0.0, 1.0, -2.0, 2.0);
  EXPECT_GE(wide.min().item<double>(), -2.0);
  EXPECT_LE(wide.max().item<double>(), 2.0);
  EXPECT_NEAR(wide.mean().item<double>(), 0.0, 0.02);
  EXPECT_NEAR(wide.std().item<double>(), 0.8796, 0.02);  // sqrt(1 - 2*2*phi(2)/(2*Phi(2)-1))
  Tensor tail = init::trunc_normal_(empty({100, 100}), 0.0, 1.0, 2.0, 3.0);
  EXPECT_GE(tail.min().item<double>(), 2.0);
  EXPECT_LE(tail.max().item<double>(), 3.0);
  EXPECT_NEAR(tail.mean().item<double>(), 2.3158, 0.02);  // (phi(2)-phi(3)) / (Phi(3)-Phi(2))

  // orthogonal_: orthonormal rows or columns, whichever are fewer.
  for (auto shape : {std::vector<int64_t>{40, 12}, std::vector<int64_t>{9, 30}, std::vector<int64_t>{8, 3, 2, 2}}) {
    Tensor q = init::orthogonal_(empty(shape, kFloat64), 1.5).reshape({shape[0], -1});
    Tensor gram = q.size(0) >= q.size(1) ? q.t().mm(q) : q.mm(q.t());
    EXPECT_LE((gram - 2.25 * ember::eye(gram.size(0), std::nullopt, kFloat64)).abs().max().item<double>(), 1e-12);
  }

  // sparse_: exactly ceil(sparsity * rows) zeros in every column, N(0, std²) elsewhere.
  Tensor s = init::sparse_(empty({50, 40}, kFloat64), 0.1, 0.5);
  Tensor zeros_per_column = (s == 0.0).to(kFloat64).sum({0});
  EXPECT_TRUE(equal(zeros_per_column, full({40}, 5.0, kFloat64)));
  EXPECT_NEAR(s.pow(2).sum().item<double>() / (45 * 40), 0.25, 0.02);

  // float32 normal draws of 16 or more: PyTorch's vectorised layout, so check the law.
  Tensor n = init::normal_(empty({200, 50}), 1.0, 3.0);
  EXPECT_NEAR(n.mean().item<double>(), 1.0, 0.1);
  EXPECT_NEAR(n.std().item<double>(), 3.0, 0.1);
}

TEST(NnInit, FillsInPlaceWithoutRecordingAGraph) {
  Tensor w = empty({6, 4, 3}).requires_grad_();
  for (auto fill : std::vector<std::function<Tensor(const Tensor&)>>{
           [](const Tensor& t) { return init::orthogonal_(t); },
           [](const Tensor& t) { return init::trunc_normal_(t, 0, 1, 1.5, 3); },
           [](const Tensor& t) { return init::dirac_(t, 2); },
           [](const Tensor& t) { return init::kaiming_normal_(t); },
       }) {
    Tensor out = fill(w);
    EXPECT_TRUE(out.is_same(w));
    EXPECT_TRUE(w.is_leaf());
    EXPECT_TRUE(w.requires_grad());
  }
  Tensor m = empty({5, 3}).requires_grad_();
  init::sparse_(m, 0.4);
  init::eye_(m);
  EXPECT_TRUE(m.is_leaf());
  EXPECT_TRUE(equal(m.detach(), ember::eye(5, 3)));
  Tensor ints = empty({3, 3}, kInt64);
  init::eye_(ints);
  EXPECT_TRUE(equal(ints, ember::eye(3, std::nullopt, kInt64)));
}

}  // namespace
