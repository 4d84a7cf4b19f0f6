#!/usr/bin/env python3
"""Writes the PyTorch goldens for tests/nn/test_parametrize.cpp and tests/nn/test_module_api.cpp
into tests/nn/golden/parametrize_golden.safetensors.

Parametrization cases (float64), each under a prefix <case>. with:
  weight, bias      the layer's parameters before the parametrization
  x<k>, gy<k>       the input of the k-th call and the gradient fed back for its output
  y<k>              PyTorch's output of the k-th call (training mode)
  grad.<name>       the gradient of sum_k <y_k, gy_k> for each parameter (named_parameters order)
  grad.x0           the gradient of the first input
  orig.<name>       the parameters right after the parametrization (originals, bias)
  after_remove      the plain weight that remove_parametrizations leaves
Spectral-norm cases add u.init, v.init (the buffers spectral_norm leaves: 15 power iterations in
the constructor, one more in the registration's check), u<k>, v<k> (the buffers after call k),
u.raw, v.raw (the normal draws the constructor starts from) and u.ctor, v.ctor (the buffers
after the constructor's 15 iterations), y.eval (an eval-mode call after the others, which must
not move the buffers). The metadata holds, per case, "<case>.keys" (state_dict keys, in order,
comma-separated), "<case>.params" (named_parameters names), "<case>.keys_after_remove", "count".

load_state_dict(strict=False) cases (metadata only): "sd.keys" (the state_dict given, in order),
"sd.missing", "sd.unexpected" (PyTorch's lists, comma-separated, in PyTorch's order),
"sd.strict_error" (the strict=True message) and "sd.size_error" (a size mismatch's message in
non-strict mode), for the model Sequential(Linear(2, 3), ReLU(), Sequential(Linear(3, 2),
BatchNorm1d(2))).

Run: ~/.cache/ember-bench/torch-venv/bin/python tools/gen_parametrize_golden.py
"""
import os

import torch
import torch.nn as nn
from safetensors.torch import save_file
from torch.nn.utils import parametrize
from torch.nn.utils.parametrizations import _SpectralNorm, spectral_norm, weight_norm

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "nn", "golden")
D = torch.float64
CALLS = 3


def keys(module):
    return ",".join(module.state_dict().keys())


def run_case(name, layer, input_shape, parametrize_fn, tensors, meta, spectral=False, seed=0):
    torch.manual_seed(seed)
    with torch.no_grad():
        layer.weight.copy_(torch.randn_like(layer.weight))
        layer.bias.copy_(torch.randn_like(layer.bias))
    tensors[f"{name}.weight"] = layer.weight.detach().clone()
    tensors[f"{name}.bias"] = layer.bias.detach().clone()
    if spectral:
        # The constructor's draws, replayed from the same seed.
        torch.manual_seed(seed + 1)
        w = layer.weight
        dim = 0
        mat = w.permute(dim, *(d for d in range(w.dim()) if d != dim)).flatten(1)
        tensors[f"{name}.u.raw"] = mat.new_empty(mat.size(0)).normal_(0, 1)
        tensors[f"{name}.v.raw"] = mat.new_empty(mat.size(1)).normal_(0, 1)
        torch.manual_seed(seed + 1)
        probe = _SpectralNorm(w.detach().clone())
        tensors[f"{name}.u.ctor"] = probe._u.clone()
        tensors[f"{name}.v.ctor"] = probe._v.clone()
        torch.manual_seed(seed + 1)
    parametrize_fn(layer)
    if spectral:
        sn = layer.parametrizations.weight[0]
        tensors[f"{name}.u.init"] = sn._u.clone()
        tensors[f"{name}.v.init"] = sn._v.clone()
    for pname, p in layer.named_parameters():
        tensors[f"{name}.orig.{pname}"] = p.detach().clone()
    meta[f"{name}.keys"] = keys(layer)
    meta[f"{name}.params"] = ",".join(n for n, _ in layer.named_parameters())

    torch.manual_seed(seed + 2)
    total = 0
    x0 = None
    for k in range(CALLS):
        x = torch.randn(*input_shape, dtype=D, requires_grad=(k == 0))
        if k == 0:
            x0 = x
        y = layer(x)
        gy = torch.randn_like(y)
        tensors[f"{name}.x{k}"] = x.detach().clone()
        tensors[f"{name}.gy{k}"] = gy
        tensors[f"{name}.y{k}"] = y.detach().clone()
        if spectral:
            sn = layer.parametrizations.weight[0]
            tensors[f"{name}.u{k}"] = sn._u.clone()
            tensors[f"{name}.v{k}"] = sn._v.clone()
        total = total + (y * gy).sum()
    total.backward()
    for pname, p in layer.named_parameters():
        tensors[f"{name}.grad.{pname}"] = p.grad.detach().clone()
    tensors[f"{name}.grad.x0"] = x0.grad.detach().clone()
    if spectral:
        layer.eval()
        tensors[f"{name}.y.eval"] = layer(tensors[f"{name}.x0"]).detach().clone()
        layer.train()
    parametrize.remove_parametrizations(layer, "weight")
    tensors[f"{name}.after_remove"] = layer.weight.detach().clone()
    meta[f"{name}.keys_after_remove"] = keys(layer)


def state_dict_cases(meta):
    torch.manual_seed(5)
    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2)))
    full = model.state_dict()
    given = {}
    given["extra"] = torch.zeros(1)
    for k, v in full.items():
        if k in ("0.bias", "2.1.running_var"):
            continue
        given[k] = v
        if k == "0.weight":
            given["0.weight.x"] = torch.zeros(1)
            given["0"] = torch.zeros(1)
    given["2.5.weight"] = torch.zeros(1)
    given["2.1.extra_buffer"] = torch.zeros(1)
    given["3.weight"] = torch.zeros(1)
    result = model.load_state_dict(given, strict=False)
    meta["sd.keys"] = ",".join(given.keys())
    meta["sd.missing"] = ",".join(result.missing_keys)
    meta["sd.unexpected"] = ",".join(result.unexpected_keys)
    try:
        model.load_state_dict(given, strict=True)
    except RuntimeError as e:
        meta["sd.strict_error"] = str(e)
    bad = dict(full)
    bad["2.0.weight"] = torch.zeros(3, 3)
    del bad["0.bias"]
    try:
        model.load_state_dict(bad, strict=False)
    except RuntimeError as e:
        meta["sd.size_error"] = str(e)


def main():
    tensors, meta = {}, {}
    cases = [
        ("wn_linear", nn.Linear(4, 3, dtype=D), (2, 4), lambda m: weight_norm(m), False),
        ("wn_linear_all", nn.Linear(4, 3, dtype=D), (2, 4), lambda m: weight_norm(m, dim=None), False),
        ("wn_conv", nn.Conv2d(2, 3, 3, dtype=D), (2, 2, 5, 5), lambda m: weight_norm(m), False),
        ("wn_conv_dim1", nn.Conv2d(2, 3, 3, dtype=D), (1, 2, 4, 4), lambda m: weight_norm(m, dim=1), False),
        ("sn_linear", nn.Linear(5, 4, dtype=D), (3, 5), lambda m: spectral_norm(m), True),
        ("sn_conv", nn.Conv2d(2, 3, 3, dtype=D), (2, 2, 5, 5), lambda m: spectral_norm(m, n_power_iterations=2), True),
    ]
    for i, (name, layer, shape, fn, spectral) in enumerate(cases):
        run_case(name, layer, shape, fn, tensors, meta, spectral=spectral, seed=10 * i)
        meta[f"case{i}"] = name
    meta["count"] = str(len(cases))
    state_dict_cases(meta)
    os.makedirs(OUT, exist_ok=True)
    tensors = {k: v.contiguous() for k, v in tensors.items()}
    save_file(tensors, os.path.join(OUT, "parametrize_golden.safetensors"), metadata=meta)
    print(f"wrote {len(tensors)} tensors, {len(meta)} metadata entries")


if __name__ == "__main__":
    main()
