#!/usr/bin/env python3
"""Writes the PyTorch goldens for tests/ops/test_einsum.cpp into
tests/ops/golden/einsum_golden.safetensors.

torch.einsum with opt_einsum switched off (operands contracted left to right, as ember does).
Metadata "case<i>" is "einsum,eq=EQUATION,n=K" with the equation's ',' written as ';' (the
metadata's own separator is ','); "count" is the number of cases. Tensors: case<i>.op<k> (the K
operands), .y (the result), .gy (the upstream gradient) and .g<k> (each operand's gradient).
float64 cases, then a few float32 ones (same layout, float32 tensors).

Run: /path/to/python-with-torch-and-safetensors tools/gen_einsum_golden.py
"""
import os

import torch
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "ops", "golden")
torch.manual_seed(0)
torch.backends.opt_einsum.enabled = False

tensors, meta = {}, {}
count = 0


def add(eq, shapes, dtype=torch.float64):
    global count
    p = f"case{count}."
    meta[f"case{count}"] = f"einsum,eq={eq.replace(',', ';')},n={len(shapes)}"
    ops = [torch.randn(s, dtype=dtype).requires_grad_() for s in shapes]
    y = torch.einsum(eq, *ops)
    tensors[p + "y"] = y.detach().clone().contiguous()
    gy = torch.randn(y.shape, dtype=dtype)
    grads = torch.autograd.grad(y, ops, gy)
    tensors[p + "gy"] = gy
    for k, (op, g) in enumerate(zip(ops, grads)):
        tensors[p + f"op{k}"] = op.detach().clone()
        tensors[p + f"g{k}"] = g.contiguous()
    count += 1


# Matrix products and attention-style contractions.
add("ij,jk->ik", [(3, 4), (4, 5)])
add("ij,jk", [(3, 4), (4, 5)])
add("ij,kj->ik", [(3, 4), (5, 4)])
add("ij,j->i", [(3, 4), (4,)])
add("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)])
add("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)])
add("bhqk,bhkd->bhqd", [(2, 2, 3, 5), (2, 2, 5, 4)])
add("ijk,ikl->ijl", [(2, 3, 4), (2, 4, 5)])
# Diagonals, traces, permutations, reductions of one operand.
add("ii->i", [(4, 4)])
add("ii", [(4, 4)])
add("bii->bi", [(2, 3, 3)])
add("iji->j", [(3, 4, 3)])
add("iij->ij", [(3, 3, 2)])
add("...ii->...i", [(2, 2, 3, 3)])
add("ijk->kji", [(2, 3, 4)])
add("ij->ji", [(3, 4)])
add("ij->", [(3, 4)])
add("ij->j", [(3, 4)])
add("ijk->ik", [(2, 3, 4)])
add("i->", [(5,)])
add("ba", [(3, 4)])
# Outer products, element-wise products, dot products.
add("i,j->ij", [(3,), (4,)])
add("i,j", [(3,), (4,)])
add("i,i->", [(5,)] * 2)
add("i,i", [(5,)] * 2)
add("i,i->i", [(5,)] * 2)
add("ij,ij->ij", [(3, 4), (3, 4)])
add("ij,ij->", [(3, 4), (3, 4)])
add("ij,ij->j", [(3, 4), (3, 4)])
add("ii,i->i", [(3, 3), (3,)])
# Ellipsis broadcasting and size-1 dimensions.
add("...ij,...jk", [(2, 1, 3, 4), (5, 4, 2)])
add("...ij,...jk->...ik", [(2, 3, 4), (4, 5)])
add("i...,i...->...", [(3, 2, 4), (3, 1, 4)])
add("...,...->...", [(2, 3), (3,)])
add("b...,b...->b", [(2, 3, 4), (2, 3, 4)])
add("ij,jk->ik", [(3, 1), (4, 5)])
add("bij,bjk->bik", [(1, 3, 4), (3, 4, 5)])
add("ij,jk->ijk", [(3, 4), (4, 5)])
add("...i,i...->...", [(2, 3), (3, 2)])
# Three and more operands, left to right.
add("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)])
add("ij,jk,kl", [(2, 3), (3, 4), (4, 5)])
add("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)])
add("a,b,c->abc", [(2,), (3,), (4,)])
add("i,i,i->i", [(4,)] * 3)
add("ij,jk,kl,lm->im", [(2, 3), (3, 4), (4, 2), (2, 3)])
add("abc,cd,bd->a", [(2, 3, 4), (4, 5), (3, 5)])
add("ij,ik,il->jkl", [(3, 2), (3, 4), (3, 2)])
# Upper-case labels (the implicit output puts them first) and spaces.
add("Ab,bC", [(2, 3), (3, 4)])
add("bA,bc", [(3, 2), (3, 4)])
add(" ij , jk -> ik ", [(3, 4), (4, 5)])
n64 = count
# float32.
add("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)], torch.float32)
add("bhqd,bhkd->bhqk", [(2, 2, 3, 8), (2, 2, 5, 8)], torch.float32)
add("ii->i", [(4, 4)], torch.float32)
add("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)], torch.float32)
add("...ij,...jk", [(2, 1, 3, 4), (5, 4, 2)], torch.float32)

meta["count"] = str(count)
meta["count64"] = str(n64)
os.makedirs(OUT, exist_ok=True)
save_file(tensors, os.path.join(OUT, "einsum_golden.safetensors"), metadata=meta)
print(f"{count} cases ({n64} float64)")
