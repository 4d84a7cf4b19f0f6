#!/usr/bin/env python3
"""Writes the PyTorch goldens for tests/nn/test_linear_cross_entropy.cpp into
tests/nn/golden/linear_cross_entropy_golden.safetensors.

torch.nn.LinearCrossEntropyLoss (options=None, the reference path). Metadata "case<i>" is
"lce,in=F,classes=C,out=d1;d2,bias=0|1,reduction=R,ignore=I|none,smoothing=S,weight=0|1,seed=S";
"count" is the number of cases. Tensors: case<i>.init.<name> (float32 parameters right after
torch.manual_seed(S) and construction), case<i>.param.<name> (float64), .class_weight (when
weight=1), .input, .target, .loss, .gloss (the upstream gradient), .ginput, .grad.<name>.

Run: /path/to/python-with-torch-and-safetensors tools/gen_linear_cross_entropy_golden.py
"""
import os

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
os.makedirs(OUT, exist_ok=True)
save_file(tensors, os.path.join(OUT, "linear_cross_entropy_golden.safetensors"), metadata=meta)
print(f"{count} cases")
