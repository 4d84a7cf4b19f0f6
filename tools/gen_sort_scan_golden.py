#!/usr/bin/env python3
"""Writes the PyTorch goldens for tests/ops/test_sort_scan.cpp into
tests/ops/golden/sort_scan_golden.safetensors: sort, argsort, msort, topk, kthvalue, median,
nanmedian, unique, unique_consecutive, searchsorted, bucketize, cumsum, cumprod, cummax, cummin,
logcumsumexp (and prod's gradient with zeros), the bitwise ops and shifts, isclose and Tensor.unfold.

The format is tests/support/transform_norm_golden.h's: metadata "case<i>" is
"KIND,op=NAME[,key=value...]" (integer lists joined with ';'), tensors case<i>.x (or .a, .b,
.c), .y (the result), .gy (the upstream gradient) and the gradients .gx (.ga, ...) of the
floating inputs when the result is differentiable. An op returning several tensors is written as
one case per output, the op name suffixed ("sort" for the values, "sort.indices").

Inputs avoid ties wherever PyTorch leaves the choice among equal elements unspecified (topk,
kthvalue, median, unstable sort); the stable sort cases have ties on purpose.

Run: /path/to/python-with-torch-and-safetensors tools/gen_sort_scan_golden.py
"""
import os

import torch
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "ops", "golden")
torch.manual_seed(0)

tensors, meta = {}, {}
count = 0
nan, inf = float("nan"), float("inf")


def lst(v):
    return ";".join(str(int(i)) for i in v)


def randn(*shape):
    return torch.randn(tuple(shape), dtype=torch.float64)


def add(kind, opts, inputs, fn):
    """inputs: name -> tensor; fn(**inputs) -> result tensor."""
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
        gy = randn(*y.shape).to(y.dtype)
        grads = torch.autograd.grad(y, [leaves[k] for k in diff], gy, allow_unused=True)
        tensors[p + "gy"] = gy
        for k, g in zip(diff, grads):
            tensors[p + "g" + k] = (g if g is not None else torch.zeros_like(leaves[k])).contiguous()
    count += 1


def add_pair(opts, inputs, fn):
    """An op returning (values, indices): one case for each."""
    add("unary", opts, inputs, lambda **kw: fn(**kw)[0])
    add("unary", dict(opts, op=opts["op"] + ".indices"), inputs, lambda **kw: fn(**kw)[1])


X = randn(2, 3, 4)
TIES = torch.tensor([[3., 1., 2., 1., 3., 2., 1.], [0., 0., -1., 5., 5., -1., 0.]], dtype=torch.float64)
SPECIAL = torch.tensor([[1., nan, -0.0, 0.0, -inf, 2., nan, inf, -1., 0.0]], dtype=torch.float64)

# ---- sort family
for dim in (0, 1, 2, -1):
    for desc in (0, 1):
        add_pair(dict(op="sort", dim=dim, descending=desc, stable=0), dict(x=X),
                 lambda x, d=dim, s=desc: torch.sort(x, dim=d, descending=bool(s)))
for desc in (0, 1):
    add_pair(dict(op="sort", dim=1, descending=desc, stable=1), dict(x=TIES),
             lambda x, s=desc: torch.sort(x, dim=1, descending=bool(s), stable=True))
    add_pair(dict(op="sort", dim=-1, descending=desc, stable=1), dict(x=SPECIAL),
             lambda x, s=desc: torch.sort(x, dim=-1, descending=bool(s), stable=True))
add_pair(dict(op="sort", dim=0, descending=0, stable=0), dict(x=torch.tensor(2.5, dtype=torch.float64)),
         lambda x: torch.sort(x, 0))
add("unary", dict(op="argsort", dim=1, descending=1, stable=1), dict(x=TIES),
    lambda x: torch.argsort(x, dim=1, descending=True, stable=True))
add("unary", dict(op="msort"), dict(x=X), lambda x: torch.msort(x))
for k, dim, largest in ((1, -1, 1), (3, -1, 1), (3, 1, 0), (2, 0, 1), (4, 2, 0), (0, 1, 1)):
    add_pair(dict(op="topk", k=k, dim=dim, largest=largest), dict(x=X),
             lambda x, k=k, d=dim, l=largest: torch.topk(x, k, dim=d, largest=bool(l)))
add_pair(dict(op="topk", k=3, dim=-1, largest=1), dict(x=torch.tensor([[1., nan, 3., -inf, 2.]], dtype=torch.float64)),
         lambda x: torch.topk(x, 3))
for k, dim, keep in ((1, -1, 0), (3, 1, 1), (2, 0, 0), (4, 2, 1)):
    add_pair(dict(op="kthvalue", k=k, dim=dim, keepdim=keep), dict(x=X),
             lambda x, k=k, d=dim, kd=keep: torch.kthvalue(x, k, dim=d, keepdim=bool(kd)))
add("unary", dict(op="median"), dict(x=X), lambda x: torch.median(x))
add("unary", dict(op="median"), dict(x=randn(4, 6)), lambda x: torch.median(x))
add("unary", dict(op="median"), dict(x=torch.tensor([1., 2., 2., 5.], dtype=torch.float64)), lambda x: torch.median(x))
add("unary", dict(op="median"), dict(x=torch.tensor([1., nan, 2., nan], dtype=torch.float64)),
    lambda x: torch.median(x))
add("unary", dict(op="nanmedian"), dict(x=torch.tensor([1., nan, 4., 2., nan], dtype=torch.float64)),
    lambda x: torch.nanmedian(x))
for dim, keep in ((0, 0), (1, 1), (-1, 0)):
    add_pair(dict(op="median", dim=dim, keepdim=keep), dict(x=X),
             lambda x, d=dim, kd=keep: torch.median(x, dim=d, keepdim=bool(kd)))
NANS = torch.tensor([[1., nan, 3., 2.], [4., 0., -1., 2.5], [nan, nan, nan, nan], [nan, 7., nan, 5.]],
                    dtype=torch.float64)
add_pair(dict(op="median", dim=1, keepdim=0), dict(x=NANS), lambda x: torch.median(x, dim=1))
add_pair(dict(op="nanmedian", dim=1, keepdim=0), dict(x=NANS[[0, 1, 3]]), lambda x: torch.nanmedian(x, dim=1))

DUPS = torch.tensor([[3, 1, 2], [1, 3, 3], [0, 2, 1]], dtype=torch.int64)
FDUPS = torch.tensor([2.5, -1., 2.5, 0., -1., 7., 0., 0.], dtype=torch.float64)
for name, t in (("int", DUPS), ("float", FDUPS)):
    out = torch.unique(t, sorted=True, return_inverse=True, return_counts=True)
    for part, value in zip(("unique", "unique.inverse", "unique.counts"), out):
        add("unary", dict(op=part), dict(x=t), lambda x, v=value: v.clone())
RUNS = torch.tensor([1, 1, 2, 2, 3, 1, 1, 2], dtype=torch.int64)
out = torch.unique_consecutive(RUNS, return_inverse=True, return_counts=True)
for part, value in zip(("unique_consecutive", "unique_consecutive.inverse", "unique_consecutive.counts"), out):
    add("unary", dict(op=part), dict(x=RUNS), lambda x, v=value: v.clone())

B1 = torch.tensor([-1., 0., 0., 2.5, 4., 9.], dtype=torch.float64)
V = torch.tensor([[-3., 0., 1., 2.5], [9., 10., nan, 4.]], dtype=torch.float64)
for right in (0, 1):
    add("binary", dict(op="searchsorted", right=right), dict(a=B1, b=V),
        lambda a, b, r=right: torch.searchsorted(a, b, right=bool(r)))
BN = torch.sort(randn(2, 3, 6), dim=-1).values
VN = randn(2, 3, 4)
add("binary", dict(op="searchsorted", right=0), dict(a=BN, b=VN), lambda a, b: torch.searchsorted(a, b))
add("binary", dict(op="searchsorted", side="right", out_int32=1), dict(a=BN, b=VN),
    lambda a, b: torch.searchsorted(a, b, side="right", out_int32=True))
UNSORTED = torch.tensor([[5., 1., 3.], [0., 2., -2.]], dtype=torch.float64)
SORTER = torch.argsort(UNSORTED, dim=-1)
add("binary", dict(op="searchsorted", right=0, sorter=1), dict(a=UNSORTED, b=torch.tensor([[2., 5.], [-3., 1.]],
                                                                                            dtype=torch.float64),
                                                                  c=SORTER),
    lambda a, b, c: torch.searchsorted(a, b, sorter=c))
add("binary", dict(op="searchsorted", right=1), dict(a=torch.tensor([1, 3, 5, 7]), b=torch.tensor([0.5, 3., 6.9])),
    lambda a, b: torch.searchsorted(a, b, right=True))
for right in (0, 1):
    add("binary", dict(op="bucketize", right=right), dict(a=V, b=B1),
        lambda a, b, r=right: torch.bucketize(a, b, right=bool(r)))

# ---- scans
for dim in (0, 1, 2, -1):
    add("unary", dict(op="cumsum", dim=dim), dict(x=X), lambda x, d=dim: torch.cumsum(x, d))
    add("unary", dict(op="cumprod", dim=dim), dict(x=X), lambda x, d=dim: torch.cumprod(x, d))
    add("unary", dict(op="logcumsumexp", dim=dim), dict(x=X), lambda x, d=dim: torch.logcumsumexp(x, d))
    add_pair(dict(op="cummax", dim=dim), dict(x=X), lambda x, d=dim: torch.cummax(x, d))
    add_pair(dict(op="cummin", dim=dim), dict(x=X), lambda x, d=dim: torch.cummin(x, d))
ZEROS = torch.tensor([[2., 0., 3., -1., 0., 4.], [1.5, -2., 0., 3., 2., 0.5], [0., 2., 3., 4., 5., 6.],
                      [1., 2., 3., 4., 5., 0.]], dtype=torch.float64)
for dim in (0, 1):
    add("unary", dict(op="cumprod", dim=dim), dict(x=ZEROS), lambda x, d=dim: torch.cumprod(x, d))
# prod's gradient with zeros in the input (PyTorch's prod_safe_zeros_backward), which cumprod's
# double backward goes through.
for dim in (0, 1):
    add("unary", dict(op="prod", dim=dim), dict(x=ZEROS), lambda x, d=dim: torch.prod(x, d))
for row in (0, 2, 3):
    add("unary", dict(op="prod"), dict(x=ZEROS[row].clone()), lambda x: torch.prod(x))
STEPS = torch.tensor([[1., 3., 3., nan, 2., 5.], [-inf, 2., 2., 1., inf, inf], [0., -0.0, 0., -1., -1., 4.]],
                     dtype=torch.float64)
add_pair(dict(op="cummax", dim=1), dict(x=STEPS), lambda x: torch.cummax(x, 1))
add_pair(dict(op="cummin", dim=1), dict(x=STEPS), lambda x: torch.cummin(x, 1))
add("unary", dict(op="logcumsumexp", dim=1),
    dict(x=torch.tensor([[-inf, -inf, 0., 800., 800.], [inf, 1., -inf, 2., inf], [1., nan, 2., 3., 4.]],
                        dtype=torch.float64)),
    lambda x: torch.logcumsumexp(x, 1))
# float32 sums: PyTorch's CPU kernel accumulates in double and rounds each output once.
F32 = (torch.rand(2, 300, dtype=torch.float64) * 1e4).to(torch.float32)
add("unary", dict(op="cumsum", dim=1), dict(x=F32), lambda x: torch.cumsum(x, 1))
add("unary", dict(op="cumprod", dim=1), dict(x=(1 + torch.rand(3, 50) * 0.1)), lambda x: torch.cumprod(x, 1))
INTS = torch.tensor([[3, -2, 7], [100, 5, -9]], dtype=torch.int32)
add("unary", dict(op="cumsum", dim=1), dict(x=INTS), lambda x: torch.cumsum(x, 1))
add("unary", dict(op="cumprod", dim=0), dict(x=INTS), lambda x: torch.cumprod(x, 0))
add("unary", dict(op="cumsum", dim=0, dtype="float64"), dict(x=INTS), lambda x: torch.cumsum(x, 0, dtype=torch.float64))
add("unary", dict(op="cumsum", dim=0), dict(x=torch.tensor([True, False, True, True])), lambda x: torch.cumsum(x, 0))
add_pair(dict(op="cummax", dim=0), dict(x=torch.tensor([True, False, True])), lambda x: torch.cummax(x, 0))

# ---- Tensor.unfold
for dim, size, step in ((1, 2, 1), (1, 3, 2), (2, 4, 4), (0, 2, 1), (-1, 1, 3), (2, 0, 2)):
    add("unary", dict(op="unfold", dim=dim, size=size, step=step), dict(x=X),
        lambda x, d=dim, s=size, st=step: x.unfold(d, s, st))

# ---- bitwise ops and isclose
I8 = torch.tensor([[5, -7, 127, -128], [0, 3, -1, 64]], dtype=torch.int8)
I8B = torch.tensor([[3, 9, -1, 1], [-5, 2, 6, 8]], dtype=torch.int8)
I64 = torch.tensor([[123456789012, -5, 0, 7]], dtype=torch.int64)
U8 = torch.tensor([[200, 3, 255, 0]], dtype=torch.uint8)
BOOLS = (torch.tensor([True, True, False, False]), torch.tensor([True, False, True, False]))
for name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    fn = getattr(torch, name)
    add("binary", dict(op=name), dict(a=I8, b=I8B), lambda a, b, f=fn: f(a, b))
    add("binary", dict(op=name), dict(a=I8, b=I64[:, :4].expand(2, 4).contiguous()), lambda a, b, f=fn: f(a, b))
    add("binary", dict(op=name), dict(a=BOOLS[0], b=BOOLS[1]), lambda a, b, f=fn: f(a, b))
    add("unary", dict(op=name, scalar=6), dict(x=U8), lambda x, f=fn: f(x, 6))
add("unary", dict(op="bitwise_not"), dict(x=I8), lambda x: torch.bitwise_not(x))
add("unary", dict(op="bitwise_not"), dict(x=BOOLS[0]), lambda x: torch.bitwise_not(x))
add("unary", dict(op="bitwise_not"), dict(x=U8), lambda x: torch.bitwise_not(x))
SHIFT = torch.tensor([[0, 1, 7, 8], [9, -1, 3, 100]], dtype=torch.int8)
for name in ("bitwise_left_shift", "bitwise_right_shift"):
    fn = getattr(torch, name)
    add("binary", dict(op=name), dict(a=I8, b=SHIFT), lambda a, b, f=fn: f(a, b))
    add("binary", dict(op=name), dict(a=I64, b=torch.tensor([[3, 63, 64, -2]])), lambda a, b, f=fn: f(a, b))
    add("unary", dict(op=name, scalar=2), dict(x=U8), lambda x, f=fn: f(x, 2))
CA = torch.tensor([1.0, 1.0 + 1e-9, 1e-10, inf, inf, nan, nan, 2.0, -inf, 100.], dtype=torch.float64)
CB = torch.tensor([1.0, 1.0, 0.0, inf, -inf, nan, 1.0, 2.0 + 3e-5, -inf, 100.001], dtype=torch.float64)
for rtol, atol, equal_nan in ((1e-5, 1e-8, 0), (1e-5, 1e-8, 1), (0.0, 0.0, 0), (1e-3, 0.0, 0), (0.0, 1e-9, 1)):
    add("binary", dict(op="isclose", rtol=rtol, atol=atol, equal_nan=equal_nan), dict(a=CA, b=CB),
        lambda a, b, r=rtol, t=atol, e=equal_nan: torch.isclose(a, b, rtol=r, atol=t, equal_nan=bool(e)))
add("binary", dict(op="isclose", rtol=0.1, atol=1.0, equal_nan=0),
    dict(a=torch.tensor([1, 5, 10, -3]), b=torch.tensor([2, 7, 9, -3])),
    lambda a, b: torch.isclose(a, b, rtol=0.1, atol=1.0))

meta["count"] = str(count)
os.makedirs(OUT, exist_ok=True)
save_file(tensors, os.path.join(OUT, "sort_scan_golden.safetensors"), metadata=meta)
print(f"{count} cases")
