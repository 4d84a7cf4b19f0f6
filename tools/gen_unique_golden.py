#!/usr/bin/env python3
"""Writes the PyTorch goldens for tests/ops/test_unique.cpp into
tests/ops/golden/unique_golden.safetensors: torch.unique and torch.unique_consecutive with and
without `dim` (return_inverse=True, return_counts=True), and the messages of their errors.

Metadata "case<i>" is "op=unique|unique_consecutive,dim=<int>|none"; tensors case<i>.x (the
input), case<i>.values, case<i>.inverse, case<i>.counts. Metadata "error<i>" is the same form
with tensor error<i>.x and metadata "error<i>.message", PyTorch's message.

Inputs hold no NaN along a dimension (PyTorch's order of NaN slices comes from a comparison that
is not a strict weak order, so it is left unmatched) and no -0.0.

Run: /path/to/python-with-torch-and-safetensors tools/gen_unique_golden.py
"""
import os

import torch
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "ops", "golden")
torch.manual_seed(0)

tensors, meta = {}, {}
cases = errors = 0


def run(op, x, dim):
    kwargs = {} if dim is None else {"dim": dim}
    if op == "unique":
        return torch.unique(x, sorted=True, return_inverse=True, return_counts=True, **kwargs)
    return torch.unique_consecutive(x, return_inverse=True, return_counts=True, **kwargs)


def add(op, x, dim):
    global cases
    values, inverse, counts = run(op, x, dim)
    p = f"case{cases}"
    meta[p] = f"op={op},dim={'none' if dim is None else dim}"
    for name, t in (("x", x), ("values", values), ("inverse", inverse), ("counts", counts)):
        tensors[f"{p}.{name}"] = t.detach().clone().contiguous()
    cases += 1


def add_error(op, x, dim):
    global errors
    try:
        run(op, x, dim)
    except (RuntimeError, IndexError) as e:
        p = f"error{errors}"
        meta[p] = f"op={op},dim={dim}"
        meta[p + ".message"] = str(e)
        tensors[p + ".x"] = x.clone().contiguous()
        errors += 1
        return
    raise AssertionError(f"{op} dim={dim} raised nothing")


def with_repeats(base, dim, picks):
    """Slices of `base` along `dim` taken in the order `picks` (so some repeat)."""
    return base.index_select(dim, torch.tensor(picks)).contiguous()


rows = torch.randint(-3, 3, (4, 3)).to(torch.float64) + 0.25
rows[1, :2] = rows[0, :2]  # rows 0 and 1 agree on a prefix only
x2 = with_repeats(rows, 0, [2, 0, 1, 2, 3, 0, 0, 1])
ints3 = with_repeats(torch.randint(-5, 5, (2, 4, 3)), 1, [3, 1, 1, 0, 3, 2, 1])
wide = torch.randint(0, 2, (9, 7)).to(torch.float64)  # 7 columns: odd, several fusing rounds
wide[3] = wide[5]
wide[8] = wide[1]
wide[6, :6] = wide[2, :6]  # differs from row 2 in the last column only
flt = with_repeats(torch.randn(3, 2, 5), 2, [4, 0, 4, 1, 2, 0, 3])
bools = with_repeats(torch.rand(3, 4) > 0.5, 1, [0, 1, 0, 2, 3, 3])
flat = torch.tensor([3.5, -1.0, 3.5, 2.0, -1.0, -1.0, 7.0, 3.5], dtype=torch.float64).view(2, 4)
runs = torch.tensor([[1, 1, 2, 2, 2, 1, 3, 3], [0, 0, 5, 5, 6, 0, 3, 3]]).t().contiguous()

for op in ("unique", "unique_consecutive"):
    for dim in (0, -1):
        add(op, x2, dim)
    for dim in (None, 0, 1, 2):
        add(op, ints3, dim)
    add(op, wide, 0)
    add(op, wide, 1)
    add(op, flt, 2)
    add(op, bools, 1)
    add(op, flat, None)
    add(op, flat.flatten(), 0)
    add(op, runs, 0)
    add(op, runs, None)
    add(op, torch.zeros(0, 3, dtype=torch.float64), 0)
    add(op, torch.tensor([[4.0]], dtype=torch.float64), 1)

    add_error(op, x2, 2)
    add_error(op, x2, -3)
    add_error(op, torch.tensor(3.0), 0)
    add_error(op, torch.tensor(3.0), -1)
    add_error(op, torch.zeros(0, 3), 1)
    add_error(op, torch.zeros(2, 0, 3), 0)
    add_error(op, torch.zeros(0, 0), 0)

os.makedirs(OUT, exist_ok=True)
save_file(tensors, os.path.join(OUT, "unique_golden.safetensors"), metadata=meta)
print(f"wrote {cases} cases and {errors} errors")
