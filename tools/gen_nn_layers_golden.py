#!/usr/bin/env python3
"""Writes the PyTorch goldens for tests/nn/test_pixelshuffle.cpp and tests/nn/test_normalization.cpp
into tests/nn/golden/nn_layers_golden.safetensors: the deterministic layers of
include/ember/nn/pixelshuffle.h and include/ember/nn/normalization.h.

Cases (float64). Metadata "case<i>" is "KIND,key=value,..." with KIND and its keys
  PixelShuffle       r (upscale_factor)
  PixelUnshuffle     r (downscale_factor)
  ChannelShuffle     groups
  RMSNorm            shape (the normalized_shape, sizes joined by 'x'), eps (a number, or "none"),
                     affine (elementwise_affine)
  InstanceNorm<d>d   features, eps, momentum (a number, or "none"), affine, track, bias
  LocalResponseNorm  size, alpha, beta, k
  BatchNorm3d        features, eps, momentum, affine, track
each also with train (1: the module in training mode, 0: in eval mode). "case<i>.keys" lists the
module's state_dict keys in PyTorch's order (empty for modules without state). Parameters and
running statistics are perturbed after construction, so that none is a default. Tensors:
  case<i>.x, case<i>.y, case<i>.gy   the input, the output and the upstream gradient
  case<i>.gx                         the gradient of sum(y * gy) with respect to x
  case<i>.s.<key>                    the state_dict before the forward pass (load it, then run)
  case<i>.after.<key>                the state_dict after the forward pass (running statistics)
  case<i>.g.<name>                   each parameter's gradient

Run: ~/.cache/ember-bench/torch-venv/bin/python tools/gen_nn_layers_golden.py
"""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "nn", "golden")


def case(kind, x, train=1, **opts):
    return dict(kind=kind, x=x, opts=dict(opts, train=train))


def inorm(d, x, features, eps=1e-5, momentum=0.1, affine=0, track=0, bias=1, train=1):
    return case(f"InstanceNorm{d}d", x, train, features=features, eps=eps, momentum=momentum, affine=affine,
                track=track, bias=bias)


CASES = [
    case("PixelShuffle", (2, 8, 2, 3), r=2),                            # 0 batched
    case("PixelShuffle", (9, 2, 2), r=3),                               # 1 unbatched [C, H, W]
    case("PixelShuffle", (2, 1, 4, 2, 3), r=2),                         # 2 two batch dimensions
    case("PixelShuffle", (1, 3, 2, 2), r=1),                            # 3 factor 1
    case("PixelUnshuffle", (2, 2, 4, 6), r=2),                          # 4 batched
    case("PixelUnshuffle", (1, 6, 3), r=3),                             # 5 unbatched
    case("PixelUnshuffle", (2, 1, 1, 4, 2), r=2),                       # 6 two batch dimensions
    case("ChannelShuffle", (2, 6, 3), groups=2),                        # 7 [N, C, L]
    case("ChannelShuffle", (1, 6, 2, 2), groups=3),                     # 8 [N, C, H, W]
    case("ChannelShuffle", (2, 4, 1, 2, 2), groups=4),                  # 9 5-D, groups == C
    case("RMSNorm", (3, 4), shape="4", eps="none", affine=1),           # 10 default eps
    case("RMSNorm", (2, 2, 3), shape="2x3", eps=1e-3, affine=1),        # 11 two normalised dims
    case("RMSNorm", (2, 5), shape="5", eps="none", affine=0),           # 12 no weight
    case("RMSNorm", (4,), shape="4", eps=0.5, affine=1),                # 13 1-D input, large eps
    inorm(1, (2, 3, 5), 3),                                             # 14 plain
    inorm(1, (3, 5), 3, affine=1),                                      # 15 unbatched, affine
    inorm(2, (2, 3, 3, 4), 3, affine=1, track=1),                       # 16 train: running stats move
    inorm(2, (2, 3, 3, 4), 3, affine=1, track=1, train=0),              # 17 eval: running stats used
    inorm(2, (2, 3, 2, 3), 3, affine=0, track=0, train=0),              # 18 eval untracked: instance stats
    inorm(3, (2, 2, 2, 3, 2), 2, momentum=0.3, affine=1, track=1),      # 19 3d, momentum
    inorm(1, (2, 3, 4), 3, momentum="none", track=1),                   # 20 momentum None (0)
    inorm(2, (2, 3, 2, 2), 3, eps=1e-3, affine=1, bias=0),              # 21 weight without bias
    inorm(3, (2, 2, 3, 2), 2, affine=1, track=1, train=0),              # 22 3d unbatched eval
    inorm(1, (1, 2, 6), 2, track=1),                                    # 23 batch of one
    case("LocalResponseNorm", (2, 5, 4), size=3, alpha=0.5, beta=0.75, k=1.0),           # 24 3-D
    case("LocalResponseNorm", (2, 4, 3, 3), size=2, alpha=0.3, beta=0.5, k=2.0),         # 25 4-D, even
    case("LocalResponseNorm", (1, 3, 2, 2, 2), size=5, alpha=1.0, beta=0.9, k=0.5),      # 26 5-D, size > C
    case("LocalResponseNorm", (2, 3, 4), size=1, alpha=1e-4, beta=0.75, k=1.0),          # 27 defaults, size 1
    case("BatchNorm3d", (2, 3, 2, 2, 3), features=3, eps=1e-5, momentum=0.1, affine=1, track=1),           # 28
    case("BatchNorm3d", (2, 3, 2, 1, 2), features=3, eps=1e-3, momentum=0.2, affine=1, track=1, train=0),  # 29
    case("BatchNorm3d", (3, 2, 1, 2, 2), features=2, eps=1e-5, momentum=0.1, affine=0, track=0),           # 30
]


def opt(value):
    return None if value == "none" else value


def build(c):
    k, o = c["kind"], c["opts"]
    if k == "PixelShuffle":
        return nn.PixelShuffle(o["r"])
    if k == "PixelUnshuffle":
        return nn.PixelUnshuffle(o["r"])
    if k == "ChannelShuffle":
        return nn.ChannelShuffle(o["groups"])
    if k == "RMSNorm":
        return nn.RMSNorm([int(s) for s in o["shape"].split("x")], opt(o["eps"]), bool(o["affine"]))
    if k.startswith("InstanceNorm"):
        cls = {"InstanceNorm1d": nn.InstanceNorm1d, "InstanceNorm2d": nn.InstanceNorm2d,
               "InstanceNorm3d": nn.InstanceNorm3d}[k]
        return cls(o["features"], o["eps"], opt(o["momentum"]), bool(o["affine"]), bool(o["track"]),
                   bias=bool(o["bias"]))
    if k == "LocalResponseNorm":
        return nn.LocalResponseNorm(o["size"], o["alpha"], o["beta"], o["k"])
    assert k == "BatchNorm3d"
    return nn.BatchNorm3d(o["features"], o["eps"], o["momentum"], bool(o["affine"]), bool(o["track"]))


def fmt(value):
    return repr(value) if isinstance(value, float) else str(value)


def perturb(m):
    with torch.no_grad():
        for name, t in m.state_dict().items():
            if name.endswith("num_batches_tracked"):
                t.fill_(3)
            elif name.endswith("running_var"):
                t.copy_(0.5 + torch.rand_like(t))
            elif t.is_floating_point():
                t.add_(0.5 * torch.randn_like(t))


def run(m, c, x, dtype):
    """The module (a copy in `dtype`) on x: output, then the gradients of sum(y * gy)."""
    m = m.to(dtype)
    m.train(bool(c["opts"]["train"]))
    x = x.detach().to(dtype).requires_grad_()
    y = m(x)
    return m, x, y


def main():
    torch.manual_seed(2031)
    tensors, meta = {}, {}
    worst = 0.0
    for i, c in enumerate(CASES):
        p = f"case{i}."
        m = build(c).double()
        perturb(m)
        before = {k: v.detach().clone() for k, v in m.state_dict().items()}
        x = torch.randn(c["x"], dtype=torch.float64)
        m64, x64, y = run(m, c, x, torch.float64)
        gy = torch.randn(y.shape, dtype=torch.float64)
        (y * gy).sum().backward()
        tensors[p + "x"], tensors[p + "y"], tensors[p + "gy"], tensors[p + "gx"] = x, y.detach(), gy, x64.grad
        for k, v in before.items():
            tensors[p + "s." + k] = v
        for k, v in m64.state_dict().items():
            tensors[p + "after." + k] = v.detach().clone()
        for name, param in m64.named_parameters():
            tensors[p + "g." + name] = param.grad
        meta[f"case{i}"] = ",".join([c["kind"]] + [f"{k}={fmt(v)}" for k, v in c["opts"].items()])
        meta[f"case{i}.keys"] = ",".join(before)
        # PyTorch's float32 result against the float64 golden: room for the test's tolerance.
        m32 = build(c)
        m32.load_state_dict({k: v.float() if v.is_floating_point() else v for k, v in before.items()})
        _, x32, y32 = run(m32, c, x, torch.float32)
        (y32 * gy.float()).sum().backward()
        pairs = [(y32, y), (x32.grad, x64.grad)]
        pairs += [(p32.grad, tensors[p + "g." + n]) for n, p32 in m32.named_parameters()]
        worst = max(worst, max(((a.double() - b).abs() / (1 + b.abs())).max().item() for a, b in pairs))
    meta["count"] = str(len(CASES))
    path = os.path.join(OUT, "nn_layers_golden.safetensors")
    save_file({k: v.contiguous() for k, v in tensors.items()}, path, meta)
    print(f"wrote {path}: {len(tensors)} tensors, {os.path.getsize(path)} bytes; "
          f"PyTorch's float32 results within {worst:.2e} (relative to 1 + |golden|)")


if __name__ == "__main__":
    main()
