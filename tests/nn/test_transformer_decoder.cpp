// nn::TransformerDecoderLayer, TransformerDecoder and Transformer against PyTorch 2.15
// (tests/nn/golden/transformer_decoder_golden.safetensors from
// tools/gen_transformer_decoder_golden.py): outputs and every gradient in float64 and float32,
// state_dict keys in PyTorch's order, the initial parameters for a seed, PyTorch's error
// messages, and a float64 gradcheck through a whole Transformer.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/nn/transformer.h"
#include "support/error_of.h"
#include "support/golden_cases.h"
#include "support/gradcheck.h"

namespace {

using namespace ember;
namespace nn = ember::nn;
using ember_test::error_of;
using ember_test::expect_close;
using ember_test::split_commas;

const io::SafetensorsData& golden() {
  static const io::SafetensorsData data =
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/nn/golden/transformer_decoder_golden.safetensors");
  return data;
}

struct Case : ember_test::GoldenCase {
  std::vector<std::string> flags;  // the is_causal arguments set
  bool has_flag(const std::string& name) const {
    for (const std::string& f : flags) {
      if (f == name) return true;
    }
    return false;
  }
  bool has(const std::string& name) const { return golden().contains(prefix + name); }
  Tensor at(const std::string& name) const { return golden().at(prefix + name); }
  /// A golden mask in `dtype` when it is a float mask (bool masks stay bool); undefined if absent.
  Tensor mask(const std::string& name, Dtype dtype) const {
    if (!has(name)) return Tensor();
    const Tensor m = at(name);
    return m.dtype() == kBool ? m : m.to(dtype);
  }
};

std::vector<Case> all_cases() {
  std::vector<Case> out;
  for (ember_test::GoldenCase& g : ember_test::golden_cases(golden().metadata)) {
    Case c{std::move(g), {}};
    c.flags = split_commas(golden().metadata.at(c.prefix + "flags"));
    out.push_back(std::move(c));
  }
  return out;
}

nn::TransformerDecoderLayerOptions layer_options(const Case& c) {
  return {.dim_feedforward = c.num("ff"),
          .dropout = 0.0,
          .activation = c.options.at("activation"),
          .layer_norm_eps = std::stod(c.options.at("eps")),
          .batch_first = c.flag("batch_first"),
          .norm_first = c.flag("norm_first"),
          .bias = c.flag("bias")};
}

std::shared_ptr<nn::Module> build(const Case& c) {
  const int64_t d = c.num("d_model"), h = c.num("nhead");
  if (c.kind == "DecoderLayer") return std::make_shared<nn::TransformerDecoderLayer>(d, h, layer_options(c));
  if (c.kind == "Decoder") {
    nn::TransformerDecoderLayer layer(d, h, layer_options(c));
    auto norm =
        std::make_shared<nn::LayerNorm>(std::vector<int64_t>{d}, std::stod(c.options.at("eps")), true, c.flag("bias"));
    return std::make_shared<nn::TransformerDecoder>(layer, c.num("layers"), norm);
  }
  const nn::TransformerDecoderLayerOptions o = layer_options(c);
  return std::make_shared<nn::Transformer>(nn::TransformerOptions{.d_model = d,
                                                                  .nhead = h,
                                                                  .num_encoder_layers = c.num("enc"),
                                                                  .num_decoder_layers = c.num("dec"),
                                                                  .dim_feedforward = o.dim_feedforward,
                                                                  .dropout = 0.0,
                                                                  .activation = o.activation,
                                                                  .layer_norm_eps = o.layer_norm_eps,
                                                                  .batch_first = o.batch_first,
                                                                  .norm_first = o.norm_first,
                                                                  .bias = o.bias});
}

Tensor run(const Case& c, nn::Module& m, const Tensor& a, const Tensor& b, Dtype dtype) {
  if (c.kind == "Transformer") {
    return static_cast<nn::Transformer&>(m).forward(a, b,
                                                    {.src_mask = c.mask("src_mask", dtype),
                                                     .tgt_mask = c.mask("tgt_mask", dtype),
                                                     .memory_mask = c.mask("memory_mask", dtype),
                                                     .src_key_padding_mask = c.mask("src_kpm", dtype),
                                                     .tgt_key_padding_mask = c.mask("tgt_kpm", dtype),
                                                     .memory_key_padding_mask = c.mask("memory_kpm", dtype),
                                                     .src_is_causal = c.has_flag("src_is_causal"),
                                                     .tgt_is_causal = c.has_flag("tgt_is_causal"),
                                                     .memory_is_causal = c.has_flag("memory_is_causal")});
  }
  const nn::TransformerDecoderArgs args{.tgt_mask = c.mask("tgt_mask", dtype),
                                        .memory_mask = c.mask("memory_mask", dtype),
                                        .tgt_key_padding_mask = c.mask("tgt_kpm", dtype),
                                        .memory_key_padding_mask = c.mask("memory_kpm", dtype),
                                        .tgt_is_causal = c.has_flag("tgt_is_causal"),
                                        .memory_is_causal = c.has_flag("memory_is_causal")};
  if (c.kind == "Decoder") return static_cast<nn::TransformerDecoder&>(m).forward(a, b, args);
  return static_cast<nn::TransformerDecoderLayer&>(m).forward(a, b, args);
}

void check_goldens(Dtype dtype, double rtol, double atol) {
  const std::vector<Case> cases = all_cases();
  ASSERT_EQ(cases.size(), 6u);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.description + " in " + std::string(dtype_name(dtype)));
    std::shared_ptr<nn::Module> m = build(c);
    EXPECT_EQ(m->state_dict().keys(), c.keys);
    m->to(dtype);
    nn::StateDict state;
    for (const std::string& key : c.keys) state.insert(key, c.at("p." + key).to(dtype));
    m->load_state_dict(state);
    Tensor a = c.at("a").to(dtype).clone().requires_grad_();
    Tensor b = c.at("b").to(dtype).clone().requires_grad_();
    Tensor y = run(c, *m, a, b, dtype);
    expect_close(y, c.at("y"), rtol, atol, "output");
    (y * c.at("gy").to(dtype)).sum().backward();
    expect_close(a.grad(), c.at("ga"), rtol, atol, "grad of the first input");
    expect_close(b.grad(), c.at("gb"), rtol, atol, "grad of the second input");
    for (const auto& [name, p] : m->named_parameters()) expect_close(p.grad(), c.at("g." + name), rtol, atol, name);
  }
}

TEST(TransformerDecoder, GoldensFloat64) { check_goldens(kFloat64, 1e-10, 1e-10); }

TEST(TransformerDecoder, GoldensFloat32) { check_goldens(kFloat32, 1e-4, 5e-5); }

/// Every parameter of `m` equals the golden "<prefix><name>" (all uniform draws: bit for bit).
void expect_init(const nn::Module& m, const std::string& prefix) { ember_test::expect_parameters(m, golden(), prefix); }

TEST(TransformerDecoder, InitialParametersForASeedArePyTorchs) {
  manual_seed(11);
  nn::Transformer t(
      {.d_model = 8, .nhead = 2, .num_encoder_layers = 2, .num_decoder_layers = 1, .dim_feedforward = 16});
  expect_init(t, "init.seed11.transformer.");
  manual_seed(12);
  nn::TransformerDecoderLayer layer(6, 2, {.dim_feedforward = 8});
  expect_init(layer, "init.seed12.decoder_layer.");
}

TEST(TransformerDecoder, DecoderLayersAreCopies) {
  manual_seed(13);
  nn::TransformerDecoderLayer layer(6, 2, {.dim_feedforward = 8, .dropout = 0.0});
  nn::TransformerDecoder decoder(layer, 2);
  const nn::StateDict original = layer.state_dict();
  for (const auto& [name, child] : *decoder.layers) {
    for (const auto& [key, value] : child->state_dict()) EXPECT_TRUE(equal(value, original.at(key))) << name << key;
  }
  // Copies, not aliases: a step on one layer leaves the other and the original alone.
  auto& first = static_cast<nn::TransformerDecoderLayer&>(*(*decoder.layers)[0]);
  NoGradGuard no_grad;
  first.linear1->weight.add_(1.0);
  EXPECT_TRUE(
      equal(static_cast<nn::TransformerDecoderLayer&>(*(*decoder.layers)[1]).linear1->weight, layer.linear1->weight));
  EXPECT_FALSE(equal(first.linear1->weight, layer.linear1->weight));
}

TEST(TransformerDecoder, Gradcheck) {
  manual_seed(14);
  auto t = std::make_shared<nn::Transformer>(nn::TransformerOptions{.d_model = 4,
                                                                    .nhead = 2,
                                                                    .num_encoder_layers = 1,
                                                                    .num_decoder_layers = 1,
                                                                    .dim_feedforward = 6,
                                                                    .dropout = 0.0,
                                                                    .activation = "gelu"});
  t->to(kFloat64);
  const Tensor mask = nn::generate_square_subsequent_mask(3, kFloat64);
  auto f = [&](const std::vector<Tensor>& in) {
    return t->forward(in[0], in[1], {.tgt_mask = mask, .tgt_is_causal = true}).reshape({-1});
  };
  test::gradcheck("Transformer", f, {randn({4, 2, 4}, kFloat64), randn({3, 2, 4}, kFloat64)});
}

TEST(TransformerDecoder, Errors) {
  nn::Transformer t({.d_model = 4, .nhead = 2, .num_encoder_layers = 1, .num_decoder_layers = 1, .dim_feedforward = 6});
  EXPECT_EQ(error_of([&] {
              t.forward(zeros({5, 2, 4}), zeros({3, 3, 4}));
            }),
            "the batch number of src and tgt must be equal");
  EXPECT_EQ(error_of([&] {
              t.forward(zeros({5, 2, 4}), zeros({3, 2, 5}));
            }),
            "the feature number of src and tgt must be equal to d_model");
  EXPECT_EQ(error_of([] { nn::TransformerDecoderLayer(4, 2, {.activation = "tanh"}); }),
            "activation should be relu/gelu, not tanh");
  nn::TransformerDecoderLayer layer(4, 2, {.dim_feedforward = 6});
  EXPECT_EQ(error_of([&] {
              layer.forward(zeros({3, 2, 4}), zeros({5, 2, 4}), {.tgt_is_causal = true});
            }),
            "Need attn_mask if specifying the is_causal hint. You may use the Transformer module method "
            "`generate_square_subsequent_mask` to create this mask.");
  EXPECT_EQ(error_of([&] {
              layer.forward(zeros({3, 2, 4}), zeros({5, 2, 4}), {.memory_mask = zeros({3, 4})});
            }),
            "The shape of the 2D attn_mask is torch.Size([3, 4]), but should be (3, 5).");
}

}  // namespace
