#!/usr/bin/env python3
"""Writes the PyTorch goldens for tests/ops/test_indexing_ops.cpp into
tests/ops/golden/indexing_golden.safetensors.

Metadata "case<i>" is "KIND,op=NAME[,key=value...]"; "count" is the number of cases. Tensors of
case i are "case<i>.<name>": the inputs (x, src, value, weights: floating ones get gradients;
index, index0.., mask0..: integer and bool ones do not), "y" (the result), "gy" (the upstream
gradient) and "g<input>" for each floating input, absent when the result is not differentiable.
Tensor-indexing cases carry "spec": the index as ';'-separated tokens: i<n> (integer),
s<start>:<stop>:<step> (a slice, ends may be empty), N (None), E (Ellipsis), T/F (bools),
t<k> (tensor case<i>.index<k>), m<k> (mask case<i>.mask<k>).

Run: ~/.cache/ember-bench/torch-venv/bin/python tools/gen_indexing_golden.py
"""
import os
import warnings

import torch
from safetensors.torch import save_file

warnings.simplefilter("ignore")
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "ops", "golden")
torch.manual_seed(0)

tensors, meta = {}, {}
count = 0


def randn(*shape):
    return torch.randn(tuple(shape), dtype=torch.float64)


def add(opts, inputs, fn, kind="op"):
    """inputs: name -> tensor (floating ones are differentiated); fn(**inputs) -> result."""
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
            tensors[p + "g" + k] = (g if g is not None else torch.zeros_like(leaves[k])).clone().contiguous()
    count += 1


def long(*values):
    return torch.tensor(values, dtype=torch.int64)


# ---- scatter ----
X = randn(3, 5)
add(dict(op="scatter", dim=0), dict(x=X, index=long([0, 2, 1, 0, 2], [1, 0, 2, 2, 0]), src=randn(2, 5)),
    lambda x, index, src: torch.scatter(x, 0, index, src))
add(dict(op="scatter", dim=1), dict(x=X, index=long([4, 0], [1, 3]), src=randn(2, 2)),
    lambda x, index, src: torch.scatter(x, 1, index, src))
add(dict(op="scatter", dim=-1), dict(x=randn(2, 3, 4), index=long([[3], [0], [1]], [[2], [1], [0]]), src=randn(2, 3, 1)),
    lambda x, index, src: torch.scatter(x, -1, index, src))
add(dict(op="scatter_value", dim=1, value=2.5), dict(x=X, index=long([4, 0], [1, 3], [2, 2])),
    lambda x, index: torch.scatter(x, 1, index, 2.5))
for reduce in ("add", "multiply"):
    add(dict(op="scatter_legacy", dim=0, reduce=reduce), dict(x=X.detach(), index=long([0, 2, 0, 0, 1], [0, 0, 0, 1, 1]),
                                                              src=randn(2, 5)),
        lambda x, index, src, r=reduce: torch.scatter(x.detach(), 0, index, src.detach(), reduce=r))
    add(dict(op="scatter_legacy_value", dim=1, reduce=reduce, value=1.5), dict(x=X.detach(), index=long([1, 1], [0, 4])),
        lambda x, index, r=reduce: torch.scatter(x.detach(), 1, index, 1.5, reduce=r))

# ---- scatter_reduce: duplicates, ties (integer-valued floats) and zeros ----
TIES_X = torch.tensor([[1., 3., 0., 2.], [2., 2., 5., -1.], [0., 4., 4., 1.]], dtype=torch.float64)
TIES_SRC = torch.tensor([[3., 1., 0., 2.], [2., 3., 5., 0.], [1., 4., 0., 1.], [3., 0., 2., 2.]], dtype=torch.float64)
TIES_INDEX = long([0, 1, 0, 2], [2, 1, 0, 1], [0, 2, 1, 1], [0, 0, 0, 2])
for reduce in ("sum", "prod", "mean", "amax", "amin"):
    for include_self in (1, 0):
        add(dict(op="scatter_reduce", dim=0, reduce=reduce, include_self=include_self),
            dict(x=randn(3, 4), index=TIES_INDEX, src=randn(4, 4)),
            lambda x, index, src, r=reduce, s=include_self: torch.scatter_reduce(x, 0, index, src, r, include_self=bool(s)))
        add(dict(op="scatter_reduce", dim=0, reduce=reduce, include_self=include_self),
            dict(x=TIES_X, index=TIES_INDEX, src=TIES_SRC),
            lambda x, index, src, r=reduce, s=include_self: torch.scatter_reduce(x, 0, index, src, r, include_self=bool(s)))
    add(dict(op="scatter_reduce", dim=1, reduce=reduce, include_self=1),
        dict(x=randn(2, 5), index=long([4, 4, 0], [1, 1, 1]), src=randn(2, 3)),
        lambda x, index, src, r=reduce: torch.scatter_reduce(x, 1, index, src, r))
INT_X = torch.tensor([[7, -3, 2], [5, 0, -8]], dtype=torch.int64)
INT_SRC = torch.tensor([[-4, 9, 1], [6, -5, 3], [2, 2, -7]], dtype=torch.int64)
for reduce in ("sum", "prod", "mean", "amax", "amin"):
    for include_self in (1, 0):
        add(dict(op="scatter_reduce", dim=0, reduce=reduce, include_self=include_self),
            dict(x=INT_X, index=long([1, 0, 1], [1, 1, 0], [0, 1, 1]), src=INT_SRC),
            lambda x, index, src, r=reduce, s=include_self: torch.scatter_reduce(x, 0, index, src, r, include_self=bool(s)))
add(dict(op="scatter_reduce", dim=0, reduce="amax", include_self=0),
    dict(x=INT_X.to(torch.int32), index=long([1, 0, 1], [1, 1, 0]), src=INT_SRC[:2].to(torch.int32)),
    lambda x, index, src: torch.scatter_reduce(x, 0, index, src, "amax", include_self=False))

# ---- index_add / index_copy / index_fill ----
add(dict(op="index_add", dim=0, alpha=1), dict(x=randn(4, 3), index=long(0, 2, 0, 3, 2), src=randn(5, 3)),
    lambda x, index, src: torch.index_add(x, 0, index, src))
add(dict(op="index_add", dim=1, alpha=2.5), dict(x=randn(2, 4, 3), index=long(3, 1), src=randn(2, 2, 3)),
    lambda x, index, src: torch.index_add(x, 1, index, src, alpha=2.5))
add(dict(op="index_add", dim=-1, alpha=3), dict(x=torch.arange(8).reshape(2, 4), index=long(1, 1, 0),
                                               src=torch.tensor([[1, 2, 3], [4, 5, 6]])),
    lambda x, index, src: torch.index_add(x, -1, index, src, alpha=3))
add(dict(op="index_copy", dim=0), dict(x=randn(4, 3), index=long(3, 0), src=randn(2, 3)),
    lambda x, index, src: torch.index_copy(x, 0, index, src))
add(dict(op="index_copy", dim=2), dict(x=randn(2, 3, 4), index=long(1, 3, 0), src=randn(2, 3, 3)),
    lambda x, index, src: torch.index_copy(x, 2, index, src))
add(dict(op="index_fill", dim=1, value=-2.0), dict(x=randn(3, 4), index=long(0, -1)),
    lambda x, index: torch.index_fill(x, 1, index, -2.0))
add(dict(op="index_fill_tensor", dim=0), dict(x=randn(3, 4), index=long(2), value=torch.tensor(0.75, dtype=torch.float64)),
    lambda x, index, value: torch.index_fill(x, 0, index, value))
add(dict(op="index_fill", dim=0, value=9), dict(x=torch.arange(6).reshape(3, 2), index=long(-3, 1)),
    lambda x, index: torch.index_fill(x, 0, index, 9))

# ---- index_put (explicit lists) ----
add(dict(op="index_put", accumulate=1, indices="0"), dict(x=randn(4, 3), index0=long(0, 2, 0, -1), value=randn(4, 3)),
    lambda x, index0, value: torch.index_put(x, (index0,), value, accumulate=True))
add(dict(op="index_put", accumulate=0, indices="0;1"),
    dict(x=randn(4, 3), index0=long([0], [3]), index1=long(2, -3), value=randn(2, 2)),
    lambda x, index0, index1, value: torch.index_put(x, (index0, index1), value))
add(dict(op="index_put", accumulate=1, indices="0;1"),
    dict(x=randn(4, 3), index0=long(1, 1, 1), index1=long(2, 2, 0), value=randn(1)),
    lambda x, index0, index1, value: torch.index_put(x, (index0, index1), value, accumulate=True))
add(dict(op="index_put", accumulate=0, indices="_;0"),
    dict(x=randn(2, 5, 3), index1=long(4, 0), value=randn(3)),
    lambda x, index1, value: torch.ops.aten.index_put(x, [None, index1], value))
add(dict(op="index_put", accumulate=1, indices="m0"),
    dict(x=randn(3, 4), mask0=torch.rand(3, 4) > 0.5, value=randn(1)),
    lambda x, mask0, value: torch.index_put(x, (mask0,), value, accumulate=True))
add(dict(op="index_put", accumulate=1, indices="0"),
    dict(x=torch.arange(5), index0=long(4, 4, 0), value=torch.tensor([10, 20, 30])),
    lambda x, index0, value: torch.index_put(x, (index0,), value, accumulate=True))


# ---- tensor indexing: x[spec] and x[spec] = value ----
def build_index(spec, named):
    out = []
    for tok in spec.split(";"):
        if tok[0] == "i":
            out.append(int(tok[1:]))
        elif tok[0] == "s":
            a, b, c = tok[1:].split(":")
            out.append(slice(int(a) if a else None, int(b) if b else None, int(c) if c else None))
        elif tok == "N":
            out.append(None)
        elif tok == "E":
            out.append(Ellipsis)
        elif tok == "T":
            out.append(True)
        elif tok == "F":
            out.append(False)
        elif tok[0] == "t":
            out.append(named["index" + tok[1:]])
        elif tok[0] == "m":
            out.append(named["mask" + tok[1:]])
    return tuple(out)


def index_case(spec, x, **named):
    add(dict(op="index", spec=spec), dict(x=x, **named),
        lambda x, **n: x[build_index(spec, n)])


def put_case(spec, x, value, **named):
    def put(x, value, **n):
        y = x.clone()
        y[build_index(spec, n)] = value
        return y
    add(dict(op="index_put_", spec=spec), dict(x=x, value=value, **named), put)


X4 = randn(2, 3, 4, 2)
index_case("i1;s::2;N;E;i-1", X4)
index_case("s1::;s-2::;s:3:2", X4)
index_case("E;t0", X4, index0=long(1, 0, -2))
index_case("s::;t0;t1", X4, index0=long([0], [2]), index1=long(1, 3, 3))
index_case("t0;s::;t1", X4, index0=long(1, 0), index1=long(3, -1))
index_case("i0;s::;t0", X4, index0=long(2, 1))
index_case("s::;t0;s::;t1", X4, index0=long(2, 0), index1=long(1, 1))
index_case("t0;i1;s::;t1", X4, index0=long(1, 0), index1=long(1, 0))
index_case("m0", X4, mask0=torch.rand(2, 3) > 0.4)
index_case("s::;m0;t0", X4, mask0=torch.rand(3, 4) > 0.4, index0=long(1))
index_case("T;s::;t0", X4, index0=long(0, 2))
index_case("F", X4)
index_case("N;t0;N", X4, index0=long([[1, 0], [0, 1]]))
index_case("E;t0;s1:3:", X4, index0=long(0, 3, 3))
index_case("t0", torch.arange(12).reshape(3, 4), index0=long(2, 0, 2))
put_case("t0", randn(4, 3), randn(3), index0=long(2, 0))
put_case("s::;t0;t1", X4, randn(1), index0=long(0, 2), index1=long(1, 3))
put_case("m0", randn(3, 4), randn(1), mask0=torch.rand(3, 4) > 0.5)
put_case("i1;s1:3:", randn(3, 4), randn(2))
put_case("t0;s::;t1", X4, randn(2, 3, 1), index0=long(1, 0), index1=long(0, 3))

# ---- masks and positions ----
add(dict(op="masked_select"), dict(x=randn(3, 4), mask0=torch.rand(3, 4) > 0.5),
    lambda x, mask0: torch.masked_select(x, mask0))
add(dict(op="masked_select"), dict(x=randn(3, 1), mask0=torch.rand(4) > 0.3),
    lambda x, mask0: torch.masked_select(x, mask0))
add(dict(op="masked_scatter"), dict(x=randn(3, 4), mask0=torch.rand(3, 4) > 0.5, src=randn(4, 4)),
    lambda x, mask0, src: torch.masked_scatter(x, mask0, src))
add(dict(op="masked_scatter"), dict(x=randn(2, 3), mask0=torch.tensor([True, False, True]), src=randn(5)),
    lambda x, mask0, src: torch.masked_scatter(x, mask0, src))
Z = torch.tensor([[0, 1.5, 0], [2, 0, -1], [0, 0, 0]], dtype=torch.float64)
add(dict(op="nonzero"), dict(x=Z.detach()), lambda x: torch.nonzero(x.detach()))
add(dict(op="nonzero"), dict(x=torch.tensor([[[True, False], [False, True]]])), lambda x: torch.nonzero(x))
add(dict(op="argwhere"), dict(x=torch.tensor([0, 3, 0, 4], dtype=torch.int32)), lambda x: torch.argwhere(x))

# ---- take / take_along_dim ----
add(dict(op="take"), dict(x=randn(3, 4), index0=long([0, 11], [-1, 5], [5, 3])), lambda x, index0: torch.take(x, index0))
add(dict(op="take_along_dim", dim=1), dict(x=randn(3, 4), index0=long([0, 3], [1, 1], [2, 0])),
    lambda x, index0: torch.take_along_dim(x, index0, dim=1))
add(dict(op="take_along_dim", dim=0), dict(x=randn(3, 4), index0=long([2], [0])),
    lambda x, index0: torch.take_along_dim(x, index0, dim=0))
add(dict(op="take_along_dim", dim=-1), dict(x=randn(2, 1, 4), index0=torch.tensor([[[3, 0]], [[1, 1]]]).expand(2, 3, 2).contiguous()),
    lambda x, index0: torch.take_along_dim(x, index0, dim=-1))
add(dict(op="take_along_dim", dim="none"), dict(x=randn(3, 4), index0=long([11, 0], [4, 4])),
    lambda x, index0: torch.take_along_dim(x, index0))

# ---- counting ----
add(dict(op="one_hot", num_classes=-1), dict(x=long([2, 0], [1, 4])), lambda x: torch.nn.functional.one_hot(x))
add(dict(op="one_hot", num_classes=6), dict(x=long(5, 0, 3)), lambda x: torch.nn.functional.one_hot(x, 6))
add(dict(op="bincount", minlength=0), dict(x=long(1, 1, 3, 0, 7)), lambda x: torch.bincount(x))
add(dict(op="bincount", minlength=10), dict(x=long(1, 1, 3), weights=torch.tensor([0.5, 0.25, 2.0], dtype=torch.float64).detach()),
    lambda x, weights: torch.bincount(x, weights.detach(), minlength=10))
add(dict(op="bincount", minlength=2), dict(x=long(4, 0, 4), weights=torch.tensor([0.5, 0.25, 2.0], dtype=torch.float32)),
    lambda x, weights: torch.bincount(x, weights.detach(), minlength=2))
add(dict(op="bincount", minlength=3), dict(x=long(2, 1), weights=torch.tensor([3, 4], dtype=torch.int32)),
    lambda x, weights: torch.bincount(x, weights, minlength=3))
add(dict(op="bincount", minlength=4), dict(x=torch.zeros(0, dtype=torch.int64)), lambda x: torch.bincount(x, minlength=4))
for dtype in (torch.float64, torch.float32):
    edges = torch.tensor([0.0, 0.1, 0.2, 0.3, 0.7, 1.0, 1.0000001, -0.0000001, 0.5, 0.9999999, float("nan")], dtype=dtype)
    add(dict(op="histc", bins=3, min=0.0, max=1.0), dict(x=edges.detach()), lambda x: torch.histc(x.detach(), 3, 0.0, 1.0))
    add(dict(op="histc", bins=7, min=0.1, max=0.9), dict(x=edges[:-1].detach()),
        lambda x: torch.histc(x.detach(), 7, 0.1, 0.9))
    data = torch.randn(60, dtype=dtype)
    add(dict(op="histc", bins=10, min=0.0, max=0.0), dict(x=data.detach()), lambda x: torch.histc(x.detach(), 10))
    add(dict(op="histc", bins=4, min=-1.0, max=2.0), dict(x=data.detach()), lambda x: torch.histc(x.detach(), 4, -1.0, 2.0))
add(dict(op="histc", bins=3, min=5.0, max=5.0), dict(x=torch.tensor([5.0, 5.0], dtype=torch.float64).detach()),
    lambda x: torch.histc(x.detach(), 3, 5.0, 5.0))

meta["count"] = str(count)
os.makedirs(OUT, exist_ok=True)
save_file(tensors, os.path.join(OUT, "indexing_golden.safetensors"), metadata=meta)
print(f"{count} cases, {sum(t.numel() * t.element_size() for t in tensors.values())} bytes of tensors")

# ---- max_unpool1d/2d/3d (tests/nn/test_max_unpool.cpp): the pooled values x and their indices
# come from max_pool<d>d(return_indices=True); y = max_unpool<d>d(x, index, ...). Options:
# d, kernel, stride, padding (';'-separated lists), output_size ("" for none). ----
tensors, meta, count = {}, {}, 0
F = torch.nn.functional
POOL = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}
UNPOOL = {1: F.max_unpool1d, 2: F.max_unpool2d, 3: F.max_unpool3d}


def unpool_case(d, shape, kernel, stride, padding, output_size=None):
    pooled, index = POOL[d](randn(*shape), kernel, stride, padding, return_indices=True)
    lst = lambda v: ";".join(str(i) for i in (v if isinstance(v, (list, tuple)) else [v]))
    add(dict(op="max_unpool", d=d, kernel=lst(kernel), stride=lst(stride), padding=lst(padding),
             output_size=lst(output_size) if output_size else ""),
        dict(x=pooled.detach(), index=index),
        lambda x, index: UNPOOL[d](x, index, kernel, stride, padding, output_size))


unpool_case(1, (2, 3, 8), 2, 2, 0)
unpool_case(1, (3, 9), 3, 2, 1, [9])
unpool_case(2, (1, 2, 4, 5), 2, 2, 0, [4, 5])
unpool_case(2, (2, 5, 5), [3, 2], [2, 1], [1, 0], [5, 5])
unpool_case(2, (1, 1, 6, 6), 3, 3, 0, [1, 1, 7, 8])
unpool_case(3, (1, 2, 4, 4, 4), 2, 2, 0)
unpool_case(3, (2, 5, 4, 3), [3, 2, 2], [2, 2, 1], [1, 0, 1], [5, 4, 3])
meta["count"] = str(count)
NN_OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "nn", "golden")
save_file(tensors, os.path.join(NN_OUT, "max_unpool_golden.safetensors"), metadata=meta)
print(f"max_unpool: {count} cases")
