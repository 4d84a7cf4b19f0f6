// ember::models::TextCNN against the convolutional sentence classifier of bentrevett's
// pytorch-sentiment-analysis tutorial (re-written in tools/gen_models_text_cnn_golden.py):
// state_dict keys, order and shapes; in float64 with pattern() weights (vocab 50, embedding 8,
// 4 filters of sizes 2, 3, 4), the logits, the loss and every parameter's gradient to 1e-10 for
// one logit with BCEWithLogitsLoss and three with cross-entropy, in train mode (dropout 0) and
// eval mode (dropout 0.5, off); the initial draws from manual_seed(0); PyTorch's messages for
// a sentence shorter than the largest filter and a token outside the vocabulary; Adam steps
// that lower the loss.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/models/text_cnn.h"
#include "models/model_pattern.h"
#include "support/error_of.h"

namespace {

using namespace ember;
using ember_models_test::fill_state;
using ember_models_test::keys_and_shapes;
using ember_models_test::relative_error;
using ember_models_test::split;
using ember_test::error_of;

const io::SafetensorsData& golden() {
  static const io::SafetensorsData data =
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/models/golden/models_text_cnn_golden.safetensors");
  return data;
}

const models::TextCNNOptions kSmall{.vocab_size = 50,
                                    .embedding_dim = 8,
                                    .n_filters = 4,
                                    .filter_sizes = {2, 3, 4},
                                    .output_dim = 1,
                                    .dropout = 0.0,
                                    .pad_index = 1};

TEST(ModelsTextCNN, StateDictKeysAreTheTutorials) {
  auto model = std::make_shared<models::TextCNN>();
  EXPECT_EQ(keys_and_shapes(model->state_dict()), split(golden().metadata.at("keys"), ';'));
  EXPECT_EQ(model->name(), "CNN");
  EXPECT_EQ(model->convs->name(), "ModuleList");
  EXPECT_EQ(model->get_submodule("convs.2")->name(), "Conv1d");
  // The tutorial's 2,620,801 trainable parameters with its 25,002-word vocabulary.
  int64_t count = 0;
  for (const Tensor& p : model->parameters()) count += p.numel();
  EXPECT_EQ(count, 2620801);
  // The padding row starts as zeros.
  EXPECT_EQ(model->embedding->weight[1].abs().sum().item<double>(), 0.0);
}

void expect_matches(models::TextCNN& model, const std::string& prefix, bool binary) {
  const auto& g = golden();
  model.zero_grad();
  const Tensor out = model.forward(g.at("ids"));
  const Tensor loss = binary ? nn::functional::binary_cross_entropy_with_logits(out.squeeze(1), g.at(prefix + "label"))
                             : nn::functional::cross_entropy(out, g.at(prefix + "label"));
  loss.backward();
  EXPECT_LT(relative_error(out, g.at(prefix + "out")), 1e-10);
  EXPECT_LT(relative_error(loss, g.at(prefix + "loss")), 1e-12);
  const auto parameters = model.named_parameters();
  EXPECT_EQ(parameters.size(), 9u);  // embedding, 3 convs' weight and bias, fc's
  const auto grads = ember_models_test::unpack(g.at(prefix + "grads"), parameters);
  for (size_t i = 0; i < parameters.size(); ++i) {
    const auto& [key, p] = parameters[i];
    ASSERT_TRUE(p.grad().defined()) << key;
    EXPECT_LT(relative_error(p.grad(), grads[i]), 1e-10) << key;
  }
  // The padding row gets no gradient; the repeated token's row gets both of its positions'.
  EXPECT_EQ(model.embedding->weight.grad()[1].abs().sum().item<double>(), 0.0);
}

TEST(ModelsTextCNN, MatchesTheTutorialInFloat64) {
  for (const bool training : {true, false}) {
    SCOPED_TRACE(training ? "train, dropout 0" : "eval, dropout 0.5");
    models::TextCNNOptions options = kSmall;
    options.dropout = training ? 0.0 : 0.5;
    auto binary = std::make_shared<models::TextCNN>(options);
    binary->to(kFloat64);
    fill_state(*binary);
    binary->train(training);
    expect_matches(*binary, "", true);

    options.output_dim = 3;
    auto classes = std::make_shared<models::TextCNN>(options);
    classes->to(kFloat64);
    fill_state(*classes);
    classes->train(training);
    expect_matches(*classes, "ce.", false);
  }
}

TEST(ModelsTextCNN, MatchesTheTutorialInFloat32ToItsPrecision) {
  const auto& g = golden();
  auto model = std::make_shared<models::TextCNN>(kSmall);
  fill_state(*model);  // the float64 pattern, rounded to float32
  const Tensor out = model->forward(g.at("ids"));
  EXPECT_EQ(out.dtype(), kFloat32);
  const Tensor loss = nn::functional::binary_cross_entropy_with_logits(out.squeeze(1), g.at("label").to(kFloat32));
  loss.backward();
  EXPECT_LT(relative_error(out, g.at("out")), 1e-5);
  EXPECT_LT(relative_error(loss, g.at("loss")), 1e-5);
  const auto parameters = model->named_parameters();
  const auto grads = ember_models_test::unpack(g.at("grads"), parameters);
  for (size_t i = 0; i < parameters.size(); ++i)
    EXPECT_LT(relative_error(parameters[i].second.grad(), grads[i]), 1e-4) << parameters[i].first;
}

TEST(ModelsTextCNN, InitialDrawsAreTheTutorialsFromTheSameSeed) {
  manual_seed(0);
  models::TextCNNOptions options = kSmall;
  options.filter_sizes = {2, 3, 4, 5};
  ember_models_test::expect_init_summary(models::TextCNN(options), golden(), "init");
}

TEST(ModelsTextCNN, Messages) {
  auto model = std::make_shared<models::TextCNN>(kSmall);
  // A sentence shorter than the largest filter (the tutorial pads such ones to min_len).
  EXPECT_EQ(error_of([&] {
              model->forward(ones({2, 3}, TensorOptions().dtype(kInt64)));
            }),
            "Calculated padded input size per channel: (3). Kernel size: (4). Kernel size can't be greater than "
            "actual input size");
  EXPECT_EQ(error_of([&] {
              model->forward(full({2, 6}, 50, TensorOptions().dtype(kInt64)));
            }),
            "index out of range in self");
  EXPECT_EQ(error_of([&] { model->forward(ones({5}, TensorOptions().dtype(kInt64))); }),
            "TextCNN: ids must be [batch, seq len], got 1 dimensions");
  EXPECT_EQ(error_of([] { models::TextCNN(models::TextCNNOptions{.filter_sizes = {}}); }),
            "TextCNN: filter_sizes must name at least one filter size");
}

TEST(ModelsTextCNN, AdamStepsLowerTheLoss) {
  manual_seed(0);
  auto model = std::make_shared<models::TextCNN>(models::TextCNNOptions{
      .vocab_size = 30, .embedding_dim = 16, .n_filters = 8, .filter_sizes = {2, 3}, .output_dim = 1, .dropout = 0.2});
  // Positive sentences contain token 5, negative ones token 6, among random filler.
  Tensor ids = randint(7, 30, {16, 10});
  std::vector<double> labels;
  for (int64_t b = 0; b < 16; ++b) {
    ids[b][b % 8].fill_(b % 2 == 0 ? 5 : 6);
    labels.push_back(b % 2 == 0 ? 1.0 : 0.0);
  }
  const Tensor label = tensor(labels);
  optim::Adam optimizer(model->parameters(), {.lr = 1e-2});
  double first = 0.0, last = 0.0;
  for (int step = 0; step < 20; ++step) {
    const Tensor loss = nn::functional::binary_cross_entropy_with_logits(model->forward(ids).squeeze(1), label);
    if (step == 0) first = loss.item<double>();
    last = loss.item<double>();
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
  }
  EXPECT_LT(last, 0.5 * first) << "first " << first;
}

}  // namespace
