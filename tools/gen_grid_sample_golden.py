#!/usr/bin/env python3
"""Writes the PyTorch goldens for tests/nn/test_grid_sample.cpp into
tests/nn/golden/grid_sample_golden.safetensors.

Metadata "case<i>" is "grid_sample,mode=M,padding=P,align=0|1" or "affine_grid,align=0|1,size=2;3;4;5"
(';' between sizes); "count" is the number of cases. Tensors (float64, a few float32 at the end,
whose metadata adds "dtype=float32"): for grid_sample the metadata names its input and grid,
stored once as shared.<name> (float64), and case<i>.y, .gy, .ginput, .ggrid; for affine_grid case<i>.theta, .y, .gy, .gtheta. "spatial<i>" series: affine_grid then
grid_sample (a spatial transformer), with .theta, .input, .y, .gy, .gtheta, .ginput.

Run: /path/to/python-with-torch-and-safetensors tools/gen_grid_sample_golden.py
"""
import os

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "nn", "golden")
torch.manual_seed(0)

tensors, meta = {}, {}
count = 0


def grads(y, leaves):
    gy = torch.randn(y.shape, dtype=y.dtype)
    return gy, torch.autograd.grad(y, leaves, gy)


def add_sample(input_name, grid_name, mode, padding, align, dtype=torch.float64):
    global count
    p = f"case{count}."
    meta[f"case{count}"] = (f"grid_sample,mode={mode},padding={padding},align={int(align)},input={input_name},"
                            f"grid={grid_name}" + (",dtype=float32" if dtype == torch.float32 else ""))
    x = inputs[input_name].to(dtype).requires_grad_()
    g = inputs[grid_name].to(dtype).requires_grad_()
    y = F.grid_sample(x, g, mode=mode, padding_mode=padding, align_corners=align)
    gy, (gx, gg) = grads(y, [x, g])
    tensors.update({p + "y": y.detach().contiguous(), p + "gy": gy, p + "ginput": gx.contiguous(), p + "ggrid": gg.contiguous()})
    count += 1


def add_affine(theta, size, align):
    global count
    p = f"case{count}."
    meta[f"case{count}"] = f"affine_grid,align={int(align)},size={';'.join(map(str, size))}"
    t = theta.clone().requires_grad_()
    y = F.affine_grid(t, size, align_corners=align)
    gy, (gt,) = grads(y, [t])
    tensors.update({p + "theta": t.detach(), p + "y": y.detach().contiguous(), p + "gy": gy, p + "gtheta": gt.contiguous()})
    count += 1


inputs = {}


def shared(name, t):
    """An input several cases sample: stored once, as "shared.<name>" (float64)."""
    inputs[name] = t
    tensors["shared." + name] = t
    return name


def rand(*shape, scale=1.0):
    return (torch.rand(shape, dtype=torch.float64) * 2 - 1) * scale


# 2-D: every mode, padding and align_corners; the grid reaches well outside [-1, 1] so that
# clamping and several reflections are exercised.
x2 = shared("x2", torch.randn(2, 2, 3, 4, dtype=torch.float64))
g2 = shared("g2", rand(2, 2, 3, 2, scale=2.5))
for mode in ("bilinear", "nearest", "bicubic"):
    for padding in ("zeros", "border", "reflection"):
        for align in (False, True):
            add_sample(x2, g2, mode, padding, align)
# A grid inside [-1, 1], and an input with one row (a unit-size dimension).
add_sample(x2, shared("g2_inside", rand(2, 3, 2, 2)), "bilinear", "zeros", False)
x2_row = shared("x2_row", torch.randn(2, 2, 1, 4, dtype=torch.float64))
add_sample(x2_row, g2, "bilinear", "reflection", True)
add_sample(x2_row, g2, "bicubic", "reflection", False)
# 3-D (5-D input): trilinear, nearest and tricubic.
x3 = shared("x3", torch.randn(2, 1, 2, 3, 4, dtype=torch.float64))
g3 = shared("g3", rand(2, 2, 1, 2, 3, scale=2.5))
for mode in ("bilinear", "nearest", "bicubic"):
    for padding in ("zeros", "border", "reflection"):
        for align in (False, True):
            add_sample(x3, g3, mode, padding, align)
# float32.
add_sample(x2, g2, "bilinear", "zeros", False, torch.float32)
add_sample(x2, g2, "bicubic", "reflection", True, torch.float32)
add_sample(x3, g3, "bilinear", "border", False, torch.float32)
# affine_grid.
for align in (False, True):
    add_affine(torch.randn(2, 2, 3, dtype=torch.float64), [2, 3, 4, 5], align)
    add_affine(torch.randn(2, 3, 4, dtype=torch.float64), [2, 1, 2, 3, 4], align)
add_affine(torch.randn(1, 2, 3, dtype=torch.float64), [1, 1, 1, 3], False)
meta["count"] = str(count)

# A spatial transformer: affine_grid feeding grid_sample, gradients to theta and input.
theta = (torch.eye(2, 3, dtype=torch.float64) + 0.3 * torch.randn(2, 2, 3, dtype=torch.float64)).requires_grad_()
inp = torch.randn(2, 3, 5, 6, dtype=torch.float64).requires_grad_()
y = F.grid_sample(inp, F.affine_grid(theta, [2, 3, 4, 4], align_corners=False), align_corners=False)
gy, (gt, gi) = grads(y, [theta, inp])
tensors.update({"spatial0.theta": theta.detach(), "spatial0.input": inp.detach(), "spatial0.y": y.detach(),
                "spatial0.gy": gy, "spatial0.gtheta": gt.contiguous(), "spatial0.ginput": gi})

os.makedirs(OUT, exist_ok=True)
save_file(tensors, os.path.join(OUT, "grid_sample_golden.safetensors"), metadata=meta)
print(f"{count} cases")
