#!/usr/bin/env python3
"""Writes the PyTorch goldens for tests/nn/test_losses.cpp into tests/nn/golden/.

losses_golden.safetensors holds, for each case i, its inputs case<i>.in0, case<i>.in1 (and
case<i>.in2 for the three-input losses), case<i>.w (the weight, only when the case has one),
case<i>.gy (the gradient fed to backward, shaped like the result), and PyTorch's results:
case<i>.y and case<i>.g<k> for each input k that requires grad (none where PyTorch leaves the
gradient undefined). Inputs are float64, except the
cases whose metadata says dtype=float32, and int64 class targets.

The metadata follows tests/support/golden_cases.h: "case<i>" = "FN,key=value,..." with FN the
torch.nn.functional name, reduction=none|mean|sum|batchmean, grads=the indices of the inputs that
require grad (e.g. "01"), dtype=float64|float32, and the function's own arguments (beta, delta,
margin, p, eps, swap, full, log_input, log_target, dim, keepdim, distance); "count" is the
number of cases.

Run: ~/.cache/ember-bench/torch-venv/bin/python tools/gen_losses_golden.py
"""
import math
import os

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "nn", "golden")
R3 = ["none", "mean", "sum"]
D = torch.float64


def t(values, dtype=D):
    return torch.tensor(values, dtype=dtype)


def cosine_distance(a, b):
    return 1.0 - F.cosine_similarity(a, b)


def call(fn, args, ins, w):
    """Runs the torch.nn.functional `fn` on the inputs with the case's arguments."""
    r = args.get("reduction", "mean")
    if fn == "l1_loss":
        return F.l1_loss(ins[0], ins[1], reduction=r, weight=w)
    if fn == "smooth_l1_loss":
        return F.smooth_l1_loss(ins[0], ins[1], reduction=r, beta=args["beta"])
    if fn == "huber_loss":
        return F.huber_loss(ins[0], ins[1], reduction=r, delta=args["delta"], weight=w)
    if fn == "kl_div":
        return F.kl_div(ins[0], ins[1], reduction=r, log_target=bool(args["log_target"]))
    if fn == "binary_cross_entropy":
        return F.binary_cross_entropy(ins[0], ins[1], weight=w, reduction=r)
    if fn == "poisson_nll_loss":
        return F.poisson_nll_loss(ins[0], ins[1], log_input=bool(args["log_input"]), full=bool(args["full"]),
                                  eps=args["eps"], reduction=r)
    if fn == "gaussian_nll_loss":
        return F.gaussian_nll_loss(ins[0], ins[1], ins[2], full=bool(args["full"]), eps=args["eps"], reduction=r)
    if fn == "margin_ranking_loss":
        return F.margin_ranking_loss(ins[0], ins[1], ins[2], margin=args["margin"], reduction=r)
    if fn == "hinge_embedding_loss":
        return F.hinge_embedding_loss(ins[0], ins[1], margin=args["margin"], reduction=r)
    if fn == "soft_margin_loss":
        return F.soft_margin_loss(ins[0], ins[1], reduction=r)
    if fn == "multilabel_soft_margin_loss":
        return F.multilabel_soft_margin_loss(ins[0], ins[1], weight=w, reduction=r)
    if fn == "multi_margin_loss":
        return F.multi_margin_loss(ins[0], ins[1], p=args["p"], margin=args["margin"], weight=w, reduction=r)
    if fn == "multilabel_margin_loss":
        return F.multilabel_margin_loss(ins[0], ins[1], reduction=r)
    if fn == "cosine_embedding_loss":
        return F.cosine_embedding_loss(ins[0], ins[1], ins[2], margin=args["margin"], reduction=r)
    if fn == "triplet_margin_loss":
        return F.triplet_margin_loss(ins[0], ins[1], ins[2], margin=args["margin"], p=args["p"], eps=args["eps"],
                                     swap=bool(args["swap"]), reduction=r)
    if fn == "triplet_margin_with_distance_loss":
        distance = cosine_distance if args["distance"] == "cosine" else None
        return F.triplet_margin_with_distance_loss(ins[0], ins[1], ins[2], distance_function=distance,
                                                   margin=args["margin"], swap=bool(args["swap"]), reduction=r)
    if fn == "cosine_similarity":
        return F.cosine_similarity(ins[0], ins[1], dim=args["dim"], eps=args["eps"])
    if fn == "pairwise_distance":
        return F.pairwise_distance(ins[0], ins[1], p=args["p"], eps=args["eps"], keepdim=bool(args["keepdim"]))
    raise ValueError(fn)


def main():
    torch.manual_seed(20240612)
    cases = []  # (fn, args, inputs, grads, weight)

    def add(fn, args, inputs, grads, weight=None):
        cases.append((fn, dict(args), inputs, grads, weight))

    def rn(*shape):
        return torch.randn(*shape, dtype=D)

    x34, y34 = rn(3, 4), rn(3, 4)
    w34 = torch.rand(3, 4, dtype=D) + 0.25
    for r in R3:
        add("l1_loss", {"reduction": r}, [x34, y34], "01")
        add("l1_loss", {"reduction": r}, [x34, y34], "01", w34)
    add("l1_loss", {"reduction": "mean"}, [x34, y34[1:2]], "01")  # broadcast target (PyTorch warns)
    add("l1_loss", {"reduction": "sum"}, [t([0.5, 1.0, -2.0]), t([0.5, 0.0, -2.0])], "01")  # |0|'s subgradient

    # Differences at 0, at +-beta (+-delta) exactly, and on both sides.
    xs = t([[0.0, 0.5, -0.5, 1.0], [-1.0, 0.2, 2.5, -3.0]])
    ys = t([[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.5]])
    for r in R3:
        add("smooth_l1_loss", {"reduction": r, "beta": 0.5}, [xs, ys], "01")
        add("huber_loss", {"reduction": r, "delta": 1.0}, [xs, ys], "01")
    add("smooth_l1_loss", {"reduction": "mean", "beta": 1.0}, [x34, y34], "01")
    add("smooth_l1_loss", {"reduction": "mean", "beta": 0.0}, [x34, y34], "01")
    add("huber_loss", {"reduction": "mean", "delta": 0.5}, [x34, y34], "01")
    add("huber_loss", {"reduction": "mean", "delta": 1.5}, [x34, y34], "01", w34)

    logp = rn(3, 4).log_softmax(1)
    probs = rn(3, 4).softmax(1)
    for r in ["none", "mean", "sum", "batchmean"]:
        for log_target in (0, 1):
            add("kl_div", {"reduction": r, "log_target": log_target}, [logp, probs.log() if log_target else probs], "01")
    add("kl_div", {"reduction": "sum", "log_target": 0}, [logp, t([[0.0, 0.5, 0.5, 0.0]] * 3)], "0")  # xlogy(0, 0)

    p34 = torch.rand(3, 4, dtype=D) * 0.9 + 0.05
    q34 = torch.rand(3, 4, dtype=D)
    w4 = t([0.5, 2.0, 1.0, 0.25])
    for r in R3:
        add("binary_cross_entropy", {"reduction": r}, [p34, q34], "01")
        add("binary_cross_entropy", {"reduction": r}, [p34, q34], "01", w4)
    # The edges: log clamped at -100, the gradient's denominator at 1e-12.
    add("binary_cross_entropy", {"reduction": "none"},
        [t([0.0, 1.0, 0.0, 1.0, 1e-8, 1 - 1e-9, 0.5]), t([1.0, 0.0, 0.0, 1.0, 0.3, 0.6, 0.5])], "0")

    counts = t([[0.0, 1.0, 3.0, 2.0], [5.0, 0.5, 1.0, 4.0], [2.0, 7.0, 0.0, 1.5]])
    rate = torch.rand(3, 4, dtype=D) * 3 + 0.1
    for log_input in (1, 0):
        for full in (0, 1):
            x = rate.log() if log_input else rate
            add("poisson_nll_loss", {"reduction": "mean", "log_input": log_input, "full": full, "eps": 1e-8},
                [x, counts], "0")
    counts_pos = counts + 0.25
    for r in R3:
        add("poisson_nll_loss", {"reduction": r, "log_input": 1, "full": 1, "eps": 1e-8}, [rate.log(), counts_pos], "01")
    add("poisson_nll_loss", {"reduction": "sum", "log_input": 0, "full": 0, "eps": 0.5}, [rate, counts_pos], "01")

    var34 = torch.rand(3, 4, dtype=D) + 0.1
    var34[0, 1] = 1e-8  # clamped at eps; the gradient still flows
    for r in R3:
        add("gaussian_nll_loss", {"reduction": r, "full": 0, "eps": 1e-6}, [x34, y34, var34], "012")
    add("gaussian_nll_loss", {"reduction": "mean", "full": 1, "eps": 1e-6}, [x34, y34, var34], "012")
    add("gaussian_nll_loss", {"reduction": "sum", "full": 0, "eps": 1e-6}, [x34, y34, t([0.5, 2.0, 1e-9])], "012")
    add("gaussian_nll_loss", {"reduction": "none", "full": 1, "eps": 0.1}, [x34, y34, t([[0.5], [2.0], [0.05]])], "012")
    add("gaussian_nll_loss", {"reduction": "sum", "full": 0, "eps": 1e-6}, [x34, y34, t([[0.5, 2.0, 1.0, 0.3]])], "012")

    a5, b5 = rn(5), rn(5)
    a5[0], b5[0] = 0.5, 0.5  # -y (a - b) + margin == 0 exactly: clamp_min passes the gradient there
    sign5 = t([1.0, -1.0, 1.0, -1.0, 1.0])
    for r in R3:
        add("margin_ranking_loss", {"reduction": r, "margin": 0.0}, [a5, b5, sign5], "012")
    add("margin_ranking_loss", {"reduction": "mean", "margin": 0.5}, [a5, b5, sign5], "012")

    sign34 = t([[1.0, -1.0, 1.0, -1.0], [-1.0, -1.0, 1.0, 1.0], [1.0, 1.0, -1.0, -1.0]])
    xh = x34.clone()
    xh[1, 0] = 1.0  # margin - x == 0
    for r in R3:
        add("hinge_embedding_loss", {"reduction": r, "margin": 1.0}, [xh, sign34], "0")
        add("soft_margin_loss", {"reduction": r}, [x34, sign34], "0")
    add("hinge_embedding_loss", {"reduction": "mean", "margin": 0.5}, [x34, sign34], "0")

    labels34 = (torch.rand(3, 4) > 0.5).to(D)
    for r in R3:
        add("multilabel_soft_margin_loss", {"reduction": r}, [x34 * 3, labels34], "01")
        add("multilabel_soft_margin_loss", {"reduction": r}, [x34 * 3, labels34], "01", w4)
    add("multilabel_soft_margin_loss", {"reduction": "none"}, [t([0.0, -40.0, 40.0, 1.5]), t([1.0, 0.0, 1.0, 0.5])], "01")

    xm = t([[1.0, 0.0, 0.3, -0.4], [0.2, 0.9, 1.5, -1.0], [-0.3, 0.1, 0.4, 2.0]])  # row 0: z == 0 exactly
    ym = torch.tensor([0, 2, 3])
    for r in R3:
        for p in (1, 2):
            add("multi_margin_loss", {"reduction": r, "p": p, "margin": 1.0}, [xm, ym], "0")
    add("multi_margin_loss", {"reduction": "mean", "p": 1, "margin": 0.5}, [xm, ym], "0", w4)
    add("multi_margin_loss", {"reduction": "sum", "p": 2, "margin": 1.5}, [xm, ym], "0", w4)
    add("multi_margin_loss", {"reduction": "none", "p": 1, "margin": 1.0}, [xm[1], torch.tensor([2])], "0")
    add("multi_margin_loss", {"reduction": "none", "p": 2, "margin": 1.0}, [xm[2], torch.tensor(1)], "0")

    yl = torch.tensor([[3, 0, -1, 1], [1, 2, 0, 3], [2, -1, 3, 3]])  # after -1: ignored
    for r in R3:
        add("multilabel_margin_loss", {"reduction": r}, [x34, yl], "0")
    add("multilabel_margin_loss", {"reduction": "none"}, [xm[0], torch.tensor([1, 2, -1, 0])], "0")

    e1, e2 = rn(3, 5), rn(3, 5)
    e2[1] = -0.5 * e1[1]
    for r in R3:
        add("cosine_embedding_loss", {"reduction": r, "margin": 0.0}, [e1, e2, t([1.0, -1.0, -1.0])], "01")
    add("cosine_embedding_loss", {"reduction": "mean", "margin": 0.3}, [e1, e2, torch.tensor([-1, 1, -1])], "01")
    add("cosine_embedding_loss", {"reduction": "none", "margin": 0.0}, [e1[0], e2[0], t(-1.0)], "01")

    anc, pos, neg = rn(3, 5), rn(3, 5), rn(3, 5)
    for r in R3:
        add("triplet_margin_loss", {"reduction": r, "margin": 1.0, "p": 2.0, "eps": 1e-6, "swap": 0},
            [anc, pos, neg], "012")
    add("triplet_margin_loss", {"reduction": "mean", "margin": 2.0, "p": 1.0, "eps": 1e-6, "swap": 1},
        [anc, pos, neg], "012")
    add("triplet_margin_loss", {"reduction": "sum", "margin": 3.0, "p": 3.0, "eps": 1e-3, "swap": 1},
        [anc, neg, pos], "012")
    add("triplet_margin_loss", {"reduction": "none", "margin": 1.0, "p": 2.0, "eps": 1e-6, "swap": 0},
        [anc[0], pos[0], neg[0]], "012")
    for r in R3:
        add("triplet_margin_with_distance_loss", {"reduction": r, "margin": 1.0, "swap": 0, "distance": "pairwise"},
            [anc, pos, neg], "012")
    add("triplet_margin_with_distance_loss", {"reduction": "mean", "margin": 0.5, "swap": 1, "distance": "cosine"},
        [anc, pos, neg], "012")

    c1, c2 = rn(3, 5), rn(3, 5)
    c1[2] = 0.0  # a zero vector: its norm is clamped at eps
    add("cosine_similarity", {"dim": 1, "eps": 1e-8}, [c1, c2], "01")
    add("cosine_similarity", {"dim": 0, "eps": 1e-8}, [c1, c2], "01")
    add("cosine_similarity", {"dim": -1, "eps": 1e-8}, [rn(2, 3, 4), rn(3, 4)], "01")  # broadcast
    add("cosine_similarity", {"dim": 1, "eps": 0.5}, [c1 * 0.1, c2], "01")  # norms below eps
    add("cosine_similarity", {"dim": 0, "eps": 1e-8}, [c2[0], c1[1]], "01")

    for p in (2.0, 1.0, 3.0, 0.5, math.inf, 0.0):
        add("pairwise_distance", {"p": p, "eps": 1e-6, "keepdim": 0}, [c1, c2], "01")
    add("pairwise_distance", {"p": 2.0, "eps": 1e-6, "keepdim": 1}, [c1, c2[0]], "01")  # broadcast, keepdim
    add("pairwise_distance", {"p": 2.0, "eps": 0.0, "keepdim": 0}, [c2, c2], "01")  # zero norm: zero gradient
    add("pairwise_distance", {"p": math.inf, "eps": 0.0, "keepdim": 0}, [t([[1.0, -2.0, 2.0]]), t([[0.0, 0.0, 0.0]])],
        "01")  # a tie of the infinity norm shares the gradient
    add("pairwise_distance", {"p": 2.0, "eps": 1e-6, "keepdim": 0}, [c1[0], c2[0]], "01")

    # float32: a few of the above.
    f = torch.float32
    add("l1_loss", {"reduction": "mean"}, [x34.to(f), y34.to(f)], "01")
    add("smooth_l1_loss", {"reduction": "sum", "beta": 0.5}, [xs.to(f), ys.to(f)], "01")
    add("kl_div", {"reduction": "batchmean", "log_target": 0}, [logp.to(f), probs.to(f)], "01")
    add("binary_cross_entropy", {"reduction": "mean"}, [p34.to(f), q34.to(f)], "01", w4.to(f))
    add("multi_margin_loss", {"reduction": "mean", "p": 2, "margin": 1.0}, [xm.to(f), ym], "0", w4.to(f))
    add("cosine_similarity", {"dim": 1, "eps": 1e-8}, [c1.to(f), c2.to(f)], "01")
    add("triplet_margin_loss", {"reduction": "mean", "margin": 1.0, "p": 2.0, "eps": 1e-6, "swap": 1},
        [anc.to(f), pos.to(f), neg.to(f)], "012")

    tensors, meta = {}, {}
    import warnings
    warnings.simplefilter("ignore")
    for i, (fn, args, inputs, grads, w) in enumerate(cases):
        ins = [x.detach().clone().requires_grad_(str(k) in grads) for k, x in enumerate(inputs)]
        y = call(fn, args, ins, w)
        gy = torch.rand(y.shape, dtype=y.dtype) + 0.5
        y.backward(gy)
        p = f"case{i}."
        for k, x in enumerate(ins):
            tensors[p + f"in{k}"] = x.detach()
            if str(k) in grads and x.grad is not None:  # None: PyTorch gives no gradient (a 0-norm)
                tensors[p + f"g{k}"] = x.grad
        if w is not None:
            tensors[p + "w"] = w
        tensors[p + "gy"], tensors[p + "y"] = gy, y.detach()
        dtype = "float32" if inputs[0].dtype == torch.float32 else "float64"
        fields = [fn] + [f"{k}={v}" for k, v in args.items()] + [f"grads={grads}", f"dtype={dtype}"]
        meta[f"case{i}"] = ",".join(fields)
    meta["count"] = str(len(cases))
    path = os.path.join(OUT, "losses_golden.safetensors")
    save_file({k: v.clone().contiguous() for k, v in tensors.items()}, path, meta)
    print(f"{len(cases)} cases, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
