#!/usr/bin/env python3
"""Writes the PyTorch goldens for tests/nn/test_conv3d.cpp and tests/nn/test_pool3d.cpp into
tests/nn/golden/conv3d_golden.safetensors and tests/nn/golden/pool3d_golden.safetensors.

Each file's metadata has "count" and, per case i, "case<i>" = "KIND,key=value,..."; a list is its
values separated by spaces ("1 2 3"), and "none" stands for Python's None.

conv3d_golden (float64):
  conv3d             stride, padding (a list, or "same"/"valid"), dilation, groups, bias
  conv_transpose3d   stride, padding, output_padding, groups, dilation, bias
  Conv3d             the layer built after torch.manual_seed(seed): in, out, kernel, stride,
                     padding, dilation, groups, bias, padding_mode; "case<i>.keys" its state_dict
  ConvTranspose3d    likewise (in, out, kernel, stride, padding, output_padding, groups, bias,
                     dilation), with output_size ("none" or a list) for forward(x, output_size)
  tensors: x, w, b (when bias), y, gx, gw, gb: gradients of sum(y * gy), gy[k] = cos(0.7 * k)
  in y's row-major order (not stored); the layers' weight
  and bias as case<i>.weight / case<i>.bias
pool3d_golden (float64 unless said):
  max_pool3d            kernel, stride, padding, dilation, ceil; tensor idx (return_indices)
  avg_pool3d            kernel, stride, padding, ceil, count_include_pad, divisor ("none" or int)
  adaptive_avg_pool3d   output
  adaptive_max_pool3d   output; idx
  lp_pool3d             norm, kernel, stride, ceil
  fractional_max_pool2d/3d   kernel, output ("none" or a list), ratio ("none" or a list),
                        dtype (float64 or float32: x, samples, y and gx are in that dtype); tensors
                        samples and idx
  tensors: x, y, gx (gy as above)

Run: ~/.cache/ember-bench/torch-venv/bin/python tools/gen_conv3d_pool3d_golden.py
"""
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "nn", "golden")


def fmt(v):
    if v is None:
        return "none"
    if isinstance(v, bool):
        return str(int(v))
    if isinstance(v, (tuple, list)):
        return " ".join(fmt(e) for e in v)
    if isinstance(v, float) and math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return str(v)


def describe(kind, opts):
    return ",".join([kind] + [f"{k}={fmt(v)}" for k, v in opts.items()])


def grads(y, inputs, g):
    return torch.autograd.grad(y, inputs, g)


def upstream(y):
    """The upstream gradient, not stored: cos(0.7 * k) for the k-th element, as the tests make it."""
    return torch.cos(torch.arange(y.numel(), dtype=torch.float64) * 0.7).reshape(y.shape).to(y.dtype)


# ---------------------------------------------------------------- conv3d


def conv_case(i, kind, x_shape, w_shape, bias, opts, tensors, meta):
    x = torch.randn(*x_shape, dtype=torch.float64, requires_grad=True)
    w = (torch.randn(*w_shape, dtype=torch.float64) * 0.3).requires_grad_()
    out_channels = w_shape[0] if kind == "conv3d" else w_shape[1] * opts["groups"]
    b = torch.randn(out_channels, dtype=torch.float64, requires_grad=True) if bias else None
    if kind == "conv3d":
        y = F.conv3d(x, w, b, opts["stride"], opts["padding"], opts["dilation"], opts["groups"])
    else:
        y = F.conv_transpose3d(x, w, b, opts["stride"], opts["padding"], opts["output_padding"], opts["groups"],
                               opts["dilation"])
    gy = upstream(y)
    inputs = [x, w] + ([b] if bias else [])
    g = grads(y, inputs, gy)
    p = f"case{i}."
    tensors.update({p + "x": x, p + "w": w, p + "y": y, p + "gx": g[0], p + "gw": g[1]})
    if bias:
        tensors.update({p + "b": b, p + "gb": g[2]})
    meta[f"case{i}"] = describe(kind, dict(opts, bias=bias))


def layer_case(i, kind, seed, x_shape, args, tensors, meta, output_size=None):
    torch.manual_seed(seed)
    if kind == "Conv3d":
        m = nn.Conv3d(args["in"], args["out"], args["kernel"], args["stride"], args["padding"], args["dilation"],
                      args["groups"], args["bias"], args["padding_mode"]).double()
    else:
        m = nn.ConvTranspose3d(args["in"], args["out"], args["kernel"], args["stride"], args["padding"],
                               args["output_padding"], args["groups"], args["bias"], args["dilation"]).double()
    x = torch.randn(*x_shape, dtype=torch.float64, requires_grad=True)
    y = m(x) if output_size is None else m(x, output_size=output_size)
    gy = upstream(y)
    params = [m.weight] + ([m.bias] if args["bias"] else [])
    g = grads(y, [x] + params, gy)
    p = f"case{i}."
    tensors.update({p + "x": x, p + "y": y, p + "gx": g[0], p + "gw": g[1], p + "weight": m.weight})
    if args["bias"]:
        tensors.update({p + "bias": m.bias, p + "gb": g[2]})
    extra = {"seed": seed}
    if kind == "ConvTranspose3d":
        extra["output_size"] = output_size
    meta[f"case{i}"] = describe(kind, dict(args, **extra))
    meta[f"case{i}.keys"] = ",".join(m.state_dict().keys())


def conv_golden():
    torch.manual_seed(0)
    tensors, meta = {}, {}
    cases = [
        ("conv3d", (2, 2, 3, 4, 4), (2, 2, 2, 3, 3), True, dict(stride=1, padding=0, dilation=1, groups=1)),
        ("conv3d", (1, 4, 4, 4, 3), (4, 2, 3, 2, 3), True,
         dict(stride=(2, 1, 2), padding=(1, 2, 0), dilation=(1, 2, 1), groups=2)),
        ("conv3d", (2, 4, 4, 4), (3, 2, 2, 3, 1), False, dict(stride=1, padding=1, dilation=1, groups=1)),
        ("conv3d", (1, 2, 6, 3, 3), (2, 2, 3, 3, 3), True,
         dict(stride=(2, 1, 1), padding=(2, 1, 0), dilation=(2, 1, 1), groups=1)),
        ("conv3d", (1, 2, 4, 4, 5), (2, 2, 2, 3, 4), True, dict(stride=1, padding="same", dilation=(1, 1, 2),
                                                              groups=1)),
        ("conv3d", (1, 3, 3, 4, 4), (3, 1, 3, 3, 3), False, dict(stride=1, padding="valid", dilation=1, groups=3)),
        ("conv_transpose3d", (2, 2, 2, 3, 2), (2, 2, 2, 3, 2), True,
         dict(stride=1, padding=0, output_padding=0, groups=1, dilation=1)),
        ("conv_transpose3d", (1, 4, 2, 2, 3), (4, 2, 3, 2, 3), True,
         dict(stride=(2, 1, 2), padding=(1, 0, 1), output_padding=(1, 0, 1), groups=2, dilation=1)),
        ("conv_transpose3d", (1, 2, 2, 2, 2), (2, 2, 2, 3, 2), True,
         dict(stride=2, padding=(0, 1, 1), output_padding=1, groups=1, dilation=(2, 1, 1))),
        ("conv_transpose3d", (3, 2, 2, 3), (3, 2, 2, 2, 2), False,
         dict(stride=(1, 2, 1), padding=0, output_padding=0, groups=1, dilation=1)),
        ("conv_transpose3d", (1, 2, 3, 2, 2), (2, 1, 2, 2, 2), True,
         dict(stride=1, padding=(1, 0, 0), output_padding=(1, 0, 0), groups=2, dilation=(2, 1, 1))),
        ("conv_transpose3d", (1, 2, 3, 2, 2), (2, 2, 3, 1, 1), True,
         dict(stride=(3, 1, 1), padding=(2, 0, 0), output_padding=(2, 0, 0), groups=1, dilation=1)),
        # the last kernel depth lands past the output entirely
        ("conv_transpose3d", (1, 2, 1, 2, 2), (2, 2, 3, 1, 1), True,
         dict(stride=1, padding=(1, 0, 0), output_padding=0, groups=1, dilation=1)),
    ]
    i = 0
    for kind, xs, ws, bias, opts in cases:
        conv_case(i, kind, xs, ws, bias, opts, tensors, meta)
        i += 1
    conv = lambda **kw: dict(dict(stride=1, padding=0, dilation=1, groups=1, bias=True, padding_mode="zeros"), **kw)
    layer_case(i, "Conv3d", 11, (2, 2, 3, 4, 4), conv(**{"in": 2, "out": 3, "kernel": 3}), tensors, meta)
    i += 1
    layer_case(i, "Conv3d", 12, (1, 4, 3, 3, 4),
               conv(**{"in": 4, "out": 2, "kernel": (3, 2, 3), "stride": (1, 2, 1), "padding": (1, 1, 2),
                       "groups": 2, "bias": False}), tensors, meta)
    i += 1
    layer_case(i, "Conv3d", 13, (2, 3, 3, 4), conv(**{"in": 2, "out": 2, "kernel": 3, "padding": 1,
                                                      "padding_mode": "reflect"}), tensors, meta)
    i += 1
    layer_case(i, "Conv3d", 14, (1, 2, 3, 3, 4), conv(**{"in": 2, "out": 2, "kernel": (2, 3, 2), "padding": "same",
                                                         "padding_mode": "circular"}), tensors, meta)
    i += 1
    tconv = lambda **kw: dict(dict(stride=1, padding=0, output_padding=0, groups=1, bias=True, dilation=1), **kw)
    layer_case(i, "ConvTranspose3d", 15, (1, 2, 2, 2, 2),
               tconv(**{"in": 2, "out": 2, "kernel": 3, "stride": 2, "padding": 1}), tensors, meta)
    i += 1
    layer_case(i, "ConvTranspose3d", 16, (1, 2, 2, 2, 2),
               tconv(**{"in": 2, "out": 4, "kernel": (2, 3, 3), "stride": (2, 2, 1), "groups": 2}), tensors, meta,
               output_size=[5, 6, 4])
    i += 1
    meta["count"] = str(i)
    return tensors, meta


# ---------------------------------------------------------------- pooling


def pool_case(i, kind, x, fn, opts, tensors, meta, with_indices=False):
    x = x.detach().requires_grad_()
    if with_indices:
        y, idx = fn(x)
        tensors[f"case{i}.idx"] = idx
    else:
        y = fn(x)
    gy = upstream(y)
    (gx,) = grads(y, [x], gy)
    p = f"case{i}."
    tensors.update({p + "x": x, p + "y": y, p + "gx": gx})
    meta[f"case{i}"] = describe(kind, opts)


def pool_golden():
    torch.manual_seed(1)
    tensors, meta = {}, {}
    i = 0
    r = lambda *s: torch.randn(*s, dtype=torch.float64)
    ties = lambda *s: torch.randint(0, 3, s).to(torch.float64)

    def maxp(x, k, s=None, p=0, d=1, ceil=False):
        nonlocal i
        pool_case(i, "max_pool3d", x, lambda t: F.max_pool3d(t, k, s, p, d, ceil, return_indices=True),
                  dict(kernel=k, stride=s, padding=p, dilation=d, ceil=ceil), tensors, meta, True)
        i += 1

    def avgp(x, k, s=None, p=0, ceil=False, cip=True, div=None):
        nonlocal i
        pool_case(i, "avg_pool3d", x, lambda t: F.avg_pool3d(t, k, s, p, ceil, cip, div),
                  dict(kernel=k, stride=s, padding=p, ceil=ceil, count_include_pad=cip, divisor=div), tensors, meta)
        i += 1

    def adap(x, out, kind):
        nonlocal i
        if kind == "adaptive_avg_pool3d":
            pool_case(i, kind, x, lambda t: F.adaptive_avg_pool3d(t, out), dict(output=out), tensors, meta)
        else:
            pool_case(i, kind, x, lambda t: F.adaptive_max_pool3d(t, out, return_indices=True), dict(output=out),
                      tensors, meta, True)
        i += 1

    def lp(x, norm, k, s=None, ceil=False):
        nonlocal i
        pool_case(i, "lp_pool3d", x, lambda t: F.lp_pool3d(t, norm, k, s, ceil),
                  dict(norm=norm, kernel=k, stride=s, ceil=ceil), tensors, meta)
        i += 1

    def frac(x, dims, k, out=None, ratio=None):
        nonlocal i
        batch = 1 if x.dim() == dims + 1 else x.size(0)
        samples = torch.rand(batch, x.size(-dims - 1), dims, dtype=x.dtype)
        fn = F.fractional_max_pool2d if dims == 2 else F.fractional_max_pool3d
        kind = f"fractional_max_pool{dims}d"
        tensors[f"case{i}.samples"] = samples
        pool_case(i, kind, x,
                  lambda t: fn(t, k, output_size=out, output_ratio=ratio, return_indices=True,
                               _random_samples=samples),
                  dict(kernel=k, output=out, ratio=ratio, dtype=str(x.dtype).replace("torch.", "")), tensors, meta,
                  True)
        i += 1

    maxp(r(2, 1, 4, 4, 5), 2)
    maxp(r(1, 2, 5, 4, 5), (3, 2, 3), (2, 1, 2), (1, 1, 1), 1, True)
    maxp(r(1, 1, 5, 4, 5), 2, 1, 1, 2)
    maxp(r(2, 4, 5, 5), 3, 2, 1, (1, 2, 1), True)
    maxp(ties(1, 2, 4, 5, 5), (2, 3, 2), (1, 2, 2))
    maxp(r(1, 1, 7, 5, 4), (3, 3, 1), (2, 2, 1), (1, 0, 0), (2, 1, 1), True)
    avgp(r(2, 1, 4, 4, 5), 2)
    avgp(r(1, 2, 5, 4, 5), (3, 2, 3), (2, 1, 2), (1, 1, 1), True, True)
    avgp(r(1, 2, 5, 4, 5), (3, 2, 3), (2, 1, 2), (1, 1, 1), True, False)
    avgp(r(1, 1, 6, 5, 5), 3, 2, 1, True, True, 5)
    avgp(r(2, 3, 4, 5), (2, 3, 2), 1, (0, 1, 1), False, False)
    adap(r(2, 1, 5, 7, 4), (3, 4, 2), "adaptive_avg_pool3d")
    adap(r(2, 3, 4, 5), 1, "adaptive_avg_pool3d")
    adap(r(1, 1, 6, 3, 5), (4, 3, 7), "adaptive_avg_pool3d")
    adap(r(2, 1, 5, 7, 4), (3, 4, 2), "adaptive_max_pool3d")
    adap(r(2, 3, 4, 5), 2, "adaptive_max_pool3d")
    adap(ties(1, 1, 6, 5, 5), (4, 3, 3), "adaptive_max_pool3d")
    lp(r(2, 1, 4, 4, 5), 2.0, 2)
    lp(r(1, 1, 5, 5, 5).abs() + 0.1, 3.0, (3, 2, 2), (1, 2, 1), True)
    lp(r(2, 3, 4, 5), float("inf"), 2, 1)
    frac(r(2, 2, 7, 8), 2, 2, out=(4, 5))
    frac(r(1, 2, 9, 10), 2, (3, 2), ratio=(0.5, 0.6))
    frac(r(2, 5, 6), 2, 2, out=1)
    frac(ties(1, 2, 8, 9), 2, 3, out=(5, 4))
    frac(r(1, 1, 5, 6, 7), 3, 2, out=(3, 4, 5))
    frac(r(1, 5, 6, 6), 3, (2, 3, 2), ratio=0.5)
    frac(torch.randn(2, 1, 11, 12, dtype=torch.float32), 2, 2, out=(7, 5))
    frac(torch.randn(1, 1, 8, 7, 9, dtype=torch.float32), 3, (2, 3, 2), out=(6, 4, 7))
    meta["count"] = str(i)
    return tensors, meta


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, make in (("conv3d_golden", conv_golden), ("pool3d_golden", pool_golden)):
        tensors, meta = make()
        path = os.path.join(OUT, name + ".safetensors")
        save_file({k: v.detach().contiguous() for k, v in tensors.items()}, path, meta)
        print(f"wrote {path} ({os.path.getsize(path)} bytes, {meta['count']} cases)")


if __name__ == "__main__":
    main()
