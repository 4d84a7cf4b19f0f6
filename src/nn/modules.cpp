// The layers: parameters, PyTorch's default initialisations, and forward via functional.
#include "ember/nn/modules.h"

#include <cmath>

#include "core/check.h"
#include "ember/factories.h"
#include "ember/grad_mode.h"
#include "ember/nn/embedding_bag.h"
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

GELU::GELU(GELUOptions options) : approximate(std::move(options.approximate)) {
  EMBER_CHECK(this->approximate == "none" || this->approximate == "tanh",
              "approximate argument must be either none or tanh.");
}

Tensor SiLU::forward(const Tensor& input) {
  if (!inplace) return functional::silu(input);
  // ember has no silu_ op: the result of a copy goes into the caller's tensor. silu keeps the
  // copy for its gradient, as PyTorch's silu_ keeps the original values, so the gradient is the
  // same and the caller's handle sees the change.
  Tensor& written = const_cast<Tensor&>(input);
  return written.copy_(functional::silu(input.clone()));
}

Dropout::Dropout(double p, bool inplace) : p(p), inplace(inplace) {
  EMBER_CHECK(p >= 0.0 && p <= 1.0, "dropout probability has to be between 0 and 1, but got ", p);
}

Tensor Dropout::forward(const Tensor& input) {
  Tensor out = functional::dropout(input, p, is_training());
  // PyTorch's dropout_ overwrites the input while training (eval() returns the input itself).
  if (inplace && is_training()) {
    Tensor target = input;
    target.copy_(out);
    return target;
  }
  return out;
}

Embedding::Embedding(int64_t num_embeddings, int64_t embedding_dim, EmbeddingOptions options)
    : num_embeddings(num_embeddings),
      embedding_dim(embedding_dim),
      padding_idx(options.padding_idx),
      max_norm(options.max_norm),
      norm_type(options.norm_type),
      scale_grad_by_freq(options.scale_grad_by_freq),
      sparse(options.sparse) {
  if (padding_idx) {
    EMBER_CHECK(*padding_idx < num_embeddings && *padding_idx >= -num_embeddings,
                "Padding_idx must be within num_embeddings");
    if (*padding_idx < 0) padding_idx = num_embeddings + *padding_idx;
  }
  EMBER_CHECK(!sparse, "Embedding: sparse=True is not supported: ember has no sparse gradients");
  weight = register_parameter("weight", empty({num_embeddings, embedding_dim}));
  reset_parameters();
}

void Embedding::reset_parameters() {
  init::normal_(weight);
  if (padding_idx) {
    NoGradGuard no_grad;
    weight.select(0, *padding_idx).fill_(0);
  }
}

Tensor Embedding::forward(const Tensor& indices) {
  if (max_norm) functional::detail::embedding_renorm_(weight, indices, *max_norm, norm_type);
  Tensor rows = functional::embedding(indices, weight);
  if (!padding_idx && !scale_grad_by_freq) return rows;
  // The gradient of each looked-up row is scaled (by 0 at padding_idx, by 1/count with
  // scale_grad_by_freq) while its value stays exactly the row: rows - fixed is exactly zero.
  const Tensor flat = indices.to(Device(DeviceType::CPU)).to(kInt64).contiguous();
  const int64_t* idx = flat.data_ptr<int64_t>();
  const int64_t n = flat.numel();
  std::vector<int64_t> count(static_cast<size_t>(num_embeddings), 0);
  for (int64_t i = 0; i < n; ++i) {
    if (idx[i] >= 0 && idx[i] < num_embeddings) ++count[static_cast<size_t>(idx[i])];
  }
  std::vector<double> scale(static_cast<size_t>(n), 1.0);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t row = idx[i];
    if (padding_idx && row == *padding_idx) {
      scale[static_cast<size_t>(i)] = 0.0;
    } else if (scale_grad_by_freq && row >= 0 && row < num_embeddings) {
      scale[static_cast<size_t>(i)] = 1.0 / static_cast<double>(count[static_cast<size_t>(row)]);
    }
  }
  std::vector<int64_t> scale_shape = indices.sizes().vec();
  scale_shape.push_back(1);
  const Tensor factor =
      tensor(scale, TensorOptions().dtype(kFloat64)).to(weight.device(), weight.dtype()).reshape(scale_shape);
  const Tensor fixed = rows.detach();
  return fixed + (rows - fixed) * factor;
}

LayerNorm::LayerNorm(SizeList normalized_shape, double eps, bool elementwise_affine, bool bias)
    : normalized_shape(normalized_shape.vec()), eps(eps), elementwise_affine(elementwise_affine) {
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
  for (const auto& item : child_list())
    x = (*item.second)(x);  // through operator(): the child's hooks and parametrizations run
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
