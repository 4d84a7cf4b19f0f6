#!/usr/bin/env python3
"""PyTorch's side of bench/bench_file_formats.cpp: torch.save and torch.load (weights_only, the
default) of the same 48-tensor, 113 MB float32 state_dict, in memory (BytesIO) and through a
file; medians in milliseconds.

Run: OMP_NUM_THREADS=2 python3 bench/file_formats_pytorch.py
"""
import io
import os
import tempfile

import torch

from pytorch_timing import timed


def state():
    torch.manual_seed(0)
    d = {}
    for b in range(12):
        p = f"blocks.{b}."
        d[p + "weight"] = torch.randn(512, 512, 3, 3)
        d[p + "bias"] = torch.randn(512)
        d[p + "norm.weight"] = torch.randn(512)
        d[p + "norm.bias"] = torch.randn(512)
    return d


def main():
    sd = state()
    mb = sum(t.numel() * 4 for t in sd.values()) / 1e6
    buf = io.BytesIO()
    torch.save(sd, buf)
    data = buf.getvalue()
    path = os.path.join(tempfile.gettempdir(), "torch_bench.pt")
    torch.save(sd, path)

    def save_bytes():
        torch.save(sd, io.BytesIO())

    rows = [
        ("torch.save to BytesIO", timed(save_bytes, rounds=5, inner=2)),
        ("torch.load from BytesIO", timed(lambda: torch.load(io.BytesIO(data)), rounds=5, inner=2)),
        ("torch.save to a file", timed(lambda: torch.save(sd, path), rounds=5, inner=2)),
        ("torch.load from a file", timed(lambda: torch.load(path), rounds=5, inner=2)),
        ("torch.load from a file, mmap=True", timed(lambda: torch.load(path, mmap=True), rounds=5, inner=2)),
    ]
    print(f"state_dict: {len(sd)} tensors, {mb:.0f} MB; torch {torch.__version__}, threads {torch.get_num_threads()}")
    for name, ms in rows:
        print(f"{name:40s} {ms:8.1f} ms  {mb / ms:6.2f} GB/s")


if __name__ == "__main__":
    main()
