#!/usr/bin/env python3
"""Writes the PyTorch goldens for tests/ops/test_padding.cpp and tests/nn/test_pool1d.cpp into
tests/nn/golden/padding_pool1d_golden.safetensors.

Cases (float64). Metadata "case<i>" is "KIND,key=value,..." with KIND
  pad                   mode, pad (the F.pad list, space-separated), value (only when given)
  PadModule             module (ZeroPad2d, ReflectionPad1d, ...), padding (one int, or a
                        space-separated list with a trailing space: "1 2 " so that "3 " is a
                        one-element list and "3" an int), value (the Constant modules only)
  max_pool1d            kernel, stride ("none" for the default), padding, dilation, ceil
  avg_pool1d            kernel, stride ("none"), padding, ceil, count_include_pad
  adaptive_avg_pool1d   output
Tensors:
  case<i>.x, case<i>.y, case<i>.gy     the input, the output and the upstream gradient
  case<i>.gx                           the gradient of sum(y * gy) with respect to x
  case<i>.idx                          max_pool1d's indices (return_indices=True), int64

Run: /path/to/python-with-torch-and-safetensors tools/gen_padding_pool1d_golden.py
"""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "nn", "golden")


def pad(x, p, mode="constant", value=None):
    return dict(kind="pad", x=x, opts=dict(mode=mode, pad=" ".join(map(str, p)), value=value))


def module(x, name, padding, value=None):
    text = str(padding) if isinstance(padding, int) else "".join(f"{v} " for v in padding)
    return dict(kind="PadModule", x=x, opts=dict(module=name, padding=text, value=value), args=(padding, value))


def maxp(x, k, s=None, p=0, d=1, ceil=False):
    return dict(kind="max_pool1d", x=x, opts=dict(kernel=k, stride="none" if s is None else s, padding=p, dilation=d,
                                                  ceil=int(ceil)))


def avgp(x, k, s=None, p=0, ceil=False, cip=True):
    return dict(kind="avg_pool1d", x=x, opts=dict(kernel=k, stride="none" if s is None else s, padding=p,
                                                  ceil=int(ceil), count_include_pad=int(cip)))


def adap(x, out):
    return dict(kind="adaptive_avg_pool1d", x=x, opts=dict(output=out))


CASES = [
    # constant: 1, 2, 3 padded dimensions, batched and not, values, negative pads (crops)
    pad((2, 3, 5), (1, 2)),
    pad((3, 5), (2, 0), value=1.5),
    pad((2, 2, 3, 4), (1, 0, 2, 1), value=-0.5),
    pad((2, 3, 4), (0, 2, 1, 1)),
    pad((1, 1, 2, 3, 4), (1, 1, 0, 1, 2, 0), value=2.0),
    pad((2, 2, 3, 3), (1, 0, 1, 1, 0, 1)),
    pad((2, 3, 5), (-1, 2)),
    pad((2, 3, 5), (-2, -1)),                       # all non-positive: a cropped copy
    pad((2, 2, 4, 5), (-1, 2, 1, -2), value=0.25),
    pad((5,), (2, 1)),                              # a 1-D tensor
    pad((2, 3, 4), (1, 1, 1, 1, 1, 1)),             # every dimension, batch included
    pad((2, 3, 2, 2), (1, 0, 0, 1, 1, 0, 0, 1)),    # four dimensions
    pad((2, 3), ()),                                # no padding: a copy
    pad((2, 3, 5), (0, 0)),
    pad((2, 3, 5), (-5, 1)),                        # cropped away, then padded
    # reflect
    pad((2, 3, 5), (2, 3), "reflect"),
    pad((3, 5), (4, 1), "reflect"),
    pad((2, 3, 5), (-1, 3), "reflect"),
    pad((2, 3, 5), (3, -2), "reflect"),
    pad((2, 3, 5), (-4, 2), "reflect"),
    pad((1, 2, 4, 5), (1, 3, 2, 3), "reflect"),
    pad((2, 4, 5), (3, 0, 1, 2), "reflect"),
    pad((2, 2, 4, 5), (-1, 2, 2, -3), "reflect"),
    pad((1, 1, 3, 3, 4), (1, 2, 2, 1, 2, 1), "reflect"),
    pad((1, 3, 4, 5), (4, 0, 0, 3, 1, 2), "reflect"),
    pad((1, 1, 3, 4, 5), (-2, 1, 1, -1, 2, -1), "reflect"),
    pad((2, 3, 5), (0, 0), "reflect"),
    # replicate: no limit on the pad size
    pad((2, 3, 5), (7, 2), "replicate"),
    pad((3, 4), (1, 6), "replicate"),
    pad((2, 3, 5), (-2, 3), "replicate"),
    pad((2, 3, 5), (4, -3), "replicate"),
    pad((1, 2, 3, 4), (5, 1, 2, 4), "replicate"),
    pad((2, 3, 4), (0, 2, 3, 1), "replicate"),
    pad((1, 2, 4, 5), (-2, 3, 1, -2), "replicate"),
    pad((1, 1, 2, 2, 3), (2, 1, 3, 0, 1, 2), "replicate"),
    pad((1, 2, 3, 3), (1, 1, 0, 2, 3, 1), "replicate"),
    pad((1, 1, 3, 4, 5), (-1, 2, 1, -2, -1, 3), "replicate"),
    # circular: pads up to the (cropped) size
    pad((2, 3, 5), (2, 3), "circular"),
    pad((3, 5), (5, 5), "circular"),
    pad((2, 3, 5), (-2, 1), "circular"),
    pad((2, 3, 5), (2, -1), "circular"),
    pad((2, 3, 5), (-2, -3), "circular"),           # an empty result
    pad((1, 2, 3, 4), (1, 4, 3, 2), "circular"),
    pad((2, 3, 4), (2, 0, 1, 1), "circular"),
    pad((1, 2, 4, 5), (-1, 2, 1, -2), "circular"),
    pad((1, 1, 2, 3, 4), (1, 2, 2, 1, 1, 2), "circular"),
    pad((1, 2, 3, 3), (3, 0, 1, 2, 2, 1), "circular"),
    pad((1, 1, 3, 4, 5), (-1, 2, 1, -2, 2, -1), "circular"),
    # the modules: padding as one int or per side
    module((2, 3, 4), "ZeroPad1d", 2),
    module((3, 4), "ZeroPad1d", (1, 3)),
    module((2, 2, 3, 3), "ZeroPad2d", (1, 1, 2, 0)),
    module((1, 2, 2, 2, 2), "ZeroPad3d", 1),
    module((2, 3, 4), "ConstantPad1d", 3, 3.5),
    module((2, 3, 3), "ConstantPad2d", (-1, 2, 1, 0), -1.25),
    module((2, 2, 2, 3), "ConstantPad3d", (1, 0, 0, 1, 2, 1), 0.5),
    module((2, 3, 5), "ReflectionPad1d", 3),
    module((2, 2, 3, 4), "ReflectionPad2d", (1, 0, 2, 1)),
    module((1, 3, 3, 3), "ReflectionPad3d", 2),
    module((2, 3, 4), "ReplicationPad1d", (2, 0)),
    module((2, 3, 3), "ReplicationPad2d", 3),
    module((1, 2, 2, 2, 3), "ReplicationPad3d", (1, 2, 0, 1, 3, 0)),
    module((2, 3, 4), "CircularPad1d", (1, 3)),
    module((2, 3, 3), "CircularPad2d", 1),
    module((1, 1, 2, 3, 3), "CircularPad3d", (0, 2, 1, 1, 2, 0)),
    # 1-D pooling
    maxp((2, 3, 9), 3),
    maxp((3, 10), 3, 2, 1, 2, True),
    maxp((2, 2, 8), 2, 3, ceil=True),
    maxp((2, 3, 7), 4, 1, 2),
    maxp((1, 2, 6), 1),
    maxp((2, 2, 11), 3, 2, 1, 3),
    avgp((2, 3, 9), 3),
    avgp((3, 10), 4, 3, 2, True, False),
    avgp((2, 2, 8), 3, 2, 1, True, True),
    avgp((2, 3, 7), 2, 1, 1, False, False),
    avgp((2, 2, 5), 5, 2),
    adap((2, 3, 10), 4),
    adap((3, 7), 3),
    adap((2, 2, 5), 8),
    adap((2, 3, 6), 1),
]

MODULES = {n: getattr(nn, n) for n in [
    "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
    "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
    "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d"]}


def fmt(value):
    return repr(value) if isinstance(value, float) else str(value)


def run_case(i, c, tensors, meta):
    p = f"case{i}."
    o = c["opts"]
    x = torch.randn(c["x"], dtype=torch.float64, requires_grad=True)
    extra = {}
    if c["kind"] == "pad":
        padding = [int(v) for v in o["pad"].split()]
        y = F.pad(x, padding, o["mode"], o["value"])
    elif c["kind"] == "PadModule":
        padding, value = c["args"]
        m = MODULES[o["module"]](padding) if value is None else MODULES[o["module"]](padding, value)
        y = m(x)
    elif c["kind"] == "max_pool1d":
        stride = None if o["stride"] == "none" else o["stride"]
        y, idx = F.max_pool1d(x, o["kernel"], stride, o["padding"], o["dilation"], bool(o["ceil"]),
                              return_indices=True)
        y2 = F.max_pool1d(x, o["kernel"], stride, o["padding"], o["dilation"], bool(o["ceil"]))
        assert torch.equal(y, y2)
        extra["idx"] = idx
    elif c["kind"] == "avg_pool1d":
        stride = None if o["stride"] == "none" else o["stride"]
        y = F.avg_pool1d(x, o["kernel"], stride, o["padding"], bool(o["ceil"]), bool(o["count_include_pad"]))
    else:
        y = F.adaptive_avg_pool1d(x, o["output"])
    gy = torch.randn(y.shape, dtype=torch.float64)
    (y * gy).sum().backward()
    tensors[p + "x"], tensors[p + "y"], tensors[p + "gy"], tensors[p + "gx"] = x.detach(), y.detach(), gy, x.grad
    for k, v in extra.items():
        tensors[p + k] = v
    meta[f"case{i}"] = ",".join([c["kind"]] + [f"{k}={fmt(v)}" for k, v in o.items() if v is not None])


def main():
    torch.manual_seed(2029)
    tensors, meta = {}, {}
    for i, c in enumerate(CASES):
        run_case(i, c, tensors, meta)
    meta["count"] = str(len(CASES))
    path = os.path.join(OUT, "padding_pool1d_golden.safetensors")
    save_file({k: v.contiguous() for k, v in tensors.items()}, path, meta)
    print(f"wrote {path}: {len(CASES)} cases, {len(tensors)} tensors, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
