#!/usr/bin/env python3
"""PyTorch's side of bench/bench_embedding_bag.cpp: F.embedding_bag over a 100000 x 64 float32
table, 512 bags of 20 indices (1-D input with offsets), modes sum, mean and max, forward alone and
forward + backward; median of several timed rounds after a warm-up, in milliseconds per call.

Run: OMP_NUM_THREADS=1 python3 bench/embedding_bag_pytorch.py   (the same count as the C++ side)
"""
import os

import torch
import torch.nn.functional as F

import pytorch_timing


def main():
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    torch.manual_seed(0)
    weight = torch.randn(100000, 64)
    weight_g = weight.clone().requires_grad_()
    indices = torch.randint(0, 100000, (512 * 20,))
    offsets = torch.arange(0, 512 * 20, 20)
    g = torch.randn(512, 64)
    for mode in ("sum", "mean", "max"):
        def fwd():
            return F.embedding_bag(indices, weight, offsets, mode=mode)

        def fwd_bwd():
            weight_g.grad = None
            F.embedding_bag(indices, weight_g, offsets, mode=mode).backward(g)

        print(f"{mode}/512x20_of_100000x64 {pytorch_timing.timed(fwd, rounds=5, inner=3):.2f} ms")
        print(f"{mode}_fwd_bwd/512x20_of_100000x64 {pytorch_timing.timed(fwd_bwd, rounds=5, inner=3):.2f} ms")


if __name__ == "__main__":
    main()
