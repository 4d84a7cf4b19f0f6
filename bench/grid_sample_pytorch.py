#!/usr/bin/env python3
"""PyTorch's side of bench/bench_grid_sample.cpp: F.grid_sample of a float32 [8, 16, 64, 64]
tensor at a 64x64 grid of an affine warp (align_corners=False, zeros padding), bilinear, nearest
and bicubic, forward alone and forward + backward (input and grid gradients), on the CPU; median
of several timed rounds after a warm-up, in milliseconds per call, then the CPU time per call
over all of them (process time: the figure to compare on a shared machine with the C++ side's CPU
column).

Run: OMP_NUM_THREADS=1 python3 bench/grid_sample_pytorch.py   (the same count as the C++ side)
"""
import os
import time

import torch
import torch.nn.functional as F

import pytorch_timing


def main():
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    torch.manual_seed(0)
    x = torch.randn(8, 16, 64, 64)
    theta = torch.tensor([[0.9, -0.2, 0.05], [0.25, 0.95, -0.1]]).reshape(1, 2, 3).expand(8, 2, 3)
    grid = F.affine_grid(theta, [8, 16, 64, 64], align_corners=False)
    xg = x.clone().requires_grad_()
    gg = grid.clone().requires_grad_()
    g = torch.randn(8, 16, 64, 64)
    for mode in ("bilinear", "nearest", "bicubic"):

        def fwd():
            return F.grid_sample(x, grid, mode=mode, padding_mode="zeros", align_corners=False)

        def fwd_bwd():
            xg.grad = None
            gg.grad = None
            F.grid_sample(xg, gg, mode=mode, padding_mode="zeros", align_corners=False).backward(g)

        for name, fn in ((f"{mode}/8x16x64x64", fwd), (f"{mode}_fwd_bwd/8x16x64x64", fwd_bwd)):
            fn()  # one-time costs (the autograd engine's start) stay out of the CPU figure
            cpu_start = time.process_time()
            wall = pytorch_timing.timed(fn, rounds=5, inner=3)
            cpu = (time.process_time() - cpu_start) / (1 + 5 * 3) * 1e3
            print(f"{name} {wall:.2f} ms (cpu {cpu:.2f} ms)")


if __name__ == "__main__":
    main()
