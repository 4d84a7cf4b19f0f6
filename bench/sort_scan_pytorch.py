#!/usr/bin/env python3
"""PyTorch's side of bench/bench_sort_scan.cpp: sort, argsort, topk and cumsum (forward and
forward + backward) on the CPU, float32, in the same shapes; median of several timed rounds after
a warm-up, in milliseconds per call.

Run: OMP_NUM_THREADS=1 python3 bench/sort_scan_pytorch.py   (the same count as the C++ side)
"""
import os

import torch

import pytorch_timing


def main():
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    torch.manual_seed(0)
    rows = torch.randn(256, 4096)
    vector = torch.randn(1 << 20)
    logits = torch.randn(64, 32000)
    print(f"sort/256x4096 {pytorch_timing.timed(lambda: torch.sort(rows, -1), rounds=5, inner=3):.2f} ms")
    print(f"argsort/1048576 {pytorch_timing.timed(lambda: torch.argsort(vector), rounds=5, inner=3):.2f} ms")
    print(f"topk50/64x32000 {pytorch_timing.timed(lambda: torch.topk(logits, 50), rounds=5, inner=3):.2f} ms")
    for name, shape, dim in (("cumsum_last", (256, 4096), 1), ("cumsum_first", (4096, 256), 0)):
        x = torch.randn(*shape)
        xg = x.clone().requires_grad_()
        g = torch.randn(*shape)

        def fwd_bwd():
            xg.grad = None
            torch.cumsum(xg, dim).backward(g)

        size = "x".join(str(s) for s in shape)
        print(f"{name}/{size} {pytorch_timing.timed(lambda: torch.cumsum(x, dim), rounds=5, inner=3):.2f} ms")
        print(f"{name}_fwd_bwd/{size} {pytorch_timing.timed(fwd_bwd, rounds=5, inner=3):.2f} ms")


if __name__ == "__main__":
    main()
