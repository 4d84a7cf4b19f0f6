// The tutorial's attention encoder-decoder with LSTMs (see include/ember/models/seq2seq.h),
// built from ember::nn layers.
#include "ember/models/seq2seq.h"

#include <utility>

#include "core/check.h"
#include "ember/factories.h"
#include "ember/grad_mode.h"
#include "ember/nn/functional.h"
#include "ember/nn/init.h"
#include "ember/nn/packed_sequence.h"
#include "ember/ops.h"

namespace ember::models {

namespace F = nn::functional;
namespace rnn_utils = nn::utils::rnn;

Encoder::Encoder(int64_t input_dim, int64_t emb_dim, int64_t enc_hid_dim, int64_t dec_hid_dim, double dropout_p) {
  embedding = register_module("embedding", std::make_shared<nn::Embedding>(input_dim, emb_dim));
  rnn =
      register_module("rnn", std::make_shared<nn::LSTM>(emb_dim, enc_hid_dim, nn::LSTMOptions{.bidirectional = true}));
  fc = register_module("fc", std::make_shared<nn::Linear>(enc_hid_dim * 2, dec_hid_dim));
  dropout = register_module("dropout", std::make_shared<nn::Dropout>(dropout_p));
}

Encoder::Output Encoder::forward(const Tensor& src, const Tensor& src_len) {
  EMBER_CHECK(src.dim() == 2, "Encoder: src must be [src len, batch], got ", src.dim(), " dimensions");
  const Tensor embedded = (*dropout)((*embedding)(src));  // [src len, batch, emb dim]
  // Packed, each source runs for its own length: the backward direction starts at its last
  // real token, and the final states are those after it, not after the padding.
  const rnn_utils::PackedSequence packed_embedded = rnn_utils::pack_padded_sequence(embedded, src_len.cpu());
  const nn::PackedLSTMOutput run = rnn->forward(packed_embedded);
  const Tensor outputs = rnn_utils::pad_packed_sequence(run.output).first;  // zeros after each end
  // h_n[-2] is the last layer's forward state, h_n[-1] its backward one.
  const int64_t layers = run.h_n.size(0);
  const Tensor hidden = tanh((*fc)(cat({run.h_n.select(0, layers - 2), run.h_n.select(0, layers - 1)}, 1)));
  return {outputs, hidden};
}

Tensor Encoder::forward(const Tensor&) {
  EMBER_CHECK(false, "Encoder: forward needs the source lengths: call forward(src, src_len)");
  return {};
}

Attention::Attention(int64_t enc_hid_dim, int64_t dec_hid_dim) {
  attn = register_module("attn", std::make_shared<nn::Linear>(enc_hid_dim * 2 + dec_hid_dim, dec_hid_dim));
  v = register_module("v", std::make_shared<nn::Linear>(dec_hid_dim, 1, false));
}

Tensor Attention::forward(const Tensor& hidden, const Tensor& encoder_outputs, const Tensor& mask) {
  const int64_t src_len = encoder_outputs.size(0);
  // The decoder state beside every source position: [batch, src len, dec hid + 2 enc hid].
  const Tensor repeated = hidden.unsqueeze(1).repeat({1, src_len, 1});
  const Tensor energy = tanh((*attn)(cat({repeated, encoder_outputs.permute({1, 0, 2})}, 2)));
  Tensor attention = (*v)(energy).squeeze(2);  // [batch, src len]
  // -1e10 rather than -inf, as the tutorial: padding gets exp(-1e10 - max) = 0 exactly.
  attention = attention.masked_fill(logical_not(mask), -1e10);
  return F::softmax(attention, 1);
}

Tensor Attention::forward(const Tensor&) {
  EMBER_CHECK(false, "Attention: call forward(hidden, encoder_outputs, mask)");
  return {};
}

Decoder::Decoder(int64_t output_dim_, int64_t emb_dim, int64_t enc_hid_dim, int64_t dec_hid_dim, double dropout_p,
                 std::shared_ptr<Attention> attention_)
    : output_dim(output_dim_) {
  EMBER_CHECK(attention_ != nullptr, "Decoder: attention must be an Attention module");
  attention = register_module("attention", std::move(attention_));
  embedding = register_module("embedding", std::make_shared<nn::Embedding>(output_dim, emb_dim));
  rnn = register_module("rnn", std::make_shared<nn::LSTM>(enc_hid_dim * 2 + emb_dim, dec_hid_dim));
  fc_out = register_module("fc_out", std::make_shared<nn::Linear>(enc_hid_dim * 2 + dec_hid_dim + emb_dim, output_dim));
  dropout = register_module("dropout", std::make_shared<nn::Dropout>(dropout_p));
}

Decoder::Output Decoder::forward(const Tensor& input, const Tensor& hidden, const Tensor& cell,
                                 const Tensor& encoder_outputs, const Tensor& mask) {
  const Tensor embedded = (*dropout)((*embedding)(input.unsqueeze(0)));                   // [1, batch, emb dim]
  const Tensor a = attention->forward(hidden, encoder_outputs, mask).unsqueeze(1);        // [batch, 1, src len]
  const Tensor weighted = bmm(a, encoder_outputs.permute({1, 0, 2})).permute({1, 0, 2});  // [1, batch, 2 enc hid]
  const nn::LSTMOutput step = rnn->forward(cat({embedded, weighted}, 2), hidden.unsqueeze(0), cell.unsqueeze(0));
  const Tensor prediction = (*fc_out)(cat({step.output.squeeze(0), weighted.squeeze(0), embedded.squeeze(0)}, 1));
  return {prediction, step.h_n.squeeze(0), step.c_n.squeeze(0), a.squeeze(1)};
}

Tensor Decoder::forward(const Tensor&) {
  EMBER_CHECK(false, "Decoder: call forward(input, hidden, cell, encoder_outputs, mask)");
  return {};
}

Seq2Seq::Seq2Seq(std::shared_ptr<Encoder> encoder_, std::shared_ptr<Decoder> decoder_, int64_t src_pad_idx_)
    : src_pad_idx(src_pad_idx_) {
  EMBER_CHECK(encoder_ != nullptr && decoder_ != nullptr, "Seq2Seq: encoder and decoder must be given");
  encoder = register_module("encoder", std::move(encoder_));
  decoder = register_module("decoder", std::move(decoder_));
}

namespace {

// The tutorial builds the attention, then the encoder, then the decoder: the order of the
// default initialisations' draws.
std::pair<std::shared_ptr<Encoder>, std::shared_ptr<Decoder>> build(const Seq2SeqOptions& o) {
  auto attention = std::make_shared<Attention>(o.enc_hid_dim, o.dec_hid_dim);
  auto encoder = std::make_shared<Encoder>(o.input_dim, o.enc_emb_dim, o.enc_hid_dim, o.dec_hid_dim, o.enc_dropout);
  auto decoder = std::make_shared<Decoder>(o.output_dim, o.dec_emb_dim, o.enc_hid_dim, o.dec_hid_dim, o.dec_dropout,
                                           std::move(attention));
  return {std::move(encoder), std::move(decoder)};
}

}  // namespace

Seq2Seq::Seq2Seq(const Seq2SeqOptions& options) : src_pad_idx(options.src_pad_idx) {
  auto built = build(options);
  encoder = register_module("encoder", std::move(built.first));
  decoder = register_module("decoder", std::move(built.second));
}

Tensor Seq2Seq::create_mask(const Tensor& src) const { return (src != Scalar(src_pad_idx)).permute({1, 0}); }

Tensor Seq2Seq::forward(const Tensor& src, const Tensor& src_len, const Tensor& trg, double teacher_forcing_ratio) {
  EMBER_CHECK(trg.dim() == 2 && trg.size(0) >= 1, "Seq2Seq: trg must be [trg len, batch], got ", trg.dim(),
              " dimensions");
  std::vector<bool> teacher_force(static_cast<size_t>(trg.size(0) - 1));
  for (size_t t = 0; t < teacher_force.size(); ++t) {
    if (teacher_forcing_ratio >= 1.0 || teacher_forcing_ratio <= 0.0) {
      teacher_force[t] = teacher_forcing_ratio >= 1.0;
    } else {
      // A double in [0, 1) from 53 random bits, as Python's random.random().
      const double draw = static_cast<double>(teacher_forcing_generator() >> 11) * 0x1.0p-53;
      teacher_force[t] = draw < teacher_forcing_ratio;
    }
  }
  return forward(src, src_len, trg, teacher_force);
}

Tensor Seq2Seq::forward(const Tensor& src, const Tensor& src_len, const Tensor& trg,
                        const std::vector<bool>& teacher_force) {
  EMBER_CHECK(src.dim() == 2, "Seq2Seq: src must be [src len, batch], got ", src.dim(), " dimensions");
  EMBER_CHECK(trg.dim() == 2 && trg.size(-1) == src.size(1), "Seq2Seq: trg must be [trg len, batch] with src's batch ",
              src.size(1), ", got ", trg.dim(), " dimensions of last size ", trg.size(-1));
  const int64_t trg_len = trg.size(0);
  EMBER_CHECK(static_cast<int64_t>(teacher_force.size()) == trg_len - 1,
              "Seq2Seq: teacher_force needs one decision per decoding step (", trg_len - 1, "), got ",
              teacher_force.size());
  auto [encoder_outputs, hidden] = encoder->forward(src, src_len);
  Tensor cell = zeros_like(hidden);  // the decoder LSTM's first cell state (see the header)
  const Tensor mask = create_mask(src);
  // Row 0 (the <sos> position) stays zeros, as the tutorial's outputs tensor.
  std::vector<Tensor> outputs{zeros({src.size(1), decoder->output_dim}, hidden.options())};
  Tensor input = trg.select(0, 0);
  for (int64_t t = 1; t < trg_len; ++t) {
    Decoder::Output step = decoder->forward(input, hidden, cell, encoder_outputs, mask);
    hidden = step.hidden;
    cell = step.cell;
    outputs.push_back(step.prediction);
    input = teacher_force[static_cast<size_t>(t - 1)] ? trg.select(0, t) : argmax(step.prediction, 1);
  }
  return stack(outputs, 0);
}

Tensor Seq2Seq::forward(const Tensor&) {
  EMBER_CHECK(false, "Seq2Seq: call forward(src, src_len, trg, teacher_forcing_ratio)");
  return {};
}

void init_weights(nn::Module& model) {
  NoGradGuard no_grad;
  model.apply([](nn::Module& module) {
    for (const auto& [key, parameter] : module.named_parameters()) {
      if (key.find("weight") != std::string::npos) {
        nn::init::normal_(parameter, 0.0, 0.01);
      } else {
        nn::init::zeros_(parameter);
      }
    }
  });
}

}  // namespace ember::models
