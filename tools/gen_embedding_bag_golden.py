#!/usr/bin/env python3
"""Writes the PyTorch goldens for tests/nn/test_embedding_bag.cpp into
tests/nn/golden/embedding_bag_golden.safetensors.

Each case is one call of torch.nn.functional.embedding_bag and the gradients of sum(y * gy).
Metadata "case<i>" is "embedding_bag,key=value,..." with the keys
  mode     sum, mean or max
  dtype    float32 or float64
  offsets  0/1 (0: a 2-D input, offsets None)
  psw      0/1 (per_sample_weights given)
  last     0/1 (include_last_offset)
  padding  padding_idx, or "-" for None
  freq     0/1 (scale_grad_by_freq)
  table    the name of the table: tensor "table.<name>", shared by the cases
and tensors case<i>.input (int64), .offsets (int64), .psw, .y (the output), .gy (the upstream
gradient), .gw and .gpsw (the gradients).

float32 cases never have include_last_offset with a last offset short of the input's length:
there PyTorch's CPU sum (FBGEMM) stops at the last offset while its float64 path, its CUDA
kernels and ember run the last bag to the end of the input.

Run: ~/.cache/ember-bench/torch-venv/bin/python tools/gen_embedding_bag_golden.py
"""
import os

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "nn", "golden")
torch.manual_seed(0)

tensors, meta = {}, {}
count = 0


def fmt(v):
    if v is None:
        return "-"
    if isinstance(v, bool):
        return str(int(v))
    return str(v)


def case(indices, offsets, table_name, mode, psw=False, last=False, padding=None, freq=False):
    global count
    table = tensors[f"table.{table_name}"]
    dtype = table.dtype
    input = torch.tensor(indices, dtype=torch.int64)
    off = None if offsets is None else torch.tensor(offsets, dtype=torch.int64)
    w = table.clone().requires_grad_()
    p = (torch.rand(input.shape, dtype=dtype) + 0.5).requires_grad_() if psw else None
    y = F.embedding_bag(input, w, off, None, 2.0, freq, mode, False, p, last, padding)
    gy = torch.randn(y.shape, dtype=dtype)
    ins = [w] + ([p] if psw else [])
    gs = torch.autograd.grad((y * gy).sum(), ins)
    name = f"case{count}"
    meta[name] = "embedding_bag" + "".join(
        f",{k}={fmt(v)}" for k, v in dict(mode=mode, dtype=str(dtype).replace("torch.", ""),
                                          offsets=off is not None, psw=psw, last=last, padding=padding,
                                          freq=freq, table=table_name).items())
    named = dict(input=input, y=y, gy=gy, gw=gs[0])
    if off is not None:
        named["offsets"] = off
    if psw:
        named.update(psw=p, gpsw=gs[1])
    for k, v in named.items():
        tensors[f"{name}.{k}"] = v.detach().clone().contiguous()
    count += 1


tensors["table.w"] = torch.randn(10, 5, dtype=torch.float64)
tensors["table.ties"] = torch.randint(-2, 3, (10, 5)).to(torch.float64)  # small integers: ties between rows
tensors["table.w32"] = torch.randn(10, 5, dtype=torch.float32)
tensors["table.big"] = torch.randn(20, 9, dtype=torch.float64)
flat = [1, 4, 4, 9, 0, 2, 7, 3, 3, 5, 8, 4]
for mode in ("sum", "mean", "max"):
    case(flat, [0, 3, 3, 7], "w", mode)  # an empty bag
    case(flat, [0, 3, 3, 7], "w", mode, padding=4)
    case([[1, 4, 4], [9, 4, 2], [4, 4, 4]], None, "w", mode, padding=-6)  # an all-padding bag
    case(flat, [0, 3, 6, 12], "w", mode, last=True)
    case(flat, [0, 1, 6], "ties", mode)
    case([[0, 1, 2, 3], [3, 3, 1, 0]], None, "ties", mode)
    case([], [0, 0, 0], "w", mode)  # no indices at all
    case(flat, [0, 0, 0, 12], "w", mode, last=True, padding=3)
    # The last bag runs to the end of the input, past include_last_offset's last offset.
    case(flat, [0, 2, 5], "w", mode, last=True, padding=4 if mode == "mean" else None)
    case(flat, [0, 3, 3, 7], "w32", mode, padding=4)
for mode in ("sum", "mean"):
    case(flat, [0, 3, 3, 7], "w", mode, freq=True)
    case(flat, [0, 2, 6], "w", mode, freq=True, padding=3)
    case([[1, 1, 2], [1, 2, 2]], None, "w", mode, freq=True)
    case(flat, [0, 2, 6], "w32", mode, freq=True, padding=3)
case(flat, [0, 3, 3, 7], "w", "sum", psw=True)
case([[1, 4, 4], [9, 4, 2]], None, "w", "sum", psw=True, padding=4)
case(flat, [0, 2, 12], "w", "sum", psw=True, last=True)
case(flat, [0, 2, 2], "w", "sum", psw=True, last=True)
case(flat, [0, 5, 9], "w", "sum", psw=True, freq=True, padding=9)
case(flat, [0, 5, 9], "w32", "sum", psw=True, padding=9)
# A larger case: many bags, some empty, over a wider table.
big_idx = torch.randint(0, 20, (120,)).tolist()
big_off = sorted(torch.randint(0, 120, (25,)).tolist())
big_off[0] = 0
case(big_idx, big_off, "big", "mean", padding=7, freq=True)
case(big_idx, big_off, "big", "max", padding=7)
case(big_idx, big_off, "big", "sum", psw=True, padding=7)

os.makedirs(OUT, exist_ok=True)
meta["count"] = str(count)
path = os.path.join(OUT, "embedding_bag_golden.safetensors")
save_file(tensors, path, metadata=meta)
print(f"wrote {count} cases, {len(tensors)} tensors, {os.path.getsize(path)} bytes to {path}")
