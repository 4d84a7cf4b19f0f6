// functional::scaled_dot_product_attention, nn::MultiheadAttention, nn::TransformerEncoderLayer
// and nn::TransformerEncoder against PyTorch 2.15 (tests/nn/golden/transformer_golden.safetensors
// from tools/gen_transformer_golden.py): outputs, attention weights and every gradient (inputs,
// float masks, each parameter) in float64 and float32; state_dict keys in PyTorch's order; the
// initial parameters for a seed; generate_square_subsequent_mask; PyTorch's error messages;
// dropout only while training; float64 first- and second-order gradchecks.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <optional>
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
namespace F = ember::nn::functional;
using ember_test::error_of;
using ember_test::expect_close;
using Shape = std::vector<int64_t>;

const io::SafetensorsData& golden() {
  static const io::SafetensorsData data =
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/nn/golden/transformer_golden.safetensors");
  return data;
}

/// One golden case, "KIND,key=value,..."; its prefix is "mha3." and the like.
struct Case : ember_test::GoldenCase {
  bool has(const std::string& name) const { return golden().contains(prefix + name); }
  Tensor at(const std::string& name) const { return golden().at(prefix + name); }
};

/// The cases of one series: "sdpa", "mha" or "enc".
std::vector<Case> cases_of(const std::string& series) {
  std::vector<Case> out;
  for (ember_test::GoldenCase& c : ember_test::golden_cases(golden().metadata, series))
    out.push_back(Case{std::move(c)});
  return out;
}

/// A new leaf holding a golden tensor in `dtype` (never the cached golden itself).
Tensor leaf(const Tensor& t, Dtype dtype) { return t.to(dtype).clone().requires_grad_(); }

/// The golden mask `name`, or undefined when the case has none: bool masks as they are, float
/// masks in `dtype`, as leaves requiring grad when PyTorch gave them a gradient.
Tensor mask_of(const Case& c, const std::string& name, Dtype dtype) {
  if (!c.has(name)) return Tensor();
  const Tensor& m = c.at(name);
  if (m.dtype() == kBool) return m.clone();
  return c.has("g" + name) ? leaf(m, dtype) : m.to(dtype).clone();
}

/// Whether every element of a bool tensor is true.
bool all_of(const Tensor& flags) { return flags.to(kInt64).sum().item<int64_t>() == flags.numel(); }

/// The gradients of the case's float masks, where PyTorch computed them.
void expect_mask_grads(const Case& c, const std::vector<std::pair<std::string, Tensor>>& masks, double rtol,
                       double atol) {
  for (const auto& [name, m] : masks) {
    if (c.has("g" + name)) expect_close(m.grad(), c.at("g" + name), rtol, atol, "grad of " + name);
  }
}

void load_golden_state(nn::Module& m, const Case& c, Dtype dtype) {
  m.to(dtype);
  nn::StateDict state;
  for (const std::string& key : c.keys) state.insert(key, c.at("p." + key).to(dtype));
  m.load_state_dict(state);
}

void expect_param_grads(const nn::Module& m, const Case& c, Dtype dtype, double rtol, double atol) {
  const auto params = m.named_parameters();
  ASSERT_EQ(params.size(), c.keys.size());
  for (const auto& [name, p] : params) {
    EXPECT_EQ(p.dtype(), dtype) << name;
    expect_close(p.grad(), c.at("g." + name), rtol, atol, "grad of " + name);
  }
}

// ---------------------------------------------------------------- scaled_dot_product_attention

void check_sdpa(Dtype dtype, double rtol, double atol) {
  const std::vector<Case> cases = cases_of("sdpa");
  ASSERT_EQ(cases.size(), 12u);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.description + " in " + std::string(dtype_name(dtype)));
    Tensor q = leaf(c.at("q"), dtype), k = leaf(c.at("k"), dtype), v = leaf(c.at("v"), dtype);
    Tensor mask = mask_of(c, "mask", dtype);
    const std::string scale_text = c.options.at("scale");
    const std::optional<double> scale =
        scale_text == "none" ? std::nullopt : std::optional<double>(std::stod(scale_text));
    Tensor out = F::scaled_dot_product_attention(q, k, v, mask, 0.0, c.flag("causal"), scale, c.flag("gqa"));
    ASSERT_EQ(out.dtype(), dtype);
    expect_close(out, c.at("out"), rtol, atol, "output");
    (out * c.at("g").to(dtype)).sum().backward();
    // A query that may attend to nothing (sdpa1, sdpa2, sdpa10) gets zeros and finite gradients.
    for (const Tensor* g : {&q, &k, &v}) EXPECT_TRUE(all_of(isfinite(g->grad())));
    expect_close(q.grad(), c.at("gq"), rtol, atol, "grad of query");
    expect_close(k.grad(), c.at("gk"), rtol, atol, "grad of key");
    expect_close(v.grad(), c.at("gv"), rtol, atol, "grad of value");
    expect_mask_grads(c, {{"mask", mask}}, rtol, atol);
  }
}

TEST(ScaledDotProductAttention, GoldensFloat64) { check_sdpa(kFloat64, 1e-10, 1e-10); }

TEST(ScaledDotProductAttention, GoldensFloat32) { check_sdpa(kFloat32, 1e-4, 1e-5); }

TEST(ScaledDotProductAttention, FullyMaskedQueryGetsZeros) {
  manual_seed(1);
  Tensor q = randn({2, 3, 5}, kFloat64), k = randn({2, 4, 5}, kFloat64), v = randn({2, 4, 6}, kFloat64);
  Tensor attend = full({3, 4}, true, kBool);
  attend.select(0, 1).fill_(false);  // query 1 may attend to nothing
  Tensor out = F::scaled_dot_product_attention(q, k, v, attend);
  EXPECT_TRUE(equal(out.select(1, 1), zeros({2, 6}, kFloat64)));
  // The other rows are plain attention.
  Tensor plain = F::scaled_dot_product_attention(q, k, v);
  EXPECT_TRUE(allclose(out.select(1, 0), plain.select(1, 0), 1e-12, 1e-12));
  // A float mask of -inf is the same as a bool mask of false.
  Tensor additive = zeros({3, 4}, kFloat64).masked_fill(logical_not(attend), -INFINITY);
  EXPECT_TRUE(allclose(F::scaled_dot_product_attention(q, k, v, additive), out, 1e-12, 1e-12));
}

TEST(ScaledDotProductAttention, CausalIsALowerTriangularMask) {
  manual_seed(2);
  for (const auto& [L, S] : std::vector<std::pair<int64_t, int64_t>>{{4, 4}, {3, 6}, {6, 3}}) {
    SCOPED_TRACE(std::to_string(L) + "x" + std::to_string(S));
    Tensor q = randn({2, 2, L, 3}, kFloat64), k = randn({2, 2, S, 3}, kFloat64), v = randn({2, 2, S, 4}, kFloat64);
    std::vector<bool> attend;
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < S; ++j) attend.push_back(j <= i);
    Tensor mask = tensor(attend).reshape({L, S});
    EXPECT_TRUE(allclose(F::scaled_dot_product_attention(q, k, v, Tensor(), 0.0, true),
                         F::scaled_dot_product_attention(q, k, v, mask), 1e-12, 1e-12));
  }
}

// ---------------------------------------------------------------- MultiheadAttention

std::shared_ptr<nn::MultiheadAttention> build_mha(const Case& c) {
  return std::make_shared<nn::MultiheadAttention>(
      c.num("embed"), c.num("heads"),
      nn::MultiheadAttentionOptions{.dropout = 0.0,
                                    .bias = c.flag("bias"),
                                    .add_bias_kv = c.flag("add_bias_kv"),
                                    .add_zero_attn = c.flag("add_zero_attn"),
                                    .kdim = c.num("kdim"),
                                    .vdim = c.num("vdim"),
                                    .batch_first = c.flag("batch_first")});
}

void check_mha(Dtype dtype, double rtol, double atol) {
  const std::vector<Case> cases = cases_of("mha");
  ASSERT_EQ(cases.size(), 12u);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.description + " in " + std::string(dtype_name(dtype)));
    std::shared_ptr<nn::MultiheadAttention> m = build_mha(c);
    load_golden_state(*m, c, dtype);
    Tensor q = leaf(c.at("q"), dtype);
    // Self-attention passes one tensor three times, as PyTorch's fast paths require.
    Tensor k = c.flag("self") ? q : leaf(c.at("k"), dtype), v = c.flag("self") ? q : leaf(c.at("v"), dtype);
    Tensor attn_mask = mask_of(c, "attn_mask", dtype), kpm = mask_of(c, "kpm", dtype);
    nn::MultiheadAttentionOutput r = m->forward(q, k, v,
                                                {.key_padding_mask = kpm,
                                                 .need_weights = c.flag("need_weights"),
                                                 .attn_mask = attn_mask,
                                                 .average_attn_weights = c.flag("average"),
                                                 .is_causal = c.flag("causal")});
    ASSERT_EQ(r.output.dtype(), dtype);
    expect_close(r.output, c.at("out"), rtol, atol, "output");
    Tensor loss = (r.output * c.at("g").to(dtype)).sum();
    ASSERT_EQ(r.weights.defined(), c.has("w"));
    if (c.has("w")) {
      expect_close(r.weights, c.at("w"), rtol, atol, "attention weights");
      loss = loss + (r.weights * c.at("gw").to(dtype)).sum();
    }
    loss.backward();
    expect_close(q.grad(), c.at("gq"), rtol, atol, "grad of query");
    if (!c.flag("self")) {
      expect_close(k.grad(), c.at("gk"), rtol, atol, "grad of key");
      expect_close(v.grad(), c.at("gv"), rtol, atol, "grad of value");
    }
    expect_mask_grads(c, {{"attn_mask", attn_mask}, {"kpm", kpm}}, rtol, atol);
    expect_param_grads(*m, c, dtype, rtol, atol);
  }
}

TEST(MultiheadAttention, GoldensFloat64) { check_mha(kFloat64, 1e-10, 1e-10); }

TEST(MultiheadAttention, GoldensFloat32) { check_mha(kFloat32, 1e-4, 1e-5); }

TEST(MultiheadAttention, StateDictKeysInPyTorchsOrder) {
  for (const Case& c : cases_of("mha")) {
    SCOPED_TRACE(c.description);
    std::shared_ptr<nn::MultiheadAttention> m = build_mha(c);
    EXPECT_EQ(m->state_dict().keys(), c.keys);
    for (const auto& [name, p] : m->named_parameters()) {
      EXPECT_EQ(p.sizes().vec(), c.at("p." + name).sizes().vec()) << name;
      EXPECT_TRUE(p.requires_grad()) << name;
      EXPECT_EQ(p.dtype(), kFloat32) << name;
    }
    const bool same = c.num("kdim") == c.num("embed") && c.num("vdim") == c.num("embed");
    EXPECT_EQ(m->in_proj_weight.defined(), same);
    EXPECT_EQ(m->q_proj_weight.defined(), !same);
    EXPECT_EQ(m->in_proj_bias.defined(), c.flag("bias"));
    EXPECT_EQ(m->out_proj->bias.defined(), c.flag("bias"));
    EXPECT_EQ(m->bias_k.defined(), c.flag("add_bias_kv"));
    EXPECT_EQ(m->head_dim, c.num("embed") / c.num("heads"));
  }
}

TEST(MultiheadAttention, QueryThatMayAttendToNothing) {
  // Without weights PyTorch's attention gives zeros there (so the output is out_proj's bias);
  // with weights, NaN.
  manual_seed(3);
  nn::MultiheadAttention m(6, 2);
  m.to(kFloat64);
  {
    NoGradGuard no_grad;
    m.out_proj->bias.copy_(randn({6}, kFloat64));
  }
  Tensor x = randn({4, 3, 6}, kFloat64);
  Tensor kpm = zeros({3, 4}, kBool);
  kpm.select(0, 1).fill_(true);  // batch element 1 may attend to nothing
  nn::MultiheadAttentionOutput without = m.forward(x, x, x, {.key_padding_mask = kpm, .need_weights = false});
  EXPECT_FALSE(without.weights.defined());
  for (int64_t l = 0; l < 4; ++l) EXPECT_TRUE(allclose(without.output[l][1], m.out_proj->bias, 1e-12, 1e-12));
  EXPECT_TRUE(all_of(isfinite(without.output)));
  nn::MultiheadAttentionOutput with = m.forward(x, x, x, {.key_padding_mask = kpm});
  EXPECT_TRUE(all_of(isnan(with.weights.select(0, 1))));
  EXPECT_TRUE(all_of(isnan(with.output.select(1, 1))));
  // The other batch elements agree.
  EXPECT_TRUE(allclose(with.output.select(1, 0), without.output.select(1, 0), 1e-12, 1e-12));
  EXPECT_TRUE(all_of(isfinite(with.weights.select(0, 2))));
}

TEST(MultiheadAttention, SingleInputForwardIsSelfAttentionWithoutWeights) {
  manual_seed(4);
  nn::MultiheadAttention m(8, 4, {.batch_first = true});
  Tensor x = randn({2, 5, 8});
  nn::MultiheadAttentionOutput r = m.forward(x, x, x);
  EXPECT_EQ(r.output.sizes().vec(), (Shape{2, 5, 8}));
  EXPECT_EQ(r.weights.sizes().vec(), (Shape{2, 5, 5}));
  EXPECT_TRUE(allclose(m(x), r.output, 1e-5, 1e-6));
  EXPECT_EQ(m.forward(x, x, x, {.average_attn_weights = false}).weights.sizes().vec(), (Shape{2, 4, 5, 5}));
  EXPECT_EQ(m.forward(x[0], x[0], x[0]).weights.sizes().vec(), (Shape{5, 5}));
  EXPECT_EQ(m.forward(x[0], x[0], x[0], {.average_attn_weights = false}).weights.sizes().vec(), (Shape{4, 5, 5}));
  // Averaged weights are the mean of the per-head ones, and each row sums to 1.
  Tensor heads = m.forward(x, x, x, {.average_attn_weights = false}).weights;
  EXPECT_TRUE(allclose(heads.mean({1}), r.weights, 1e-5, 1e-6));
  EXPECT_TRUE(allclose(r.weights.sum({-1}), ones({2, 5}), 1e-5, 1e-6));
}

// ---------------------------------------------------------------- TransformerEncoderLayer / Encoder

/// A golden encoder case: one layer (layers=0) or an encoder of several.
struct EncoderUnderTest {
  std::shared_ptr<nn::TransformerEncoderLayer> layer;
  std::shared_ptr<nn::TransformerEncoder> encoder;
  nn::Module& module() { return encoder ? static_cast<nn::Module&>(*encoder) : *layer; }
  Tensor forward(const Tensor& x, const Tensor& mask, const Tensor& kpm, bool causal) {
    return encoder ? encoder->forward(x, mask, kpm, causal) : layer->forward(x, mask, kpm, causal);
  }
};

EncoderUnderTest build_enc(const Case& c) {
  EncoderUnderTest e;
  e.layer = std::make_shared<nn::TransformerEncoderLayer>(
      c.num("d_model"), c.num("nhead"),
      nn::TransformerEncoderLayerOptions{.dim_feedforward = c.num("ff"),
                                         .dropout = 0.0,
                                         .activation = c.options.at("activation"),
                                         .layer_norm_eps = std::stod(c.options.at("eps")),
                                         .batch_first = c.flag("batch_first"),
                                         .norm_first = c.flag("norm_first"),
                                         .bias = c.flag("bias")});
  if (c.num("layers") > 0) {
    auto norm = c.flag("final_norm") ? std::make_shared<nn::LayerNorm>(std::vector<int64_t>{c.num("d_model")})
                                     : std::shared_ptr<nn::LayerNorm>();
    e.encoder = std::make_shared<nn::TransformerEncoder>(*e.layer, c.num("layers"), norm);
  }
  return e;
}

void check_enc(Dtype dtype, double rtol, double atol) {
  const std::vector<Case> cases = cases_of("enc");
  ASSERT_EQ(cases.size(), 7u);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.description + " in " + std::string(dtype_name(dtype)));
    EncoderUnderTest e = build_enc(c);
    load_golden_state(e.module(), c, dtype);
    Tensor x = leaf(c.at("x"), dtype);
    Tensor mask = mask_of(c, "mask", dtype), kpm = mask_of(c, "kpm", dtype);
    Tensor out = e.forward(x, mask, kpm, c.flag("causal"));
    ASSERT_EQ(out.dtype(), dtype);
    expect_close(out, c.at("out"), rtol, atol, "output");
    (out * c.at("g").to(dtype)).sum().backward();
    expect_close(x.grad(), c.at("gx"), rtol, atol, "grad of src");
    expect_mask_grads(c, {{"mask", mask}, {"kpm", kpm}}, rtol, atol);
    expect_param_grads(e.module(), c, dtype, rtol, atol);
  }
}

TEST(TransformerEncoder, GoldensFloat64) { check_enc(kFloat64, 1e-10, 1e-10); }

// Two residual blocks of LayerNorm over gradients up to ~50: float32 rounding reaches ~1e-5 there.
TEST(TransformerEncoder, GoldensFloat32) { check_enc(kFloat32, 1e-4, 5e-5); }

TEST(TransformerEncoder, StateDictKeysInPyTorchsOrder) {
  for (const Case& c : cases_of("enc")) {
    SCOPED_TRACE(c.description);
    EncoderUnderTest e = build_enc(c);
    EXPECT_EQ(e.module().state_dict().keys(), c.keys);
    for (const auto& [name, p] : e.module().named_parameters())
      EXPECT_EQ(p.sizes().vec(), c.at("p." + name).sizes().vec()) << name;
  }
}

TEST(TransformerEncoder, LayersAreIndependentCopiesOfTheGivenLayer) {
  manual_seed(5);
  nn::TransformerEncoderLayer layer(6, 2,
                                    {.dim_feedforward = 8, .dropout = 0.0, .batch_first = true, .norm_first = true});
  nn::TransformerEncoder encoder(layer, 3);
  EXPECT_EQ(encoder.num_layers, 3);
  ASSERT_EQ(encoder.layers->size(), 3u);
  EXPECT_EQ(encoder.norm, nullptr);
  const auto original = layer.named_parameters();
  EXPECT_EQ(encoder.parameters().size(), 3 * original.size());
  const nn::StateDict state = encoder.state_dict();
  for (int64_t i = 0; i < 3; ++i) {
    auto copy = std::dynamic_pointer_cast<nn::TransformerEncoderLayer>((*encoder.layers)[i]);
    ASSERT_NE(copy, nullptr);
    EXPECT_TRUE(copy->options.batch_first);
    EXPECT_TRUE(copy->options.norm_first);
    EXPECT_EQ(copy->options.dim_feedforward, 8);
    EXPECT_EQ(copy->options.dropout, 0.0);
    for (const auto& [name, p] : original) {
      const Tensor& mine = state.at("layers." + std::to_string(i) + "." + name);
      EXPECT_TRUE(equal(mine, p.detach())) << i << " " << name;
    }
  }
  // Deep copies: changing one layer changes neither the others nor the given layer.
  {
    NoGradGuard no_grad;
    encoder.named_parameters().front().second.add_(ones({1}));
  }
  EXPECT_FALSE(equal(encoder.state_dict().at("layers.0.self_attn.in_proj_weight"), layer.self_attn->in_proj_weight));
  EXPECT_TRUE(equal(encoder.state_dict().at("layers.1.self_attn.in_proj_weight"), layer.self_attn->in_proj_weight));
  EXPECT_TRUE(equal(encoder.state_dict().at("layers.2.self_attn.in_proj_weight"), layer.self_attn->in_proj_weight));
  // The encoder of one layer (no norm) computes what the layer computes.
  nn::TransformerEncoder single(layer, 1);
  Tensor x = randn({2, 5, 6});
  EXPECT_TRUE(allclose(single(x), layer(x), 1e-6, 1e-6));
}

TEST(TransformerEncoder, BatchFirstAndUnbatchedShapes) {
  manual_seed(6);
  nn::TransformerEncoderLayer seq_first(6, 3, {.dim_feedforward = 10, .dropout = 0.0});
  nn::TransformerEncoderLayer batch_first(6, 3, {.dim_feedforward = 10, .dropout = 0.0, .batch_first = true});
  batch_first.load_state_dict(seq_first.state_dict());
  seq_first.to(kFloat64);
  batch_first.to(kFloat64);
  Tensor x = randn({5, 2, 6}, kFloat64);
  Tensor mask = nn::generate_square_subsequent_mask(5, kFloat64);
  Tensor a = seq_first.forward(x, mask);
  EXPECT_EQ(a.sizes().vec(), (Shape{5, 2, 6}));
  EXPECT_TRUE(allclose(batch_first.forward(x.transpose(0, 1), mask), a.transpose(0, 1), 1e-12, 1e-12));
  // Unbatched [S, E] is a batch of one, whatever batch_first says.
  EXPECT_TRUE(allclose(batch_first.forward(x.select(1, 1), mask), a.select(1, 1), 1e-12, 1e-12));
  EXPECT_TRUE(allclose(seq_first.forward(x.select(1, 0), mask), a.select(1, 0), 1e-12, 1e-12));
  EXPECT_TRUE(allclose(seq_first.forward(x, mask, Tensor(), /*is_causal=*/true), a, 1e-12, 1e-12));
}

// ---------------------------------------------------------------- initialisation and the mask

/// Every parameter of `m` equals the golden "<prefix><name>", and there are as many of each.
void expect_init(const nn::Module& m, const std::string& prefix) {
  // bias_k and bias_v come from normal_, whose float32 values for 16 or more elements differ
  // from PyTorch's in the last bit for about one in six (PyTorch's Box-Muller uses other
  // log/sin/cos implementations; README, limits); everything uniform is bit for bit.
  ember_test::expect_parameters(m, golden(), prefix,
                                [](const std::string& name) { return name == "bias_k" || name == "bias_v"; });
}

TEST(TransformerInit, MatchesTorch) {
  // One after the other from one seed: each module must draw exactly as many numbers as torch's.
  manual_seed(7);
  nn::MultiheadAttention mha(6, 2);
  nn::MultiheadAttention mha_kv(6, 3, {.add_bias_kv = true, .kdim = 5, .vdim = 4});
  nn::MultiheadAttention mha_nobias(16, 4, {.bias = false, .add_bias_kv = true});
  expect_init(mha, "init.seed7.mha.");
  expect_init(mha_kv, "init.seed7.mha_kv.");
  expect_init(mha_nobias, "init.seed7.mha_nobias.");
  // reset_parameters is PyTorch's _reset_parameters: out_proj.weight is not redrawn.
  manual_seed(9);
  mha_kv.reset_parameters();
  expect_init(mha_kv, "init.reset9.mha_kv.");

  manual_seed(3);
  nn::TransformerEncoderLayer layer(6, 2, {.dim_feedforward = 8});
  expect_init(layer, "init.seed3.layer.");
  EXPECT_EQ(layer.options.dropout, 0.1);
  EXPECT_EQ(layer.options.activation, "relu");
  // The encoder copies the layer without drawing; the final norm is ones and zeros.
  manual_seed(5);
  nn::TransformerEncoderLayer first(6, 2, {.dim_feedforward = 8, .norm_first = true, .bias = false});
  nn::TransformerEncoder encoder(first, 2, std::make_shared<nn::LayerNorm>(std::vector<int64_t>{6}));
  expect_init(encoder, "init.seed5.encoder.");
}

TEST(TransformerInit, SquareSubsequentMask) {
  Tensor m = nn::generate_square_subsequent_mask(4);
  EXPECT_EQ(m.dtype(), kFloat32);
  ASSERT_EQ(m.sizes().vec(), (Shape{4, 4}));
  const Tensor& want = golden().at("square_mask4");
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 4; ++j) {
      const double got = m[i][j].item<double>();
      EXPECT_EQ(got, want[i][j].item<double>()) << i << "," << j;
      if (j > i) {
        EXPECT_TRUE(std::isinf(got) && got < 0) << i << "," << j;
      } else {
        EXPECT_EQ(got, 0.0) << i << "," << j;
      }
    }
  }
  Tensor m64 = nn::generate_square_subsequent_mask(3, kFloat64);
  EXPECT_EQ(m64.dtype(), kFloat64);
  EXPECT_EQ(m64.sizes().vec(), (Shape{3, 3}));
  EXPECT_TRUE(std::isinf(m64[0][2].item<double>()));
  EXPECT_EQ(nn::generate_square_subsequent_mask(1)[0][0].item<double>(), 0.0);
}

// ---------------------------------------------------------------- errors

TEST(TransformerErrors, Construction) {
  EXPECT_EQ(error_of([] { nn::MultiheadAttention(10, 3); }), "embed_dim must be divisible by num_heads");
  EXPECT_EQ(error_of([] { nn::TransformerEncoderLayer(6, 4); }), "embed_dim must be divisible by num_heads");
  EXPECT_EQ(error_of([] { nn::MultiheadAttention(0, 2); }),
            "embed_dim and num_heads must be greater than 0, got embed_dim=0 and num_heads=2 instead");
  EXPECT_EQ(error_of([] { nn::MultiheadAttention(6, 0); }),
            "embed_dim and num_heads must be greater than 0, got embed_dim=6 and num_heads=0 instead");
  EXPECT_EQ(error_of([] { nn::TransformerEncoderLayer(6, 2, {.activation = "foo"}); }),
            "activation should be relu/gelu, not foo");
  EXPECT_EQ(error_of([] { nn::TransformerEncoderLayer(6, 2, {.activation = "gelu"}); }), "no error");
}

TEST(TransformerErrors, ScaledDotProductAttention) {
  Tensor q = zeros({2, 3, 4, 5});
  EXPECT_EQ(error_of([&] {
              F::scaled_dot_product_attention(q, q, q, full({4, 4}, true, kBool), 0.0, true);
            }),
            "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True");
  EXPECT_EQ(error_of([&] {
              F::scaled_dot_product_attention(q, zeros({2, 2, 4, 5}), zeros({2, 2, 4, 5}), Tensor(), 0.0, false,
                                              std::nullopt, true);
            }),
            "Number of heads in key and value must divide the number of heads in query");
  EXPECT_EQ(error_of([&] { F::scaled_dot_product_attention(q, q, q.to(kFloat64)); }),
            "Expected query, key, and value to have the same dtype, but got query.dtype: float key.dtype: float and "
            "value.dtype: double instead.");
  EXPECT_EQ(error_of([&] {
              F::scaled_dot_product_attention(q, q, q, zeros({4, 4}, kInt64));
            }),
            "Expected attn_mask dtype to be bool or float or to match query dtype, but got attn_mask.dtype: long int "
            "and  query.dtype: float instead.");
}

TEST(TransformerErrors, MultiheadAttention) {
  nn::MultiheadAttention m(6, 2);
  Tensor x = zeros({4, 3, 6});
  auto call = [&](const Tensor& q, const Tensor& k, const Tensor& v, const nn::MultiheadAttentionArgs& args) {
    return error_of([&] { m.forward(q, k, v, args); });
  };
  EXPECT_EQ(call(x, x, x, {.is_causal = true}),
            "Need attn_mask if specifying the is_causal hint. You may use the Transformer module method "
            "`generate_square_subsequent_mask` to create this mask.");
  EXPECT_EQ(call(x, x, x, {.attn_mask = zeros({4, 5})}),
            "The shape of the 2D attn_mask is torch.Size([4, 5]), but should be (4, 4).");
  EXPECT_EQ(call(x, x, x, {.attn_mask = zeros({5, 4, 4})}),
            "The shape of the 3D attn_mask is torch.Size([5, 4, 4]), but should be (6, 4, 4).");
  EXPECT_EQ(call(x, x, x, {.attn_mask = zeros({2, 4, 4, 4})}),
            "For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found 4-D tensor instead");
  EXPECT_EQ(call(x, x, x, {.attn_mask = zeros({4, 4}, kInt64)}),
            "only bool and floating types of attn_mask are supported");
  EXPECT_EQ(call(x, x, x, {.key_padding_mask = zeros({3, 5}, kBool)}),
            "Expected key_padded_mask.shape[1] to be 4, but got 5");
  EXPECT_EQ(call(x, x, x, {.key_padding_mask = zeros({2, 4}, kBool)}),
            "Expected key_padded_mask.shape[0] to be 3, but got 2");
  EXPECT_EQ(call(x, x, x, {.key_padding_mask = zeros({4}, kBool)}),
            "For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but found 1-D tensor instead");
  EXPECT_EQ(call(zeros({2, 4, 3, 6}), x, x, {}),
            "query should be unbatched 2D or batched 3D tensor but received 4-D query tensor");
  EXPECT_EQ(call(x, zeros({4, 6}), zeros({4, 6}), {}),
            "For batched (3-D) `query`, expected `key` and `value` to be 3-D but found 2-D and 2-D tensors "
            "respectively");
  EXPECT_EQ(call(zeros({4, 6}), x, x, {}),
            "For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found 3-D and 3-D tensors "
            "respectively");
  EXPECT_EQ(call(x, x.narrow(0, 0, 3), x, {}),
            "key shape torch.Size([3, 3, 6]) does not match value shape torch.Size([4, 3, 6])");
  EXPECT_EQ(call(x, x, zeros({4, 3, 5}), {}),
            "key shape torch.Size([4, 3, 6]) does not match value shape torch.Size([4, 3, 5])");
  EXPECT_EQ(call(zeros({4, 3, 5}), x, x, {}), "was expecting embedding dimension of 6, but got 5");
  Tensor u = zeros({4, 6}), s = zeros({5, 6});
  EXPECT_EQ(call(u, s, s, {.attn_mask = zeros({4, 4})}),
            "The shape of the 2D attn_mask is torch.Size([4, 4]), but should be (4, 5).");
  EXPECT_EQ(call(u, s, s, {.attn_mask = zeros({3, 4, 5})}),
            "Expected `attn_mask` shape to be (2, 4, 5) but got torch.Size([3, 4, 5])");
  EXPECT_EQ(
      call(u, s, s, {.key_padding_mask = zeros({1, 5}, kBool)}),
      "For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D but found 2-D tensor instead");

  nn::MultiheadAttention separate(6, 2, {.kdim = 5, .vdim = 3});
  EXPECT_EQ(error_of([&] {
              separate.forward(x, zeros({4, 3, 5}), zeros({3, 3, 3}));
            }),
            "key's sequence and batch dims torch.Size([4, 3]) do not match value's torch.Size([3, 3])");
}

TEST(TransformerErrors, EncoderLayer) {
  nn::TransformerEncoderLayer layer(6, 2, {.dim_feedforward = 8});
  nn::TransformerEncoder encoder(layer, 2);
  Tensor x = zeros({4, 3, 6});
  const std::string causal =
      "Need attn_mask if specifying the is_causal hint. You may use the Transformer module method "
      "`generate_square_subsequent_mask` to create this mask.";
  EXPECT_EQ(error_of([&] { layer.forward(x, Tensor(), Tensor(), true); }), causal);
  EXPECT_EQ(error_of([&] { encoder.forward(x, Tensor(), Tensor(), true); }), causal);
  EXPECT_EQ(error_of([&] {
              layer.forward(x, zeros({3, 3}));
            }),
            "The shape of the 2D attn_mask is torch.Size([3, 3]), but should be (4, 4).");
  EXPECT_EQ(error_of([&] {
              layer.forward(x, Tensor(), zeros({3, 5}, kBool));
            }),
            "Expected key_padded_mask.shape[1] to be 4, but got 5");
  // A 3-D [N * nhead, S, S] mask is accepted.
  EXPECT_EQ(error_of([&] { layer.forward(x, zeros({6, 4, 4})); }), "no error");
}

// ---------------------------------------------------------------- dropout

TEST(TransformerDropout, OnlyWhileTraining) {
  manual_seed(10);
  Tensor q = randn({2, 2, 4, 3}), k = randn({2, 2, 5, 3}), v = randn({2, 2, 5, 3});
  auto sdpa = [&](uint64_t seed, double p) {
    manual_seed(seed);
    return F::scaled_dot_product_attention(q, k, v, Tensor(), p);
  };
  EXPECT_TRUE(equal(sdpa(1, 0.5), sdpa(1, 0.5)));
  EXPECT_FALSE(equal(sdpa(1, 0.5), sdpa(2, 0.5)));
  EXPECT_TRUE(equal(sdpa(1, 0.0), F::scaled_dot_product_attention(q, k, v)));

  manual_seed(11);
  nn::MultiheadAttention mha(6, 2, {.dropout = 0.5});
  nn::MultiheadAttention plain(6, 2);
  plain.load_state_dict(mha.state_dict());
  Tensor x = randn({4, 3, 6});
  auto mha_out = [&](uint64_t seed) {
    manual_seed(seed);
    return mha.forward(x, x, x).output;
  };
  ASSERT_TRUE(mha.is_training());
  EXPECT_TRUE(equal(mha_out(1), mha_out(1)));
  EXPECT_FALSE(allclose(mha_out(1), mha_out(2), 1e-3, 1e-3));
  EXPECT_FALSE(allclose(mha_out(1), plain.forward(x, x, x).output, 1e-3, 1e-3));
  mha.eval();
  EXPECT_TRUE(allclose(mha_out(1), mha_out(2), 0, 0));
  EXPECT_TRUE(allclose(mha_out(1), plain.forward(x, x, x).output, 1e-6, 1e-7));
  EXPECT_TRUE(allclose(mha.forward(x, x, x).weights, plain.forward(x, x, x).weights, 1e-6, 1e-7));

  manual_seed(12);
  nn::TransformerEncoderLayer layer(6, 2, {.dim_feedforward = 16});  // dropout 0.1 by default
  nn::TransformerEncoderLayer undropped(6, 2, {.dim_feedforward = 16, .dropout = 0.0});
  undropped.load_state_dict(layer.state_dict());
  auto layer_out = [&](uint64_t seed) {
    manual_seed(seed);
    return layer(x);
  };
  EXPECT_TRUE(equal(layer_out(1), layer_out(1)));
  EXPECT_FALSE(allclose(layer_out(1), layer_out(2), 1e-3, 1e-3));
  // Dropout 0 while training is the same as evaluation.
  Tensor reference = undropped(x);
  undropped.eval();
  EXPECT_TRUE(allclose(undropped(x), reference, 1e-6, 1e-7));
  layer.eval();
  EXPECT_TRUE(allclose(layer_out(1), layer_out(2), 0, 0));
  EXPECT_TRUE(allclose(layer_out(1), reference, 1e-6, 1e-7));
  nn::TransformerEncoder encoder(layer, 2);
  encoder.eval();
  EXPECT_FALSE(encoder.layers->is_training());
  EXPECT_TRUE(allclose(encoder(x), undropped(undropped(x)), 1e-6, 1e-7));
}

// ---------------------------------------------------------------- gradchecks

Tensor flat_cat(const std::vector<Tensor>& parts) {
  std::vector<Tensor> flat;
  for (const Tensor& p : parts) flat.push_back(p.reshape({-1}));
  return cat(flat, 0);
}

TEST(TransformerGradcheck, ScaledDotProductAttention) {
  manual_seed(20);
  Tensor attend = tensor(std::vector<bool>{true, false, true, true, true, false}).reshape({2, 3});
  auto f = [&](const std::vector<Tensor>& in) {
    return flat_cat({F::scaled_dot_product_attention(in[0], in[1], in[2], in[3], 0.0, false, 0.7),
                     F::scaled_dot_product_attention(in[0], in[1], in[2], attend),
                     F::scaled_dot_product_attention(in[0], in[1], in[2], Tensor(), 0.0, true)});
  };
  std::vector<Tensor> inputs{randn({2, 2, 3}, kFloat64), randn({2, 3, 3}, kFloat64), randn({2, 3, 2}, kFloat64),
                             randn({2, 3}, kFloat64)};
  test::gradcheck("sdpa", f, inputs);
  test::gradgradcheck("sdpa", f, inputs);
}

TEST(TransformerGradcheck, MultiheadAttentionWithMasks) {
  manual_seed(21);
  auto m = std::make_shared<nn::MultiheadAttention>(4, 2, nn::MultiheadAttentionOptions{.kdim = 3, .vdim = 2});
  m->to(kFloat64);
  // A float key_padding_mask with a float attn_mask (PyTorch deprecates mixing the two kinds).
  Tensor kpm = tensor(std::vector<double>{0, 0, -INFINITY, 0, -INFINITY, 0.5}, kFloat64).reshape({2, 3});
  auto f = [&](const std::vector<Tensor>& in) {
    nn::MultiheadAttentionOutput r =
        m->forward(in[0], in[1], in[2], {.key_padding_mask = kpm, .attn_mask = in[3], .average_attn_weights = false});
    return flat_cat({r.output, r.weights});
  };
  std::vector<Tensor> inputs{randn({2, 2, 4}, kFloat64), randn({3, 2, 3}, kFloat64), randn({3, 2, 2}, kFloat64),
                             randn({2, 3}, kFloat64)};
  test::gradcheck("MultiheadAttention", f, inputs);
  test::gradgradcheck("MultiheadAttention", f, inputs);
}

TEST(TransformerGradcheck, EncoderLayers) {
  manual_seed(22);
  auto pre = std::make_shared<nn::TransformerEncoderLayer>(
      4, 2,
      nn::TransformerEncoderLayerOptions{
          .dim_feedforward = 6, .dropout = 0.0, .activation = "gelu", .norm_first = true});
  auto post = std::make_shared<nn::TransformerEncoderLayer>(
      4, 2, nn::TransformerEncoderLayerOptions{.dim_feedforward = 6, .dropout = 0.0});
  pre->to(kFloat64);
  post->to(kFloat64);
  auto f = [&](const std::vector<Tensor>& in) {
    return flat_cat({pre->forward(in[0], in[1]), post->forward(in[0], in[1])});
  };
  std::vector<Tensor> inputs{randn({3, 2, 4}, kFloat64), randn({3, 3}, kFloat64)};
  test::gradcheck("TransformerEncoderLayer", f, inputs);
  test::gradgradcheck("TransformerEncoderLayer", f, inputs);
}

}  // namespace
