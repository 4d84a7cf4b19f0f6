#!/usr/bin/env python3
"""Writes the PyTorch goldens for tests/nn/test_grid_sample.cpp into
tests/nn/golden/grid_sample_golden.safetensors.

Metadata "case<i>" is "grid_sample,mode=M,padding=P,align=0|1", "grid_sample_double,..." (the same
options) or "affine_grid,align=0|1,size=2;3;4;5" (';' between sizes); "count" is the number of
cases. Tensors are float64 unless the metadata adds "dtype=float32|float16|bfloat16" (the shared
input and grid converted to it, and every tensor of the case in it). For grid_sample the metadata
names its input and grid, stored once as shared.<name> (float64), and case<i>.y, .gy, .ginput,
.ggrid; for grid_sample_double (second derivatives) case<i>.gy, .vx, .vg and the gradients of
sum(ginput * vx) + sum(ggrid * vg) with respect to input, grid and gy: .ddx, .ddgrid, .ddgy; for
affine_grid case<i>.theta, .y, .gy, .gtheta. "spatial<i>" series: affine_grid then grid_sample (a
spatial transformer), with .theta, .input, .y, .gy, .gtheta, .ginput.

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
                            f"grid={grid_name}" + ("" if dtype == torch.float64 else f",dtype={DTYPE_NAMES[dtype]}"))
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
DTYPE_NAMES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}


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

# A spatial transformer: affine_grid feeding grid_sample, gradients to theta and input.
theta = (torch.eye(2, 3, dtype=torch.float64) + 0.3 * torch.randn(2, 2, 3, dtype=torch.float64)).requires_grad_()
inp = torch.randn(2, 3, 5, 6, dtype=torch.float64).requires_grad_()
y = F.grid_sample(inp, F.affine_grid(theta, [2, 3, 4, 4], align_corners=False), align_corners=False)
gy, (gt, gi) = grads(y, [theta, inp])
tensors.update({"spatial0.theta": theta.detach(), "spatial0.input": inp.detach(), "spatial0.y": y.detach(),
                "spatial0.gy": gy, "spatial0.gtheta": gt.contiguous(), "spatial0.ginput": gi})

# Added with the dedicated kernels (after the draws above, which they leave unchanged).
# Grids of exact values: pixel centres and edges, the borders, halves (nearest's ties) and
# points one or more reflections away: every mode, padding and align_corners in 2-D, every mode and
# padding in 3-D.
EDGES = torch.tensor([-1.0, 1.0, 0.0, -0.5, 0.5, -1.5, 1.5, 1.0 / 3, -3.0, 3.25, 2.0, -2.0], dtype=torch.float64)


def edge_grid(*shape):
    n = 1
    for s in shape:
        n *= s
    return EDGES[torch.randint(0, len(EDGES), (n,))].reshape(shape)


x2_one = shared("x2_one", torch.randn(1, 2, 3, 4, dtype=torch.float64))
x3_one = shared("x3_one", torch.randn(1, 1, 2, 3, 4, dtype=torch.float64))
g2_edges = shared("g2_edges", edge_grid(1, 3, 3, 2))
g3_edges = shared("g3_edges", edge_grid(1, 2, 2, 2, 3))
for mode in ("bilinear", "nearest", "bicubic"):
    for padding in ("zeros", "border", "reflection"):
        for align in (False, True):
            add_sample(x2_one, g2_edges, mode, padding, align)
        add_sample(x3_one, g3_edges, mode, padding, padding != "border")
# More channels, and points than pixels.
x2_wide = shared("x2_wide", torch.randn(1, 3, 5, 6, dtype=torch.float64))
g2_wide = shared("g2_wide", rand(1, 3, 4, 2, scale=1.3))
x3_wide = shared("x3_wide", torch.randn(1, 2, 3, 3, 4, dtype=torch.float64))
g3_wide = shared("g3_wide", rand(1, 2, 2, 3, 3, scale=1.3))
for mode, padding, align in (("bilinear", "zeros", False), ("nearest", "reflection", False),
                             ("bicubic", "border", True)):
    add_sample(x2_wide, g2_wide, mode, padding, align)
    add_sample(x3_wide, g3_wide, mode, padding, align)
add_sample(x2_wide, g2_wide, "nearest", "border", True, torch.float32)
add_sample(x3_wide, g3_wide, "bicubic", "zeros", False, torch.float32)
# float16 and bfloat16 (computed in float, rounded once).
for dtype in (torch.float16, torch.bfloat16):
    add_sample(x2_wide, g2_wide, "bilinear", "zeros", False, dtype)
    add_sample(x3_wide, g3_wide, "bicubic", "reflection", True, dtype)


# Double backward (PyTorch's GridSampler2DBackwardBackward0 / 3D): the gradients of
# sum(gx * vx) + sum(gg * vg) with respect to input, grid and gy, where gx and gg are the first
# gradients made with create_graph.
def add_double(input_name, grid_name, mode, padding, align):
    global count
    p = f"case{count}."
    meta[f"case{count}"] = (f"grid_sample_double,mode={mode},padding={padding},align={int(align)},"
                            f"input={input_name},grid={grid_name}")
    x = inputs[input_name].clone().requires_grad_()
    g = inputs[grid_name].clone().requires_grad_()
    y = F.grid_sample(x, g, mode=mode, padding_mode=padding, align_corners=align)
    gy = torch.randn(y.shape, dtype=y.dtype).requires_grad_()
    gx, gg = torch.autograd.grad(y, [x, g], gy, create_graph=True)
    vx, vg = torch.randn(gx.shape, dtype=gx.dtype), torch.randn(gg.shape, dtype=gg.dtype)
    ddx, ddg, ddgy = torch.autograd.grad((gx * vx).sum() + (gg * vg).sum(), [x, g, gy], allow_unused=True,
                                         materialize_grads=True)
    tensors.update({p + "gy": gy.detach(), p + "vx": vx, p + "vg": vg, p + "ddx": ddx.contiguous(),
                    p + "ddgrid": ddg.contiguous(), p + "ddgy": ddgy.contiguous()})
    count += 1


add_double(x2, "g2_inside", "bilinear", "zeros", False)
add_double(x2, g2, "bilinear", "reflection", True)
add_double(x2, g2, "bicubic", "border", False)
add_double(x2, g2, "nearest", "zeros", True)
add_double(x3, g3, "bilinear", "border", True)
meta["count"] = str(count)

os.makedirs(OUT, exist_ok=True)
save_file(tensors, os.path.join(OUT, "grid_sample_golden.safetensors"), metadata=meta)
print(f"{count} cases")
