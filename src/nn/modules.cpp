// The layers: parameters, PyTorch's default initialisations, and forward via functional.
#include "ember/nn/modules.h"

#include <cmath>

#include "core/check.h"
#include "ember/factories.h"
#include "ember/nn/init.h"

namespace ember::nn {

namespace {

std::shared_ptr<Module> child_at(const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children,
                                 int64_t index, const char* container) {
  const auto n = static_cast<int64_t>(children.size());
  EMBER_CHECK(index >= -n && index < n, "index ", index, " is out of range for ", container, " of size ", n);
  return children[static_cast<size_t>(index < 0 ? index + n : index)].second;
}

}  // namespace

// ---------------------------------------------------------------- Linear

Linear::Linear(int64_t in_features, int64_t out_features, bool bias)
    : in_features(in_features), out_features(out_features) {
  EMBER_CHECK(in_features >= 0 && out_features >= 0,
              "Linear: feature counts must be non-negative, got in_features=", in_features,
              ", out_features=", out_features);
  weight = register_parameter("weight", empty({out_features, in_features}));
  if (bias) this->bias = register_parameter("bias", empty({out_features}));
  reset_parameters();
}

void Linear::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const double bound = in_features > 0 ? 1.0 / std::sqrt(static_cast<double>(in_features)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

Tensor Linear::forward(const Tensor& input) { return functional::linear(input, weight, bias); }

// ---------------------------------------------------------------- small layers

GELU::GELU(std::string approximate) : approximate(std::move(approximate)) {
  EMBER_CHECK(this->approximate == "none" || this->approximate == "tanh",
              "approximate argument must be either none or tanh.");
}

Dropout::Dropout(double p) : p(p) {
  EMBER_CHECK(p >= 0.0 && p <= 1.0, "dropout probability has to be between 0 and 1, but got ", p);
}

Embedding::Embedding(int64_t num_embeddings, int64_t embedding_dim)
    : num_embeddings(num_embeddings), embedding_dim(embedding_dim) {
  weight = register_parameter("weight", empty({num_embeddings, embedding_dim}));
  init::normal_(weight);
}

LayerNorm::LayerNorm(std::vector<int64_t> normalized_shape, double eps, bool elementwise_affine, bool bias)
    : normalized_shape(std::move(normalized_shape)), eps(eps) {
  if (!elementwise_affine) return;
  weight = register_parameter("weight", ones(this->normalized_shape));
  if (bias) this->bias = register_parameter("bias", zeros(this->normalized_shape));
}

Tensor LayerNorm::forward(const Tensor& input) {
  return functional::layer_norm(input, normalized_shape, weight, bias, eps);
}

// ---------------------------------------------------------------- containers

Tensor Sequential::forward(const Tensor& input) {
  Tensor x = input;
  for (const auto& item : child_list()) x = item.second->forward(x);
  return x;
}

void Sequential::push_back(std::shared_ptr<Module> module) {
  add_child(std::to_string(child_list().size()), std::move(module));
}

std::shared_ptr<Module> Sequential::operator[](int64_t index) const {
  return child_at(child_list(), index, "Sequential");
}

ModuleList::ModuleList(const std::vector<std::shared_ptr<Module>>& modules) {
  for (const auto& m : modules) push_back(m);
}

void ModuleList::push_back(std::shared_ptr<Module> module) {
  add_child(std::to_string(child_list().size()), std::move(module));
}

std::shared_ptr<Module> ModuleList::operator[](int64_t index) const {
  return child_at(child_list(), index, "ModuleList");
}

}  // namespace ember::nn
