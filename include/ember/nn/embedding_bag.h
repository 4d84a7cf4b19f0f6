#pragma once
/// torch.nn.EmbeddingBag and torch.nn.functional.embedding_bag: the sums, means or maxima of bags
/// of embedding rows, without materialising the rows of every bag. Composed of ember's ops
/// (index_select of the rows, scatter_add into the bags; max mode: the bags' rows gathered into a
/// padded [bags, longest bag, dim] block and reduced with max), so autograd and every device come
/// with it. The bags are laid out on the host from `input` and `offsets` (read back from the
/// device when they live there, as PyTorch's CPU kernel reads them).
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "ember/nn/module.h"
#include "ember/nn/modules.h"
#include "ember/tensor.h"

namespace ember::nn {

namespace functional {

/// PyTorch's arguments, order and defaults (torch.nn.functional.embedding_bag):
///  - input: 1-D int64/int32 indices cut into bags by `offsets` (bag b starts at offsets[b]; the
///    first offset must be 0), or 2-D [B, N]: B bags of N indices each (offsets must then be
///    undefined); an empty bag gives zeros;
///  - weight [num_embeddings, embedding_dim], floating;
///  - max_norm: before the lookup, every row that `input` names whose norm_type-norm exceeds
///    max_norm is rescaled in place (without recording) to max_norm / (norm + 1e-7) of itself;
///  - scale_grad_by_freq (sum and mean): each row's gradient is divided by how often it occurs in
///    `input`;
///  - mode "sum", "mean" (PyTorch's default) or "max" (the gradient goes to the first maximum);
///  - sparse: refused (ember has no sparse gradients);
///  - per_sample_weights (mode "sum"): one weight per index, of weight's dtype and input's shape;
///  - include_last_offset: offsets has one more entry than there are bags (the last bag still
///    runs to the end of input, as PyTorch's CPU kernel does);
///  - padding_idx (may be negative): indices equal to it count for nothing, not even in a mean's
///    divisor, and their row gets no gradient.
/// The result is [bags, embedding_dim].
Tensor embedding_bag(const Tensor& input, const Tensor& weight, const Tensor& offsets = Tensor(),
                     std::optional<double> max_norm = std::nullopt, double norm_type = 2.0,
                     bool scale_grad_by_freq = false, const std::string& mode = "mean", bool sparse = false,
                     const Tensor& per_sample_weights = Tensor(), bool include_last_offset = false,
                     std::optional<int64_t> padding_idx = std::nullopt);

namespace detail {
/// torch.embedding_renorm_ (no autograd): every distinct row of weight named by `indices` whose
/// norm_type-norm exceeds max_norm is scaled in place by max_norm / (norm + 1e-7).
void embedding_renorm_(const Tensor& weight, const Tensor& indices, double max_norm, double norm_type);
}  // namespace detail

}  // namespace functional

/// The options of nn.EmbeddingBag after num_embeddings and embedding_dim, PyTorch's defaults.
struct EmbeddingBagOptions {
  detail::DesignatedOnly designated_only = {};
  std::optional<double> max_norm = std::nullopt;
  double norm_type = 2.0;
  bool scale_grad_by_freq = false;
  std::string mode = "mean";  // "sum", "mean" or "max"
  bool sparse = false;        // refused: ember has no sparse gradients
  bool include_last_offset = false;
  std::optional<int64_t> padding_idx = std::nullopt;
};

/// torch.nn.EmbeddingBag(num_embeddings, embedding_dim, max_norm=None, norm_type=2,
/// scale_grad_by_freq=False, mode="mean", sparse=False, include_last_offset=False,
/// padding_idx=None) (without _weight, device and dtype). weight [num_embeddings, embedding_dim]
/// is drawn from N(0, 1) with the padding_idx row zeroed; a negative padding_idx is stored as
/// num_embeddings + padding_idx. sparse=true is refused.
class EmbeddingBag : public Module {
 public:
  EmbeddingBag(int64_t num_embeddings, int64_t embedding_dim, std::optional<double> max_norm = std::nullopt,
               double norm_type = 2.0, bool scale_grad_by_freq = false, std::string mode = "mean", bool sparse = false,
               bool include_last_offset = false, std::optional<int64_t> padding_idx = std::nullopt);
  ///   nn::EmbeddingBag(100, 16, {.mode = "sum", .padding_idx = 0});
  EmbeddingBag(int64_t num_embeddings, int64_t embedding_dim, EmbeddingBagOptions options)
      : EmbeddingBag(num_embeddings, embedding_dim, options.max_norm, options.norm_type, options.scale_grad_by_freq,
                     std::move(options.mode), options.sparse, options.include_last_offset, options.padding_idx) {}
  std::string name() const override { return "EmbeddingBag"; }
  /// offsets undefined for a 2-D input; per_sample_weights undefined for none.
  Tensor forward(const Tensor& input, const Tensor& offsets, const Tensor& per_sample_weights = Tensor());
  Tensor forward(const Tensor& input) override { return forward(input, Tensor()); }
  Tensor operator()(const Tensor& input, const Tensor& offsets, const Tensor& per_sample_weights = Tensor()) {
    return forward(input, offsets, per_sample_weights);
  }
  using Module::operator();
  /// Redraws weight from N(0, 1) and zeroes the padding_idx row, as PyTorch's reset_parameters().
  void reset_parameters();

  int64_t num_embeddings, embedding_dim;
  std::optional<double> max_norm;
  double norm_type;
  bool scale_grad_by_freq;
  std::string mode;
  bool sparse, include_last_offset;
  std::optional<int64_t> padding_idx;
  Tensor weight;
};

}  // namespace ember::nn
