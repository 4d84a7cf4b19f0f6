#!/usr/bin/env python3
"""Writes the PyTorch goldens for tests/nn/test_transformer_decoder.cpp into
tests/nn/golden/transformer_decoder_golden.safetensors.

Cases (float64, dropout 0, training mode so that no fused inference path runs; parameters
perturbed after construction so that biases and norm weights are not 0 and 1). Metadata
"case<i>" is "KIND,key=value,..." with KIND DecoderLayer, Decoder or Transformer and the keys
d_model, nhead, ff, layers (Decoder), enc, dec (Transformer), norm_first, activation,
batch_first, bias, eps; "case<i>.keys" lists the state_dict keys in PyTorch's order. Tensors:
  case<i>.p.<name>        the state_dict
  case<i>.a, case<i>.b    the inputs: tgt and memory (layers), src and tgt (Transformer)
  case<i>.tgt_mask, .memory_mask, .src_mask, .tgt_kpm, .memory_kpm, .src_kpm   masks given
  case<i>.y, .gy          the output and the upstream gradient
  case<i>.ga, .gb, case<i>.g.<name>   the gradients of sum(y * gy)
Metadata "case<i>.flags" lists the is_causal flags set (tgt_is_causal, ...), comma-separated.

Init (float32): "init.seed11.transformer.<name>" is nn.Transformer(d_model=8, nhead=2,
num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=16) right after
torch.manual_seed(11); "init.seed12.decoder_layer.<name>" is nn.TransformerDecoderLayer(6, 2, 8)
right after torch.manual_seed(12).

Run: /path/to/python-with-torch-and-safetensors tools/gen_transformer_decoder_golden.py
"""
import os

import torch
import torch.nn as nn
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "nn", "golden")


def layer_kwargs(c):
    return dict(dim_feedforward=c["ff"], dropout=0.0, activation=c["activation"], layer_norm_eps=c["eps"],
                batch_first=c["batch_first"], norm_first=c["norm_first"], bias=c["bias"])


def build(c):
    if c["kind"] == "DecoderLayer":
        return nn.TransformerDecoderLayer(c["d_model"], c["nhead"], **layer_kwargs(c))
    if c["kind"] == "Decoder":
        layer = nn.TransformerDecoderLayer(c["d_model"], c["nhead"], **layer_kwargs(c))
        return nn.TransformerDecoder(layer, c["layers"], norm=nn.LayerNorm(c["d_model"], eps=c["eps"], bias=c["bias"]))
    return nn.Transformer(c["d_model"], c["nhead"], c["enc"], c["dec"], c["ff"], 0.0, c["activation"],
                          layer_norm_eps=c["eps"], batch_first=c["batch_first"], norm_first=c["norm_first"],
                          bias=c["bias"])


def case(kind, d_model=6, nhead=2, ff=8, layers=1, enc=1, dec=1, norm_first=False, activation="relu",
         batch_first=False, bias=True, eps=1e-5, unbatched=False, masks=(), flags=()):
    return dict(kind=kind, d_model=d_model, nhead=nhead, ff=ff, layers=layers, enc=enc, dec=dec,
                norm_first=norm_first, activation=activation, batch_first=batch_first, bias=bias, eps=eps,
                unbatched=unbatched, masks=list(masks), flags=list(flags))


CASES = [
    case("DecoderLayer", masks=("tgt_mask", "memory_kpm_bool")),                                          # 0
    case("DecoderLayer", norm_first=True, activation="gelu", batch_first=True,
         masks=("memory_mask", "tgt_kpm_float")),                                                          # 1
    case("DecoderLayer", nhead=3, bias=False, unbatched=True, masks=("tgt_mask",), flags=("tgt_is_causal",)),  # 2
    case("Decoder", layers=2, eps=1e-6, masks=("tgt_mask", "tgt_kpm_bool", "memory_mask")),               # 3
    case("Transformer", d_model=8, enc=2, dec=2, ff=16,
         masks=("src_kpm_bool", "tgt_mask", "memory_kpm_bool")),                                           # 4
    case("Transformer", d_model=8, enc=1, dec=2, ff=12, norm_first=True, activation="gelu",
         batch_first=True, masks=("src_mask", "tgt_mask"), flags=("tgt_is_causal",)),                      # 5
]

T, S, N = 4, 5, 3


def causal(n):
    return nn.Transformer.generate_square_subsequent_mask(n, dtype=torch.float64)


def run_case(i, c, tensors, meta):
    p = f"case{i}."
    m = build(c).double()
    m.train()
    with torch.no_grad():
        for param in m.parameters():
            param.add_(0.1 * torch.randn_like(param))
    E = c["d_model"]
    transformer = c["kind"] == "Transformer"
    a_len, b_len = (S, T) if transformer else (T, S)

    def shape(length):
        if c["unbatched"]:
            return (length, E)
        return (N, length, E) if c["batch_first"] else (length, N, E)

    a = torch.randn(shape(a_len), dtype=torch.float64, requires_grad=True)
    b = torch.randn(shape(b_len), dtype=torch.float64, requires_grad=True)
    tgt_len = b_len if transformer else a_len
    mem_len = a_len if transformer else b_len
    kwargs, masks = {}, {}
    for name in c["masks"]:
        if name == "tgt_mask":
            masks["tgt_mask"] = causal(tgt_len)
        elif name == "src_mask":
            masks["src_mask"] = torch.randn(S, S, dtype=torch.float64)
        elif name == "memory_mask":
            masks["memory_mask"] = torch.randn(tgt_len, mem_len, dtype=torch.float64)
        else:
            base, kind = name.rsplit("_", 1)
            length = {"tgt_kpm": tgt_len, "memory_kpm": mem_len, "src_kpm": S}[base]
            kpm = torch.zeros(N, length, dtype=torch.bool)
            kpm[0, -2:] = True
            kpm[2, -1] = True
            masks[base] = kpm if kind == "bool" else torch.zeros(N, length, dtype=torch.float64).masked_fill(kpm, -3.0)
    arg_names = {"tgt_kpm": "tgt_key_padding_mask", "memory_kpm": "memory_key_padding_mask",
                 "src_kpm": "src_key_padding_mask"}
    for name, value in masks.items():
        kwargs[arg_names.get(name, name)] = value
        tensors[p + name] = value
    for flag in c["flags"]:
        kwargs[flag] = True
    y = m(a, b, **kwargs)
    gy = torch.randn(y.shape, dtype=torch.float64)
    (y * gy).sum().backward()
    tensors[p + "a"], tensors[p + "b"], tensors[p + "y"], tensors[p + "gy"] = a.detach(), b.detach(), y.detach(), gy
    tensors[p + "ga"], tensors[p + "gb"] = a.grad, b.grad
    keys = []
    for name, param in m.named_parameters():
        keys.append(name)
        tensors[p + "p." + name], tensors[p + "g." + name] = param.detach().clone(), param.grad
    assert keys == list(m.state_dict().keys())
    meta[f"case{i}.keys"] = ",".join(keys)
    meta[f"case{i}.flags"] = ",".join(c["flags"])
    meta[f"case{i}"] = (f"{c['kind']},d_model={E},nhead={c['nhead']},ff={c['ff']},layers={c['layers']},"
                        f"enc={c['enc']},dec={c['dec']},norm_first={int(c['norm_first'])},"
                        f"activation={c['activation']},batch_first={int(c['batch_first'])},bias={int(c['bias'])},"
                        f"eps={c['eps']}")


def main():
    torch.manual_seed(2027)
    tensors, meta = {}, {}
    for i, c in enumerate(CASES):
        run_case(i, c, tensors, meta)
    meta["count"] = str(len(CASES))
    torch.manual_seed(11)
    t = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=16)
    for name, param in t.named_parameters():
        tensors["init.seed11.transformer." + name] = param.detach().clone()
    torch.manual_seed(12)
    d = nn.TransformerDecoderLayer(6, 2, 8)
    for name, param in d.named_parameters():
        tensors["init.seed12.decoder_layer." + name] = param.detach().clone()
    path = os.path.join(OUT, "transformer_decoder_golden.safetensors")
    save_file({k: v.contiguous() for k, v in tensors.items()}, path, meta)
    print(f"wrote {path}: {len(tensors)} tensors, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
