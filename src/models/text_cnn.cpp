// The tutorial's convolutional sentence classifier (see include/ember/models/text_cnn.h), built
// from ember::nn layers.
#include "ember/models/text_cnn.h"

#include <utility>

#include "core/check.h"
#include "ember/nn/functional.h"
#include "ember/nn/pooling.h"
#include "ember/ops.h"

namespace ember::models {

namespace F = nn::functional;

TextCNN::TextCNN(TextCNNOptions options_) : options(std::move(options_)) {
  EMBER_CHECK(
      options.vocab_size >= 1 && options.embedding_dim >= 1 && options.n_filters >= 1 && options.output_dim >= 1,
      "TextCNN: vocab_size, embedding_dim, n_filters and output_dim must be positive");
  EMBER_CHECK(!options.filter_sizes.empty(), "TextCNN: filter_sizes must name at least one filter size");
  for (const int64_t size : options.filter_sizes)
    EMBER_CHECK(size >= 1, "TextCNN: every filter size must be positive, got ", size);
  // Constructed in the tutorial's order, so that the default initialisations draw as PyTorch's.
  embedding = register_module("embedding",
                              std::make_shared<nn::Embedding>(options.vocab_size, options.embedding_dim,
                                                              nn::EmbeddingOptions{.padding_idx = options.pad_index}));
  convs = register_module("convs", std::make_shared<nn::ModuleList>());
  for (const int64_t size : options.filter_sizes)
    convs->push_back(std::make_shared<nn::Conv1d>(options.embedding_dim, options.n_filters, size));
  const auto concatenated = static_cast<int64_t>(options.filter_sizes.size()) * options.n_filters;
  fc = register_module("fc", std::make_shared<nn::Linear>(concatenated, options.output_dim));
  dropout = register_module("dropout", std::make_shared<nn::Dropout>(options.dropout));
}

Tensor TextCNN::forward(const Tensor& ids) {
  EMBER_CHECK(ids.dim() == 2, "TextCNN: ids must be [batch, seq len], got ", ids.dim(), " dimensions");
  // [batch, seq len, emb dim] → [batch, emb dim, seq len]: the embedding is the convolutions' channels.
  const Tensor embedded = (*embedding)(ids).permute({0, 2, 1});
  std::vector<Tensor> pooled;
  pooled.reserve(convs->size());
  for (const auto& item : *convs) {
    const Tensor conved = F::relu((*item.second)(embedded));  // [batch, n_filters, seq len - fs + 1]
    // One window over the whole time axis: the strongest response of each filter anywhere.
    pooled.push_back(F::max_pool1d(conved, {conved.size(2)}).squeeze(2));
  }
  return (*fc)((*dropout)(cat(pooled, 1)));
}

}  // namespace ember::models
