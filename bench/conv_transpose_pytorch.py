#!/usr/bin/env python3
"""PyTorch's side of bench/bench_conv_transpose.cpp: conv_transpose2d on a DCGAN generator's
upsampling layer (N=16, 128 -> 64 channels, 16x16 -> 32x32, kernel 4, stride 2, padding 1,
float32) on the CPU, forward alone (no grad) and forward + backward for input, weight and bias;
median of several timed rounds after a warm-up, in ms per call.

Run: OMP_NUM_THREADS=1 python3 bench/conv_transpose_pytorch.py   (the same thread count as ember's)
"""
import os

import torch
import torch.nn.functional as F

from pytorch_timing import timed

BATCH, IN, OUT, SIZE, KERNEL = 16, 128, 64, 16, 4


def main():
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    torch.manual_seed(0)
    x = torch.randn(BATCH, IN, SIZE, SIZE, requires_grad=True)
    w = (torch.randn(IN, OUT, KERNEL, KERNEL) * 0.05).requires_grad_()
    b = torch.randn(OUT, requires_grad=True)
    grad = torch.randn(BATCH, OUT, 2 * SIZE, 2 * SIZE)

    def forward():
        with torch.no_grad():
            F.conv_transpose2d(x, w, b, 2, 1)

    def forward_backward():
        x.grad = w.grad = b.grad = None
        F.conv_transpose2d(x, w, b, 2, 1).backward(grad)

    print(f"threads {torch.get_num_threads()}, torch {torch.__version__}")
    print(f"dcgan_128x16x16_to_64/fwd {timed(forward):.3f} ms")
    print(f"dcgan_128x16x16_to_64/fwd_bwd {timed(forward_backward):.3f} ms")


if __name__ == "__main__":
    main()
