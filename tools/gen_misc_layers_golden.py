#!/usr/bin/env python3
"""Writes the PyTorch goldens for tests/nn/test_misc_layers.cpp into
tests/nn/golden/misc_layers_golden.safetensors.

Cases (float64). Metadata "case<i>" is "KIND,key=value,..."; list values are joined with ":"
("kernel=2:3"), and "-" stands for None. KINDs and their options:
  lp_pool1d / lp_pool2d      norm (a number or inf), kernel, stride, ceil
  bilinear                   bias (0/1)
  unfold                     kernel, dilation, padding, stride
  fold                       output, kernel, dilation, padding, stride
  embedding_bag              mode, offsets (0/1), psw (0/1), last (include_last_offset),
                             padding (padding_idx), freq (scale_grad_by_freq), max_norm, norm_type
  adaptive_max_pool1d / 2d   output
  nll_loss2d                 reduction, weight (0/1), ignore
Tensors, for case i: case<i>.x (input; bilinear: .x1, .x2), .y (output), .gy (upstream
gradient) and the gradients of sum(y * gy): .gx (.gx1, .gx2), .gw/.gb for bilinear's weight
.w and bias .b; embedding_bag: .input (int64), .offsets (int64), .w (the weight before the call),
.w_after (after max_norm's renormalisation), .psw and .gpsw, .gw; adaptive pooling: .indices;
nll_loss2d: .target (int64), .weight.

Init: "init.<name>.<param>" are the parameters of a module built right after torch.manual_seed(s)
with metadata "init.<name>" = "seed,args...": Bilinear(3, 5, 2), Bilinear(4, 2, 3, bias=False),
EmbeddingBag(7, 3, padding_idx=2).

Run: ~/.cache/ember-bench/torch-venv/bin/python tools/gen_misc_layers_golden.py
"""
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "nn", "golden")
D = torch.float64
torch.manual_seed(0)

tensors, meta = {}, {}
count = 0


def fmt(v):
    if v is None:
        return "-"
    if isinstance(v, (tuple, list)):
        return ":".join(str(a) for a in v)
    if isinstance(v, bool):
        return str(int(v))
    return str(v)


def add_case(kind, opts, **named):
    global count
    meta[f"case{count}"] = kind + "".join(f",{k}={fmt(v)}" for k, v in opts.items())
    for k, v in named.items():
        tensors[f"case{count}.{k}"] = v.detach().clone().contiguous()
    count += 1


def grads(y, inputs):
    gy = torch.randn(y.shape, dtype=D)
    gs = torch.autograd.grad(y, inputs, gy, allow_unused=True)
    return gy, [torch.zeros_like(i) if g is None else g for i, g in zip(inputs, gs)]


# ---- LPPool
def lp(kind, x, norm, kernel, stride=None, ceil=False):
    x = x.clone().requires_grad_()
    fn = F.lp_pool1d if kind == "lp_pool1d" else F.lp_pool2d
    k = tuple(kernel) if len(kernel) == 2 else kernel[0]
    s = None if stride is None else (tuple(stride) if len(stride) == 2 else stride[0])
    y = fn(x, norm, k, s, ceil)
    gy, (gx,) = grads(y, [x])
    add_case(kind, dict(norm=norm, kernel=kernel, stride=stride, ceil=ceil), x=x, y=y, gy=gy, gx=gx)


pos = lambda *s: torch.rand(*s, dtype=D) + 0.1  # noqa: E731
lp("lp_pool1d", torch.randn(2, 3, 9, dtype=D), 2.0, [3])
lp("lp_pool1d", pos(2, 3, 10), 1.5, [3], [2], True)
lp("lp_pool1d", pos(3, 8), 3.0, [2], [3])
lp("lp_pool1d", torch.randn(2, 2, 7, dtype=D), math.inf, [3], [2], True)
lp("lp_pool1d", pos(2, 2, 7), -2.0, [2])
lp("lp_pool2d", torch.randn(2, 2, 6, 7, dtype=D), 2.0, [2])
lp("lp_pool2d", pos(2, 2, 6, 7), 1.5, [2, 3], [1, 2])
lp("lp_pool2d", pos(2, 7, 7), 4.0, [3], [2], True)
lp("lp_pool2d", torch.randn(1, 2, 5, 6, dtype=D), math.inf, [2, 3])

# ---- Bilinear
for s1, s2, out, bias in (((4, 3), (4, 5), 2, True), ((4, 3), (4, 5), 3, False), ((2, 3, 3), (2, 3, 2), 4, True),
                          ((3,), (4,), 2, True), ((0, 3), (0, 2), 2, True)):
    x1 = torch.randn(*s1, dtype=D, requires_grad=True)
    x2 = torch.randn(*s2, dtype=D, requires_grad=True)
    w = torch.randn(out, s1[-1], s2[-1], dtype=D, requires_grad=True)
    b = torch.randn(out, dtype=D, requires_grad=True) if bias else None
    y = F.bilinear(x1, x2, w, b)
    ins = [x1, x2, w] + ([b] if bias else [])
    gy, gs = grads(y, ins)
    named = dict(x1=x1, x2=x2, w=w, y=y, gy=gy, gx1=gs[0], gx2=gs[1], gw=gs[2])
    if bias:
        named.update(b=b, gb=gs[3])
    add_case("bilinear", dict(bias=bias), **named)


# ---- Unfold / Fold
def unfold_case(shape, kernel, dilation=(1,), padding=(0,), stride=(1,)):
    x = torch.randn(*shape, dtype=D, requires_grad=True)
    p = lambda v: v[0] if len(v) == 1 else tuple(v)  # noqa: E731
    y = F.unfold(x, p(kernel), p(dilation), p(padding), p(stride))
    gy, (gx,) = grads(y, [x])
    add_case("unfold", dict(kernel=kernel, dilation=dilation, padding=padding, stride=stride), x=x, y=y, gy=gy, gx=gx)


def fold_case(lead, channels, output, kernel, dilation=(1,), padding=(0,), stride=(1,)):
    two = lambda v: (v[0], v[0]) if len(v) == 1 else tuple(v)  # noqa: E731
    o, k, d, pd, s = map(two, (output, kernel, dilation, padding, stride))
    blocks = [(o[i] + 2 * pd[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2)]
    x = torch.randn(*lead, channels * k[0] * k[1], blocks[0] * blocks[1], dtype=D, requires_grad=True)
    p = lambda v: v[0] if len(v) == 1 else tuple(v)  # noqa: E731
    y = F.fold(x, p(output), p(kernel), p(dilation), p(padding), p(stride))
    gy, (gx,) = grads(y, [x])
    add_case("fold", dict(output=output, kernel=kernel, dilation=dilation, padding=padding, stride=stride), x=x, y=y,
             gy=gy, gx=gx)


unfold_case((2, 3, 5, 6), [2])
unfold_case((2, 2, 6, 7), [2, 3], [1, 2], [1, 0], [2, 1])
unfold_case((2, 4, 5), [3], [1], [1], [2])
unfold_case((1, 2, 4, 4), [2], [2], [2], [3])
fold_case((2,), 3, [4, 5], [2])
fold_case((2,), 2, [6, 7], [2, 3], [2, 1], [1], [1, 2])
fold_case((), 2, [5, 5], [3], [1], [1], [2])
fold_case((1,), 1, [4, 4], [2], [2], [2], [3])


# ---- EmbeddingBag
def bag_case(input, offsets, w, mode, psw=False, last=False, padding=None, freq=False, max_norm=None, norm_type=2.0):
    w0 = w.clone()
    w = w.clone().requires_grad_()
    input = torch.tensor(input, dtype=torch.long)
    off = None if offsets is None else torch.tensor(offsets)
    p = torch.rand(input.shape, dtype=D, requires_grad=True) + 0.5 if psw else None
    if p is not None:
        p = p.detach().requires_grad_()
    y = F.embedding_bag(input, w, off, max_norm, norm_type, freq, mode, False, p, last, padding)
    ins = [w] + ([p] if psw else [])
    gy, gs = grads(y, ins)
    named = dict(input=input, w=w0, w_after=w, y=y, gy=gy, gw=gs[0])
    if off is not None:
        named.update(offsets=off)
    if psw:
        named.update(psw=p, gpsw=gs[1])
    add_case("embedding_bag", dict(mode=mode, offsets=off is not None, psw=psw, last=last, padding=padding, freq=freq,
                                   max_norm=max_norm, norm_type=norm_type), **named)


W = torch.randn(10, 4, dtype=D)
W_TIES = torch.randint(-2, 3, (10, 4)).to(D)  # small integers: ties between different rows
flat = [1, 4, 4, 9, 0, 2, 7, 3, 3, 5, 8]
for mode in ("sum", "mean", "max"):
    bag_case(flat, [0, 3, 3, 7], W, mode)  # an empty bag
    bag_case(flat, [0, 2, 5], W, mode, padding=4)
    bag_case([[1, 4, 4], [9, 4, 2], [4, 4, 4]], None, W, mode, padding=-6)  # an all-padding bag
    bag_case(flat, [0, 3, 6, 11], W, mode, last=True)
    bag_case(flat, [0, 1, 6], W_TIES, mode)
    bag_case([[0, 1, 2, 3], [3, 3, 1, 0]], None, W_TIES, mode)
    bag_case(flat, [0, 4, 4, 6], W, mode, max_norm=1.2)
bag_case(flat, [0, 3, 3, 7], W, "sum", psw=True)
bag_case([[1, 4, 4], [9, 4, 2]], None, W, "sum", psw=True, padding=4)
bag_case(flat, [0, 2, 5], W, "sum", psw=True, last=True)
bag_case(flat, [0, 3, 6], W, "sum", freq=True)
bag_case(flat, [0, 3, 6], W, "mean", freq=True, padding=3)
bag_case(flat, [0, 5], W, "mean", max_norm=1.0, norm_type=1.0)
bag_case(flat, [0, 5], W, "sum", max_norm=0.9, norm_type=3.0)
bag_case([], [0, 0], W, "mean")
bag_case(flat, [0, 2, 2], W, "sum", last=True)  # the last bag runs to the end of input


# ---- AdaptiveMaxPool
def amp(kind, x, output):
    x = x.clone().requires_grad_()
    if kind == "adaptive_max_pool1d":
        y, idx = F.adaptive_max_pool1d(x, output[0], return_indices=True)
    else:
        y, idx = F.adaptive_max_pool2d(x, output[0] if len(output) == 1 else tuple(output), return_indices=True)
    gy, (gx,) = grads(y, [x])
    add_case(kind, dict(output=output), x=x, y=y, gy=gy, gx=gx, indices=idx)


ties = lambda *s: torch.randint(-3, 4, s).to(D)  # noqa: E731
amp("adaptive_max_pool2d", torch.randn(2, 3, 7, 9, dtype=D), [3, 4])
amp("adaptive_max_pool2d", torch.randn(1, 2, 5, 6, dtype=D), [9, 11])
amp("adaptive_max_pool2d", torch.randn(2, 2, 5, 5, dtype=D), [1])
amp("adaptive_max_pool2d", torch.randn(3, 6, 5, dtype=D), [4])
amp("adaptive_max_pool2d", ties(2, 2, 8, 7), [3, 3])
amp("adaptive_max_pool2d", ties(1, 3, 7, 8), [3, 3])  # windows of different widths
amp("adaptive_max_pool1d", torch.randn(2, 3, 10, dtype=D), [4])
amp("adaptive_max_pool1d", torch.randn(3, 7, dtype=D), [5])
amp("adaptive_max_pool1d", ties(2, 2, 11), [3])
amp("adaptive_max_pool1d", torch.randn(2, 2, 4, dtype=D), [7])

# ---- NLLLoss2d (the deprecated alias of NLLLoss)
for reduction, weighted, ignore in (("mean", False, -100), ("sum", True, 1), ("none", True, -100), ("mean", True, 2)):
    x = torch.log_softmax(torch.randn(2, 3, 4, 5, dtype=D), 1).detach().requires_grad_()
    target = torch.randint(0, 3, (2, 4, 5))
    weight = torch.rand(3, dtype=D) + 0.5 if weighted else None
    y = nn.NLLLoss2d(weight, ignore_index=ignore, reduction=reduction)(x, target)
    gy, (gx,) = grads(y, [x])
    named = dict(x=x, target=target, y=y, gy=gy, gx=gx)
    if weighted:
        named.update(weight=weight)
    add_case("nll_loss2d", dict(reduction=reduction, weight=weighted, ignore=ignore), **named)

meta["count"] = str(count)

# ---- initial parameters for a seed (float32, PyTorch's default dtype)
for name, seed, make in (("bilinear", 3, lambda: nn.Bilinear(3, 5, 2)),
                         ("bilinear_nobias", 11, lambda: nn.Bilinear(4, 2, 3, bias=False)),
                         ("embedding_bag", 5, lambda: nn.EmbeddingBag(7, 3, padding_idx=2))):
    torch.manual_seed(seed)
    m = make()
    meta[f"init.{name}"] = str(seed)
    for pname, param in m.named_parameters():
        tensors[f"init.{name}.{pname}"] = param.detach().clone()

os.makedirs(OUT, exist_ok=True)
path = os.path.join(OUT, "misc_layers_golden.safetensors")
save_file(tensors, path, metadata=meta)
print(f"wrote {count} cases, {len(tensors)} tensors, {os.path.getsize(path)} bytes to {path}")
