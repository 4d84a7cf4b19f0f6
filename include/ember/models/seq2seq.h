#pragma once
/// ember::models::Seq2Seq: the attention encoder-decoder (Bahdanau et al. 2015) as bentrevett's
/// pytorch-seq2seq tutorial "4 - Packed Padded Sequences, Masking, Inference and BLEU" writes it
/// (Encoder, Attention, Decoder, Seq2Seq and its init_weights), with the GRUs replaced by LSTMs,
/// and its module names, so that a state_dict moves between the two unchanged:
///   encoder.embedding.weight, encoder.rnn.{weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0}
///   and the same with _reverse, encoder.fc.{weight,bias},
///   decoder.attention.attn.{weight,bias}, decoder.attention.v.weight, decoder.embedding.weight,
///   decoder.rnn.{weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0}, decoder.fc_out.{weight,bias}
///
///   auto model = std::make_shared<ember::models::Seq2Seq>(ember::models::Seq2SeqOptions{.input_dim = 5000, .output_dim
///   = 5000}); ember::models::init_weights(*model);                        // the tutorial's N(0, 0.01) / 0 Tensor
///   outputs = model->forward(src, src_len, trg, 1.0);    // [trg len, batch, output_dim] loss =
///   cross_entropy(outputs[1:].view({-1, V}), trg[1:].view({-1}), ..., ignore_index = trg pad)
///
/// Sequences are time-major as the tutorial's: src [src len, batch], trg [trg len, batch] with
/// <sos> first; src_len [batch] the source lengths, not increasing (the tutorial's batches are
/// sorted by length), the longest equal to src len. The encoder packs the embedded source
/// (nn::utils::rnn::pack_padded_sequence), so each source runs for its own length in both
/// directions, and the attention masks the padding (src_pad_idx) with -1e10 before its softmax.
///
/// Departures from the tutorial, and why:
///  * LSTMs for the GRUs (the task of this port). The encoder's final cell states are dropped
///    (its GRU had none): the decoder's LSTM starts from the tutorial's
///    hidden = tanh(fc([h_forward; h_backward])) and a zero cell state, and carries its cell
///    state from step to step, so Decoder::forward takes and returns a cell state.
///  * Teacher forcing: the tutorial draws Python's random.random() < teacher_forcing_ratio at
///    each step. Here the ratio form draws from the model's own std::mt19937_64 (seeded by
///    teacher_forcing_seed; ratio >= 1 and <= 0 decide without drawing), and a second form takes
///    the decisions themselves, one per decoding step, so that a run can be repeated exactly.
///  * The outputs take the decoder's dtype and device (the tutorial's torch.zeros is float32 on
///    a device given to Seq2Seq's constructor, which here has no device argument).
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ember/nn/modules.h"
#include "ember/nn/rnn.h"

namespace ember::models {

/// Embeds the source, runs a bidirectional LSTM over it packed, and maps the last forward and
/// backward hidden states to the decoder's first hidden state.
class Encoder : public nn::Module {
 public:
  Encoder(int64_t input_dim, int64_t emb_dim, int64_t enc_hid_dim, int64_t dec_hid_dim, double dropout);
  std::string name() const override { return "Encoder"; }
  struct Output {
    Tensor outputs;  // [src len, batch, 2 enc_hid_dim], zeros after each source's end
    Tensor hidden;   // [batch, dec_hid_dim]
  };
  /// src int64 [src len, batch]; src_len [batch] (int64, not increasing, the first = src len).
  Output forward(const Tensor& src, const Tensor& src_len);
  Tensor forward(const Tensor&) override;  // refused: the encoder needs the lengths

  std::shared_ptr<nn::Embedding> embedding;
  std::shared_ptr<nn::LSTM> rnn;
  std::shared_ptr<nn::Linear> fc;
  std::shared_ptr<nn::Dropout> dropout;
};

/// Additive attention: v(tanh(attn([hidden; encoder output]))) over the source positions,
/// padding masked to -1e10, softmax.
class Attention : public nn::Module {
 public:
  Attention(int64_t enc_hid_dim, int64_t dec_hid_dim);
  std::string name() const override { return "Attention"; }
  /// hidden [batch, dec_hid_dim], encoder_outputs [src len, batch, 2 enc_hid_dim], mask bool
  /// [batch, src len] (true at real tokens) → weights [batch, src len], each row summing to 1.
  Tensor forward(const Tensor& hidden, const Tensor& encoder_outputs, const Tensor& mask);
  Tensor forward(const Tensor&) override;  // refused

  std::shared_ptr<nn::Linear> attn, v;
};

/// One decoding step: the embedded input token and the attention-weighted encoder outputs go
/// into the LSTM; fc_out reads [LSTM output; weighted; embedded].
class Decoder : public nn::Module {
 public:
  Decoder(int64_t output_dim, int64_t emb_dim, int64_t enc_hid_dim, int64_t dec_hid_dim, double dropout,
          std::shared_ptr<Attention> attention);
  std::string name() const override { return "Decoder"; }
  struct Output {
    Tensor prediction;  // [batch, output_dim]
    Tensor hidden;      // [batch, dec_hid_dim]
    Tensor cell;        // [batch, dec_hid_dim]
    Tensor attention;   // [batch, src len]
  };
  /// input int64 [batch] (the previous token), hidden and cell [batch, dec_hid_dim].
  Output forward(const Tensor& input, const Tensor& hidden, const Tensor& cell, const Tensor& encoder_outputs,
                 const Tensor& mask);
  Tensor forward(const Tensor&) override;  // refused

  int64_t output_dim;
  std::shared_ptr<Attention> attention;
  std::shared_ptr<nn::Embedding> embedding;
  std::shared_ptr<nn::LSTM> rnn;
  std::shared_ptr<nn::Linear> fc_out;
  std::shared_ptr<nn::Dropout> dropout;
};

/// The tutorial's hyper-parameters (INPUT_DIM and OUTPUT_DIM its Multi30k vocabularies' sizes).
struct Seq2SeqOptions {
  int64_t input_dim = 7853;
  int64_t output_dim = 5893;
  int64_t enc_emb_dim = 256;
  int64_t dec_emb_dim = 256;
  int64_t enc_hid_dim = 512;
  int64_t dec_hid_dim = 512;
  double enc_dropout = 0.5;
  double dec_dropout = 0.5;
  int64_t src_pad_idx = 1;
};

class Seq2Seq : public nn::Module {
 public:
  /// The tutorial's constructor (less its device argument).
  Seq2Seq(std::shared_ptr<Encoder> encoder, std::shared_ptr<Decoder> decoder, int64_t src_pad_idx);
  /// Builds the Attention, Encoder and Decoder as the tutorial does, in its order.
  explicit Seq2Seq(const Seq2SeqOptions& options);
  std::string name() const override { return "Seq2Seq"; }
  /// (src != src_pad_idx) as [batch, src len].
  Tensor create_mask(const Tensor& src) const;
  /// outputs [trg len, batch, output_dim], row 0 zeros (the <sos> position is not predicted).
  /// Step t reads trg[t - 1] when teacher forced, else the argmax of step t - 1's prediction;
  /// each step is teacher forced with probability teacher_forcing_ratio (see the header).
  Tensor forward(const Tensor& src, const Tensor& src_len, const Tensor& trg, double teacher_forcing_ratio = 0.5);
  /// The same with the decisions given: teacher_force[t - 1] for step t = 1 .. trg len - 1.
  Tensor forward(const Tensor& src, const Tensor& src_len, const Tensor& trg, const std::vector<bool>& teacher_force);
  Tensor forward(const Tensor&) override;  // refused: the model needs src_len and trg

  std::shared_ptr<Encoder> encoder;
  std::shared_ptr<Decoder> decoder;
  int64_t src_pad_idx;
  /// Draws the teacher-forcing decisions of forward(..., ratio) (Python's random in the tutorial).
  std::mt19937_64 teacher_forcing_generator{0};
};

/// The tutorial's init_weights applied as model.apply(init_weights) applies it: for every module,
/// children first, every parameter below it whose name contains "weight" from N(0, 0.01) and the
/// rest zeros (so that manual_seed gives the tutorial's initial values).
void init_weights(nn::Module& model);

}  // namespace ember::models
