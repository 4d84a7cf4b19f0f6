// Options structs of the layers test_module_options.cpp does not cover (issue 30): the
// activations, the losses, the distances, Fold/Unfold, the upsampling layers, Bilinear, CTCLoss,
// the Transformer's forward arguments. Each layer is built from its positional arguments and from
// `<Layer>Options` with designated initializers, and the two must store the same fields and give
// the same result; a plain braced list must never convert to an options struct (checked at
// compile time below); BCEWithLogitsLoss's weight and SiLU's inplace, which are new, against
// values PyTorch 2.15 printed.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "ember/ember.h"
#include "ember/nn/activation.h"
#include "ember/nn/bilinear.h"
#include "ember/nn/ctc_loss.h"
#include "ember/nn/distance.h"
#include "ember/nn/dropout.h"
#include "ember/nn/fold.h"
#include "ember/nn/loss.h"
#include "ember/nn/modules.h"
#include "ember/nn/nll_loss2d.h"
#include "ember/nn/normalization.h"
#include "ember/nn/transformer.h"
#include "ember/nn/upsampling.h"
#include "support/error_of.h"

namespace {

using namespace ember;
namespace nn = ember::nn;
using ember_test::error_of;
using nn::Reduction;

// ---------------------------------------------------------------- braces never convert

/// Whether T can be list-initialised from values of types A... (a plain braced list).
template <typename T, typename... A>
concept BracedFrom = requires(A... a) {
  T{a...};
};
/// Whether Layer can be built from one braced list of two numbers, `Layer({0.5, true})`.
template <typename Layer>
concept BuiltFromTwoNumbers = requires {
  Layer({0.5, true});
};

static_assert(!BracedFrom<nn::InplaceOptions, bool>);
static_assert(!BracedFrom<nn::ELUOptions, double, bool>);
static_assert(!BracedFrom<nn::LeakyReLUOptions, double>);
static_assert(!BracedFrom<nn::HardtanhOptions, double, double>);
static_assert(!BracedFrom<nn::RReLUOptions, double, double>);
static_assert(!BracedFrom<nn::SoftplusOptions, double, double>);
static_assert(!BracedFrom<nn::HardshrinkOptions, double>);
static_assert(!BracedFrom<nn::GLUOptions, int64_t>);
static_assert(!BracedFrom<nn::PReLUOptions, int64_t, double>);
static_assert(!BracedFrom<nn::SoftmaxOptions, int64_t>);
static_assert(!BracedFrom<nn::GELUOptions, std::string>);
static_assert(!BracedFrom<nn::CrossEntropyLossOptions, Tensor, int64_t>);
static_assert(!BracedFrom<nn::ReductionOptions, Reduction>);
static_assert(!BracedFrom<nn::SmoothL1LossOptions, Reduction, double>);
static_assert(!BracedFrom<nn::TripletMarginLossOptions, double, double>);
static_assert(!BracedFrom<nn::PairwiseDistanceOptions, double, double>);
static_assert(!BracedFrom<nn::CosineSimilarityOptions, int64_t, double>);
static_assert(!BracedFrom<nn::UnfoldOptions, int64_t, int64_t>);
static_assert(!BracedFrom<nn::BilinearOptions, bool>);
static_assert(!BracedFrom<nn::MultiheadAttentionOptions, double, bool>);
static_assert(!BracedFrom<nn::TransformerEncoderLayerOptions, int64_t, double>);
static_assert(!BracedFrom<nn::TransformerOptions, int64_t, int64_t>);
static_assert(!BracedFrom<nn::TransformerEncoderLayerArgs, Tensor>);
static_assert(!BuiltFromTwoNumbers<nn::ELU>);
static_assert(!BuiltFromTwoNumbers<nn::LeakyReLU>);
static_assert(!BuiltFromTwoNumbers<nn::Softplus>);
static_assert(!BuiltFromTwoNumbers<nn::SmoothL1Loss>);
static_assert(!BuiltFromTwoNumbers<nn::PairwiseDistance>);
static_assert(!BuiltFromTwoNumbers<nn::CosineSimilarity>);

Tensor ramp(std::vector<int64_t> shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return (remainder(arange(n, TensorOptions().dtype(kFloat64)), Scalar(7)) / Scalar(7) - Scalar(0.4)).reshape(shape);
}

/// Every element of `t` (as float64) next to `expected`, to 1e-12.
void expect_values(const Tensor& t, const std::vector<double>& expected) {
  const Tensor flat = t.detach().cpu().to(kFloat64).contiguous().reshape({-1});
  ASSERT_EQ(flat.numel(), static_cast<int64_t>(expected.size()));
  const double* p = flat.data_ptr<double>();
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(p[i], expected[i], 1e-12) << "element " << i;
}

/// The two layers give the same result for the same input (a fresh copy each, for inplace ones).
template <typename A, typename B>
void expect_same_forward(A& a, B& b, const Tensor& x) {
  const Tensor xa = x.clone(), xb = x.clone();
  EXPECT_TRUE(equal(a(xa), b(xb)));
  EXPECT_TRUE(equal(xa, xb));
}

// ---------------------------------------------------------------- activations

TEST(ModuleOptionsMore, ActivationsWithInplace) {
  const Tensor x = ramp({2, 5}) * Scalar(4);
  {
    nn::ReLU p(true), o({.inplace = true});
    EXPECT_TRUE(o.inplace);
    EXPECT_FALSE(nn::ReLU({}).inplace);
    expect_same_forward(p, o, x);
  }
  {
    nn::ELU p(0.5, true), o({.alpha = 0.5, .inplace = true});
    EXPECT_EQ(o.alpha, 0.5);
    EXPECT_TRUE(o.inplace);
    EXPECT_EQ(nn::ELU({.inplace = true}).alpha, 1.0);
    expect_same_forward(p, o, x);
  }
  {
    nn::CELU p(2.0), o({.alpha = 2.0});
    EXPECT_EQ(o.alpha, 2.0);
    EXPECT_FALSE(o.inplace);
    expect_same_forward(p, o, x);
  }
  {
    nn::SELU p(true), o({.inplace = true});
    EXPECT_TRUE(o.inplace);
    expect_same_forward(p, o, x);
  }
  {
    nn::LeakyReLU p(0.2, true), o({.negative_slope = 0.2, .inplace = true});
    EXPECT_EQ(o.negative_slope, 0.2);
    EXPECT_TRUE(o.inplace);
    EXPECT_EQ(nn::LeakyReLU({.inplace = true}).negative_slope, 0.01);
    expect_same_forward(p, o, x);
  }
  {
    nn::Hardtanh p(-0.5, 0.75), o({.min_val = -0.5, .max_val = 0.75});
    EXPECT_EQ(o.min_val, -0.5);
    EXPECT_EQ(o.max_val, 0.75);
    EXPECT_FALSE(o.inplace);
    expect_same_forward(p, o, x);
    EXPECT_EQ(error_of([] { nn::Hardtanh({.min_val = 2.0}); }), error_of([] { nn::Hardtanh(2.0); }));
  }
  {
    nn::ReLU6 p(true), o({.inplace = true});
    EXPECT_TRUE(o.inplace);
    expect_same_forward(p, o, x);
  }
  {
    nn::Threshold p(0.1, 20.0, true), o(0.1, 20.0, {.inplace = true});
    EXPECT_EQ(o.threshold, 0.1);
    EXPECT_EQ(o.value, 20.0);
    EXPECT_TRUE(o.inplace);
    expect_same_forward(p, o, x);
  }
  {
    nn::Hardsigmoid p(true), o({.inplace = true});
    EXPECT_TRUE(o.inplace);
    expect_same_forward(p, o, x);
  }
  {
    nn::Hardswish p(true), o({.inplace = true});
    EXPECT_TRUE(o.inplace);
    expect_same_forward(p, o, x);
  }
  {
    nn::Mish p(true), o({.inplace = true});
    EXPECT_TRUE(o.inplace);
    expect_same_forward(p, o, x);
  }
  {
    nn::RReLU p(0.1, 0.2, true), o({.lower = 0.1, .upper = 0.2, .inplace = true});
    EXPECT_EQ(o.lower, 0.1);
    EXPECT_EQ(o.upper, 0.2);
    EXPECT_TRUE(o.inplace);
    p.eval();
    o.eval();
    expect_same_forward(p, o, x);
  }
}

TEST(ModuleOptionsMore, ActivationsWithValues) {
  const Tensor x = ramp({2, 6}) * Scalar(4);
  {
    nn::Softplus p(2.0, 1.5), o({.beta = 2.0, .threshold = 1.5});
    EXPECT_EQ(o.beta, 2.0);
    EXPECT_EQ(o.threshold, 1.5);
    EXPECT_EQ(nn::Softplus({.beta = 3.0}).threshold, 20.0);
    expect_same_forward(p, o, x);
  }
  {
    nn::Hardshrink p(0.3), o({.lambd = 0.3});
    EXPECT_EQ(o.lambd, 0.3);
    expect_same_forward(p, o, x);
    nn::Softshrink sp(0.3), so({.lambd = 0.3});
    EXPECT_EQ(so.lambd, 0.3);
    expect_same_forward(sp, so, x);
  }
  {
    nn::GLU p(0), o({.dim = 0});
    EXPECT_EQ(o.dim, 0);
    EXPECT_EQ(nn::GLU(nn::GLUOptions{}).dim, -1);
    expect_same_forward(p, o, x);
  }
  {
    nn::PReLU p(6, 0.1), o({.num_parameters = 6, .init = 0.1});
    EXPECT_EQ(o.num_parameters, 6);
    EXPECT_EQ(o.init, 0.1);
    EXPECT_TRUE(equal(p.weight, o.weight));
    EXPECT_EQ(nn::PReLU({.init = 0.5}).weight.numel(), 1);
    expect_same_forward(p, o, x);
  }
  {
    nn::Softmax p(0), o({.dim = 0});
    EXPECT_EQ(o.dim, 0);
    expect_same_forward(p, o, x);
    nn::LogSoftmax lp(1), lo({.dim = 1});
    EXPECT_EQ(lo.dim, 1);
    expect_same_forward(lp, lo, x);
    nn::Softmin mp(1), mo({.dim = 1});
    EXPECT_EQ(mo.dim, 1);
    expect_same_forward(mp, mo, x);
  }
  {
    nn::GELU p("tanh"), o({.approximate = "tanh"});
    EXPECT_EQ(o.approximate, "tanh");
    EXPECT_EQ(nn::GELU().approximate, "none");
    expect_same_forward(p, o, x);
    EXPECT_EQ(error_of([] { nn::GELU({.approximate = "erf"}); }), "approximate argument must be either none or tanh.");
  }
}

TEST(ModuleOptionsMore, SiLUInplaceMatchesPyTorch) {
  nn::SiLU p(true), o({.inplace = true});
  EXPECT_TRUE(p.inplace);
  EXPECT_TRUE(o.inplace);
  EXPECT_FALSE(nn::SiLU().inplace);
  const Tensor a = tensor({-1.5, 0.25, 2.0}).to(kFloat64).requires_grad_(true);
  Tensor b = a * Scalar(1.0);
  const Tensor y = o(b);
  // Written into the caller's tensor, and the gradient is silu's of the original values.
  expect_values(b, {-0.2736382857095345, 0.14054412522144952, 1.7615941559557646});
  expect_values(y, {-0.2736382857095345, 0.14054412522144952, 1.7615941559557646});
  y.sum().backward();
  expect_values(a.grad(), {-0.041294154299142946, 0.6237100215701977, 1.0907842487848955});
  const Tensor x = ramp({3, 4});
  nn::SiLU plain;
  EXPECT_TRUE(equal(plain(x), p(x.clone())));
}

// ---------------------------------------------------------------- losses

TEST(ModuleOptionsMore, ClassLosses) {
  const Tensor input = ramp({4, 3});
  const Tensor target = tensor(std::vector<int64_t>{0, 2, 1, 2});
  const Tensor weight = tensor({0.5, 2.0, 1.5}).to(kFloat64);
  {
    nn::CrossEntropyLoss p(weight, 1, Reduction::Sum, 0.1);
    nn::CrossEntropyLoss o({.weight = weight, .ignore_index = 1, .reduction = Reduction::Sum, .label_smoothing = 0.1});
    EXPECT_TRUE(equal(o.weight, weight));
    EXPECT_EQ(o.ignore_index, 1);
    EXPECT_EQ(o.reduction, Reduction::Sum);
    EXPECT_EQ(o.label_smoothing, 0.1);
    EXPECT_EQ(o.named_buffers().size(), 1u);
    EXPECT_TRUE(equal(p(input, target), o(input, target)));
    nn::CrossEntropyLoss smoothed({.label_smoothing = 0.2});
    EXPECT_FALSE(smoothed.weight.defined());
    EXPECT_EQ(smoothed.ignore_index, -100);
    EXPECT_EQ(smoothed.reduction, Reduction::Mean);
    EXPECT_TRUE(equal(smoothed(input, target), nn::CrossEntropyLoss(Reduction::Mean, 0.2)(input, target)));
  }
  {
    const Tensor log_probs = log_softmax(input, 1);
    nn::NLLLoss p(weight, 2, Reduction::None);
    nn::NLLLoss o({.weight = weight, .ignore_index = 2, .reduction = Reduction::None});
    EXPECT_EQ(o.ignore_index, 2);
    EXPECT_EQ(o.reduction, Reduction::None);
    EXPECT_TRUE(equal(p(log_probs, target), o(log_probs, target)));
    nn::NLLLoss2d o2({.reduction = Reduction::Sum});
    EXPECT_EQ(o2.reduction, Reduction::Sum);
    EXPECT_EQ(o2.name(), "NLLLoss2d");
  }
  {
    const Tensor t = tensor(std::vector<int64_t>{1, 0, 2, 2});
    nn::MultiMarginLoss p(2, 0.5, weight, Reduction::Sum);
    nn::MultiMarginLoss o({.p = 2, .margin = 0.5, .weight = weight, .reduction = Reduction::Sum});
    EXPECT_EQ(o.p, 2);
    EXPECT_EQ(o.margin, 0.5);
    EXPECT_TRUE(equal(p(input, t), o(input, t)));
    const Tensor multi = tensor(std::vector<int64_t>{0, 2, -1, 1, -1, 0, 2, 1, 0, 1, -1, 0}).reshape({4, 3});
    nn::MultiLabelMarginLoss mp(Reduction::None), mo({.reduction = Reduction::None});
    EXPECT_TRUE(equal(mp(input, multi), mo(input, multi)));
  }
}

TEST(ModuleOptionsMore, RegressionLosses) {
  const Tensor input = ramp({3, 4});
  const Tensor target = ramp({3, 4}).flip({0}) * Scalar(2);
  {
    nn::MSELoss p(Reduction::Sum), o({.reduction = Reduction::Sum});
    EXPECT_EQ(o.reduction, Reduction::Sum);
    EXPECT_TRUE(equal(p(input, target), o(input, target)));
    nn::L1Loss lp(Reduction::None), lo({.reduction = Reduction::None});
    EXPECT_TRUE(equal(lp(input, target), lo(input, target)));
  }
  {
    nn::SmoothL1Loss p(Reduction::Mean, 0.5), o({.beta = 0.5});
    EXPECT_EQ(o.beta, 0.5);
    EXPECT_EQ(o.reduction, Reduction::Mean);
    EXPECT_TRUE(equal(p(input, target), o(input, target)));
    nn::HuberLoss hp(Reduction::Sum, 0.25), ho({.reduction = Reduction::Sum, .delta = 0.25});
    EXPECT_EQ(ho.delta, 0.25);
    EXPECT_TRUE(equal(hp(input, target), ho(input, target)));
  }
  {
    const Tensor log_p = log_softmax(input, 1), log_q = log_softmax(target, 1);
    nn::KLDivLoss p(nn::KLDivReduction::BatchMean, true);
    nn::KLDivLoss o({.reduction = nn::KLDivReduction::BatchMean, .log_target = true});
    EXPECT_TRUE(o.batchmean);
    EXPECT_TRUE(o.log_target);
    EXPECT_TRUE(equal(p(log_p, log_q), o(log_p, log_q)));
    EXPECT_FALSE(nn::KLDivLoss({.log_target = true}).batchmean);
  }
  {
    const Tensor rate = input.abs() + Scalar(0.1);
    nn::PoissonNLLLoss p(false, true, 1e-4, Reduction::Sum);
    nn::PoissonNLLLoss o({.log_input = false, .full = true, .eps = 1e-4, .reduction = Reduction::Sum});
    EXPECT_FALSE(o.log_input);
    EXPECT_TRUE(o.full);
    EXPECT_EQ(o.eps, 1e-4);
    EXPECT_TRUE(equal(p(rate, target.abs()), o(rate, target.abs())));
  }
  {
    const Tensor var = input.abs() + Scalar(0.5);
    nn::GaussianNLLLoss p(true, 1e-3, Reduction::None);
    nn::GaussianNLLLoss o({.full = true, .eps = 1e-3, .reduction = Reduction::None});
    EXPECT_TRUE(o.full);
    EXPECT_EQ(o.eps, 1e-3);
    EXPECT_TRUE(equal(p(input, target, var), o(input, target, var)));
  }
}

TEST(ModuleOptionsMore, ProbabilityLosses) {
  const Tensor x = tensor({-1.5, 0.25, 2.0, 0.5, -0.75, 1.25}).to(kFloat64).reshape({2, 3});
  const Tensor t = tensor({1.0, 0.0, 1.0, 0.0, 1.0, 1.0}).to(kFloat64).reshape({2, 3});
  const Tensor w = tensor({0.5, 2.0, 1.5}).to(kFloat64);
  const Tensor pw = tensor({3.0, 1.0, 0.5}).to(kFloat64);
  {
    nn::BCELoss p(w, Reduction::Sum), o({.weight = w, .reduction = Reduction::Sum});
    EXPECT_TRUE(equal(o.weight, w));
    EXPECT_TRUE(equal(p(sigmoid(x), t), o(sigmoid(x), t)));
  }
  {
    nn::BCEWithLogitsLoss p(Reduction::Sum, pw), o({.reduction = Reduction::Sum, .pos_weight = pw});
    EXPECT_FALSE(o.weight.defined());
    EXPECT_TRUE(equal(o.pos_weight, pw));
    EXPECT_TRUE(equal(p(x, t), o(x, t)));
  }
  {
    // The weight is new: PyTorch 2.15's values for weight w and pos_weight pw.
    nn::BCEWithLogitsLoss mean({.weight = w, .pos_weight = pw});
    nn::BCEWithLogitsLoss sum({.weight = w, .reduction = Reduction::Sum, .pos_weight = pw});
    nn::BCEWithLogitsLoss none({.weight = w, .reduction = Reduction::None, .pos_weight = pw});
    expect_values(mean(x, t), {1.2081536800571546});
    expect_values(sum(x, t), {7.248922080342928});
    expect_values(none(x, t), {2.552119916974129, 1.6518788397576871, 0.09519600828222938, 0.48703849209005334,
                               2.2737420122297998, 0.18894681100902966});
    const auto buffers = mean.named_buffers();
    ASSERT_EQ(buffers.size(), 2u);
    EXPECT_EQ(buffers[0].first, "weight");
    EXPECT_EQ(buffers[1].first, "pos_weight");
  }
  {
    nn::MultiLabelSoftMarginLoss p(w, Reduction::None), o({.weight = w, .reduction = Reduction::None});
    EXPECT_TRUE(equal(p(x, t), o(x, t)));
    const Tensor signs = t * Scalar(2) - Scalar(1);
    nn::SoftMarginLoss sp(Reduction::Sum), so({.reduction = Reduction::Sum});
    EXPECT_TRUE(equal(sp(x, signs), so(x, signs)));
    nn::HingeEmbeddingLoss hp(0.5, Reduction::Sum), ho({.margin = 0.5, .reduction = Reduction::Sum});
    EXPECT_EQ(ho.margin, 0.5);
    EXPECT_EQ(nn::HingeEmbeddingLoss({.reduction = Reduction::Sum}).margin, 1.0);
    EXPECT_TRUE(equal(hp(x, signs), ho(x, signs)));
  }
}

TEST(ModuleOptionsMore, PairAndTripletLosses) {
  const Tensor a = ramp({3, 4}), b = ramp({3, 4}).flip({1}), c = ramp({3, 4}).flip({0}) * Scalar(0.5);
  const Tensor y = tensor({1.0, -1.0, 1.0}).to(kFloat64);
  {
    nn::MarginRankingLoss p(0.2, Reduction::Sum), o({.margin = 0.2, .reduction = Reduction::Sum});
    EXPECT_EQ(o.margin, 0.2);
    EXPECT_TRUE(equal(p(a.sum({1}), b.sum({1}), y), o(a.sum({1}), b.sum({1}), y)));
    nn::CosineEmbeddingLoss cp(0.1), co({.margin = 0.1});
    EXPECT_EQ(co.margin, 0.1);
    EXPECT_TRUE(equal(cp(a, b, y), co(a, b, y)));
  }
  {
    nn::TripletMarginLoss p(0.5, 1.0, 1e-3, true, Reduction::None);
    nn::TripletMarginLoss o({.margin = 0.5, .p = 1.0, .eps = 1e-3, .swap = true, .reduction = Reduction::None});
    EXPECT_EQ(o.margin, 0.5);
    EXPECT_EQ(o.p, 1.0);
    EXPECT_EQ(o.eps, 1e-3);
    EXPECT_TRUE(o.swap);
    EXPECT_TRUE(equal(p(a, b, c), o(a, b, c)));
    EXPECT_EQ(error_of([] { nn::TripletMarginLoss({.margin = -1.0}); }), error_of([] { nn::TripletMarginLoss(-1.0); }));
  }
  {
    const nn::functional::DistanceFunction l1 = [](const Tensor& u, const Tensor& v) { return (u - v).abs().sum({1}); };
    nn::TripletMarginWithDistanceLoss p(l1, 2.0, true, Reduction::Sum);
    nn::TripletMarginWithDistanceLoss o(
        {.distance_function = l1, .margin = 2.0, .swap = true, .reduction = Reduction::Sum});
    EXPECT_EQ(o.margin, 2.0);
    EXPECT_TRUE(o.swap);
    EXPECT_TRUE(equal(p(a, b, c), o(a, b, c)));
    nn::TripletMarginWithDistanceLoss defaults({.margin = 2.0});
    EXPECT_TRUE(equal(defaults(a, b, c), nn::TripletMarginWithDistanceLoss({}, 2.0)(a, b, c)));
    EXPECT_EQ(error_of([] { nn::TripletMarginWithDistanceLoss({.margin = 0.0}); }),
              "TripletMarginWithDistanceLoss: expected margin to be greater than 0, got 0.0 instead");
  }
}

TEST(ModuleOptionsMore, CTCLossPositional) {
  nn::CTCLoss p(3, Reduction::Sum, true), o({.blank = 3, .reduction = Reduction::Sum, .zero_infinity = true});
  for (const nn::CTCLoss* m : {&p, &o}) {
    EXPECT_EQ(m->blank, 3);
    EXPECT_EQ(m->reduction, Reduction::Sum);
    EXPECT_TRUE(m->zero_infinity);
  }
  EXPECT_EQ(nn::CTCLoss().blank, 0);
  EXPECT_EQ(nn::CTCLoss(2).reduction, Reduction::Mean);
}

// ---------------------------------------------------------------- other layers

TEST(ModuleOptionsMore, Distances) {
  const Tensor a = ramp({3, 4}), b = ramp({3, 4}).flip({1});
  nn::PairwiseDistance p(1.0, 1e-3, true), o({.p = 1.0, .eps = 1e-3, .keepdim = true});
  EXPECT_EQ(o.norm, 1.0);
  EXPECT_EQ(o.eps, 1e-3);
  EXPECT_TRUE(o.keepdim);
  EXPECT_EQ(nn::PairwiseDistance({.keepdim = true}).norm, 2.0);
  EXPECT_TRUE(equal(p(a, b), o(a, b)));
  nn::CosineSimilarity cp(0, 1e-4), co({.dim = 0, .eps = 1e-4});
  EXPECT_EQ(co.dim, 0);
  EXPECT_EQ(co.eps, 1e-4);
  EXPECT_EQ(nn::CosineSimilarity({.eps = 1e-3}).dim, 1);
  EXPECT_TRUE(equal(cp(a, b), co(a, b)));
}

TEST(ModuleOptionsMore, FoldAndUnfold) {
  const Tensor x = ramp({1, 2, 5, 6});
  nn::Unfold p(std::vector<int64_t>{2, 3}, 1, 1, 2);
  nn::Unfold o({2, 3}, {.padding = 1, .stride = 2});
  nn::Unfold one(2);
  EXPECT_EQ(one.kernel_size, (std::vector<int64_t>{2}));
  EXPECT_EQ(o.kernel_size, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(o.dilation, (std::vector<int64_t>{1}));
  EXPECT_EQ(o.padding, (std::vector<int64_t>{1}));
  EXPECT_EQ(o.stride, (std::vector<int64_t>{2}));
  const Tensor columns = o(x);
  EXPECT_TRUE(equal(p(x), columns));
  nn::Fold fp({5, 6}, {2, 3}, 1, 1, 2);
  nn::Fold fo({5, 6}, {2, 3}, {.padding = {1, 1}, .stride = 2});
  EXPECT_EQ(fo.output_size, (std::vector<int64_t>{5, 6}));
  EXPECT_EQ(fo.padding, (std::vector<int64_t>{1, 1}));
  EXPECT_TRUE(equal(fp(columns), fo(columns)));
}

TEST(ModuleOptionsMore, UpsamplingAndUnflatten) {
  const Tensor x = ramp({1, 1, 2, 3});
  nn::UpsamplingNearest2d np({}, {2.0}), no({.scale_factor = {2.0}});
  EXPECT_EQ(no.scale_factor, (std::vector<double>{2.0}));
  EXPECT_EQ(no.mode, "nearest");
  EXPECT_TRUE(equal(np(x), no(x)));
  nn::UpsamplingBilinear2d bp({4, 5}), bo({.size = {4, 5}});
  EXPECT_EQ(bo.size, (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(bo.align_corners, true);
  EXPECT_TRUE(equal(bp(x), bo(x)));
  EXPECT_EQ(nn::UpsamplingNearest2d({.size = 4}).size, (std::vector<int64_t>{4}));

  nn::Unflatten u(1, {2, 3});
  EXPECT_EQ(u.sizes, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(u(ramp({4, 6})).sizes().vec(), (std::vector<int64_t>{4, 2, 3}));
  EXPECT_EQ(nn::Unflatten(0, 4)(ramp({4, 6})).sizes().vec(), (std::vector<int64_t>{4, 6}));

  // nn.Identity(54, unused='abc') ignores its arguments.
  nn::Identity identity(54, std::string("abc"));
  const Tensor y = ramp({2, 3});
  EXPECT_TRUE(identity(y).is_same(y));
}

TEST(ModuleOptionsMore, BilinearAndDropouts) {
  manual_seed(5);
  nn::Bilinear p(3, 4, 2, false);
  manual_seed(5);
  nn::Bilinear o(3, 4, 2, {.bias = false});
  EXPECT_FALSE(o.bias.defined());
  EXPECT_TRUE(equal(p.weight, o.weight));
  EXPECT_TRUE(nn::Bilinear(3, 4, 2, nn::BilinearOptions{}).bias.defined());

  nn::Dropout2dOptions options{.p = 0.3, .inplace = true};
  nn::Dropout2d d(options);
  EXPECT_EQ(d.p, 0.3);
  EXPECT_TRUE(d.inplace);
  EXPECT_EQ(nn::AlphaDropout(nn::AlphaDropoutOptions{.p = 0.1}).p, 0.1);
}

TEST(ModuleOptionsMore, TransformerEncoderArgs) {
  manual_seed(11);
  nn::TransformerEncoderLayer layer(8, 2, {.dim_feedforward = 16, .dropout = 0.0, .batch_first = true});
  layer.eval();
  const Tensor src = ramp({2, 3, 8});
  const Tensor mask = nn::generate_square_subsequent_mask(3, TensorOptions().dtype(kFloat64));
  layer.to(kFloat64);
  const Tensor padding = tensor(std::vector<int64_t>{0, 0, 1, 0, 0, 0}).reshape({2, 3}).to(kBool);
  EXPECT_TRUE(equal(layer.forward(src, mask, padding, true),
                    layer.forward(src, {.src_mask = mask, .src_key_padding_mask = padding, .is_causal = true})));
  nn::TransformerEncoder encoder(layer, 2);
  EXPECT_TRUE(
      equal(encoder.forward(src, mask, Tensor(), true), encoder.forward(src, {.mask = mask, .is_causal = true})));
  EXPECT_TRUE(equal(encoder.forward(src), encoder.forward(src, nn::TransformerEncoderArgs{})));

  auto norm = std::make_shared<nn::LayerNorm>(8);
  nn::TransformerEncoder normed(layer, 1, {.norm = norm, .enable_nested_tensor = false});
  EXPECT_EQ(normed.norm, norm);
  EXPECT_FALSE(normed.enable_nested_tensor);
  EXPECT_TRUE(normed.mask_check);
  EXPECT_EQ(nn::TransformerEncoder(layer, 1).norm, nullptr);
  nn::TransformerDecoderLayer decoder_layer(8, 2, {.dim_feedforward = 16});
  nn::TransformerDecoder decoder(decoder_layer, 1, {.norm = std::make_shared<nn::LayerNorm>(8)});
  EXPECT_NE(decoder.norm, nullptr);
}

}  // namespace
