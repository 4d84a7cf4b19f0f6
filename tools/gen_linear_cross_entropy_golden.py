#!/usr/bin/env python3
"""Writes the PyTorch goldens for tests/nn/test_linear_cross_entropy.cpp into
tests/nn/golden/linear_cross_entropy_golden.safetensors.

torch.nn.LinearCrossEntropyLoss (options=None, the reference path). Metadata "case<i>" is
"lce,in=F,classes=C,out=d1;d2,bias=0|1,reduction=R,ignore=I|none,smoothing=S,weight=0|1,seed=S";
"count" is the number of cases. Tensors: case<i>.init.<name> (float32 parameters right after
torch.manual_seed(S) and construction), case<i>.param.<name> (float64), .class_weight (when
weight=1), .input, .target, .loss, .gloss (the upstream gradient), .ginput, .grad.<name>.

The chunked path (F.linear_cross_entropy with options=LinearCrossEntropyOptions(...)), float64:
metadata "chunked<i>" is "lce_chunked,reduction=R,ignore=I|none,weight=0|1,bias=0|1,prob=0|1,batched=0|1,
chunk=B|none,method=M|none|auto" ("count.chunked" of them); tensors chunked<i>.input, .linear_weight,
.linear_bias, .class_weight, .target, .loss, .reference (the options=None loss), .gloss, .ginput,
.glinear_weight, .glinear_bias. Metadata "message.<what>" holds PyTorch's messages: the options'
ValueErrors, the chunk-size conflict, the second backward, the acc_dtype check and the warning of
options that cannot be honoured.

Run: /path/to/python-with-torch-and-safetensors tools/gen_linear_cross_entropy_golden.py
"""
import os
import warnings

import torch
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "nn", "golden")

tensors, meta = {}, {}
count = 0


def add(in_features, classes, out_features, bias, reduction, ignore, smoothing, with_weight, seed, input_shape,
        target):
    global count
    p = f"case{count}."
    meta[f"case{count}"] = (f"lce,in={in_features},classes={classes},out={';'.join(map(str, out_features))},"
                            f"bias={int(bias)},reduction={reduction},ignore={'none' if ignore is None else ignore},"
                            f"smoothing={smoothing},weight={int(with_weight)},seed={seed}")
    gen = torch.Generator().manual_seed(seed + 100)
    class_weight = torch.rand(classes, dtype=torch.float64, generator=gen) + 0.5 if with_weight else None
    torch.manual_seed(seed)
    m = torch.nn.LinearCrossEntropyLoss(in_features, classes, out_features=tuple(out_features), bias=bias,
                                        reduction=reduction, weight=class_weight, ignore_index=ignore,
                                        label_smoothing=smoothing)
    for k, v in m.named_parameters():
        tensors[p + "init." + k] = v.detach().clone()
    m = m.double()
    for k, v in m.named_parameters():
        tensors[p + "param." + k] = v.detach().clone()
    if with_weight:
        tensors[p + "class_weight"] = class_weight
    x = torch.randn(input_shape, dtype=torch.float64, generator=gen)
    xi = x.clone().requires_grad_()
    loss = m(xi, target)
    gloss = torch.randn(loss.shape, dtype=torch.float64, generator=gen)
    params = dict(m.named_parameters())
    grads = torch.autograd.grad(loss, [xi] + list(params.values()), gloss)
    tensors.update({p + "input": x, p + "target": target, p + "loss": loss.detach().clone(), p + "gloss": gloss,
                    p + "ginput": grads[0]})
    for k, g in zip(params, grads[1:]):
        tensors[p + "grad." + k] = g
    count += 1


def classes_target(*shape, classes, seed):
    return torch.randint(0, classes, shape, generator=torch.Generator().manual_seed(seed))


def probabilities(*shape, seed):
    return torch.randn(shape, dtype=torch.float64, generator=torch.Generator().manual_seed(seed)).softmax(1)


add(8, 5, [], False, "mean", None, 0.0, False, 1, (6, 8), classes_target(6, classes=5, seed=1))
add(8, 5, [], True, "sum", 2, 0.1, True, 2, (6, 8), torch.tensor([0, 2, 4, 2, 1, 3]))
add(8, 5, [], True, "none", None, 0.0, True, 3, (6, 8), classes_target(6, classes=5, seed=3))
add(8, 5, [], True, "mean", -1, 0.2, True, 4, (6, 8), torch.tensor([0, -1, 4, 3, -1, 1]))
add(6, 4, [3, 2], True, "mean", None, 0.0, False, 5, (3, 6), classes_target(3, 3, 2, classes=4, seed=5))
add(6, 4, [3], False, "none", None, 0.05, True, 6, (2, 6), classes_target(2, 3, classes=4, seed=6))
add(8, 5, [], True, "mean", None, 0.0, False, 7, (6, 8), probabilities(6, 5, seed=7))
add(6, 4, [3], True, "sum", None, 0.3, True, 8, (2, 6), probabilities(2, 4, 3, seed=8))
add(8, 5, [], True, "mean", None, 0.1, False, 9, (8,), torch.tensor(3))  # unbatched

meta["count"] = str(count)

Options = torch.nn.LinearCrossEntropyOptions
chunked_count = 0


def add_chunked(reduction, ignore, with_weight, bias, prob, batched, chunk, method, rows=10, in_features=4,
                classes=6):
    global chunked_count
    p = f"chunked{chunked_count}."
    meta[f"chunked{chunked_count}"] = (
        f"lce_chunked,reduction={reduction},ignore={'none' if ignore is None else ignore},weight={int(with_weight)},"
        f"bias={int(bias)},prob={int(prob)},batched={int(batched)},chunk={'none' if chunk is None else chunk},"
        f"method={'none' if method is None else method}")
    gen = torch.Generator().manual_seed(1000 + chunked_count)
    shape = (rows, in_features) if batched else (in_features,)
    x = torch.randn(shape, dtype=torch.float64, generator=gen)
    w = torch.randn(classes, in_features, dtype=torch.float64, generator=gen)
    b = torch.randn(classes, dtype=torch.float64, generator=gen)
    cw = torch.rand(classes, dtype=torch.float64, generator=gen) + 0.5
    if prob:
        target = torch.randn((rows, classes) if batched else (classes,), dtype=torch.float64,
                             generator=gen).softmax(-1)
    else:
        target = torch.randint(0, classes, (rows,) if batched else (), generator=gen)
        if ignore is not None and batched:
            target[1::3] = ignore
    opts = Options(batch_chunk_size=chunk, chunking_method=method)
    leaves = [x.clone().requires_grad_(), w.clone().requires_grad_(), b.clone().requires_grad_()]
    kwargs = dict(linear_bias=leaves[2] if bias else None, weight=cw if with_weight else None, reduction=reduction,
                  ignore_index=ignore)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the chunked path must apply
        loss = torch.nn.functional.linear_cross_entropy(leaves[0], leaves[1], target, options=opts, **kwargs)
    reference = torch.nn.functional.linear_cross_entropy(x, w, target, **{**kwargs, "linear_bias": b if bias else None})
    gloss = torch.randn(loss.shape, dtype=torch.float64, generator=gen)
    grads = torch.autograd.grad(loss, leaves[:3] if bias else leaves[:2], gloss)
    tensors.update({p + "input": x, p + "linear_weight": w, p + "linear_bias": b, p + "class_weight": cw,
                    p + "target": target, p + "loss": loss.detach().clone(), p + "reference": reference.detach(),
                    p + "gloss": gloss, p + "ginput": grads[0], p + "glinear_weight": grads[1]})
    if bias:
        tensors[p + "glinear_bias"] = grads[2]
    chunked_count += 1


add_chunked("mean", None, False, False, False, True, 3, "auto")
add_chunked("mean", -100, True, True, False, True, 4, None)
add_chunked("sum", 2, True, True, False, True, None, "aspect_ratio:2")
add_chunked("none", None, True, True, False, True, 3, None)
add_chunked("none", 1, False, False, False, True, None, "auto")
add_chunked("mean", None, True, True, True, True, 4, None)
add_chunked("sum", None, False, True, True, True, 1, None)
add_chunked("none", None, True, False, True, True, 6, None)
add_chunked("mean", None, False, True, False, False, None, "auto")
add_chunked("sum", None, True, False, True, False, 2, None)
add_chunked("mean", None, False, True, False, True, None, "aspect_ratio", rows=12, in_features=2, classes=9)
meta["count.chunked"] = str(chunked_count)


def message_of(key, fn):
    try:
        fn()
    except (ValueError, RuntimeError, TypeError) as e:
        meta["message." + key] = str(e)
        return
    raise AssertionError(f"{key}: no error")


message_of("acc_policy", lambda: Options(acc_policy="fast"))
message_of("chunking_method", lambda: Options(chunking_method="aspect_ratio:0"))
message_of("chunking_method_name", lambda: Options(chunking_method="square"))
message_of("batch_chunk_size", lambda: Options(batch_chunk_size=0))
message_of("acc_dtype", lambda: Options(acc_dtype=torch.int64))
xs, ws, ts = torch.randn(8, 4), torch.randn(6, 4), torch.randint(0, 6, (8,))
message_of("conflict", lambda: torch.nn.functional.linear_cross_entropy(
    xs, ws, ts, options=Options(batch_chunk_size=3, chunking_method="aspect_ratio")))
message_of("acc_dtype_compatible", lambda: torch.nn.functional.linear_cross_entropy(
    xs, ws, ts, options=Options(acc_dtype=torch.float64)))


def twice():
    x = torch.randn(8, 4, requires_grad=True)
    loss = torch.nn.functional.linear_cross_entropy(x, ws, ts, options=Options(batch_chunk_size=3))
    loss.backward(retain_graph=True)
    loss.backward()


message_of("twice", twice)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    torch.nn.functional.linear_cross_entropy(xs, ws, ts, linear_bias=torch.randn(6), label_smoothing=0.25,
                                             options=Options())
    torch.nn.functional.linear_cross_entropy(xs, torch.randn(6, 3, 4), torch.randint(0, 6, (8, 3)),
                                             reduction="sum", options=Options())
meta["message.warning_smoothing"] = str(caught[0].message)
meta["message.warning_out_features"] = str(caught[1].message)
os.makedirs(OUT, exist_ok=True)
save_file(tensors, os.path.join(OUT, "linear_cross_entropy_golden.safetensors"), metadata=meta)
print(f"{count} cases")
