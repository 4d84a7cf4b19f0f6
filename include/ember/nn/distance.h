#pragma once
/// Distance modules (torch.nn.PairwiseDistance, torch.nn.CosineSimilarity): two inputs, no
/// parameters; see functional::pairwise_distance and functional::cosine_similarity.
#include <cstdint>
#include <string>

#include "ember/nn/functional.h"
#include "ember/nn/module.h"
#include "ember/nn/sizes.h"

namespace ember::nn {

/// The options of nn.PairwiseDistance: `nn::PairwiseDistance({.p = 1.0, .keepdim = true})`.
struct PairwiseDistanceOptions {
  detail::DesignatedOnly designated_only = {};
  double p = 2.0;
  double eps = 1e-6;
  bool keepdim = false;
};

/// The p-norm of x1 - x2 + eps over the last dimension. `norm` is p, as PyTorch names it.
class PairwiseDistance : public Module {
 public:
  explicit PairwiseDistance(double p = 2.0, double eps = 1e-6, bool keepdim = false);
  explicit PairwiseDistance(PairwiseDistanceOptions options)
      : PairwiseDistance(options.p, options.eps, options.keepdim) {}
  std::string name() const override { return "PairwiseDistance"; }
  Tensor forward(const Tensor& x1, const Tensor& x2);
  using Module::forward;
  Tensor operator()(const Tensor& x1, const Tensor& x2) { return forward(x1, x2); }
  double norm;
  double eps;
  bool keepdim;
};

/// The options of nn.CosineSimilarity: `nn::CosineSimilarity({.dim = 0})`.
struct CosineSimilarityOptions {
  detail::DesignatedOnly designated_only = {};
  int64_t dim = 1;
  double eps = 1e-8;
};

/// The cosine similarity of x1 and x2 along `dim`.
class CosineSimilarity : public Module {
 public:
  explicit CosineSimilarity(int64_t dim = 1, double eps = 1e-8);
  explicit CosineSimilarity(CosineSimilarityOptions options) : CosineSimilarity(options.dim, options.eps) {}
  std::string name() const override { return "CosineSimilarity"; }
  Tensor forward(const Tensor& x1, const Tensor& x2);
  using Module::forward;
  Tensor operator()(const Tensor& x1, const Tensor& x2) { return forward(x1, x2); }
  int64_t dim;
  double eps;
};

}  // namespace ember::nn
