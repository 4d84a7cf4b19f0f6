#!/usr/bin/env python3
"""PyTorch's side of bench/bench_activations.cpp: the same float32 ops on the same shapes, on the
CPU, median of several timed rounds after a warm-up, in microseconds per call.

Run: OMP_NUM_THREADS=1 python3 bench/activations_pytorch.py   (and with 2)
"""
import os

import torch
import torch.nn.functional as F

import pytorch_timing


def timed(fn):
    """Microseconds per call, with rounds long enough for the cheapest ops (pytorch_timing)."""
    return pytorch_timing.timed(fn, rounds=7, min_seconds=0.05) * 1e3


def main():
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    torch.manual_seed(0)
    unary = {
        "exp": torch.exp,
        "tanh": torch.tanh,
        "sigmoid": torch.sigmoid,
        "gelu": F.gelu,
        "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
        "silu": F.silu,
    }
    for name, fn in unary.items():
        for rows, cols in ((64, 2048), (1024, 3072)):
            x = torch.randn(rows, cols)
            print(f"{name}/{rows}x{cols} {timed(lambda: fn(x)):.1f} us")
    for name, fn in unary.items():
        if name == "exp":
            continue
        x = torch.randn(1024, 3072, requires_grad=True)
        g = torch.randn(1024, 3072)

        def fwd_bwd():
            x.grad = None
            fn(x).backward(g)

        print(f"{name}_fwd_bwd/1024x3072 {timed(fwd_bwd):.1f} us")
    for name, fn in (("softmax", torch.softmax), ("log_softmax", torch.log_softmax)):
        x = torch.randn(256, 1000)
        print(f"{name}/256x1000 {timed(lambda: fn(x, 1)):.1f} us")
    for rows, cols in ((64, 10), (256, 1000)):
        logits = torch.randn(rows, cols, requires_grad=True)
        target = torch.randint(0, cols, (rows,))

        def step():
            logits.grad = None
            F.cross_entropy(logits, target).backward()

        print(f"cross_entropy_fwd_bwd/{rows}x{cols} {timed(step):.1f} us")


if __name__ == "__main__":
    main()
