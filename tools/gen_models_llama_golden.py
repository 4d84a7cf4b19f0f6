#!/usr/bin/env python3
"""Writes tests/models/golden/models_llama_golden.safetensors for tests/models/test_llama.cpp.

The reference is Meta's llama/model.py (github.com/meta-llama/llama, the Llama 2 version with
n_kv_heads and ffn_dim_multiplier), re-written here with the same classes, module names,
registration order and computations, for training in one process. What differs from that file,
as ember's include/ember/models/llama.h documents:
- fairscale's ColumnParallelLinear / RowParallelLinear / ParallelEmbedding (identity init_method)
  are torch.nn.Linear(bias=False) / torch.nn.Embedding with their default initialisation;
- no KV cache and no start_pos: forward attends causally from position 0 (the reference's
  computation at start_pos 0) and returns the logits of every position;
- x.float() (RMSNorm, rotary embedding, softmax) becomes x.to(promote_types(x.dtype, float32)),
  the same for float32/16 and bfloat16, float64 kept for float64; freqs_cis is made in that dtype
  for the positions used, and the logits keep the model's dtype (the reference's .float()).

Golden contents (config: dim 24, n_layers 2, n_heads 4, n_kv_heads 2, vocab 48, multiple_of 16,
ffn_dim_multiplier 0.9 (hidden 64), norm_eps 1e-5, max_seq_len 16):
  init.<param>   init_summary after manual_seed(0) in float32
  tokens, targets [2, 12]; logits, loss (cross-entropy of the flattened logits), grads (every
                 parameter's gradient, packed() in named_parameters order): float64, pattern()
                 weights (tools/gen_models_golden.py's fill_state)
  logits32       the same model and tokens in float32
  metadata "keys" (key:shape list of state_dict), "keys.default_shape" (ModelArgs' defaults,
                 vocab 32000: Llama 2 7B), "keys.gqa" (dim 64, 4 layers, 8 heads, 2 kv heads,
                 vocab 100, multiple_of 32, ffn_dim_multiplier 1.5)

Run: ~/.cache/ember-bench/torch-venv/bin/python tools/gen_models_llama_golden.py
"""
import math
import os
import sys
from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn.functional as F
from safetensors.torch import save_file
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_models_golden import OUT, fill_state, init_summary, key_list, packed  # noqa: E402


@dataclass
class ModelArgs:
    dim: int = 4096
    n_layers: int = 32
    n_heads: int = 32
    n_kv_heads: Optional[int] = None
    vocab_size: int = -1
    multiple_of: int = 256
    ffn_dim_multiplier: Optional[float] = None
    norm_eps: float = 1e-5
    max_batch_size: int = 32
    max_seq_len: int = 2048


def compute_dtype(dtype):
    """The reference's .float(), keeping float64 (see the docstring)."""
    return torch.promote_types(dtype, torch.float32)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        output = self._norm(x.to(compute_dtype(x.dtype))).type_as(x)
        return output * self.weight


def precompute_freqs_cis(dim, end, theta=10000.0, dtype=torch.float32):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].to(dtype) / dim))
    t = torch.arange(end, device=freqs.device)
    freqs = torch.outer(t, freqs).to(dtype)
    return torch.polar(torch.ones_like(freqs), freqs)


def reshape_for_broadcast(freqs_cis, x):
    ndim = x.ndim
    assert 0 <= 1 < ndim
    assert freqs_cis.shape == (x.shape[1], x.shape[-1])
    shape = [d if i == 1 or i == ndim - 1 else 1 for i, d in enumerate(x.shape)]
    return freqs_cis.view(*shape)


def apply_rotary_emb(xq, xk, freqs_cis):
    dtype = compute_dtype(xq.dtype)
    xq_ = torch.view_as_complex(xq.to(dtype).reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.to(dtype).reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = reshape_for_broadcast(freqs_cis, xq_)
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


def repeat_kv(x, n_rep):
    bs, slen, n_kv_heads, head_dim = x.shape
    if n_rep == 1:
        return x
    return x[:, :, :, None, :].expand(bs, slen, n_kv_heads, n_rep, head_dim).reshape(bs, slen, n_kv_heads * n_rep,
                                                                                      head_dim)


class Attention(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.n_kv_heads = args.n_heads if args.n_kv_heads is None else args.n_kv_heads
        self.n_local_heads = args.n_heads
        self.n_local_kv_heads = self.n_kv_heads
        self.n_rep = self.n_local_heads // self.n_local_kv_heads
        self.head_dim = args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(args.dim, self.n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(args.dim, self.n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim, bias=False)

    def forward(self, x, freqs_cis, mask):
        bsz, seqlen, _ = x.shape
        xq, xk, xv = self.wq(x), self.wk(x), self.wv(x)
        xq = xq.view(bsz, seqlen, self.n_local_heads, self.head_dim)
        xk = xk.view(bsz, seqlen, self.n_local_kv_heads, self.head_dim)
        xv = xv.view(bsz, seqlen, self.n_local_kv_heads, self.head_dim)
        xq, xk = apply_rotary_emb(xq, xk, freqs_cis=freqs_cis)
        keys = repeat_kv(xk, self.n_rep)
        values = repeat_kv(xv, self.n_rep)
        xq = xq.transpose(1, 2)
        keys = keys.transpose(1, 2)
        values = values.transpose(1, 2)
        scores = torch.matmul(xq, keys.transpose(2, 3)) / math.sqrt(self.head_dim)
        if mask is not None:
            scores = scores + mask
        scores = F.softmax(scores.to(compute_dtype(scores.dtype)), dim=-1).type_as(xq)
        output = torch.matmul(scores, values)
        output = output.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.wo(output)


class FeedForward(nn.Module):
    def __init__(self, dim, hidden_dim, multiple_of, ffn_dim_multiplier):
        super().__init__()
        hidden_dim = int(2 * hidden_dim / 3)
        if ffn_dim_multiplier is not None:
            hidden_dim = int(ffn_dim_multiplier * hidden_dim)
        hidden_dim = multiple_of * ((hidden_dim + multiple_of - 1) // multiple_of)
        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w2 = nn.Linear(hidden_dim, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class TransformerBlock(nn.Module):
    def __init__(self, layer_id, args):
        super().__init__()
        self.n_heads = args.n_heads
        self.dim = args.dim
        self.head_dim = args.dim // args.n_heads
        self.attention = Attention(args)
        self.feed_forward = FeedForward(dim=args.dim, hidden_dim=4 * args.dim, multiple_of=args.multiple_of,
                                        ffn_dim_multiplier=args.ffn_dim_multiplier)
        self.layer_id = layer_id
        self.attention_norm = RMSNorm(args.dim, eps=args.norm_eps)
        self.ffn_norm = RMSNorm(args.dim, eps=args.norm_eps)

    def forward(self, x, freqs_cis, mask):
        h = x + self.attention.forward(self.attention_norm(x), freqs_cis, mask)
        return h + self.feed_forward.forward(self.ffn_norm(h))


class Transformer(nn.Module):
    def __init__(self, params):
        super().__init__()
        self.params = params
        self.vocab_size = params.vocab_size
        self.n_layers = params.n_layers
        self.tok_embeddings = nn.Embedding(params.vocab_size, params.dim)
        self.layers = torch.nn.ModuleList()
        for layer_id in range(params.n_layers):
            self.layers.append(TransformerBlock(layer_id, params))
        self.norm = RMSNorm(params.dim, eps=params.norm_eps)
        self.output = nn.Linear(params.dim, params.vocab_size, bias=False)

    def forward(self, tokens):
        _bsz, seqlen = tokens.shape
        h = self.tok_embeddings(tokens)
        freqs_cis = precompute_freqs_cis(self.params.dim // self.params.n_heads, self.params.max_seq_len * 2,
                                         dtype=compute_dtype(h.dtype)).to(h.device)[:seqlen]
        mask = None
        if seqlen > 1:
            mask = torch.full((1, 1, seqlen, seqlen), float("-inf"), device=tokens.device)
            mask = torch.triu(mask, diagonal=1).type_as(h)
        for layer in self.layers:
            h = layer(h, freqs_cis, mask)
        h = self.norm(h)
        return self.output(h)


SMALL = ModelArgs(dim=24, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=48, multiple_of=16, ffn_dim_multiplier=0.9,
                  norm_eps=1e-5, max_seq_len=16)


def main():
    out, meta = {}, {}
    torch.manual_seed(0)
    model = Transformer(SMALL)
    init_summary(model, "init", out)
    meta["keys"] = key_list(model)
    meta["keys.gqa"] = key_list(Transformer(ModelArgs(dim=64, n_layers=4, n_heads=8, n_kv_heads=2, vocab_size=100,
                                                      multiple_of=32, ffn_dim_multiplier=1.5)))
    with torch.device("meta"):
        meta["keys.default_shape"] = key_list(Transformer(ModelArgs(vocab_size=32000)))
    model.double()
    fill_state(model)
    tokens = torch.randint(0, 48, (2, 12))
    targets = torch.randint(0, 48, (2, 12))
    logits = model(tokens)
    loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
    loss.backward()
    out["tokens"], out["targets"] = tokens, targets
    out["logits"], out["loss"] = logits.detach(), loss.detach()
    out["grads"] = packed(p.grad for _, p in model.named_parameters())
    with torch.no_grad():
        out["logits32"] = model.float()(tokens)
    path = os.path.join(OUT, "models_llama_golden.safetensors")
    save_file({k: v.contiguous() for k, v in out.items()}, path, metadata=meta)
    print(path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
