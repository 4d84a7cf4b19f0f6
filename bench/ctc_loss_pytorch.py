#!/usr/bin/env python3
"""PyTorch's side of bench/bench_ctc_loss.cpp: ctc_loss on the CPU, float32, T=200, N=16, C=30,
padded targets of S=40 (the same lengths), reduction 'mean', forward and forward + backward;
median of several timed rounds after a warm-up, in milliseconds per call.

Run: OMP_NUM_THREADS=1 python3 bench/ctc_loss_pytorch.py   (the same count as the C++ side)
"""
import os

import torch
import torch.nn.functional as F

import pytorch_timing

FRAMES, BATCH, CLASSES, TARGET_LENGTH = 200, 16, 30, 40


def main():
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    torch.manual_seed(0)
    log_probs = torch.randn(FRAMES, BATCH, CLASSES).log_softmax(2)
    targets = torch.randint(1, CLASSES, (BATCH, TARGET_LENGTH))
    input_lengths = torch.tensor([FRAMES - (n * 50) // BATCH for n in range(BATCH)])
    target_lengths = torch.tensor([TARGET_LENGTH - (n * 20) // BATCH for n in range(BATCH)])
    leaf = log_probs.clone().requires_grad_()

    def forward():
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths)

    def forward_backward():
        leaf.grad = None
        F.ctc_loss(leaf, targets, input_lengths, target_lengths).backward()

    size = f"T{FRAMES}_N{BATCH}_C{CLASSES}_S{TARGET_LENGTH}"
    print(f"ctc_loss/{size} {pytorch_timing.timed(forward, rounds=7, inner=5):.3f} ms")
    print(f"ctc_loss_fwd_bwd/{size} {pytorch_timing.timed(forward_backward, rounds=7, inner=5):.3f} ms")


if __name__ == "__main__":
    main()
