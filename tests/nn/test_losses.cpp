// torch.nn's losses beyond cross-entropy, nll, mse and BCE with logits, and the distance
// functions: each functional and each module against PyTorch's values and input gradients
// (goldens written by tools/gen_losses_golden.py, float64 to 1e-12 and float32 to 1e-5), the
// modules' arguments and buffers, the reductions, PyTorch's error messages, and finite
// differences for a few of them.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "support/collect_warnings.h"
#include "support/error_of.h"
#include "support/golden_cases.h"
#include "support/gradcheck.h"

namespace {

using namespace ember;
namespace nn = ember::nn;
namespace F = ember::nn::functional;
using ember_test::error_of;
using ember_test::GoldenCase;

const io::SafetensorsData& golden() {
  static const io::SafetensorsData data =
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/nn/golden/losses_golden.safetensors");
  return data;
}

nn::Reduction reduction_of(const GoldenCase& c) {
  const std::string& r = c.options.at("reduction");
  return r == "none" ? nn::Reduction::None : r == "sum" ? nn::Reduction::Sum : nn::Reduction::Mean;
}

nn::KLDivReduction kl_reduction_of(const GoldenCase& c) {
  const std::string& r = c.options.at("reduction");
  return r == "none"        ? nn::KLDivReduction::None
         : r == "sum"       ? nn::KLDivReduction::Sum
         : r == "batchmean" ? nn::KLDivReduction::BatchMean
                            : nn::KLDivReduction::Mean;
}

Tensor cosine_distance(const Tensor& a, const Tensor& b) { return 1.0 - F::cosine_similarity(a, b); }

F::DistanceFunction distance_of(const GoldenCase& c) {
  return c.options.at("distance") == "cosine" ? F::DistanceFunction(cosine_distance) : F::DistanceFunction();
}

/// The functional the case names, on inputs `in` and weight `w`.
Tensor call_functional(const GoldenCase& c, const std::vector<Tensor>& in, const Tensor& w) {
  const std::string& fn = c.kind;
  const nn::Reduction r = c.options.count("reduction") ? reduction_of(c) : nn::Reduction::Mean;
  if (fn == "l1_loss") return F::l1_loss(in[0], in[1], r, w);
  if (fn == "smooth_l1_loss") return F::smooth_l1_loss(in[0], in[1], r, c.real("beta"));
  if (fn == "huber_loss") return F::huber_loss(in[0], in[1], r, c.real("delta"), w);
  if (fn == "kl_div") return F::kl_div(in[0], in[1], kl_reduction_of(c), c.flag("log_target"));
  if (fn == "binary_cross_entropy") return F::binary_cross_entropy(in[0], in[1], w, r);
  if (fn == "poisson_nll_loss")
    return F::poisson_nll_loss(in[0], in[1], c.flag("log_input"), c.flag("full"), c.real("eps"), r);
  if (fn == "gaussian_nll_loss") return F::gaussian_nll_loss(in[0], in[1], in[2], c.flag("full"), c.real("eps"), r);
  if (fn == "margin_ranking_loss") return F::margin_ranking_loss(in[0], in[1], in[2], c.real("margin"), r);
  if (fn == "hinge_embedding_loss") return F::hinge_embedding_loss(in[0], in[1], c.real("margin"), r);
  if (fn == "soft_margin_loss") return F::soft_margin_loss(in[0], in[1], r);
  if (fn == "multilabel_soft_margin_loss") return F::multilabel_soft_margin_loss(in[0], in[1], w, r);
  if (fn == "multi_margin_loss") return F::multi_margin_loss(in[0], in[1], c.num("p"), c.real("margin"), w, r);
  if (fn == "multilabel_margin_loss") return F::multilabel_margin_loss(in[0], in[1], r);
  if (fn == "cosine_embedding_loss") return F::cosine_embedding_loss(in[0], in[1], in[2], c.real("margin"), r);
  if (fn == "triplet_margin_loss")
    return F::triplet_margin_loss(in[0], in[1], in[2], c.real("margin"), c.real("p"), c.real("eps"), c.flag("swap"), r);
  if (fn == "triplet_margin_with_distance_loss")
    return F::triplet_margin_with_distance_loss(in[0], in[1], in[2], distance_of(c), c.real("margin"), c.flag("swap"),
                                                r);
  if (fn == "cosine_similarity") return F::cosine_similarity(in[0], in[1], c.num("dim"), c.real("eps"));
  if (fn == "pairwise_distance")
    return F::pairwise_distance(in[0], in[1], c.real("p"), c.real("eps"), c.flag("keepdim"));
  ADD_FAILURE() << "unknown function " << fn;
  return Tensor();
}

/// The module of the case's functional, built with the case's arguments in PyTorch's order;
/// undefined where the case has no module form (a weight the module does not take).
Tensor call_module(const GoldenCase& c, const std::vector<Tensor>& in, const Tensor& w) {
  const std::string& fn = c.kind;
  const nn::Reduction r = c.options.count("reduction") ? reduction_of(c) : nn::Reduction::Mean;
  if (fn == "l1_loss") return w.defined() ? Tensor() : nn::L1Loss(r)(in[0], in[1]);
  if (fn == "smooth_l1_loss") return nn::SmoothL1Loss(r, c.real("beta"))(in[0], in[1]);
  if (fn == "huber_loss") return w.defined() ? Tensor() : nn::HuberLoss(r, c.real("delta"))(in[0], in[1]);
  if (fn == "kl_div") return nn::KLDivLoss(kl_reduction_of(c), c.flag("log_target"))(in[0], in[1]);
  if (fn == "binary_cross_entropy") return nn::BCELoss(w, r)(in[0], in[1]);
  if (fn == "poisson_nll_loss")
    return nn::PoissonNLLLoss(c.flag("log_input"), c.flag("full"), c.real("eps"), r)(in[0], in[1]);
  if (fn == "gaussian_nll_loss") return nn::GaussianNLLLoss(c.flag("full"), c.real("eps"), r)(in[0], in[1], in[2]);
  if (fn == "margin_ranking_loss") return nn::MarginRankingLoss(c.real("margin"), r)(in[0], in[1], in[2]);
  if (fn == "hinge_embedding_loss") return nn::HingeEmbeddingLoss(c.real("margin"), r)(in[0], in[1]);
  if (fn == "soft_margin_loss") return nn::SoftMarginLoss(r)(in[0], in[1]);
  if (fn == "multilabel_soft_margin_loss") return nn::MultiLabelSoftMarginLoss(w, r)(in[0], in[1]);
  if (fn == "multi_margin_loss") return nn::MultiMarginLoss(c.num("p"), c.real("margin"), w, r)(in[0], in[1]);
  if (fn == "multilabel_margin_loss") return nn::MultiLabelMarginLoss(r)(in[0], in[1]);
  if (fn == "cosine_embedding_loss") return nn::CosineEmbeddingLoss(c.real("margin"), r)(in[0], in[1], in[2]);
  if (fn == "triplet_margin_loss")
    return nn::TripletMarginLoss(c.real("margin"), c.real("p"), c.real("eps"), c.flag("swap"), r)(in[0], in[1], in[2]);
  if (fn == "triplet_margin_with_distance_loss")
    return nn::TripletMarginWithDistanceLoss(distance_of(c), c.real("margin"), c.flag("swap"), r)(in[0], in[1], in[2]);
  if (fn == "cosine_similarity") return nn::CosineSimilarity(c.num("dim"), c.real("eps"))(in[0], in[1]);
  if (fn == "pairwise_distance")
    return nn::PairwiseDistance(c.real("p"), c.real("eps"), c.flag("keepdim"))(in[0], in[1]);
  ADD_FAILURE() << "unknown module for " << fn;
  return Tensor();
}

/// Runs every golden case through `call` and compares the result and the input gradients.
template <typename Call>
int check_cases(const Call& call) {
  const io::SafetensorsData& g = golden();
  const std::vector<GoldenCase> cases = ember_test::golden_cases(g.metadata);
  EXPECT_GT(cases.size(), 100u);
  ember_test::CollectWarnings quiet;  // kl_div's mean and l1's broadcast warn, as in PyTorch
  int checked = 0;
  for (const GoldenCase& c : cases) {
    const bool f32 = c.options.at("dtype") == "float32";
    const double rtol = f32 ? 1e-5 : 1e-12, atol = f32 ? 1e-6 : 1e-13;
    const std::string grads = c.options.at("grads");
    std::vector<Tensor> in;
    for (int k = 0; g.contains(c.prefix + "in" + std::to_string(k)); ++k) {
      Tensor x = g.at(c.prefix + "in" + std::to_string(k)).clone();
      if (grads.find(static_cast<char>('0' + k)) != std::string::npos) x.requires_grad_();
      in.push_back(x);
    }
    const Tensor w = g.contains(c.prefix + "w") ? g.at(c.prefix + "w") : Tensor();
    Tensor y = call(c, in, w);
    if (!y.defined()) continue;
    ++checked;
    ember_test::expect_close(y, g.at(c.prefix + "y"), rtol, atol, c.description + " value");
    EXPECT_EQ(y.dtype(), g.at(c.prefix + "y").dtype()) << c.description;
    y.backward(g.at(c.prefix + "gy"));
    for (size_t k = 0; k < in.size(); ++k) {
      const std::string name = c.prefix + "g" + std::to_string(k);
      if (!in[k].requires_grad()) continue;
      if (g.contains(name)) {
        ember_test::expect_close(in[k].grad(), g.at(name), rtol, atol, c.description + " gradient " + name);
      } else {
        EXPECT_FALSE(in[k].grad().defined()) << c.description << ": PyTorch gives input " << k << " no gradient";
      }
    }
  }
  return checked;
}

TEST(Losses, FunctionalsMatchPyTorch) {
  EXPECT_EQ(check_cases(call_functional), std::stoi(golden().metadata.at("count")));
}

TEST(Losses, ModulesMatchPyTorch) { EXPECT_GT(check_cases(call_module), 100); }

TEST(Losses, GoldensCoverEveryFunction) {
  std::set<std::string> names;
  for (const GoldenCase& c : ember_test::golden_cases(golden().metadata)) names.insert(c.kind);
  const std::set<std::string> expected = {"l1_loss",
                                          "smooth_l1_loss",
                                          "huber_loss",
                                          "kl_div",
                                          "binary_cross_entropy",
                                          "poisson_nll_loss",
                                          "gaussian_nll_loss",
                                          "margin_ranking_loss",
                                          "hinge_embedding_loss",
                                          "soft_margin_loss",
                                          "multilabel_soft_margin_loss",
                                          "multi_margin_loss",
                                          "multilabel_margin_loss",
                                          "cosine_embedding_loss",
                                          "triplet_margin_loss",
                                          "triplet_margin_with_distance_loss",
                                          "cosine_similarity",
                                          "pairwise_distance"};
  EXPECT_EQ(names, expected);
}

TEST(Losses, ModuleNamesArgumentsAndBuffers) {
  Tensor w = tensor({0.5, 2.0, 1.0}, kFloat64);
  nn::BCELoss bce(w, nn::Reduction::Sum);
  EXPECT_EQ(bce.name(), "BCELoss");
  EXPECT_EQ(bce.reduction, nn::Reduction::Sum);
  ASSERT_EQ(bce.named_buffers().size(), 1u);
  EXPECT_EQ(bce.named_buffers()[0].first, "weight");
  EXPECT_TRUE(bce.named_buffers()[0].second.is_same(w));
  EXPECT_TRUE(nn::BCELoss().named_buffers().empty());
  EXPECT_TRUE(nn::BCELoss(nn::Reduction::None, w).weight.is_same(w));

  nn::MultiMarginLoss mm(2, 0.5, w, nn::Reduction::None);
  EXPECT_EQ(mm.name(), "MultiMarginLoss");
  EXPECT_EQ(mm.p, 2);
  EXPECT_EQ(mm.margin, 0.5);
  ASSERT_EQ(mm.named_buffers().size(), 1u);
  EXPECT_EQ(mm.named_buffers()[0].first, "weight");
  EXPECT_TRUE(nn::MultiMarginLoss().named_buffers().empty());
  EXPECT_EQ(nn::MultiMarginLoss().p, 1);
  EXPECT_EQ(nn::MultiMarginLoss(nn::Reduction::Sum).reduction, nn::Reduction::Sum);

  nn::MultiLabelSoftMarginLoss mlsm(w);
  EXPECT_EQ(mlsm.name(), "MultiLabelSoftMarginLoss");
  ASSERT_EQ(mlsm.named_buffers().size(), 1u);
  EXPECT_EQ(mlsm.named_buffers()[0].first, "weight");
  EXPECT_EQ(mlsm.reduction, nn::Reduction::Mean);

  // PyTorch's defaults and argument order.
  EXPECT_EQ(nn::SmoothL1Loss().beta, 1.0);
  EXPECT_EQ(nn::SmoothL1Loss(nn::Reduction::Sum, 0.25).beta, 0.25);
  EXPECT_EQ(nn::HuberLoss().delta, 1.0);
  EXPECT_EQ(nn::HuberLoss(nn::Reduction::None, 3.0).delta, 3.0);
  nn::PoissonNLLLoss poisson(false, true, 1e-3, nn::Reduction::Sum);
  EXPECT_FALSE(poisson.log_input);
  EXPECT_TRUE(poisson.full);
  EXPECT_EQ(poisson.eps, 1e-3);
  EXPECT_TRUE(nn::PoissonNLLLoss().log_input);
  EXPECT_EQ(nn::PoissonNLLLoss().eps, 1e-8);
  EXPECT_EQ(nn::GaussianNLLLoss().eps, 1e-6);
  EXPECT_FALSE(nn::GaussianNLLLoss().full);
  EXPECT_EQ(nn::MarginRankingLoss().margin, 0.0);
  EXPECT_EQ(nn::HingeEmbeddingLoss().margin, 1.0);
  EXPECT_EQ(nn::CosineEmbeddingLoss().margin, 0.0);
  nn::TripletMarginLoss triplet(0.5, 1.0, 1e-3, true);
  EXPECT_EQ(triplet.margin, 0.5);
  EXPECT_EQ(triplet.p, 1.0);
  EXPECT_EQ(triplet.eps, 1e-3);
  EXPECT_TRUE(triplet.swap);
  EXPECT_EQ(nn::TripletMarginLoss().p, 2.0);
  EXPECT_FALSE(nn::TripletMarginWithDistanceLoss().distance_function);
  EXPECT_EQ(nn::PairwiseDistance().norm, 2.0);
  EXPECT_EQ(nn::PairwiseDistance().eps, 1e-6);
  EXPECT_FALSE(nn::PairwiseDistance().keepdim);
  EXPECT_EQ(nn::CosineSimilarity().dim, 1);
  EXPECT_EQ(nn::CosineSimilarity().eps, 1e-8);
  EXPECT_TRUE(nn::KLDivLoss(nn::KLDivReduction::BatchMean).batchmean);
  EXPECT_FALSE(nn::KLDivLoss().batchmean);
  EXPECT_TRUE(nn::KLDivLoss(nn::Reduction::Sum, true).log_target);

  const std::vector<std::string> names = {nn::L1Loss().name(),
                                          nn::SmoothL1Loss().name(),
                                          nn::HuberLoss().name(),
                                          nn::KLDivLoss().name(),
                                          nn::PoissonNLLLoss().name(),
                                          nn::GaussianNLLLoss().name(),
                                          nn::MarginRankingLoss().name(),
                                          nn::HingeEmbeddingLoss().name(),
                                          nn::SoftMarginLoss().name(),
                                          nn::MultiLabelMarginLoss().name(),
                                          nn::CosineEmbeddingLoss().name(),
                                          nn::TripletMarginLoss().name(),
                                          nn::TripletMarginWithDistanceLoss().name(),
                                          nn::PairwiseDistance().name(),
                                          nn::CosineSimilarity().name()};
  const std::vector<std::string> expected = {"L1Loss",
                                             "SmoothL1Loss",
                                             "HuberLoss",
                                             "KLDivLoss",
                                             "PoissonNLLLoss",
                                             "GaussianNLLLoss",
                                             "MarginRankingLoss",
                                             "HingeEmbeddingLoss",
                                             "SoftMarginLoss",
                                             "MultiLabelMarginLoss",
                                             "CosineEmbeddingLoss",
                                             "TripletMarginLoss",
                                             "TripletMarginWithDistanceLoss",
                                             "PairwiseDistance",
                                             "CosineSimilarity"};
  EXPECT_EQ(names, expected);
  // The losses are Loss, so that code holding a Loss can run any of them.
  nn::Loss& as_loss = triplet;
  EXPECT_EQ(as_loss.reduction, nn::Reduction::Mean);
}

TEST(Losses, ReductionsAndTheirShapes) {
  Tensor x = tensor({{0.5, -1.0, 2.0}, {1.5, 0.0, -0.5}}, kFloat64);
  Tensor y = tensor({{0.0, -0.5, 1.0}, {1.0, 1.0, 1.0}}, kFloat64);
  Tensor none = F::l1_loss(x, y, nn::Reduction::None);
  EXPECT_TRUE(equal(none, tensor({{0.5, 0.5, 1.0}, {0.5, 1.0, 1.5}}, kFloat64)));
  EXPECT_DOUBLE_EQ(F::l1_loss(x, y, nn::Reduction::Sum).item<double>(), 5.0);
  EXPECT_DOUBLE_EQ(F::l1_loss(x, y).item<double>(), 5.0 / 6.0);
  // A module's reduction can change after construction, as PyTorch's attribute.
  nn::L1Loss l1;
  l1.reduction = nn::Reduction::Sum;
  EXPECT_DOUBLE_EQ(l1(x, y).item<double>(), 5.0);

  // kl_div: batchmean divides the sum by the batch size; mean by every element, and warns.
  Tensor logp = x.log_softmax(1), p = y.softmax(1);
  const double sum = F::kl_div(logp, p, nn::Reduction::Sum).item<double>();
  EXPECT_NEAR(F::kl_div(logp, p, nn::KLDivReduction::BatchMean).item<double>(), sum / 2, 1e-15);
  EXPECT_NEAR(nn::KLDivLoss(nn::KLDivReduction::BatchMean)(logp, p).item<double>(), sum / 2, 1e-15);
  {
    ember_test::CollectWarnings warnings;
    EXPECT_NEAR(F::kl_div(logp, p).item<double>(), sum / 6, 1e-15);
    ASSERT_EQ(warnings.messages().size(), 1u);
    EXPECT_EQ(warnings.messages()[0].rfind("reduction: 'mean' divides the total loss by both the batch size", 0), 0u);
    F::kl_div(logp, p, nn::KLDivReduction::BatchMean);
    F::l1_loss(x, y);
    EXPECT_EQ(warnings.messages().size(), 1u);
    F::l1_loss(x, y.select(0, 0));
    ASSERT_EQ(warnings.messages().size(), 2u);
    EXPECT_EQ(warnings.messages()[1],
              "Using a target size (torch.Size([3])) that is different to the input size (torch.Size([2, 3])). This "
              "will likely lead to incorrect results due to broadcasting. Please ensure they have the same size.");
  }

  // Per-sample losses: one value per row with None.
  Tensor t = tensor(std::vector<int64_t>{2, 0});
  EXPECT_EQ(F::multi_margin_loss(x, t, 1, 1.0, Tensor(), nn::Reduction::None).sizes().vec(), std::vector<int64_t>{2});
  EXPECT_EQ(F::multilabel_soft_margin_loss(x, y, Tensor(), nn::Reduction::None).sizes().vec(), std::vector<int64_t>{2});
  EXPECT_EQ(F::pairwise_distance(x, y).sizes().vec(), std::vector<int64_t>{2});
  EXPECT_EQ(F::pairwise_distance(x, y, 2.0, 1e-6, true).sizes().vec(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(F::cosine_similarity(x, y, 0).sizes().vec(), std::vector<int64_t>{3});
  // smooth_l1 with beta 0 is l1.
  EXPECT_TRUE(equal(F::smooth_l1_loss(x, y, nn::Reduction::None, 0.0), none));
  // gaussian_nll with one number for the variance.
  EXPECT_TRUE(allclose(F::gaussian_nll_loss(x, y, 0.5), F::gaussian_nll_loss(x, y, full_like(x, 0.5)), 1e-15, 0));
  EXPECT_TRUE(allclose(nn::GaussianNLLLoss()(x, y, 0.5), F::gaussian_nll_loss(x, y, 0.5), 1e-15, 0));
}

TEST(Losses, ErrorMessagesArePyTorchs) {
  Tensor x = tensor({{0.2, 0.7, 0.1, 0.4}, {0.3, 0.5, 0.9, 0.6}, {0.8, 0.1, 0.2, 0.3}}, kFloat64);
  Tensor idx = tensor(std::vector<int64_t>{0, 1, 2});
  EXPECT_EQ(error_of([&] {
              F::binary_cross_entropy(x, x.reshape({3, 4, 1}));
            }),
            "Using a target size (torch.Size([3, 4, 1])) that is different to the input size (torch.Size([3, 4])) is "
            "deprecated. Please ensure they have the same size.");
  EXPECT_EQ(error_of([&] { F::binary_cross_entropy(x * 2, x); }), "all elements of input should be between 0 and 1");
  EXPECT_EQ(error_of([&] { F::binary_cross_entropy(x, x + 0.5); }), "all elements of target should be between 0 and 1");
  EXPECT_EQ(error_of([&] { F::binary_cross_entropy(x, x, ones({3}, kFloat64)); }),
            "Attempting to broadcast a dimension of length 3 at -1! Mismatching argument at index 1 had "
            "torch.Size([3]); but expected shape should be broadcastable to [3, 4]");
  EXPECT_EQ(error_of([&] { F::binary_cross_entropy(x, x, ones({4}, kFloat64).requires_grad_()); }),
            "The function 'binary_cross_entropy' is not differentiable with respect to argument 'weight'. This input "
            "cannot have requires_grad True.");
  EXPECT_EQ(error_of([&] { F::soft_margin_loss(x, x.clone().requires_grad_()); }),
            "The function 'soft_margin_loss' is not differentiable with respect to argument 'target'. This input "
            "cannot have requires_grad True.");
  EXPECT_EQ(error_of([&] { F::multi_margin_loss(x, idx.narrow(0, 0, 2)); }),
            "multi_margin_loss: target tensor should be 1-D with size equal to the number of input samples (batch "
            "size). Expected target size [3], but got [2]. Input has shape [3, 4].");
  EXPECT_EQ(error_of([&] { F::multi_margin_loss(x, tensor(std::vector<int64_t>{0, 1, 4})); }), "target out of range");
  EXPECT_EQ(error_of([&] { F::multi_margin_loss(x, idx, 1, 1.0, ones({3}, kFloat64)); }),
            "inconsistent weight size, expected 4 but got [3]");
  EXPECT_EQ(error_of([&] {
              F::multi_margin_loss(x, idx, 1, 1.0, ones({2, 2}, kFloat64));
            }),
            "weight must be one-dimensional");
  EXPECT_EQ(error_of([&] { F::multi_margin_loss(x, idx, 3); }), "only p == 1 and p == 2 supported");
  EXPECT_EQ(error_of([&] {
              F::multi_margin_loss(x.reshape({3, 2, 2}), idx);
            }),
            "Expected non-empty vector or matrix with optional 0-dim batch size, but got: [3, 2, 2]");
  EXPECT_EQ(error_of([&] { F::multi_margin_loss(x, idx.to(kFloat32)); }), "expected scalar type Long but found Float");
  EXPECT_EQ(error_of([&] { F::multilabel_margin_loss(x, idx); }),
            "inconsistent target size: [3] for input of size: [3, 4]");
  EXPECT_EQ(error_of([&] {
              F::multilabel_margin_loss(x, full({3, 4}, int64_t{4}, kInt64));
            }),
            "argument #2 'target' is out of range");
  EXPECT_EQ(error_of([&] {
              F::multilabel_margin_loss(x, full({3, 4}, int64_t{-2}, kInt64));
            }),
            "argument #2 'target' is out of range");
  EXPECT_EQ(error_of([&] {
              F::cosine_embedding_loss(x, x, ones({3, 2}));
            }),
            "0D or 1D target tensor expected, multi-target not supported");
  EXPECT_EQ(error_of([&] { F::cosine_embedding_loss(x, x, ones({})); }),
            "0D target tensor expects 1D input tensors, but found inputs with sizes [3, 4] and [3, 4].");
  EXPECT_EQ(error_of([&] { F::cosine_embedding_loss(x[0], x[0], ones({3})); }),
            "1D target tensor expects 2D input tensors, but found inputs with sizes [4] and [4].");
  EXPECT_EQ(error_of([&] { F::margin_ranking_loss(x, x, ones({3})); }),
            "margin_ranking_loss : All input tensors should have same dimension but got sizes: input1: "
            "torch.Size([3, 4]), input2: torch.Size([3, 4]), target: torch.Size([3]) ");
  EXPECT_EQ(error_of([&] { F::triplet_margin_loss(x, x, x[0]); }),
            "The anchor, positive, and negative tensors are expected to have the same number of dimensions, but got: "
            "anchor 2D, positive 2D, and negative 1D inputs");
  EXPECT_EQ(error_of([&] { F::triplet_margin_loss(x, x, x, 0.0); }), "margin must be greater than 0, got 0.0");
  EXPECT_EQ(error_of([&] { F::triplet_margin_with_distance_loss(x, x, x, {}, -1.0); }),
            "margin must be greater than 0, got -1.0");
  EXPECT_EQ(error_of([&] { nn::TripletMarginLoss(0.0); }),
            "TripletMarginLoss: expected margin to be greater than 0, got 0.0 instead");
  EXPECT_EQ(error_of([&] { nn::TripletMarginWithDistanceLoss({}, -0.5); }),
            "TripletMarginWithDistanceLoss: expected margin to be greater than 0, got -0.5 instead");
  EXPECT_EQ(error_of([&] { F::gaussian_nll_loss(x, x, ones({3, 2}, kFloat64)); }), "var is of incorrect size");
  EXPECT_EQ(error_of([&] {
              F::gaussian_nll_loss(x, x, ones({3, 4}, kFloat64) * -1);
            }),
            "var has negative entry/entries");
  EXPECT_EQ(error_of([&] { F::gaussian_nll_loss(x, x, -1.0); }), "var has negative entry/entries");
  EXPECT_EQ(error_of([&] { F::smooth_l1_loss(x, x, nn::Reduction::Mean, -1.0); }),
            "smooth_l1_loss does not support negative values for beta.");
  EXPECT_EQ(error_of([&] { F::huber_loss(x, x, nn::Reduction::Mean, 0.0); }),
            "huber_loss does not support non-positive values for delta.");
  EXPECT_EQ(error_of([&] { F::l1_loss(x, x, nn::Reduction::Mean, ones({4}, kFloat64)); }),
            "Weights and input must have the same size.");
  EXPECT_EQ(error_of([&] {
              F::poisson_nll_loss(x, ones({3, 2}, kFloat64));
            }),
            "The size of tensor a (2) must match the size of tensor b (4) at non-singleton dimension 1");
  EXPECT_EQ(error_of([&] {
              F::pairwise_distance(x, ones({3, 2}, kFloat64));
            }),
            "The size of tensor a (4) must match the size of tensor b (2) at non-singleton dimension 1");
  EXPECT_EQ(error_of([&] { F::cosine_similarity(x, x, 1, -1.0); }), "eps must be non-negative, got: -1");
  EXPECT_EQ(error_of([&] { F::cosine_similarity(x, x, 2); }),
            "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  EXPECT_EQ(error_of([&] { F::cosine_similarity(idx, idx, 0); }),
            "expected common dtype to be floating point, yet common dtype is Long");
  // A three-input loss called with two, as Python would say it.
  nn::MarginRankingLoss ranking;
  EXPECT_EQ(error_of([&] { ranking(x, x); }),
            "MarginRankingLoss.forward() missing 1 required positional argument: 'target'");
  nn::GaussianNLLLoss gaussian;
  EXPECT_EQ(error_of([&] { gaussian(x, x); }),
            "GaussianNLLLoss.forward() missing 1 required positional argument: 'var'");
}

TEST(Losses, GradcheckAgainstFiniteDifferences) {
  manual_seed(3);
  Tensor a = randn({3, 4}, kFloat64), b = randn({3, 4}, kFloat64), c = randn({3, 4}, kFloat64);
  ember::test::gradcheck(
      "smooth_l1_loss",
      [](const std::vector<Tensor>& in) { return F::smooth_l1_loss(in[0], in[1], nn::Reduction::None, 0.7); }, {a, b});
  ember::test::gradcheck("gaussian_nll_loss",
                         [](const std::vector<Tensor>& in) {
                           return F::gaussian_nll_loss(in[0], in[1], in[2], true, 1e-6, nn::Reduction::Sum);
                         },
                         {a, b, rand({3, 4}, kFloat64) + 0.2});
  ember::test::gradcheck("binary_cross_entropy",
                         [](const std::vector<Tensor>& in) {
                           return F::binary_cross_entropy(in[0], in[1], Tensor(), nn::Reduction::None);
                         },
                         {rand({3, 4}, kFloat64) * 0.8 + 0.1, rand({3, 4}, kFloat64)});
  ember::test::gradcheck("multilabel_soft_margin_loss",
                         [](const std::vector<Tensor>& in) {
                           return F::multilabel_soft_margin_loss(in[0], in[1], Tensor(), nn::Reduction::None);
                         },
                         {a * 3, rand({3, 4}, kFloat64)});
  const Tensor signs = (b > 0).to(kFloat64) * 2.0 - 1.0;
  ember::test::gradcheck(
      "soft_margin_loss",
      [&](const std::vector<Tensor>& in) { return F::soft_margin_loss(in[0], signs, nn::Reduction::None); }, {a});
  ember::test::gradcheck("cosine_similarity",
                         [](const std::vector<Tensor>& in) { return F::cosine_similarity(in[0], in[1]); }, {a, b});
  ember::test::gradcheck("pairwise_distance p=3",
                         [](const std::vector<Tensor>& in) { return F::pairwise_distance(in[0], in[1], 3.0); }, {a, b});
  ember::test::gradcheck("triplet_margin_loss swap",
                         [](const std::vector<Tensor>& in) {
                           return F::triplet_margin_loss(in[0], in[1], in[2], 2.0, 2.0, 1e-6, true,
                                                         nn::Reduction::None);
                         },
                         {a, b, c});
  ember::test::gradcheck(
      "kl_div log_target",
      [](const std::vector<Tensor>& in) { return F::kl_div(in[0], in[1], nn::KLDivReduction::BatchMean, true); },
      {a, b});
}

TEST(Losses, BinaryCrossEntropyGradientAtTheEdges) {
  // PyTorch clamps the logs at -100 and the gradient's denominator at 1e-12: finite everywhere.
  Tensor x = tensor({0.0, 1.0, 1e-20}, kFloat64).requires_grad_();
  Tensor y = tensor({1.0, 0.0, 0.0}, kFloat64);
  Tensor loss = F::binary_cross_entropy(x, y, Tensor(), nn::Reduction::None);
  EXPECT_TRUE(equal(loss.detach(), tensor({100.0, 100.0, 1e-20}, kFloat64)));
  loss.sum().backward();
  // The denominator's floor is PyTorch's float EPSILON, 1e-12f.
  const double eps = static_cast<double>(1e-12f);
  EXPECT_TRUE(allclose(x.grad(), tensor({-1 / eps, 1 / eps, 1e-20 / eps}, kFloat64), 1e-15, 0.0)) << x.grad();
}

TEST(Losses, MultiMarginSubgradientAtTheHinge) {
  // z = margin - x[y] + x[i] == 0 exactly: no loss and no gradient, as PyTorch's z > 0.
  Tensor x = tensor({{1.0, 0.0, -2.0}}, kFloat64).requires_grad_();
  Tensor loss = F::multi_margin_loss(x, tensor(std::vector<int64_t>{0}), 1, 1.0, Tensor(), nn::Reduction::Sum);
  EXPECT_EQ(loss.item<double>(), 0.0);
  loss.backward();
  EXPECT_TRUE(equal(x.grad(), zeros({1, 3}, kFloat64))) << x.grad();
}

}  // namespace
