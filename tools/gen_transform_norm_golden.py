#!/usr/bin/env python3
"""Writes the PyTorch goldens for tests/ops/test_transform.cpp and tests/ops/test_norm.cpp into
tests/ops/golden/transform_norm_golden.safetensors.

Metadata "case<i>" is "KIND,op=NAME[,key=value...]": KIND "unary" for ops of one tensor x,
"binary" for ops of a and b (and "ternary" for addmm/baddbmm: input, a, b). Integer-list
arguments are written with ';' between values ("dims=0;2"), an empty list as "dims=".
Tensors (float64): case<i>.x (or .a, .b, .input), .y (the result), .gy (the upstream gradient)
and the input gradients .gx (or .ga, .gb, .ginput), absent for non-differentiable results.
"count" is the number of cases.

Run: /path/to/python-with-torch-and-safetensors tools/gen_transform_norm_golden.py
"""
import math
import os

import torch
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "ops", "golden")
torch.manual_seed(0)

tensors, meta = {}, {}
count = 0


def lst(v):
    return ";".join(str(int(i)) for i in v)


def randn(*shape):
    return torch.randn(tuple(shape), dtype=torch.float64)


def add(kind, opts, inputs, fn):
    """inputs: name -> tensor; fn(**inputs) -> result."""
    global count
    p = f"case{count}."
    meta[f"case{count}"] = kind + "".join(f",{k}={v}" for k, v in opts.items())
    leaves = {k: v.clone().requires_grad_(v.is_floating_point()) for k, v in inputs.items()}
    y = fn(**leaves)
    tensors[p + "y"] = y.detach().clone().contiguous()
    for k, v in leaves.items():
        tensors[p + k] = v.detach().clone().contiguous()
    diff = [k for k, v in leaves.items() if v.requires_grad]
    if y.is_floating_point() and y.requires_grad and diff:
        gy = randn(*y.shape)
        grads = torch.autograd.grad(y, [leaves[k] for k in diff], gy, allow_unused=True)
        tensors[p + "gy"] = gy
        for k, g in zip(diff, grads):
            tensors[p + "g" + k] = (g if g is not None else torch.zeros_like(leaves[k])).contiguous()
    count += 1


X = randn(3, 4, 5)
M = randn(4, 6)
SQ = randn(5, 5)

for dims in ([0], [2], [0, 2], [-1, 1]):
    add("unary", dict(op="flip", dims=lst(dims)), dict(x=X), lambda x, d=dims: torch.flip(x, d))
add("unary", dict(op="fliplr"), dict(x=M), lambda x: torch.fliplr(x))
add("unary", dict(op="flipud"), dict(x=M), lambda x: torch.flipud(x))
for shifts, dims in (([2], [1]), ([-3], [2]), ([1, -2], [0, 2]), ([7], []), ([13], [1])):
    add("unary", dict(op="roll", shifts=lst(shifts), dims=lst(dims)), dict(x=X),
        lambda x, s=shifts, d=dims: torch.roll(x, s, d) if d else torch.roll(x, s))
for k, dims in ((1, [0, 1]), (2, [0, 1]), (3, [0, 1]), (-1, [1, 2]), (5, [2, 0])):
    add("unary", dict(op="rot90", k=k, dims=lst(dims)), dict(x=X), lambda x, k=k, d=dims: torch.rot90(x, k, d))
for reps in ([2, 1, 1], [1, 3, 2], [2, 1, 2, 1]):
    add("unary", dict(op="repeat", repeats=lst(reps)), dict(x=X), lambda x, r=reps: x.repeat(*r))
for reps in ([2], [2, 1], [1, 2, 1, 3]):
    add("unary", dict(op="tile", reps=lst(reps)), dict(x=X), lambda x, r=reps: torch.tile(x, r))
add("unary", dict(op="repeat_interleave", repeats=2, dim=1), dict(x=X),
    lambda x: torch.repeat_interleave(x, 2, dim=1))
add("unary", dict(op="repeat_interleave", repeats=3, dim=-1), dict(x=M), lambda x: torch.repeat_interleave(x, 3))
add("unary", dict(op="repeat_interleave", counts="1;0;3;2", dim=0), dict(x=M),
    lambda x: torch.repeat_interleave(x, torch.tensor([1, 0, 3, 2]), dim=0))
for k in (0, 1, -2, 7):
    add("unary", dict(op="tril", diagonal=k), dict(x=X), lambda x, k=k: torch.tril(x, k))
    add("unary", dict(op="triu", diagonal=k), dict(x=X), lambda x, k=k: torch.triu(x, k))
for off, d1, d2 in ((0, 0, 1), (1, 0, 1), (-2, 0, 1), (2, 1, 2), (-1, 2, 0)):
    add("unary", dict(op="diagonal", offset=off, dim1=d1, dim2=d2), dict(x=X),
        lambda x, o=off, a=d1, b=d2: torch.diagonal(x, o, a, b))
for k in (0, 2, -1):
    add("unary", dict(op="diag", diagonal=k), dict(x=randn(4)), lambda x, k=k: torch.diag(x, k))
    add("unary", dict(op="diag", diagonal=k), dict(x=M), lambda x, k=k: torch.diag(x, k))
add("unary", dict(op="trace"), dict(x=M), lambda x: torch.trace(x))
add("unary", dict(op="movedim", source="0;2", destination="2;0"), dict(x=X), lambda x: torch.movedim(x, (0, 2), (2, 0)))
add("unary", dict(op="movedim", source="1", destination="-1"), dict(x=X), lambda x: torch.movedim(x, 1, -1))
add("binary", dict(op="outer"), dict(a=randn(4), b=randn(3)), lambda a, b: torch.outer(a, b))
add("binary", dict(op="cross", dim=1), dict(a=randn(4, 3, 2), b=randn(4, 3, 2)), lambda a, b: torch.linalg.cross(a, b, dim=1))
add("binary", dict(op="cross", dim=-1), dict(a=randn(5, 3), b=randn(5, 3)), lambda a, b: torch.linalg.cross(a, b))

# Norms: include a zero row for the gradient at a zero norm, and ties for the infinity norms.
V = randn(4, 6)
V[1] = 0
V[2, 1] = V[2, 4] = 3.5
V[3, 0] = -4.25
V[3, 2] = 4.25
for ord_ in (2.0, 1.0, 3.0, 0.5, math.inf, -math.inf, 0.0, -1.0):
    for dims, keep in (([1], False), ([0, 1], False), ([1], True)):
        if ord_ in (0.5, -1.0) and dims == [1]:
            x = V.clone()
            x[1] = 0.25  # fractional/negative orders: no zeros in the reduced rows (infinite gradients)
            x[2, 1] = 1.5
        else:
            x = V
        add("unary", dict(op="vector_norm", ord=ord_, dims=lst(dims), keepdim=int(keep)), dict(x=x),
            lambda x, o=ord_, d=dims, k=keep: torch.linalg.vector_norm(x, o, d, k))
add("unary", dict(op="vector_norm", ord=2.0, dims="", keepdim=0), dict(x=X), lambda x: torch.linalg.vector_norm(x))
for ord_ in ("fro", 1.0, -1.0, math.inf, -math.inf):
    add("unary", dict(op="matrix_norm", ord=ord_), dict(x=randn(2, 4, 5)), lambda x, o=ord_: torch.linalg.matrix_norm(x, o))
for p in (2.0, 1.0, 3.0, math.inf, 0.0):
    add("binary", dict(op="cdist", p=p), dict(a=randn(2, 5, 3), b=randn(2, 4, 3)), lambda a, b, p=p: torch.cdist(a, b, p))
for dims, keep in (([1], False), ([0, 2], True), ([], False)):
    add("unary", dict(op="logsumexp", dims=lst(dims), keepdim=int(keep)), dict(x=X * 30),
        lambda x, d=dims, k=keep: torch.logsumexp(x, d if d else list(range(x.dim())), k))
W = randn(3, 4)
W[0, 1] = W[2, 3] = float("nan")
for dims in ([1], []):
    add("unary", dict(op="nansum", dims=lst(dims)), dict(x=W), lambda x, d=dims: torch.nansum(x, d) if d else torch.nansum(x))
    add("unary", dict(op="nanmean", dims=lst(dims)), dict(x=W), lambda x, d=dims: torch.nanmean(x, d) if d else torch.nanmean(x))
add("ternary", dict(op="addmm", beta=0.5, alpha=2.0), dict(input=randn(4, 3), a=randn(4, 5), b=randn(5, 3)),
    lambda input, a, b: torch.addmm(input, a, b, beta=0.5, alpha=2.0))
add("ternary", dict(op="addmm", beta=1.0, alpha=1.0), dict(input=randn(3), a=randn(4, 5), b=randn(5, 3)),
    lambda input, a, b: torch.addmm(input, a, b))
add("ternary", dict(op="baddbmm", beta=-1.0, alpha=0.5), dict(input=randn(2, 4, 3), a=randn(2, 4, 5), b=randn(2, 5, 3)),
    lambda input, a, b: torch.baddbmm(input, a, b, beta=-1.0, alpha=0.5))

meta["count"] = str(count)
meta["torch"] = torch.__version__
os.makedirs(OUT, exist_ok=True)
save_file(tensors, os.path.join(OUT, "transform_norm_golden.safetensors"), metadata=meta)
print(f"{count} cases, {len(tensors)} tensors")
