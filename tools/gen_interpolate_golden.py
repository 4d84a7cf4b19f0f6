#!/usr/bin/env python3
"""Writes the PyTorch goldens for tests/ops/test_interpolate.cpp into
tests/ops/golden/interpolate_golden.safetensors.

Metadata "case<i>" is "KIND,key=value,..." with KIND
  interpolate            F.interpolate: mode, size or scale, align, recompute, dtype
  Upsample               nn.Upsample(size, scale_factor, mode, align_corners, recompute_scale_factor)
  UpsamplingNearest2d    nn.UpsamplingNearest2d(size, scale_factor)
  UpsamplingBilinear2d   nn.UpsamplingBilinear2d(size, scale_factor)
(the mode and align of these and of the deprecated functionals are what they use)
  upsample_nearest       F.upsample_nearest(input, size, scale_factor)
  upsample_bilinear      F.upsample_bilinear(input, size, scale_factor)
Keys: size ("3 5", one value per spatial dimension, or one value for all), scale (the same for
scale_factor, as Python floats), align and recompute ("0"/"1"; absent means None), dtype
(float64 or float32). A single value is passed to PyTorch as a scalar.
Tensors:
  case<i>.x, case<i>.y    the input and the output
  case<i>.gx              the gradient of sum(y * gy) with respect to x, where gy (not stored) is
                          gy[k] = ((7 k) mod 11 - 5) / 4 over y's elements in order (exact in
                          every floating type, so the test rebuilds it)

Run: ~/.cache/ember-bench/torch-venv/bin/python tools/gen_interpolate_golden.py
"""
import os
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "ops", "golden")


def interp(shape, mode, size=None, scale=None, align=None, recompute=None, dtype="float64"):
    return dict(kind="interpolate", shape=shape, mode=mode, size=size, scale=scale, align=align,
                recompute=recompute, dtype=dtype)


def module(kind, shape, size=None, scale=None, mode="nearest", align=None, recompute=None):
    return dict(kind=kind, shape=shape, mode=mode, size=size, scale=scale, align=align, recompute=recompute,
                dtype="float64")


def cases():
    out = []
    # 1-D: [N, C, W]
    for mode in ["nearest", "nearest-exact", "linear", "area"]:
        aligns = [False, True] if mode == "linear" else [None]
        for align in aligns:
            out += [
                interp((2, 2, 5), mode, size=(8,), align=align),
                interp((1, 3, 7), mode, size=(3,), align=align),
                interp((2, 2, 5), mode, scale=(1.7,), align=align),
                interp((1, 2, 9), mode, scale=(0.45,), align=align),
                interp((1, 2, 5), mode, scale=(1.7,), align=align, recompute=True),
                interp((1, 2, 4), mode, scale=(2.0,), align=align, recompute=False),
            ]
    out += [interp((1, 2, 5), "linear", size=(5,)),           # same size: the copy path
            interp((1, 2, 5), "linear", size=(1,), align=True),  # one output, scale 0
            interp((1, 2, 1), "linear", size=(4,)),              # one input
            interp((1, 2, 6), "nearest", size=(12,)),            # twice the size: i >> 1
            interp((1, 2, 6), "nearest", size=(6,))]
    # 2-D: [N, C, H, W]
    for mode in ["nearest", "nearest-exact", "bilinear", "bicubic", "area"]:
        aligns = [False, True] if mode in ("bilinear", "bicubic") else [None]
        for align in aligns:
            out += [
                interp((2, 2, 4, 5), mode, size=(7, 3), align=align),
                interp((1, 2, 5, 4), mode, size=(6,), align=align),
                interp((1, 2, 4, 5), mode, scale=(1.5, 0.7), align=align),
                interp((1, 2, 3, 4), mode, scale=(2.0,), align=align),
                interp((1, 1, 5, 6), mode, scale=(1.3, 2.6), align=align, recompute=True),
                interp((1, 1, 7, 6), mode, scale=(0.6,), align=align, recompute=False),
            ]
    out += [interp((1, 2, 4, 5), "bilinear", size=(4, 5)),
            interp((1, 2, 4, 5), "bicubic", size=(4, 5)),
            interp((1, 1, 4, 5), "bicubic", size=(1, 2), align=True),
            interp((1, 1, 2, 3), "bicubic", scale=(3.3,)),
            interp((1, 1, 1, 3), "bilinear", size=(3, 5)),
            interp((1, 1, 3, 3), "nearest", size=(6, 3)),
            # 1-wide dimensions, in and out
            interp((1, 1, 1, 1), "bilinear", size=(3, 4)),
            interp((1, 2, 3, 1), "bicubic", size=(5, 4), align=True),
            interp((2, 1, 4, 1), "nearest-exact", size=(3, 1)),
            interp((1, 2, 4, 6), "bilinear", size=(1, 3))]
    # 3-D: [N, C, D, H, W]
    for mode in ["nearest", "nearest-exact", "trilinear"]:
        aligns = [False, True] if mode == "trilinear" else [None]
        for align in aligns:
            out += [
                interp((1, 2, 2, 3, 4), mode, size=(3, 5, 3), align=align),
                interp((1, 1, 3, 2, 3), mode, scale=(1.5, 2.0, 0.7), align=align),
                interp((1, 1, 2, 3, 3), mode, scale=(1.7,), align=align, recompute=True),
            ]
    # float32: the scales, indices and weights are computed in float
    out += [interp((1, 2, 5, 6), "bilinear", scale=(1.7, 0.45), dtype="float32"),
            interp((1, 2, 5, 6), "bilinear", size=(9, 4), align=True, dtype="float32"),
            interp((1, 2, 5, 6), "bicubic", scale=(2.3,), dtype="float32"),
            interp((1, 2, 7), "linear", scale=(1.9,), dtype="float32"),
            interp((1, 1, 2, 3, 4), "trilinear", size=(3, 4, 7), dtype="float32"),
            interp((1, 2, 7, 5), "nearest", scale=(1.9, 0.3), dtype="float32"),
            interp((1, 2, 7, 5), "nearest-exact", scale=(1.9, 0.3), dtype="float32"),
            interp((1, 2, 6, 7), "bilinear", scale=(0.5,), dtype="float32"),
            interp((1, 1, 2, 2, 3), "trilinear", scale=(2.0,), align=True, dtype="float32"),
            interp((1, 1, 1, 3, 1), "trilinear", size=(2, 3, 4), dtype="float32"),
            interp((1, 2, 5, 4), "bicubic", size=(3, 2), align=True, dtype="float32")]
    # the layers and the deprecated functionals
    out += [module("Upsample", (1, 2, 3, 4), scale=(2.0,)),  # mode: the default
            module("Upsample", (1, 2, 3, 4), size=(5, 7), mode="bilinear"),
            module("Upsample", (1, 2, 5), scale=(1.5,), mode="linear", align=True),
            module("Upsample", (1, 1, 4, 5), scale=(1.5, 0.8), mode="bicubic", recompute=True),
            module("Upsample", (1, 1, 2, 3, 3), size=(3,), mode="trilinear", align=True),
            module("Upsample", (1, 2, 6, 6), scale=(0.5,), mode="area"),
            module("UpsamplingNearest2d", (1, 2, 3, 4), scale=(2.0,)),
            module("UpsamplingNearest2d", (1, 2, 3, 4), size=(5, 6)),
            module("UpsamplingBilinear2d", (1, 2, 3, 4), scale=(2.0,), mode="bilinear", align=True),
            module("UpsamplingBilinear2d", (1, 2, 3, 4), size=(4, 7), mode="bilinear", align=True),
            module("upsample_nearest", (1, 2, 3, 4), scale=(3.0,)),
            module("upsample_bilinear", (1, 2, 3, 4), size=(5, 5), mode="bilinear", align=True)]
    return out


def arg(values):
    if values is None:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def run(c, x):
    size, scale = arg(c["size"]), arg(c["scale"])
    kind = c["kind"]
    if kind == "interpolate":
        return F.interpolate(x, size, scale, c["mode"], c["align"], c["recompute"])
    if kind == "Upsample":
        return nn.Upsample(size, scale, c["mode"], c["align"], c["recompute"])(x)
    if kind == "UpsamplingNearest2d":
        return nn.UpsamplingNearest2d(size, scale)(x)
    if kind == "UpsamplingBilinear2d":
        return nn.UpsamplingBilinear2d(size, scale)(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "upsample_nearest":
            return F.upsample_nearest(x, size, scale)
        return F.upsample_bilinear(x, size, scale)


def fmt_list(values, real):
    return " ".join(repr(float(v)) if real else str(v) for v in values)


def main():
    torch.manual_seed(2031)
    tensors, meta = {}, {}
    all_cases = cases()
    for i, c in enumerate(all_cases):
        dtype = getattr(torch, c["dtype"])
        x = torch.randn(c["shape"], dtype=torch.float64).to(dtype).requires_grad_()
        y = run(c, x)
        k = torch.arange(y.numel(), dtype=torch.int64)
        gy = (((7 * k) % 11 - 5).to(torch.float64) / 4).reshape(y.shape).to(dtype)
        (y * gy).sum().backward()
        p = f"case{i}."
        tensors[p + "x"], tensors[p + "y"], tensors[p + "gx"] = x.detach(), y.detach(), x.grad
        fields = [c["kind"]]
        if c["mode"] is not None:
            fields.append(f"mode={c['mode']}")
        if c["size"] is not None:
            fields.append(f"size={fmt_list(c['size'], False)}")
        if c["scale"] is not None:
            fields.append(f"scale={fmt_list(c['scale'], True)}")
        if c["align"] is not None:
            fields.append(f"align={int(c['align'])}")
        if c["recompute"] is not None:
            fields.append(f"recompute={int(c['recompute'])}")
        fields.append(f"dtype={c['dtype']}")
        meta[f"case{i}"] = ",".join(fields)
    meta["count"] = str(len(all_cases))
    path = os.path.join(OUT, "interpolate_golden.safetensors")
    save_file({k: v.contiguous() for k, v in tensors.items()}, path, meta)
    print(f"wrote {path}: {len(all_cases)} cases, {len(tensors)} tensors, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
