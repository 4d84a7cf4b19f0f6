// ember::models::Seq2Seq against the attention encoder-decoder of bentrevett's pytorch-seq2seq
// tutorial 4 with LSTMs (re-written in tools/gen_models_seq2seq_golden.py): state_dict keys, order
// and shapes; in float64 with pattern() weights (vocabularies 13 and 11, emb 6, enc_hid 5,
// dec_hid 7) on sources of lengths 7, 5, 3, 2 (packed, so the padding is skipped and masked),
// the encoder's outputs and hidden state, the decoder outputs, the cross-entropy loss ignoring
// the target padding and every parameter's gradient (both LSTM directions included) to 1e-10,
// with teacher forcing at every step and with three steps reading the decoder's own argmax, in
// train mode (dropout 0) and eval mode (dropout 0.5, off); the initial draws from
// manual_seed(0) with the tutorial's init_weights; the teacher-forcing ratio's determinism;
// PyTorch's messages for unsorted lengths and for padding beyond the longest source; Adam steps
// that lower the loss.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/models/seq2seq.h"
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
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/models/golden/models_seq2seq_golden.safetensors");
  return data;
}

const models::Seq2SeqOptions kSmall{.input_dim = 13,
                                    .output_dim = 11,
                                    .enc_emb_dim = 6,
                                    .dec_emb_dim = 6,
                                    .enc_hid_dim = 5,
                                    .dec_hid_dim = 7,
                                    .enc_dropout = 0.0,
                                    .dec_dropout = 0.0,
                                    .src_pad_idx = 1};
constexpr int64_t kTrgPad = 1;

Tensor tutorial_loss(const Tensor& outputs, const Tensor& trg) {
  const int64_t trg_len = outputs.size(0), vocab = outputs.size(2);
  return nn::functional::cross_entropy(outputs.narrow(0, 1, trg_len - 1).reshape({-1, vocab}),
                                       trg.narrow(0, 1, trg_len - 1).reshape({-1}), nn::Reduction::Mean, 0.0, Tensor(),
                                       /*ignore_index=*/kTrgPad);
}

TEST(ModelsSeq2Seq, StateDictKeysAreTheTutorials) {
  auto model = std::make_shared<models::Seq2Seq>(models::Seq2SeqOptions{});
  EXPECT_EQ(keys_and_shapes(model->state_dict()), split(golden().metadata.at("keys"), ';'));
  EXPECT_EQ(model->name(), "Seq2Seq");
  EXPECT_EQ(model->get_submodule("encoder")->name(), "Encoder");
  EXPECT_EQ(model->get_submodule("decoder.attention")->name(), "Attention");
  EXPECT_EQ(model->get_submodule("decoder.rnn")->name(), "LSTM");
  EXPECT_EQ(model->get_submodule("encoder.rnn")->name(), "LSTM");
}

std::shared_ptr<models::Seq2Seq> small_float64(double dropout) {
  models::Seq2SeqOptions options = kSmall;
  options.enc_dropout = options.dec_dropout = dropout;
  auto model = std::make_shared<models::Seq2Seq>(options);
  model->to(kFloat64);
  fill_state(*model);
  return model;
}

TEST(ModelsSeq2Seq, MatchesTheTutorialInFloat64) {
  const auto& g = golden();
  const Tensor src = g.at("src"), src_len = g.at("src_len"), trg = g.at("trg");
  for (const bool training : {true, false}) {
    SCOPED_TRACE(training ? "train, dropout 0" : "eval, dropout 0.5");
    auto model = small_float64(training ? 0.0 : 0.5);
    model->train(training);
    {
      NoGradGuard no_grad;
      const auto [outputs, hidden] = model->encoder->forward(src, src_len);
      EXPECT_LT(relative_error(outputs, g.at("enc.outputs")), 1e-12);
      EXPECT_LT(relative_error(hidden, g.at("enc.hidden")), 1e-12);
      // Zeros after each source's end (lengths 7, 5, 3, 2).
      EXPECT_EQ(outputs.narrow(0, 2, 5).select(1, 3).abs().sum().item<double>(), 0.0);
    }
    const std::vector<std::pair<std::string, std::vector<bool>>> cases = {{"tf", {true, true, true, true, true}},
                                                                          {"mixed", {true, false, false, true, false}}};
    for (const auto& [name, decisions] : cases) {
      SCOPED_TRACE(name);
      model->zero_grad();
      const Tensor outputs = model->forward(src, src_len, trg, decisions);
      const Tensor loss = tutorial_loss(outputs, trg);
      loss.backward();
      EXPECT_LT(relative_error(outputs, g.at(name + ".out")), 1e-10);
      EXPECT_LT(relative_error(loss, g.at(name + ".loss")), 1e-12);
      const auto parameters = model->named_parameters();
      EXPECT_EQ(parameters.size(), 21u);  // encoder 11 (8 in its LSTM), decoder 10
      const auto grads = ember_models_test::unpack(g.at(name + ".grads"), parameters);
      for (size_t i = 0; i < parameters.size(); ++i) {
        const auto& [key, p] = parameters[i];
        ASSERT_TRUE(p.grad().defined()) << key;
        EXPECT_LT(relative_error(p.grad(), grads[i]), 1e-10) << key;
      }
    }
  }
}

TEST(ModelsSeq2Seq, MatchesTheTutorialInFloat32ToItsPrecision) {
  const auto& g = golden();
  auto model = std::make_shared<models::Seq2Seq>(kSmall);
  fill_state(*model);  // the float64 pattern, rounded to float32
  // The argmax decisions of the mixed case have margins above 5e-4, far above float32's error.
  const Tensor outputs = model->forward(g.at("src"), g.at("src_len"), g.at("trg"), {true, false, false, true, false});
  EXPECT_EQ(outputs.dtype(), kFloat32);
  const Tensor loss = tutorial_loss(outputs, g.at("trg"));
  loss.backward();
  EXPECT_LT(relative_error(outputs, g.at("mixed.out")), 1e-5);
  EXPECT_LT(relative_error(loss, g.at("mixed.loss")), 1e-5);
  const auto parameters = model->named_parameters();
  const auto grads = ember_models_test::unpack(g.at("mixed.grads"), parameters);
  for (size_t i = 0; i < parameters.size(); ++i)
    EXPECT_LT(relative_error(parameters[i].second.grad(), grads[i]), 1e-4) << parameters[i].first;
}

TEST(ModelsSeq2Seq, TeacherForcingRatioIsDeterministic) {
  const auto& g = golden();
  const Tensor src = g.at("src"), src_len = g.at("src_len"), trg = g.at("trg");
  auto model = small_float64(0.0);
  NoGradGuard no_grad;
  // A ratio of 1 forces every step, 0 none, without drawing.
  EXPECT_LT(relative_error(model->forward(src, src_len, trg, 1.0), g.at("tf.out")), 1e-10);
  const Tensor free_running = model->forward(src, src_len, trg, 0.0);
  EXPECT_EQ(relative_error(free_running, model->forward(src, src_len, trg, std::vector<bool>(5, false))), 0.0);
  // Row 0 is the unpredicted <sos> position.
  EXPECT_EQ(free_running[0].abs().sum().item<double>(), 0.0);
  // A ratio in between draws from the model's generator: the same seed, the same run.
  model->teacher_forcing_generator.seed(7);
  const Tensor first = model->forward(src, src_len, trg, 0.5);
  model->teacher_forcing_generator.seed(7);
  EXPECT_EQ(relative_error(model->forward(src, src_len, trg, 0.5), first), 0.0);
}

TEST(ModelsSeq2Seq, InitialDrawsAreTheTutorialsFromTheSameSeed) {
  manual_seed(0);
  models::Seq2Seq model(kSmall);
  models::init_weights(model);
  // As expect_init_summary, to two units in float32's last place: N(0, 0.01) is scaled in
  // another precision than PyTorch's, and a value of the 1,536 drawn lands two units away.
  int64_t checked = 0;
  for (const auto& [key, p] : model.named_parameters()) {
    const Tensor expected = golden().at("init." + key);
    const Tensor flat = p.detach().reshape({-1}).to(kFloat64);
    EXPECT_NEAR(flat.sum().item<double>(), expected[0].item<double>(), 1e-7 * (flat.abs().sum().item<double>() + 1.0))
        << key;
    for (int64_t i = 0; i < std::min<int64_t>(4, flat.numel()); ++i) {
      const double want = expected[i + 1].item<double>();
      EXPECT_NEAR(flat[i].item<double>(), want, 2.5e-7 * std::abs(want)) << key << "[" << i << "]";
    }
    ++checked;
  }
  EXPECT_EQ(checked, 21);
  EXPECT_EQ(model.get_parameter("decoder.fc_out.bias").abs().sum().item<double>(), 0.0);
}

TEST(ModelsSeq2Seq, Messages) {
  manual_seed(0);
  auto model = std::make_shared<models::Seq2Seq>(kSmall);
  const Tensor src = randint(3, 13, {7, 4}), trg = randint(3, 11, {6, 4});
  auto lengths = [](std::vector<int64_t> values) { return tensor(values); };
  EXPECT_EQ(error_of([&] {
              model->forward(src, lengths({5, 7, 3, 2}), trg, 1.0);
            }),
            "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can pass "
            "`enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this requirement if you "
            "do not need ONNX exportability.");
  EXPECT_EQ(error_of([&] {
              model->forward(src, lengths({7, 5, 3, 0}), trg, 1.0);
            }),
            "Length of all samples has to be greater than 0, but found an element in 'lengths' that is <= 0");
  // Padding beyond the longest source: the mask is wider than the unpacked encoder outputs.
  EXPECT_EQ(error_of([&] {
              model->forward(src, lengths({6, 5, 3, 2}), trg, 1.0);
            }),
            "The size of tensor a (7) must match the size of tensor b (6) at non-singleton dimension 1");
  EXPECT_EQ(error_of([&] {
              model->forward(src, lengths({7, 5, 3, 2}), trg, std::vector<bool>(3, true));
            }),
            "Seq2Seq: teacher_force needs one decision per decoding step (5), got 3");
}

TEST(ModelsSeq2Seq, AdamStepsLowerTheLoss) {
  manual_seed(0);
  auto model = std::make_shared<models::Seq2Seq>(models::Seq2SeqOptions{.input_dim = 12,
                                                                        .output_dim = 12,
                                                                        .enc_emb_dim = 8,
                                                                        .dec_emb_dim = 8,
                                                                        .enc_hid_dim = 12,
                                                                        .dec_hid_dim = 12,
                                                                        .enc_dropout = 0.1,
                                                                        .dec_dropout = 0.1});
  models::init_weights(*model);
  // Copy the source: trg = <sos> 2, then the source tokens, padded with 1 as the source.
  const std::vector<int64_t> lens = {6, 5, 4, 3};
  Tensor src = randint(3, 12, {6, 4});
  for (int64_t b = 0; b < 4; ++b)
    if (lens[b] < 6) src.narrow(0, lens[b], 6 - lens[b]).select(1, b).fill_(1);
  const Tensor trg = cat({full({1, 4}, 2, TensorOptions().dtype(kInt64)), src}, 0);
  optim::Adam optimizer(model->parameters(), {.lr = 1e-2});
  double first = 0.0, last = 0.0;
  for (int step = 0; step < 30; ++step) {
    const Tensor loss = tutorial_loss(model->forward(src, tensor(lens), trg, 1.0), trg);
    if (step == 0) first = loss.item<double>();
    last = loss.item<double>();
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
  }
  EXPECT_LT(last, 0.6 * first) << "first " << first;
}

}  // namespace
