#!/usr/bin/env python3
"""Writes tests/nn/golden/pool_golden.safetensors and bn_golden.safetensors: outputs and input
gradients of PyTorch's 2-D pooling and batch norm on small float64 problems.

Run: python tools/gen_pool_bn_golden.py  (needs torch and safetensors). Each case stores its
input "<case>.x", the weight "<case>.w" of the scalar sum(out * w) that is differentiated, the
output "<case>.out" and the gradient "<case>.gx" (plus "<case>.indices" for max pooling). The
window arguments of each case are repeated in tests/nn/test_pooling.cpp and test_batchnorm.cpp.
"""
import os

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "nn", "golden")

torch.manual_seed(0)
DT = torch.float64


def run(fn, x):
    """out = fn(x), gx = d sum(out * w) / dx for a random w."""
    x = x.clone().requires_grad_()
    res = fn(x)
    out, extra = (res if isinstance(res, tuple) else (res, None))
    w = torch.randn(out.shape, dtype=DT)
    (out * w).sum().backward()
    return out.detach(), w, x.grad, extra


# name -> (function, input). Keep the inputs small: the files are committed.
X4 = torch.randn(2, 2, 7, 6, dtype=DT)
X_NAN = torch.randn(1, 2, 4, 4, dtype=DT)
X_NAN[0, 0, 1, 1] = float("nan")
X_NAN[0, 1, 0, 0] = float("nan")
X_NAN[0, 1, 3, 3] = float("nan")
X_TIES = torch.randint(-2, 3, (1, 2, 5, 5)).to(DT)
X3 = torch.randn(2, 5, 5, dtype=DT)

POOL_CASES = {
    "max_k3s2p1": (lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True), X4),
    "max_rect_dil": (lambda x: F.max_pool2d(x, (3, 2), (2, 1), (1, 0), (2, 1), return_indices=True), X4),
    "max_ceil": (lambda x: F.max_pool2d(x, 2, 2, ceil_mode=True, return_indices=True), X4),
    "max_ceil_pad_dil": (lambda x: F.max_pool2d(x, 3, 2, 1, 2, ceil_mode=True, return_indices=True), X4),
    "max_nan": (lambda x: F.max_pool2d(x, 2, 1, return_indices=True), X_NAN),
    "max_ties": (lambda x: F.max_pool2d(x, 3, 1, 1, return_indices=True), X_TIES),
    "max_unbatched": (lambda x: F.max_pool2d(x, 2, return_indices=True), X3),
    "avg_k3s2p1": (lambda x: F.avg_pool2d(x, 3, 2, 1), X4),
    "avg_nopad": (lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False), X4),
    "avg_ceil": (lambda x: F.avg_pool2d(x, (3, 2), (2, 3), (1, 1), ceil_mode=True), X4),
    "avg_ceil_nopad": (lambda x: F.avg_pool2d(x, (3, 2), (2, 3), (1, 1), ceil_mode=True, count_include_pad=False), X4),
    "avg_divisor": (lambda x: F.avg_pool2d(x, 2, 1, 1, divisor_override=5), X4),
    "avg_unbatched": (lambda x: F.avg_pool2d(x, 2, 3), X3),
    "adaptive_3x4": (lambda x: F.adaptive_avg_pool2d(x, (3, 4)), X4),
    "adaptive_1x1": (lambda x: F.adaptive_avg_pool2d(x, 1), X4),
    "adaptive_up": (lambda x: F.adaptive_avg_pool2d(x, (9, 8)), X4),
    "adaptive_unbatched": (lambda x: F.adaptive_avg_pool2d(x, (2, 3)), X3),
}


def pool_golden():
    tensors = {}
    for name, (fn, x) in POOL_CASES.items():
        out, w, gx, indices = run(fn, x)
        tensors.update({f"{name}.x": x, f"{name}.w": w, f"{name}.out": out, f"{name}.gx": gx})
        if indices is not None:
            tensors[f"{name}.indices"] = indices
    return tensors


def set_affine(m, c):
    with torch.no_grad():
        m.weight.copy_(torch.randn(c, dtype=DT))
        m.bias.copy_(torch.randn(c, dtype=DT))


def bn_step(tensors, prefix, m, x):
    """One forward/backward of module m on x; records out and the gradients of input/weight/bias."""
    x = x.clone().requires_grad_()
    if m.weight is not None:
        m.weight.grad = None
        m.bias.grad = None
    out = m(x)
    w = torch.randn(out.shape, dtype=DT)
    (out * w).sum().backward()
    tensors.update({f"{prefix}.x": x.detach(), f"{prefix}.w": w, f"{prefix}.out": out.detach(),
                    f"{prefix}.gx": x.grad})
    if m.weight is not None:
        tensors[f"{prefix}.gweight"] = m.weight.grad.clone()
        tensors[f"{prefix}.gbias"] = m.bias.grad.clone()
    if m.running_mean is not None:
        tensors[f"{prefix}.running_mean"] = m.running_mean.clone()
        tensors[f"{prefix}.running_var"] = m.running_var.clone()


def bn_golden():
    t = {}
    # BatchNorm2d: two training steps, then eval; affine parameters random.
    m = torch.nn.BatchNorm2d(3).to(DT)
    set_affine(m, 3)
    t["bn2d.weight"], t["bn2d.bias"] = m.weight.detach().clone(), m.bias.detach().clone()
    bn_step(t, "bn2d.train1", m, torch.randn(4, 3, 3, 5, dtype=DT) * 2 + 1)
    bn_step(t, "bn2d.train2", m, torch.randn(4, 3, 3, 5, dtype=DT) - 0.5)
    m.eval()
    bn_step(t, "bn2d.eval", m, torch.randn(2, 3, 3, 5, dtype=DT))
    # BatchNorm1d with momentum=None (cumulative average), [N, C] then [N, C, L].
    m = torch.nn.BatchNorm1d(4, momentum=None).to(DT)
    set_affine(m, 4)
    t["bn1d_cma.weight"], t["bn1d_cma.bias"] = m.weight.detach().clone(), m.bias.detach().clone()
    bn_step(t, "bn1d_cma.train1", m, torch.randn(6, 4, dtype=DT))
    bn_step(t, "bn1d_cma.train2", m, torch.randn(5, 4, 3, dtype=DT) * 3)
    bn_step(t, "bn1d_cma.train3", m, torch.randn(2, 4, dtype=DT) + 2)
    # affine=False.
    m = torch.nn.BatchNorm1d(4, affine=False, momentum=0.3).to(DT)
    bn_step(t, "bn1d_noaffine.train1", m, torch.randn(5, 4, 3, dtype=DT))
    # track_running_stats=False: batch statistics in eval() too.
    m = torch.nn.BatchNorm2d(3, track_running_stats=False).to(DT)
    set_affine(m, 3)
    t["bn2d_nostats.weight"], t["bn2d_nostats.bias"] = m.weight.detach().clone(), m.bias.detach().clone()
    m.eval()
    bn_step(t, "bn2d_nostats.eval", m, torch.randn(3, 3, 2, 2, dtype=DT))
    return t


def main():
    os.makedirs(OUT, exist_ok=True)
    save_file({k: v.detach().clone().contiguous() for k, v in pool_golden().items()}, os.path.join(OUT, "pool_golden.safetensors"))
    save_file({k: v.detach().clone().contiguous() for k, v in bn_golden().items()}, os.path.join(OUT, "bn_golden.safetensors"))


if __name__ == "__main__":
    main()
