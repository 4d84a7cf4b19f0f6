#!/usr/bin/env python3
"""PyTorch's side of bench/bench_interpolate.cpp: F.interpolate of a float32 [8, 64, 64, 64]
tensor by 2x, bilinear (align_corners=False) and nearest, forward alone and forward + backward,
on the CPU; median of several timed rounds after a warm-up, in milliseconds per call.

Run: OMP_NUM_THREADS=1 python3 bench/interpolate_pytorch.py   (the same count as the C++ side)
"""
import os

import torch
import torch.nn.functional as F

import pytorch_timing


def main():
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    torch.manual_seed(0)
    x = torch.randn(8, 64, 64, 64)
    xg = x.clone().requires_grad_()
    g = torch.randn(8, 64, 128, 128)
    for mode in ("bilinear", "nearest"):
        align = False if mode == "bilinear" else None

        def fwd():
            return F.interpolate(x, scale_factor=2.0, mode=mode, align_corners=align)

        def fwd_bwd():
            xg.grad = None
            F.interpolate(xg, scale_factor=2.0, mode=mode, align_corners=align).backward(g)

        print(f"{mode}_2x/8x64x64x64 {pytorch_timing.timed(fwd, rounds=5, inner=3):.2f} ms")
        print(f"{mode}_2x_fwd_bwd/8x64x64x64 {pytorch_timing.timed(fwd_bwd, rounds=5, inner=3):.2f} ms")


if __name__ == "__main__":
    main()
