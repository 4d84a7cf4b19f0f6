#!/usr/bin/env python3
"""Writes the PyTorch goldens for tests/nn/test_loss_weights.cpp into tests/nn/golden/.

loss_golden.safetensors: for each case i, case<i>.x (float64 input: log-probabilities for nll,
logits for cross_entropy), case<i>.t (int64 class indices, or float64 class probabilities),
case<i>.w (float64 per-class weight, only when the case has one), case<i>.gy (the gradient fed to
backward, shaped like the result), and PyTorch's results case<i>.y and case<i>.gx (the input's
gradient). The metadata entry "case<i>" holds the arguments as
"fn,reduction,label_smoothing,ignore_index,name" with fn "nll" or "ce" and reduction "none",
"mean" or "sum"; "count" is the number of cases.

Run: /path/to/python-with-torch-and-safetensors tools/gen_loss_golden.py
"""
import os

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "nn", "golden")

N, C = 6, 4
WEIGHT = [0.5, 2.0, 1.25, 0.75]
TARGETS = {
    "plain": [0, 3, 1, 2, 3, 1],
    "some_ignored": [0, -100, 1, 2, -100, 3],
    "all_ignored": [-100] * N,
}
REDUCTIONS = ["none", "mean", "sum"]


def main():
    torch.manual_seed(20240611)
    cases = []  # (fn, reduction, label_smoothing, ignore_index, name, x, t, w)

    logits = torch.randn(N, C, dtype=torch.float64) * 2
    log_probs = logits.log_softmax(1)
    weight = torch.tensor(WEIGHT, dtype=torch.float64)

    # Class targets: nll and cross_entropy, with and without weight, none / some / all ignored,
    # each reduction, and label smoothing 0 and 0.1 for cross_entropy.
    for fn in ("nll", "ce"):
        for has_weight in (False, True):
            for tname, tvals in TARGETS.items():
                for reduction in REDUCTIONS:
                    for ls in (0.0, 0.1) if fn == "ce" else (0.0,):
                        x = log_probs if fn == "nll" else logits
                        name = f"{fn} {'weight' if has_weight else 'no weight'} {tname} {reduction} ls={ls}"
                        cases.append((fn, reduction, ls, -100, name, x, torch.tensor(tvals),
                                      weight if has_weight else None))

    # ignore_index inside [0, C): class 1 is ignored, -100 would be out of bounds.
    inside = torch.tensor([0, 1, 2, 1, 3, 0])
    for reduction in REDUCTIONS:
        for fn, ls in (("nll", 0.0), ("ce", 0.0), ("ce", 0.1)):
            for has_weight in (False, True):
                x = log_probs if fn == "nll" else logits
                cases.append((fn, reduction, ls, 1, f"{fn} ignore_index=1 {reduction} ls={ls} weight={has_weight}", x,
                              inside, weight if has_weight else None))

    # K-dimensional input [N, C, d] and [N, C, d1, d2], with some positions ignored.
    x3 = torch.randn(3, C, 5, dtype=torch.float64)
    t3 = torch.randint(0, C, (3, 5))
    t3[0, 1] = t3[2, 4] = t3[1, 0] = -100
    x4 = torch.randn(2, C, 3, 2, dtype=torch.float64)
    t4 = torch.randint(0, C, (2, 3, 2))
    t4[1, 2, 0] = t4[0, 0, 1] = -100
    for reduction in REDUCTIONS:
        for (xk, tk, dims) in ((x3, t3, "3d"), (x4, t4, "4d")):
            cases.append(("nll", reduction, 0.0, -100, f"nll {dims} weight {reduction}", xk.log_softmax(1), tk, weight))
            cases.append(("ce", reduction, 0.1, -100, f"ce {dims} weight ls {reduction}", xk, tk, weight))
            cases.append(("ce", reduction, 0.0, -100, f"ce {dims} no weight {reduction}", xk, tk, None))

    # A single sample: input [C], target [].
    for reduction in REDUCTIONS:
        for tval in (2, -100):
            cases.append(("nll", reduction, 0.0, -100, f"nll 1d target {tval} {reduction}", log_probs[1], torch.tensor(tval),
                          weight))
            cases.append(("ce", reduction, 0.1, -100, f"ce 1d target {tval} {reduction}", logits[1], torch.tensor(tval),
                          weight))

    # Class probabilities, with weight and smoothing (ignore_index negative, as PyTorch requires).
    probs = torch.randn(N, C, dtype=torch.float64).softmax(1)
    probs3 = torch.randn(3, C, 5, dtype=torch.float64).softmax(1)
    for reduction in REDUCTIONS:
        for ls in (0.0, 0.1):
            for has_weight in (False, True):
                cases.append(("ce", reduction, ls, -100, f"ce probs {reduction} ls={ls} weight={has_weight}", logits,
                              probs, weight if has_weight else None))
        cases.append(("ce", reduction, 0.1, -1, f"ce probs 3d weight ls {reduction}", x3, probs3, weight))

    tensors, meta = {}, {}
    for i, (fn, reduction, ls, ignore_index, name, x0, t, w) in enumerate(cases):
        x = x0.detach().clone().requires_grad_()
        if fn == "nll":
            y = F.nll_loss(x, t, weight=w, ignore_index=ignore_index, reduction=reduction)
        else:
            y = F.cross_entropy(x, t, weight=w, ignore_index=ignore_index, reduction=reduction, label_smoothing=ls)
        gy = torch.rand(y.shape, dtype=torch.float64) + 0.5
        y.backward(gy)
        p = f"case{i}."
        tensors[p + "x"], tensors[p + "t"], tensors[p + "gy"] = x.detach(), t, gy
        tensors[p + "y"], tensors[p + "gx"] = y.detach(), x.grad
        if w is not None:
            tensors[p + "w"] = w
        meta[f"case{i}"] = f"{fn},{reduction},{ls},{ignore_index},{name}"
    meta["count"] = str(len(cases))
    save_file({k: v.clone().contiguous() for k, v in tensors.items()}, os.path.join(OUT, "loss_golden.safetensors"), meta)
    print(f"{len(cases)} cases")


if __name__ == "__main__":
    main()
