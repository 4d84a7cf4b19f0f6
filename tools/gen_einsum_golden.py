#!/usr/bin/env python3
"""Writes the PyTorch goldens for tests/ops/test_einsum.cpp into
tests/ops/golden/einsum_golden.safetensors.

torch.einsum with opt_einsum switched off (operands contracted left to right, as ember does).
Metadata "case<i>" is "einsum,eq=EQUATION,n=K" with the equation's ',' written as ';' (the
metadata's own separator is ','); "count" is the number of cases. Tensors: case<i>.op<k> (the K
operands), .y (the result), .gy (the upstream gradient) and .g<k> (each operand's gradient).
float64 cases, then a few float32 ones (same layout, float32 tensors).

The sublist form, torch.einsum(op1, sublist1, ..., [sublist_out]), float64: metadata
"sublist<i>" is the operands' sublists joined with ';', each subscript's integers joined with ' '
and Ellipsis written 'E', then "->" and the output's when given ("sublist_count" of them);
tensors sublist<i>.op<k>, .y, .gy, .g<k>. "sublist_error<j>" holds a sublist call PyTorch
refuses (same form) and "sublist_error<j>.message" its message.

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



def sublist_text(sublists, out):
    def one(sub):
        return " ".join("E" if s is Ellipsis else str(s) for s in sub)

    return ";".join(one(sub) for sub in sublists) + ("" if out is None else "->" + one(out))


def sublist_args(ops, sublists, out):
    args = [a for pair in zip(ops, sublists) for a in pair]
    return args if out is None else args + [out]


sublist_count = 0


def add_sublist(sublists, shapes, out=None):
    global sublist_count
    p = f"sublist{sublist_count}"
    meta[p] = sublist_text(sublists, out)
    ops = [torch.randn(s, dtype=torch.float64).requires_grad_() for s in shapes]
    y = torch.einsum(*sublist_args(ops, sublists, out))
    tensors[p + ".y"] = y.detach().clone().contiguous()
    gy = torch.randn(y.shape, dtype=torch.float64)
    tensors[p + ".gy"] = gy
    for k, (op, g) in enumerate(zip(ops, torch.autograd.grad(y, ops, gy))):
        tensors[p + f".op{k}"] = op.detach().clone()
        tensors[p + f".g{k}"] = g.contiguous()
    sublist_count += 1


sublist_errors = 0


def add_sublist_error(sublists, shapes, out=None):
    global sublist_errors
    ops = [torch.randn(s, dtype=torch.float64) for s in shapes]
    try:
        torch.einsum(*sublist_args(ops, sublists, out))
    except (ValueError, RuntimeError) as e:
        p = f"sublist_error{sublist_errors}"
        meta[p] = sublist_text(sublists, out)
        meta[p + ".message"] = str(e)
        for k, op in enumerate(ops):
            tensors[p + f".op{k}"] = op
        sublist_errors += 1
        return
    raise AssertionError(f"no error for {sublists} {out}")


add_sublist([[0, 1], [1, 2]], [(3, 4), (4, 5)], [0, 2])
add_sublist([[0, 1], [1, 2]], [(3, 4), (4, 5)])
add_sublist([[26, 27], [27, 28]], [(3, 4), (4, 5)], [26, 28])
add_sublist([[51, 0], [0, 25]], [(3, 4), (4, 5)])  # implicit output: upper case (25) first
add_sublist([[Ellipsis, 0, 1], [Ellipsis, 1, 2]], [(2, 3, 4), (2, 4, 5)], [Ellipsis, 0, 2])
add_sublist([[Ellipsis, 0, 1], [Ellipsis, 1, 2]], [(2, 1, 3, 4), (5, 4, 2)])
add_sublist([[0, 0]], [(4, 4)], [0])
add_sublist([[0, 0]], [(4, 4)])
add_sublist([[Ellipsis, 3, 3]], [(2, 3, 3)])
add_sublist([[0, Ellipsis], [0, Ellipsis]], [(3, 2, 4), (3, 1, 4)], [Ellipsis])
add_sublist([[0, 1], [1, 2], [2, 3]], [(2, 3), (3, 4), (4, 5)], [0, 3])
add_sublist([[0], [1]], [(3,), (4,)], [0, 1])
add_sublist([[0], [0]], [(5,), (5,)], [])
add_sublist([[2, 1, 0]], [(2, 3, 4)], [0, 1, 2])
add_sublist_error([[0, 52]], [(3, 4)])
add_sublist_error([[-1, 0]], [(3, 4)])
add_sublist_error([[0, 1], [1, 2]], [(3, 4), (4, 5)], [0, 100])
add_sublist_error([[0, 1], [1, 2]], [(3, 4), (4, 5)], [0, 3])
add_sublist_error([[0, 1, 2]], [(3, 4)])
add_sublist_error([[0, 1], [2, 2]], [(3, 4), (4, 5)])
meta["sublist_count"] = str(sublist_count)
meta["sublist_error_count"] = str(sublist_errors)

meta["count"] = str(count)
meta["count64"] = str(n64)
os.makedirs(OUT, exist_ok=True)
save_file(tensors, os.path.join(OUT, "einsum_golden.safetensors"), metadata=meta)
print(f"{count} cases ({n64} float64)")
