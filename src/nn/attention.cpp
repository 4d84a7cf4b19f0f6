// scaled_dot_product_attention and MultiheadAttention, composed of recorded ops (linear, matmul,
// softmax, dropout) so that autograd and every backend come with them. The steps and the checks
// follow torch.nn.functional.multi_head_attention_forward: with need_weights the weights are
// computed explicitly (a plain softmax: a query with every key masked gets NaN, as in PyTorch);
// without, through scaled_dot_product_attention, whose softmax gives such a query zeros (PyTorch's
// _safe_softmax).
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "amp/autocast_policy.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/grad_mode.h"
#include "ember/nn/functional.h"
#include "ember/nn/init.h"
#include "ember/nn/transformer.h"
#include "ember/ops.h"

namespace ember::nn {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

std::string torch_size(IntList sizes) { return "torch.Size(" + ember::detail::shape_str(sizes) + ")"; }

/// PyTorch's _mha_shape_check: the ranks of the inputs and the masks, batched or not.
void check_shapes(const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& key_padding_mask,
                  const Tensor& attn_mask, int64_t num_heads) {
  const int64_t rank = query.dim();
  EMBER_CHECK(rank == 3 || rank == 2, "query should be unbatched 2D or batched 3D tensor but received ", rank,
              "-D query tensor");
  const char* kind = rank == 3 ? "For batched (3-D) `query`" : "For unbatched (2-D) `query`";
  EMBER_CHECK(key.dim() == rank && value.dim() == rank, kind, ", expected `key` and `value` to be ", rank,
              "-D but found ", key.dim(), "-D and ", value.dim(), "-D tensors respectively");
  if (key_padding_mask.defined()) {
    EMBER_CHECK(key_padding_mask.dim() == rank - 1, kind, ", expected `key_padding_mask` to be `None` or ", rank - 1,
                "-D but found ", key_padding_mask.dim(), "-D tensor instead");
  }
  if (attn_mask.defined()) {
    EMBER_CHECK(attn_mask.dim() == 2 || attn_mask.dim() == 3, kind,
                ", expected `attn_mask` to be `None`, 2-D or 3-D but found ", attn_mask.dim(), "-D tensor instead");
    if (rank == 2 && attn_mask.dim() == 3) {
      EMBER_CHECK(
          attn_mask.size(0) == num_heads && attn_mask.size(1) == query.size(0) && attn_mask.size(2) == key.size(0),
          "Expected `attn_mask` shape to be (", num_heads, ", ", query.size(0), ", ", key.size(0), ") but got ",
          torch_size(attn_mask.sizes()));
    }
  }
}

/// [..., groups, S, E] → [..., groups * repeats, S, E], each group repeated in place
/// (torch.repeat_interleave(t, repeats, dim=-3)).
Tensor repeat_heads(const Tensor& t, int64_t repeats) {
  if (repeats == 1) return t;
  std::vector<int64_t> expanded = t.sizes().vec();
  expanded.insert(expanded.end() - 2, repeats);
  std::vector<int64_t> merged = t.sizes().vec();
  merged[merged.size() - 3] *= repeats;
  return t.unsqueeze(-3).expand(expanded).reshape(merged);
}

/// softmax over the last dimension, with zeros for rows that are -inf throughout instead of
/// NaN; the rows' gradient is zero too (the -inf never reaches the softmax).
Tensor safe_softmax(const Tensor& scores) {
  Tensor dead;
  {
    NoGradGuard no_grad;
    dead = amax(scores.detach(), {-1}, true) == kNegInf;
  }
  return masked_fill(ember::softmax(masked_fill(scores, dead, 0.0), -1), dead, 0.0);
}

/// A mask as MultiheadAttention takes it (bool: true = ignore) as an additive float mask.
Tensor additive_mask(const Tensor& mask, const Tensor& like, const char* name) {
  if (!mask.defined()) return mask;
  EMBER_CHECK(mask.dtype() == kBool || is_floating_point(mask.dtype()), "only bool and floating types of ", name,
              " are supported");
  if (mask.dtype() != kBool) return mask.to(like.dtype());
  return masked_fill(zeros(mask.sizes(), TensorOptions(like.dtype()).device(like.device())), mask, kNegInf);
}

/// A mask with one more column of zeros (the key that bias_kv or add_zero_attn appends).
Tensor pad_last(const Tensor& t) {
  std::vector<int64_t> sizes = t.sizes().vec();
  sizes.back() = 1;
  return cat({t, zeros(sizes, TensorOptions(t.dtype()).device(t.device()))}, -1);
}

}  // namespace

Tensor functional::scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                                const Tensor& attn_mask, double dropout_p, bool is_causal,
                                                std::optional<double> scale, bool enable_gqa) {
  if (const auto device = amp::detail::autocast_device(query, key, value, attn_mask)) {
    // This overload (not the options one) is the one to call again in the region's dtype.
    using Positional = Tensor (*)(const Tensor&, const Tensor&, const Tensor&, const Tensor&, double, bool,
                                  std::optional<double>, bool);
    return amp::detail::autocast_call(amp::detail::CastPolicy::LowerPrecision, *device,
                                      static_cast<Positional>(functional::scaled_dot_product_attention), query, key,
                                      value, attn_mask, dropout_p, is_causal, scale, enable_gqa);
  }
  ember::detail::check_defined(query, "scaled_dot_product_attention");
  ember::detail::check_defined(key, "scaled_dot_product_attention");
  ember::detail::check_defined(value, "scaled_dot_product_attention");
  EMBER_CHECK(
      query.dtype() == key.dtype() && query.dtype() == value.dtype(),
      "Expected query, key, and value to have the same dtype, but got query.dtype: ", cpp_type_name(query.dtype()),
      " key.dtype: ", cpp_type_name(key.dtype()), " and value.dtype: ", cpp_type_name(value.dtype()), " instead.");
  EMBER_CHECK(query.dim() >= 2 && key.dim() >= 2 && value.dim() >= 2,
              "Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: ", query.dim(),
              " key.dim: ", key.dim(), " and value.dim: ", value.dim(), " instead.");
  EMBER_CHECK(!(is_causal && attn_mask.defined()),
              "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True");
  EMBER_CHECK(!attn_mask.defined() || attn_mask.dtype() == kBool || attn_mask.dtype() == query.dtype(),
              "Expected attn_mask dtype to be bool or float or to match query dtype, but got attn_mask.dtype: ",
              cpp_type_name(attn_mask.dtype()), " and  query.dtype: ", cpp_type_name(query.dtype()), " instead.");
  EMBER_CHECK(dropout_p >= 0.0 && dropout_p <= 1.0, "dropout probability has to be between 0 and 1, but got ",
              dropout_p);
  Tensor k = key, v = value;
  if (enable_gqa && query.dim() >= 3 && k.dim() >= 3) {
    const int64_t heads = query.size(-3), kv_heads = k.size(-3);
    EMBER_CHECK(kv_heads > 0 && heads % kv_heads == 0 && v.size(-3) == kv_heads,
                "Number of heads in key and value must divide the number of heads in query");
    k = repeat_heads(k, heads / kv_heads);
    v = repeat_heads(v, heads / kv_heads);
  }
  const int64_t L = query.size(-2), S = k.size(-2);
  const double factor = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(query.size(-1)));
  Tensor scores = matmul(query, k.transpose(-2, -1)) * factor;
  bool maskable_rows = false;
  if (is_causal) {
    // Query i sees keys 0..i (the top-left aligned lower triangle, also when L != S).
    const TensorOptions index = TensorOptions(kInt64).device(query.device());
    Tensor hidden = arange(S, index).unsqueeze(0) > arange(L, index).unsqueeze(1);
    scores = masked_fill(scores, hidden, kNegInf);
    maskable_rows = S == 0;
  } else if (attn_mask.defined()) {
    scores = attn_mask.dtype() == kBool ? masked_fill(scores, logical_not(attn_mask), kNegInf) : scores + attn_mask;
    maskable_rows = true;
  }
  Tensor weights = maskable_rows ? safe_softmax(scores) : ember::softmax(scores, -1);
  if (dropout_p > 0.0) weights = functional::dropout(weights, dropout_p, true);
  return matmul(weights, v);
}

// ---- MultiheadAttention ----

MultiheadAttention::MultiheadAttention(int64_t embed_dim, int64_t num_heads, MultiheadAttentionOptions options)
    : embed_dim(embed_dim), num_heads(num_heads), options(options) {
  EMBER_CHECK(embed_dim > 0 && num_heads > 0,
              "embed_dim and num_heads must be greater than 0, got embed_dim=", embed_dim, " and num_heads=", num_heads,
              " instead");
  EMBER_CHECK(embed_dim % num_heads == 0, "embed_dim must be divisible by num_heads");
  EMBER_CHECK(options.kdim >= 0 && options.vdim >= 0, "kdim and vdim must not be negative");
  head_dim = embed_dim / num_heads;
  kdim = options.kdim > 0 ? options.kdim : embed_dim;
  vdim = options.vdim > 0 ? options.vdim : embed_dim;
  if (kdim == embed_dim && vdim == embed_dim) {
    in_proj_weight = register_parameter("in_proj_weight", empty({3 * embed_dim, embed_dim}));
  } else {
    q_proj_weight = register_parameter("q_proj_weight", empty({embed_dim, embed_dim}));
    k_proj_weight = register_parameter("k_proj_weight", empty({embed_dim, kdim}));
    v_proj_weight = register_parameter("v_proj_weight", empty({embed_dim, vdim}));
  }
  if (options.bias) in_proj_bias = register_parameter("in_proj_bias", empty({3 * embed_dim}));
  // PyTorch registers out_proj before bias_k and bias_v, but lists a module's own parameters
  // before its children's: state_dict order is in_proj_*, bias_k, bias_v, out_proj.*.
  out_proj = register_module("out_proj", std::make_shared<Linear>(embed_dim, embed_dim, options.bias));
  if (options.add_bias_kv) {
    bias_k = register_parameter("bias_k", empty({1, 1, embed_dim}));
    bias_v = register_parameter("bias_v", empty({1, 1, embed_dim}));
  }
  reset_parameters();
}

void MultiheadAttention::reset_parameters() {
  if (in_proj_weight.defined()) {
    init::xavier_uniform_(in_proj_weight);
  } else {
    init::xavier_uniform_(q_proj_weight);
    init::xavier_uniform_(k_proj_weight);
    init::xavier_uniform_(v_proj_weight);
  }
  if (in_proj_bias.defined()) {
    init::constant_(in_proj_bias, 0.0);
    init::constant_(out_proj->bias, 0.0);
  }
  if (bias_k.defined()) init::xavier_normal_(bias_k);
  if (bias_v.defined()) init::xavier_normal_(bias_v);
}

Tensor MultiheadAttention::forward(const Tensor& x) { return forward(x, x, x, {.need_weights = false}).output; }

MultiheadAttentionOutput MultiheadAttention::forward(const Tensor& query_arg, const Tensor& key_arg,
                                                     const Tensor& value_arg, const MultiheadAttentionArgs& args) {
  ember::detail::check_defined(query_arg, "MultiheadAttention");
  ember::detail::check_defined(key_arg, "MultiheadAttention");
  ember::detail::check_defined(value_arg, "MultiheadAttention");
  const bool self_attention = query_arg.is_same(key_arg) && key_arg.is_same(value_arg);
  check_shapes(query_arg, key_arg, value_arg, args.key_padding_mask, args.attn_mask, num_heads);
  const bool batched = query_arg.dim() == 3;
  // Sequence-first from here on: [L, N, E].
  Tensor query = query_arg, key = key_arg, value = value_arg;
  if (options.batch_first && batched) {
    query = query.transpose(0, 1);
    key = key.transpose(0, 1);
    value = value.transpose(0, 1);
  }
  Tensor key_padding_mask = args.key_padding_mask, attn_mask = args.attn_mask;
  if (!batched) {
    query = query.unsqueeze(1);
    key = key.unsqueeze(1);
    value = value.unsqueeze(1);
    if (key_padding_mask.defined()) key_padding_mask = key_padding_mask.unsqueeze(0);
  }
  const int64_t L = query.size(0), N = query.size(1), E = query.size(2);
  EMBER_CHECK(E == embed_dim, "was expecting embedding dimension of ", embed_dim, ", but got ", E);
  if (in_proj_weight.defined()) {
    EMBER_CHECK(same_dims(key.sizes(), value.sizes()), "key shape ", torch_size(key.sizes()),
                " does not match value shape ", torch_size(value.sizes()));
  } else {
    EMBER_CHECK(key.size(0) == value.size(0) && key.size(1) == value.size(1), "key's sequence and batch dims ",
                torch_size(key.sizes().first(2)), " do not match value's ", torch_size(value.sizes().first(2)));
  }
  EMBER_CHECK(key.size(1) == N, "key's batch size ", key.size(1), " does not match query's ", N);
  EMBER_CHECK(key.size(2) == kdim && value.size(2) == vdim, "MultiheadAttention: expected ", kdim, " key features and ",
              vdim, " value features, got ", key.size(2), " and ", value.size(2));
  if (key_padding_mask.defined()) {
    EMBER_CHECK(key_padding_mask.size(0) == N, "Expected key_padded_mask.shape[0] to be ", N, ", but got ",
                key_padding_mask.size(0));
    EMBER_CHECK(key_padding_mask.size(1) == key.size(0), "Expected key_padded_mask.shape[1] to be ", key.size(0),
                ", but got ", key_padding_mask.size(1));
  }
  key_padding_mask = additive_mask(key_padding_mask, query, "key_padding_mask");

  bool is_causal = args.is_causal;
  if (is_causal) {
    EMBER_CHECK(attn_mask.defined(),
                "Need attn_mask if specifying the is_causal hint. You may use the Transformer module method "
                "`generate_square_subsequent_mask` to create this mask.");
  }
  if (is_causal && !key_padding_mask.defined() && !args.need_weights) {
    attn_mask = Tensor();  // scaled_dot_product_attention applies the causal mask itself
  } else {
    attn_mask = additive_mask(attn_mask, query, "attn_mask");
    if (key_padding_mask.defined()) is_causal = false;
  }

  // Input projections.
  Tensor q, k, v;
  const std::vector<Tensor> biases =
      in_proj_bias.defined() ? in_proj_bias.chunk(3) : std::vector<Tensor>{Tensor(), Tensor(), Tensor()};
  if (in_proj_weight.defined()) {
    if (self_attention) {
      std::vector<Tensor> qkv = functional::linear(query, in_proj_weight, in_proj_bias).chunk(3, -1);
      q = qkv[0];
      k = qkv[1];
      v = qkv[2];
    } else {
      const std::vector<Tensor> w = in_proj_weight.chunk(3);
      q = functional::linear(query, w[0], biases[0]);
      k = functional::linear(key, w[1], biases[1]);
      v = functional::linear(value, w[2], biases[2]);
    }
  } else {
    q = functional::linear(query, q_proj_weight, biases[0]);
    k = functional::linear(key, k_proj_weight, biases[1]);
    v = functional::linear(value, v_proj_weight, biases[2]);
  }

  const int64_t S0 = key.size(0), H = num_heads, hd = head_dim;
  if (attn_mask.defined()) {
    if (attn_mask.dim() == 2) {
      EMBER_CHECK(attn_mask.size(0) == L && attn_mask.size(1) == S0, "The shape of the 2D attn_mask is ",
                  torch_size(attn_mask.sizes()), ", but should be (", L, ", ", S0, ").");
      attn_mask = attn_mask.unsqueeze(0);
    } else if (attn_mask.dim() == 3) {
      EMBER_CHECK(attn_mask.size(0) == N * H && attn_mask.size(1) == L && attn_mask.size(2) == S0,
                  "The shape of the 3D attn_mask is ", torch_size(attn_mask.sizes()), ", but should be (", N * H, ", ",
                  L, ", ", S0, ").");
    } else {
      ember::detail::fail("attn_mask's dimension ", attn_mask.dim(), " is not supported");
    }
  }
  if (bias_k.defined()) {
    k = cat({k, bias_k.expand({1, N, embed_dim})}, 0);
    v = cat({v, bias_v.expand({1, N, embed_dim})}, 0);
    if (attn_mask.defined()) attn_mask = pad_last(attn_mask);
    if (key_padding_mask.defined()) key_padding_mask = pad_last(key_padding_mask);
  }
  // Heads: [L, N, E] → [N * H, L, hd].
  q = q.reshape({L, N * H, hd}).transpose(0, 1);
  k = k.reshape({k.size(0), N * H, hd}).transpose(0, 1);
  v = v.reshape({v.size(0), N * H, hd}).transpose(0, 1);
  if (options.add_zero_attn) {
    k = cat({k, zeros({N * H, 1, hd}, TensorOptions(k.dtype()).device(k.device()))}, 1);
    v = cat({v, zeros({N * H, 1, hd}, TensorOptions(v.dtype()).device(v.device()))}, 1);
    if (attn_mask.defined()) attn_mask = pad_last(attn_mask);
    if (key_padding_mask.defined()) key_padding_mask = pad_last(key_padding_mask);
  }
  const int64_t S = k.size(1);
  if (key_padding_mask.defined()) {
    Tensor per_head = key_padding_mask.view({N, 1, 1, S}).expand({N, H, 1, S}).reshape({N * H, 1, S});
    attn_mask = attn_mask.defined() ? attn_mask + per_head : per_head;
  }
  const double dropout_p = is_training() ? options.dropout : 0.0;

  MultiheadAttentionOutput result;
  Tensor out;  // [N * H, L, hd] or [N, H, L, hd]
  if (args.need_weights) {
    Tensor scores = matmul(q * std::sqrt(1.0 / static_cast<double>(hd)), k.transpose(-2, -1));
    if (attn_mask.defined()) scores = scores + attn_mask;
    Tensor weights = ember::softmax(scores, -1);
    if (dropout_p > 0.0) weights = functional::dropout(weights, dropout_p, true);
    out = matmul(weights, v).transpose(0, 1).reshape({L * N, embed_dim});
    weights = weights.view({N, H, L, S});
    result.weights = args.average_attn_weights ? weights.mean({1}) : weights;
    if (!batched) result.weights = result.weights.squeeze(0);
  } else {
    if (attn_mask.defined()) {
      attn_mask = attn_mask.size(0) == 1 ? attn_mask.unsqueeze(0) : attn_mask.view({N, H, -1, S});
    }
    Tensor o = functional::scaled_dot_product_attention(q.reshape({N, H, L, hd}), k.reshape({N, H, S, hd}),
                                                        v.reshape({N, H, S, hd}), attn_mask, dropout_p, is_causal);
    out = o.permute({2, 0, 1, 3}).reshape({L * N, embed_dim});
  }
  Tensor output = (*out_proj)(out).view({L, N, embed_dim});
  if (!batched) {
    output = output.squeeze(1);
  } else if (options.batch_first) {
    output = output.transpose(0, 1);
  }
  result.output = output;
  return result;
}

}  // namespace ember::nn
