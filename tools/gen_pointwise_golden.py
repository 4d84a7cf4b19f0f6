#!/usr/bin/env python3
"""Writes the PyTorch goldens for tests/ops/test_unary_math.cpp and tests/ops/test_activation.cpp
into tests/ops/golden/pointwise_golden.safetensors.

Metadata "case<i>" is "KIND,op=NAME,dtype=float64|float32[,key=value...]" with KIND
  unary       ember::NAME(x) (round: decimals=d)
  binary      ember::NAME(a, b) (lerp: weight=w, a scalar)
  activation  ember::NAME(x, params...) with the keyword arguments listed as key=value
"count" is the number of cases. Tensors, for case i:
  unary / activation  case<i>.x, .y = f(x), .gy (upstream gradient), .gx = d(sum(y * gy))/dx
                      (absent for ops without a gradient); activations in float64 also
                      .v and .ggx = d(sum(gx * v))/dx with gx taken with create_graph
                      (the double backward; absent where PyTorch has none)
  binary              case<i>.a, .b, .y, .gy, .ga, .gb
Module "PReLU": case<i>.x, .w (its weight), .y, .gy, .gx, .gw.

Run: /path/to/python-with-torch-and-safetensors tools/gen_pointwise_golden.py
"""
import os

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "ops", "golden")

torch.manual_seed(0)


def values(*vs):
    return torch.tensor(vs, dtype=torch.float64)


def spread(low, high, n=12):
    """n values spread over (low, high) with a little jitter, so no two cases share a grid."""
    base = torch.linspace(low, high, n, dtype=torch.float64)
    return base + (torch.rand(n, dtype=torch.float64) - 0.5) * (high - low) / (4 * n)


GENERAL = torch.cat([values(0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, -3.0, 1e-8, -1e-8), spread(-6, 6)])
POSITIVE = torch.cat([values(1e-6, 0.05, 0.5, 1.0, 2.0, 10.0, 1e3), spread(0.5, 20)])
UNIT = torch.cat([values(0.0, -0.5, 0.5, 0.999, -0.999, 1e-9), spread(-0.95, 0.95)])
ABOVE_ONE = torch.cat([values(1.0 + 1e-9, 1.01, 1.5, 2.0, 100.0), spread(1.5, 10)])
GAMMA = torch.cat([values(-2.5, -0.5, -1.3, 0.1, 0.3, 1.0, 2.0, 3.7, 10.5, 25.0, 1e-3), spread(1.0, 30)])

UNARY = [
    # name, torch function, inputs, differentiable
    ("floor", torch.floor, GENERAL, True),
    ("ceil", torch.ceil, GENERAL, True),
    ("round", torch.round, torch.cat([GENERAL, values(0.5, 1.5, 2.5, -0.5, -1.5, 4.5)]), True),
    ("trunc", torch.trunc, GENERAL, True),
    ("frac", torch.frac, GENERAL, True),
    ("sign", torch.sign, GENERAL, True),
    ("log1p", torch.log1p, torch.cat([POSITIVE, values(-0.5, -0.9, 1e-12)]), True),
    ("expm1", torch.expm1, GENERAL, True),
    ("log2", torch.log2, POSITIVE, True),
    ("log10", torch.log10, POSITIVE, True),
    ("exp2", torch.exp2, GENERAL, True),
    ("reciprocal", torch.reciprocal, torch.cat([POSITIVE, -POSITIVE]), True),
    ("square", torch.square, GENERAL, True),
    ("sin", torch.sin, GENERAL, True),
    ("cos", torch.cos, GENERAL, True),
    ("tan", torch.tan, spread(-1.5, 1.5), True),
    ("asin", torch.asin, UNIT, True),
    ("acos", torch.acos, UNIT, True),
    ("atan", torch.atan, GENERAL, True),
    ("sinh", torch.sinh, GENERAL, True),
    ("cosh", torch.cosh, GENERAL, True),
    ("asinh", torch.asinh, GENERAL, True),
    ("acosh", torch.acosh, ABOVE_ONE, True),
    ("atanh", torch.atanh, UNIT, True),
    ("erf", torch.erf, GENERAL, True),
    ("erfc", torch.erfc, GENERAL, True),
    ("erfinv", torch.erfinv, UNIT, True),
    ("lgamma", torch.lgamma, GAMMA, True),
    ("digamma", torch.digamma, GAMMA, True),
]

BINARY = [
    # name, torch function, a, b
    ("remainder", torch.remainder, spread(-7, 7, 10), values(3.0, -3.0, 2.5, -2.5, 0.7, 1.0, -1.0, 4.0, -0.3, 2.0)),
    ("fmod", torch.fmod, spread(-7, 7, 10), values(3.0, -3.0, 2.5, -2.5, 0.7, 1.0, -1.0, 4.0, -0.3, 2.0)),
    ("atan2", torch.atan2, spread(-3, 3, 10), values(1.0, -1.0, 0.5, -2.0, 3.0, -0.1, 2.0, -3.0, 1.5, 0.25)),
    ("hypot", torch.hypot, spread(-3, 3, 10), values(1.0, -1.0, 0.5, -2.0, 3.0, -0.1, 2.0, -3.0, 1.5, 0.25)),
]

# Activations: name, torch.nn.functional callable, keyword arguments (ember's ops take them in
# this order), inputs. Inputs hold each op's break points exactly.
ACT_X = torch.cat([GENERAL, values(-1.0, 1.0, 6.0, 7.0, 0.25, -0.25, 19.9, 20.5, -20.0)])
ACTIVATIONS = [
    ("elu", F.elu, dict(alpha=1.0), ACT_X),
    ("elu", F.elu, dict(alpha=0.7), ACT_X),
    ("selu", F.selu, dict(), ACT_X),
    ("celu", F.celu, dict(alpha=1.0), ACT_X),
    ("celu", F.celu, dict(alpha=2.5), ACT_X),
    ("leaky_relu", F.leaky_relu, dict(negative_slope=0.01), ACT_X),
    ("leaky_relu", F.leaky_relu, dict(negative_slope=0.2), ACT_X),
    ("hardtanh", F.hardtanh, dict(min_val=-1.0, max_val=1.0), ACT_X),
    ("hardtanh", F.hardtanh, dict(min_val=-0.25, max_val=3.0), ACT_X),
    ("relu6", F.relu6, dict(), ACT_X),
    ("softplus", F.softplus, dict(beta=1.0, threshold=20.0), ACT_X),
    ("softplus", F.softplus, dict(beta=2.0, threshold=3.0), ACT_X),
    ("threshold", F.threshold, dict(threshold=0.5, value=-2.0), ACT_X),
    ("hardshrink", F.hardshrink, dict(lambd=0.5), ACT_X),
    ("hardshrink", F.hardshrink, dict(lambd=1.5), ACT_X),
    ("softshrink", F.softshrink, dict(lambd=0.5), ACT_X),
    ("softshrink", F.softshrink, dict(lambd=1.5), ACT_X),
    ("hardsigmoid", F.hardsigmoid, dict(), ACT_X),
    ("hardswish", F.hardswish, dict(), ACT_X),
    ("mish", F.mish, dict(), ACT_X),
    ("logsigmoid", F.logsigmoid, dict(), torch.cat([ACT_X, values(-40.0, 40.0, -700.0)])),
    ("softsign", F.softsign, dict(), ACT_X),
    ("tanhshrink", F.tanhshrink, dict(), ACT_X),
    ("rrelu", F.rrelu, dict(lower=0.1, upper=0.3), ACT_X),  # eval mode: a fixed slope
    ("glu", F.glu, dict(dim=-1), spread(-3, 3, 24).reshape(3, 8)),
    ("glu", F.glu, dict(dim=0), spread(-3, 3, 24).reshape(4, 6)),
    ("softmin", F.softmin, dict(dim=1), spread(-3, 3, 24).reshape(4, 6)),
]

tensors, meta = {}, {}
count = 0


def add_case(kind, opts, **named):
    global count
    p = f"case{count}."
    meta[f"case{count}"] = kind + "".join(f",{k}={v}" for k, v in opts.items())
    for k, v in named.items():
        tensors[p + k] = v.detach().clone().contiguous()
    count += 1


def unary_case(name, fn, x, differentiable, dtype, **kwargs):
    x = x.to(dtype).requires_grad_(differentiable)
    y = fn(x, **kwargs)
    named = dict(x=x, y=y)
    if differentiable:
        gy = torch.randn(y.shape, dtype=torch.float64).to(dtype)
        (gx,) = torch.autograd.grad(y, x, gy)
        named.update(gy=gy, gx=gx)
    opts = dict(op=name, dtype=str(dtype).replace("torch.", ""), **kwargs)
    add_case("unary", opts, **named)


for name, fn, x, diff in UNARY:
    for dtype in (torch.float64, torch.float32):
        unary_case(name, fn, x, diff, dtype)
for decimals in (2, -1):
    x = torch.cat([GENERAL * 37.123, values(0.125, 0.375, 25.0, 35.0, -45.0)])
    unary_case("round", torch.round, x, True, torch.float64, decimals=decimals)

for name, fn, a, b in BINARY:
    for dtype in (torch.float64, torch.float32):
        a_ = a.to(dtype).requires_grad_()
        b_ = b.to(dtype).requires_grad_()
        y = fn(a_, b_)
        gy = torch.randn(y.shape, dtype=torch.float64).to(dtype)
        ga, gb = torch.autograd.grad(y, (a_, b_), gy)
        add_case("binary", dict(op=name, dtype=str(dtype).replace("torch.", "")), a=a_, b=b_, y=y, gy=gy, ga=ga, gb=gb)
for weight in (0.3, 0.8):
    a_ = spread(-3, 3, 10).requires_grad_()
    b_ = spread(-1, 5, 10).requires_grad_()
    y = torch.lerp(a_, b_, weight)
    gy = torch.randn(y.shape, dtype=torch.float64)
    ga, gb = torch.autograd.grad(y, (a_, b_), gy)
    add_case("binary", dict(op="lerp", dtype="float64", weight=weight), a=a_, b=b_, y=y, gy=gy, ga=ga, gb=gb)

for name, fn, kwargs, x in ACTIVATIONS:
    for dtype in (torch.float64, torch.float32):
        x_ = x.to(dtype).requires_grad_()
        y = fn(x_, **kwargs)
        gy = torch.randn(y.shape, dtype=torch.float64).to(dtype)
        named = dict(x=x_, y=y, gy=gy)
        if dtype == torch.float64:
            (gx,) = torch.autograd.grad(y, x_, gy, create_graph=True)
            v = torch.randn(gx.shape, dtype=torch.float64)
            named.update(gx=gx)
            try:
                if gx.requires_grad:
                    (ggx,) = torch.autograd.grad(gx, x_, v, allow_unused=True)
                    if ggx is None:
                        ggx = torch.zeros_like(x_)
                else:  # piecewise-linear ops: the double backward is zero
                    ggx = torch.zeros_like(x_)
                named.update(v=v, ggx=ggx)
            except RuntimeError:  # PyTorch has no double backward for this op (hardsigmoid)
                pass
        else:
            (gx,) = torch.autograd.grad(y, x_, gy)
            named.update(gx=gx)
        add_case("activation", dict(op=name, dtype=str(dtype).replace("torch.", ""), **kwargs), **named)

# PReLU, per channel and shared.
for channels in (3, 1):
    x = spread(-3, 3, 2 * 3 * 4).reshape(2, 3, 4).requires_grad_()
    w = (torch.rand(channels, dtype=torch.float64) * 0.5).requires_grad_()
    y = F.prelu(x, w)
    gy = torch.randn(y.shape, dtype=torch.float64)
    gx, gw = torch.autograd.grad(y, (x, w), gy)
    add_case("PReLU", dict(op="prelu", dtype="float64", channels=channels), x=x, w=w, y=y, gy=gy, gx=gx, gw=gw)

meta["count"] = str(count)
meta["torch"] = torch.__version__
os.makedirs(OUT, exist_ok=True)
save_file(tensors, os.path.join(OUT, "pointwise_golden.safetensors"), metadata=meta)
print(f"{count} cases, {len(tensors)} tensors")
