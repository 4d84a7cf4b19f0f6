#!/usr/bin/env python3
"""Writes the PyTorch goldens for tests/ops/test_svd.cpp into tests/ops/golden/svd_golden.safetensors.

Singular vectors are unique only up to the sign of each pair (u_i, v_i), and the columns of a full
U (or rows of a full Vh) past k = min(m, n) not at all, so the test compares singular values,
sign-normalised reduced vectors, and gradients of losses that do not depend on those choices.

Decompositions, per case NAME (float64 input NAME.a):
  NAME.s, NAME.u, NAME.vh       torch.linalg.svd(a, full_matrices=False)
  NAME.s32                      the singular values of a.float()
  NAME.g_s                      d/da of sum(w_s * S)                       (svdvals' gradient)
  NAME.g_f                      d/da of sum(w_f * U diag(S^2 + S) Vh)      (gU, gS and gVh together)
  NAME.g_u, NAME.g_v            d/da of sum(w_u * U * U), sum(w_v * Vh * Vh)   (gU alone, gVh alone)
  NAME.g_full                   d/da of sum(w_full * U_full * U_full) + sum(w_vfull * Vh_full * Vh_full)
                                with full_matrices=True: PyTorch keeps the first k columns / rows of
                                the gradients only, so the other columns' values do not matter.
The weights are NAME.w_s, .w_f, .w_u, .w_v, .w_full, .w_vfull.

Matrix norms of mn.x, per case "mn<i>" (metadata "mn<i>" = "ord,d0,d1,keepdim"): mn<i>.y, .gy, .gx.

Run: /path/to/python-with-torch-and-safetensors tools/gen_svd_golden.py
"""
import os

import torch
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "ops", "golden",
                   "svd_golden.safetensors")
torch.manual_seed(0)
tensors, meta = {}, {}


def randn(*shape):
    return torch.randn(shape, dtype=torch.float64)


def grad_of(a, loss_fn):
    leaf = a.clone().requires_grad_()
    (g,) = torch.autograd.grad(loss_fn(leaf), leaf)
    return g.contiguous()


def add_svd(name, a):
    tensors[name + ".a"] = a.contiguous()
    U, S, Vh = torch.linalg.svd(a, full_matrices=False)
    tensors[name + ".s"], tensors[name + ".u"], tensors[name + ".vh"] = S, U.contiguous(), Vh.contiguous()
    tensors[name + ".s32"] = torch.linalg.svdvals(a.float())
    m, n = a.shape[-2], a.shape[-1]
    w = {"s": randn(*S.shape), "f": randn(*a.shape), "u": randn(*U.shape), "v": randn(*Vh.shape),
         "full": randn(*a.shape[:-1], m), "vfull": randn(*a.shape[:-2], n, n)}
    for key, value in w.items():
        tensors[f"{name}.w_{key}"] = value

    def decomposed(x):
        return torch.linalg.svd(x, full_matrices=False)

    tensors[name + ".g_s"] = grad_of(a, lambda x: (w["s"] * torch.linalg.svdvals(x)).sum())
    tensors[name + ".g_f"] = grad_of(
        a, lambda x: (w["f"] * (decomposed(x)[0] * (decomposed(x)[1] ** 2 + decomposed(x)[1]).unsqueeze(-2)
                                @ decomposed(x)[2])).sum())
    tensors[name + ".g_u"] = grad_of(a, lambda x: (w["u"] * decomposed(x)[0] ** 2).sum())
    tensors[name + ".g_v"] = grad_of(a, lambda x: (w["v"] * decomposed(x)[2] ** 2).sum())

    def full_loss(x):
        U, _, Vh = torch.linalg.svd(x, full_matrices=True)
        return (w["full"] * U * U).sum() + (w["vfull"] * Vh * Vh).sum()

    tensors[name + ".g_full"] = grad_of(a, full_loss)


add_svd("square", randn(4, 4))
add_svd("tall", randn(5, 3))
add_svd("wide", randn(3, 5))
add_svd("batched_tall", randn(2, 3, 4, 3))
add_svd("batched_wide", randn(2, 2, 5))
add_svd("column", randn(4, 1))

# ---- matrix norms from the singular values
X = randn(2, 3, 4)
count = 0
for ord_ in ("2", "-2", "nuc"):
    for d0, d1 in ((-2, -1), (0, 2), (2, 0), (1, 0)):
        for keepdim in (0, 1):
            name = f"mn{count}"
            meta[name] = f"{ord_},{d0},{d1},{keepdim}"
            leaf = X.clone().requires_grad_()
            o = ord_ if ord_ == "nuc" else float(ord_)
            y = torch.linalg.matrix_norm(leaf, o, dim=(d0, d1), keepdim=bool(keepdim))
            gy = randn(*y.shape)
            (gx,) = torch.autograd.grad(y, leaf, gy)
            tensors[name + ".y"] = y.detach().contiguous()
            tensors[name + ".gy"], tensors[name + ".gx"] = gy, gx.contiguous()
            count += 1
meta["matrix_norm_cases"] = str(count)
tensors["mn.x"] = X

# linalg.norm on a 2-D input: ord 2, -2, "nuc" without dim, and None (the 2-norm of the elements)
Y = randn(3, 5)
tensors["norm.x"] = Y
tensors["norm.ord2"] = torch.linalg.norm(Y, 2)
tensors["norm.ordm2"] = torch.linalg.norm(Y, -2)
tensors["norm.nuc"] = torch.linalg.norm(Y, "nuc")
tensors["norm.none"] = torch.linalg.norm(Y)
tensors["norm.nuc_keepdim"] = torch.linalg.norm(Y, "nuc", dim=(1, 0), keepdim=True)

save_file({k: v.contiguous() for k, v in tensors.items()}, OUT, metadata=meta)
print(f"wrote {len(tensors)} tensors to {os.path.normpath(OUT)}")
