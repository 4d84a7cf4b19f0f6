#!/usr/bin/env python3
"""Writes the PyTorch goldens for tests/nn/test_transformer.cpp into
tests/nn/golden/transformer_golden.safetensors.

Every case is float64, dropout 0, and every module is in training mode (module.train()) so that
PyTorch's fused fast path is not taken. Module parameters are perturbed from their initial values
(biases nonzero, LayerNorm weights not ones, the layers of a TransformerEncoder all different) and
saved. Masks named below are optional: a tensor that is absent was not passed (None). Float masks
are leaves requiring grad, and their gradients are saved, except where PyTorch computes none: it
replaces a causal mask by is_causal (no key_padding_mask, need_weights=False), so there the mask
gets no gradient and none is saved. Bool masks get none. For every case the loss
    sum(out * g) [+ sum(w * gw) when attention weights are returned]
is backpropagated, and its gradients are saved.

scaled_dot_product_attention, "sdpa<i>" = "SDPA,causal=0|1,scale=none|<float>,gqa=0|1":
  sdpa<i>.q, .k, .v, .mask      inputs (mask: bool, true = attend; or float, added)
  sdpa<i>.out, .g               PyTorch's output and the upstream gradient
  sdpa<i>.gq, .gk, .gv, .gmask  gradients (gmask for a float mask)

nn.MultiheadAttention, "mha<i>" = "MHA,embed=,heads=,kdim=,vdim=,bias=,add_bias_kv=,add_zero_attn=,
batch_first=,unbatched=,self=,need_weights=,average=,causal=" ("mha<i>.keys": the state_dict keys):
  mha<i>.p.<name>                  the state_dict
  mha<i>.q, .k, .v                 query, key, value (self=1: only q, passed as all three)
  mha<i>.attn_mask, .kpm           attn_mask and key_padding_mask (bool: true = ignore; or float)
  mha<i>.out, .g; .w, .gw          output; attention weights (need_weights=1) and their upstreams
  mha<i>.gq, .gk, .gv, .gattn_mask, .gkpm, mha<i>.g.<name>   gradients

nn.TransformerEncoderLayer (layers=0) or nn.TransformerEncoder of `layers` copies of it with an
optional final nn.LayerNorm(d_model) (final_norm=1), "enc<i>" = "ENC,d_model=,nhead=,ff=,
activation=,eps=,batch_first=,norm_first=,bias=,unbatched=,layers=,final_norm=,causal="
("enc<i>.keys": the state_dict keys):
  enc<i>.p.<name>, .x, .mask, .kpm (src_mask and src_key_padding_mask), .out, .g,
  enc<i>.gx, .gmask, .gkpm, enc<i>.g.<name>

Initialisation (float32), each group built right after torch.manual_seed(seed), one module after
the other:
  init.seed7.mha.<name>       nn.MultiheadAttention(6, 2)
  init.seed7.mha_kv.<name>    nn.MultiheadAttention(6, 3, kdim=5, vdim=4, add_bias_kv=True)
  init.seed7.mha_nobias.<name> nn.MultiheadAttention(16, 4, bias=False, add_bias_kv=True)
  init.reset9.mha_kv.<name>   that mha_kv after torch.manual_seed(9) and mha_kv._reset_parameters()
  init.seed3.layer.<name>     nn.TransformerEncoderLayer(6, 2, dim_feedforward=8)
  init.seed5.encoder.<name>   nn.TransformerEncoder(nn.TransformerEncoderLayer(6, 2,
                              dim_feedforward=8, norm_first=True, bias=False), 2,
                              norm=nn.LayerNorm(6)) (the layer built first, then the norm)
"square_mask4" is nn.Transformer.generate_square_subsequent_mask(4) (float32).
Metadata "count.sdpa", "count.mha", "count.enc".

Run: /path/to/python-with-torch-and-safetensors tools/gen_transformer_golden.py
"""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "nn", "golden")
D = torch.float64
NEG_INF = float("-inf")


def randn(*shape, grad=True):
    return torch.randn(shape, dtype=D, requires_grad=grad)


def keep(tensors, name, t):
    tensors[name] = t.detach().clone().contiguous()


def float_mask(*shape, inf_at=()):
    """A float additive mask with -inf at the given positions (never a whole row)."""
    m = torch.randn(shape, dtype=D)
    for idx in inf_at:
        m[idx] = NEG_INF
    return m.requires_grad_()


def bool_mask(shape, p):
    """A random bool mask, True with probability p, except at index 0 of the last dimension."""
    m = torch.rand(shape) < p
    m[..., 0] = False
    return m


# ---------------------------------------------------------------- scaled_dot_product_attention

def sdpa_cases():
    N, H, L, S, E, Ev = 2, 2, 4, 5, 3, 2
    attend = torch.rand(L, S) < 0.6
    attend[:, 3] = True
    attend[1] = False                       # a query that may attend to nothing
    per_batch = torch.rand(N, 1, L, S) < 0.7
    per_batch[..., 0] = True
    per_batch[0, 0, 2] = False              # fully masked in batch 0 only
    return [
        dict(shapes=((N, H, L, E), (N, H, S, E), (N, H, S, Ev))),                               # 0 plain
        dict(shapes=((N, H, L, E), (N, H, S, E), (N, H, S, Ev)), mask=attend),                  # 1 bool [L, S]
        dict(shapes=((N, H, L, E), (N, H, S, E), (N, H, S, Ev)), mask=per_batch),               # 2 bool [N,1,L,S]
        dict(shapes=((N, H, L, E), (N, H, S, E), (N, H, S, Ev)),                                # 3 float [L, S]
             mask=float_mask(L, S, inf_at=[(0, 2), (3, 4)])),
        dict(shapes=((N, H, 5, E), (N, H, 5, E), (N, H, 5, Ev)), causal=True),                  # 4 L == S
        dict(shapes=((N, H, 3, E), (N, H, 6, E), (N, H, 6, Ev)), causal=True),                  # 5 L < S
        dict(shapes=((N, H, 6, E), (N, H, 3, E), (N, H, 3, Ev)), causal=True),                  # 6 L > S
        dict(shapes=((N, H, L, E), (N, H, S, E), (N, H, S, Ev)), scale=0.3,                     # 7 scale, full
             mask=float_mask(N, H, L, S)),                                                      #   float mask
        dict(shapes=((N, 4, L, E), (N, 2, S, E), (N, 2, S, Ev)), gqa=True,                      # 8 GQA, float
             mask=float_mask(N, 1, L, S)),                                                      #   [N,1,L,S]
        dict(shapes=((N, 6, 4, E), (N, 2, 4, E), (N, 2, 4, Ev)), gqa=True, causal=True,         # 9 GQA, causal,
             scale=1.5),                                                                        #   scale
        dict(shapes=((3, L, E), (3, S, E), (3, S, Ev)), mask=attend),                           # 10 3-D, bool
        dict(shapes=((L, E), (S, E), (S, Ev)), mask=float_mask(L, S)),                          # 11 2-D, float
    ]


def run_sdpa(i, c, tensors, meta):
    p = f"sdpa{i}."
    q, k, v = (randn(*s) for s in c["shapes"])
    mask = c.get("mask")
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=c.get("causal", False),
                                         scale=c.get("scale"), enable_gqa=c.get("gqa", False))
    g = torch.randn(out.shape, dtype=D)
    (out * g).sum().backward()
    for name, t in (("q", q), ("k", k), ("v", v), ("out", out), ("g", g)):
        keep(tensors, p + name, t)
    for name, t in (("gq", q.grad), ("gk", k.grad), ("gv", v.grad)):
        assert torch.isfinite(t).all(), (i, name)
        keep(tensors, p + name, t)
    if mask is not None:
        keep(tensors, p + "mask", mask)
        if mask.dtype != torch.bool:
            keep(tensors, p + "gmask", mask.grad)
    scale = "none" if c.get("scale") is None else repr(c["scale"])
    meta[f"sdpa{i}"] = f"SDPA,causal={int(c.get('causal', False))},scale={scale},gqa={int(c.get('gqa', False))}"


# ---------------------------------------------------------------- nn.MultiheadAttention

def causal_mask(size):
    return nn.Transformer.generate_square_subsequent_mask(size, dtype=D).requires_grad_()


def perturb(module):
    with torch.no_grad():
        for param in module.parameters():
            param.add_(0.5 * torch.randn_like(param))


def mha(embed=6, heads=2, kdim=None, vdim=None, bias=True, add_bias_kv=False, add_zero_attn=False,
        batch_first=False, unbatched=False, self_attn=False, need_weights=True, average=True, causal=False,
        L=4, S=5, N=3, attn_mask=None, kpm=None):
    return dict(embed=embed, heads=heads, kdim=kdim or embed, vdim=vdim or embed, bias=bias,
                add_bias_kv=add_bias_kv, add_zero_attn=add_zero_attn, batch_first=batch_first,
                unbatched=unbatched, self_attn=self_attn, need_weights=need_weights, average=average,
                causal=causal, L=L, S=L if self_attn else S, N=N, attn_mask=attn_mask, kpm=kpm)


def mha_cases():
    L, S, N = 4, 5, 3
    bool_ls = bool_mask((L, S), 0.4)
    kpm_bool = bool_mask((N, S), 0.4)
    kpm_bool_self = bool_mask((N, L), 0.4)
    fully = torch.zeros(N, S, dtype=torch.bool)
    fully[0] = True                          # batch 0 may attend to nothing
    fully[1, 2] = True
    return [
        mha(self_attn=True),                                                                     # 0
        mha(attn_mask=float_mask(L, S, inf_at=[(1, 3)]), average=False),                         # 1 cross, float 2-D
        mha(kdim=5, vdim=3, bias=False, need_weights=False, kpm=kpm_bool),                       # 2
        mha(add_bias_kv=True, add_zero_attn=True, attn_mask=bool_ls, kpm=kpm_bool),              # 3
        mha(batch_first=True, kpm=float_mask(N, S, inf_at=[(2, 1)]),                             # 4 3-D float mask
            attn_mask=float_mask(N * 2, L, S)),
        mha(unbatched=True, kdim=5, vdim=4, heads=3, kpm=bool_mask((S,), 0.4),                   # 5
            attn_mask=bool_mask((L, S), 0.3), average=False),
        mha(self_attn=True, causal=True, need_weights=False, L=5,                                # 6 causal → SDPA
            attn_mask=causal_mask(5)),
        mha(self_attn=True, causal=True, batch_first=True, L=5,                                  # 7 causal + weights
            attn_mask=causal_mask(5)),
        mha(add_bias_kv=True, kdim=5, vdim=3, batch_first=True, need_weights=False,              # 8 3-D bool mask
            attn_mask=bool_mask((N * 2, L, S), 0.4)),
        mha(unbatched=True, add_zero_attn=True, self_attn=True, kpm=float_mask(L, inf_at=[(2,)]),  # 9
            attn_mask=float_mask(L, L)),
        mha(need_weights=False, kpm=fully),                                                      # 10 batch 0 may
        mha(self_attn=True, kpm=kpm_bool_self, add_bias_kv=True, bias=False, heads=3,            # 11 attend to
            attn_mask=bool_mask((L, L), 0.3), average=False),                                    #   nothing
    ]


def run_mha(i, c, tensors, meta):
    p = f"mha{i}."
    E, L, S, N = c["embed"], c["L"], c["S"], c["N"]
    module = nn.MultiheadAttention(E, c["heads"], dropout=0.0, bias=c["bias"], add_bias_kv=c["add_bias_kv"],
                                   add_zero_attn=c["add_zero_attn"], kdim=c["kdim"], vdim=c["vdim"],
                                   batch_first=c["batch_first"]).double()
    module.train()
    perturb(module)

    def shape(length, features):
        if c["unbatched"]:
            return (length, features)
        return (N, length, features) if c["batch_first"] else (length, N, features)

    q = randn(*shape(L, E))
    if c["self_attn"]:
        k = v = q
    else:
        k, v = randn(*shape(S, c["kdim"])), randn(*shape(S, c["vdim"]))
    attn_mask, kpm = c["attn_mask"], c["kpm"]
    out, w = module(q, k, v, key_padding_mask=kpm, need_weights=c["need_weights"], attn_mask=attn_mask,
                    average_attn_weights=c["average"], is_causal=c["causal"])
    g = torch.randn(out.shape, dtype=D)
    loss = (out * g).sum()
    keep(tensors, p + "out", out)
    keep(tensors, p + "g", g)
    if c["need_weights"]:
        gw = torch.randn(w.shape, dtype=D)
        loss = loss + (w * gw).sum()
        keep(tensors, p + "w", w)
        keep(tensors, p + "gw", gw)
    else:
        assert w is None
    loss.backward()
    for t in (q, k, v):
        assert torch.isfinite(t.grad).all(), i
    keep(tensors, p + "q", q)
    keep(tensors, p + "gq", q.grad)
    if not c["self_attn"]:
        for name, t in (("k", k), ("v", v)):
            keep(tensors, p + name, t)
            keep(tensors, p + "g" + name, t.grad)
    for name, m in (("attn_mask", attn_mask), ("kpm", kpm)):
        if m is None:
            continue
        keep(tensors, p + name, m)
        if m.grad is not None:  # None where PyTorch replaces a causal mask by is_causal
            keep(tensors, p + "g" + name, m.grad)
    keys = list(module.state_dict().keys())
    for name, param in module.named_parameters():
        keep(tensors, p + "p." + name, param)
        keep(tensors, p + "g." + name, param.grad)
        assert torch.isfinite(param.grad).all(), (i, name)
    assert keys == [name for name, _ in module.named_parameters()]
    meta[f"mha{i}.keys"] = ",".join(keys)
    meta[f"mha{i}"] = (f"MHA,embed={E},heads={c['heads']},kdim={c['kdim']},vdim={c['vdim']},bias={int(c['bias'])},"
                       f"add_bias_kv={int(c['add_bias_kv'])},add_zero_attn={int(c['add_zero_attn'])},"
                       f"batch_first={int(c['batch_first'])},unbatched={int(c['unbatched'])},"
                       f"self={int(c['self_attn'])},need_weights={int(c['need_weights'])},"
                       f"average={int(c['average'])},causal={int(c['causal'])}")


# ---------------------------------------------------------------- TransformerEncoderLayer / Encoder

def enc(d_model=6, nhead=2, ff=8, activation="relu", eps=1e-5, batch_first=False, norm_first=False, bias=True,
        unbatched=False, layers=0, final_norm=False, causal=False, S=5, N=3, mask=None, kpm=None):
    return dict(d_model=d_model, nhead=nhead, ff=ff, activation=activation, eps=eps, batch_first=batch_first,
                norm_first=norm_first, bias=bias, unbatched=unbatched, layers=layers, final_norm=final_norm,
                causal=causal, S=S, N=N, mask=mask, kpm=kpm)


def enc_cases():
    S, N = 5, 3
    kpm_float = torch.zeros(N, S, dtype=D)
    kpm_float[0, 3:] = NEG_INF
    kpm_float[2, 1] = NEG_INF
    return [
        enc(),                                                                                   # 0 post-norm
        enc(norm_first=True, activation="gelu", mask=causal_mask(S),                             # 1
            kpm=kpm_float.clone().requires_grad_()),
        enc(batch_first=True, bias=False, activation="gelu", kpm=bool_mask((N, S), 0.4), eps=1e-6),  # 2
        enc(unbatched=True, mask=causal_mask(S), causal=True, nhead=3),                          # 3
        enc(norm_first=True, mask=float_mask(S, S)),                                             # 4 float mask
        enc(layers=2, final_norm=True, mask=bool_mask((S, S), 0.3),                              # 5 encoder
            kpm=bool_mask((N, S), 0.3)),
        enc(layers=2, batch_first=True, norm_first=True, activation="gelu", mask=causal_mask(S),  # 6 causal
            causal=True),
    ]


def run_enc(i, c, tensors, meta):
    p = f"enc{i}."
    E, S, N = c["d_model"], c["S"], c["N"]
    layer = nn.TransformerEncoderLayer(E, c["nhead"], dim_feedforward=c["ff"], dropout=0.0,
                                       activation=c["activation"], layer_norm_eps=c["eps"],
                                       batch_first=c["batch_first"], norm_first=c["norm_first"], bias=c["bias"])
    if c["layers"]:
        norm = nn.LayerNorm(E) if c["final_norm"] else None
        module = nn.TransformerEncoder(layer, c["layers"], norm=norm, enable_nested_tensor=False)
    else:
        module = layer
    module = module.double()
    module.train()
    perturb(module)
    if c["unbatched"]:
        x_shape = (S, E)
    else:
        x_shape = (N, S, E) if c["batch_first"] else (S, N, E)
    x = randn(*x_shape)
    mask, kpm = c["mask"], c["kpm"]
    if c["layers"]:
        out = module(x, mask=mask, src_key_padding_mask=kpm, is_causal=c["causal"])
    else:
        out = module(x, src_mask=mask, src_key_padding_mask=kpm, is_causal=c["causal"])
    g = torch.randn(out.shape, dtype=D)
    (out * g).sum().backward()
    for name, t in (("x", x), ("out", out), ("g", g), ("gx", x.grad)):
        keep(tensors, p + name, t)
    for name, m in (("mask", mask), ("kpm", kpm)):
        if m is None:
            continue
        keep(tensors, p + name, m)
        if m.grad is not None:  # None where PyTorch replaces a causal mask by is_causal
            keep(tensors, p + "g" + name, m.grad)
    keys = list(module.state_dict().keys())
    for name, param in module.named_parameters():
        keep(tensors, p + "p." + name, param)
        keep(tensors, p + "g." + name, param.grad)
    assert keys == [name for name, _ in module.named_parameters()]
    meta[f"enc{i}.keys"] = ",".join(keys)
    meta[f"enc{i}"] = (f"ENC,d_model={E},nhead={c['nhead']},ff={c['ff']},activation={c['activation']},"
                       f"eps={c['eps']!r},batch_first={int(c['batch_first'])},norm_first={int(c['norm_first'])},"
                       f"bias={int(c['bias'])},unbatched={int(c['unbatched'])},layers={c['layers']},"
                       f"final_norm={int(c['final_norm'])},causal={int(c['causal'])}")


# ---------------------------------------------------------------- initialisation

def save_init(tensors, prefix, module):
    for name, param in module.named_parameters():
        tensors[prefix + name] = param.detach().clone()


def init_goldens(tensors):
    torch.manual_seed(7)
    save_init(tensors, "init.seed7.mha.", nn.MultiheadAttention(6, 2))
    mha_kv = nn.MultiheadAttention(6, 3, kdim=5, vdim=4, add_bias_kv=True)
    save_init(tensors, "init.seed7.mha_kv.", mha_kv)
    save_init(tensors, "init.seed7.mha_nobias.", nn.MultiheadAttention(16, 4, bias=False, add_bias_kv=True))
    torch.manual_seed(9)
    mha_kv._reset_parameters()  # the input projections and bias_k, bias_v redrawn; out_proj.weight kept
    save_init(tensors, "init.reset9.mha_kv.", mha_kv)
    torch.manual_seed(3)
    save_init(tensors, "init.seed3.layer.", nn.TransformerEncoderLayer(6, 2, dim_feedforward=8))
    torch.manual_seed(5)
    layer = nn.TransformerEncoderLayer(6, 2, dim_feedforward=8, norm_first=True, bias=False)
    encoder = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(6), enable_nested_tensor=False)
    save_init(tensors, "init.seed5.encoder.", encoder)


def main():
    torch.manual_seed(2027)
    tensors, meta = {}, {}
    cases = sdpa_cases()
    for i, c in enumerate(cases):
        run_sdpa(i, c, tensors, meta)
    meta["count.sdpa"] = str(len(cases))
    cases = mha_cases()
    for i, c in enumerate(cases):
        run_mha(i, c, tensors, meta)
    meta["count.mha"] = str(len(cases))
    cases = enc_cases()
    for i, c in enumerate(cases):
        run_enc(i, c, tensors, meta)
    meta["count.enc"] = str(len(cases))
    init_goldens(tensors)
    tensors["square_mask4"] = nn.Transformer.generate_square_subsequent_mask(4)

    path = os.path.join(OUT, "transformer_golden.safetensors")
    save_file({k: v.contiguous() for k, v in tensors.items()}, path, meta)
    print(f"wrote {path}: {len(tensors)} tensors, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
