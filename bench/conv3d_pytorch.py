#!/usr/bin/env python3
"""PyTorch's side of bench/bench_conv3d.cpp, float32 on the CPU, median of several timed rounds
after a warm-up, in ms per call:
  conv3d            N=2, 16 -> 32 channels, 16x32x32, kernel 3, padding 1
  max_pool3d        2x2x2 on [4, 32, 16, 32, 32]
  conv_transpose3d  [2, 32, 8, 16, 16], 32 -> 16, kernel 4, stride 2, padding 1
each forward alone (no grad) and forward + backward (input, weight and bias gradients).

Run: OMP_NUM_THREADS=2 python3 bench/conv3d_pytorch.py   (the same thread count as ember's)
With --cpu-time, the process's CPU time per call instead of the wall time: on a busy shared machine
with OMP_NUM_THREADS=1 it is steadier, and it compares with Google Benchmark's CPU column.
"""
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

from pytorch_timing import timed


def cpu_timed(fn, rounds=7, inner=5):
    fn()
    samples = []
    for _ in range(rounds):
        start = time.process_time()
        for _ in range(inner):
            fn()
        samples.append((time.process_time() - start) / inner)
    return statistics.median(samples) * 1e3


def case(name, inputs, grad, run):
    clock = cpu_timed if "--cpu-time" in sys.argv else timed

    def forward():
        with torch.no_grad():
            run()

    def forward_backward():
        for t in inputs:
            t.grad = None
        run().backward(grad)

    print(f"{name}/fwd {clock(forward):.3f} ms")
    print(f"{name}/fwd_bwd {clock(forward_backward):.3f} ms")


def main():
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    print(f"threads {torch.get_num_threads()}, torch {torch.__version__}")
    torch.manual_seed(0)
    x = torch.randn(2, 16, 16, 32, 32, requires_grad=True)
    w = (torch.randn(32, 16, 3, 3, 3) * 0.05).requires_grad_()
    b = torch.randn(32, requires_grad=True)
    case("conv3d_16x16x32x32_to_32_k3", [x, w, b], torch.randn(2, 32, 16, 32, 32),
         lambda: F.conv3d(x, w, b, 1, 1))
    p = torch.randn(4, 32, 16, 32, 32, requires_grad=True)
    case("max_pool3d_4x32x16x32x32_k2", [p], torch.randn(4, 32, 8, 16, 16), lambda: F.max_pool3d(p, 2))
    t = torch.randn(2, 32, 8, 16, 16, requires_grad=True)
    wt = (torch.randn(32, 16, 4, 4, 4) * 0.05).requires_grad_()
    bt = torch.randn(16, requires_grad=True)
    case("conv_transpose3d_32x8x16x16_to_16_k4s2", [t, wt, bt], torch.randn(2, 16, 16, 32, 32),
         lambda: F.conv_transpose3d(t, wt, bt, 2, 1))


if __name__ == "__main__":
    main()
