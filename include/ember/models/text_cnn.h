#pragma once
/// ember::models::TextCNN: the convolutional sentence classifier of Kim (2014) as bentrevett's
/// pytorch-sentiment-analysis tutorial writes it with one-dimensional convolutions (class CNN1d of
/// "4 - Convolutional Sentiment Analysis"; class CNN of the current "3_cnn" notebook), with its
/// module names, so that a state_dict moves between the two unchanged:
///   embedding.weight, convs.<i>.{weight,bias} (one Conv1d per filter size), fc.{weight,bias}
///
///   auto model = std::make_shared<ember::models::TextCNN>(ember::models::TextCNNOptions{.vocab_size = 20000});
///   Tensor logits = model->forward(ids);   // ids: int64 [batch, seq len] → [batch, output_dim]
///
/// forward: embedding → [batch, embedding_dim, seq len] → per filter size ReLU(conv) and the
/// maximum over the whole remaining time axis (max_pool1d with the conv output's length) →
/// concatenated [batch, len(filter_sizes) * n_filters] → dropout → fc.
/// Initialisation is PyTorch's default for each layer (the tutorial's): the embedding N(0, 1) with
/// the pad_index row zeroed, convolutions and fc U(±1/√fan_in) for weights and biases.
/// Departures: the input is batch-first [batch, seq len] as the current notebook takes it (the
/// legacy one took [seq len, batch] and permuted it); a sentence must have at least
/// max(filter_sizes) tokens, as the tutorial's (pad short ones with pad_index).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ember/nn/conv.h"
#include "ember/nn/modules.h"

namespace ember::models {

/// The tutorial's constructor arguments, named as there, with its hyper-parameters as defaults
/// (IMDB's 25,000-word vocabulary plus <unk> and <pad>, one logit for BCEWithLogitsLoss).
struct TextCNNOptions {
  int64_t vocab_size = 25002;
  int64_t embedding_dim = 100;
  int64_t n_filters = 100;
  std::vector<int64_t> filter_sizes = {3, 4, 5};
  int64_t output_dim = 1;
  double dropout = 0.5;
  /// The padding token: its embedding row starts as zeros and gets no gradient.
  int64_t pad_index = 1;
};

class TextCNN : public nn::Module {
 public:
  explicit TextCNN(TextCNNOptions options = {});
  /// The tutorial's class name (current notebook; the legacy one called it CNN1d).
  std::string name() const override { return "CNN"; }
  /// ids: int64 [batch, seq len], seq len >= max(filter_sizes) → logits [batch, output_dim].
  Tensor forward(const Tensor& ids) override;

  TextCNNOptions options;
  std::shared_ptr<nn::Embedding> embedding;
  std::shared_ptr<nn::ModuleList> convs;  // one Conv1d(embedding_dim, n_filters, fs) per filter size
  std::shared_ptr<nn::Linear> fc;
  std::shared_ptr<nn::Dropout> dropout;
};

}  // namespace ember::models
