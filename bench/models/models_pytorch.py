#!/usr/bin/env python3
"""PyTorch's side of bench/models/bench_models.cpp: one training step per model family, defined in
bench/models/<family>_pytorch.py (each file's STEPS maps a name to a setup(device) that returns
the step), timed as the C++ side times it: `warmup` steps, then the median of `steps` timed ones.

Prints "<family> ms_per_step=<median> min=<min> peak_rss_mib=<peak> cuda_peak_mib=<peak> steps=<N>".

Run: OMP_NUM_THREADS=1 python3 bench/models/models_pytorch.py --family resnet18
"""
import argparse
import glob
import importlib.util
import os
import resource
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
# The reference models live in the golden generators (tools/gen_models_*_golden.py).
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))


def all_steps():
    steps = {}
    for path in sorted(glob.glob(os.path.join(HERE, "*_pytorch.py"))):
        if os.path.basename(path) == "models_pytorch.py":
            continue
        spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        steps.update(module.STEPS)
    return steps


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--family")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()
    steps = all_steps()
    if args.list:
        for name in steps:
            print(name)
        return
    if args.family not in steps:
        sys.exit(f"models_pytorch.py: error: no model family '{args.family}' (--list names them)")
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    torch.manual_seed(0)
    device = torch.device(args.device)
    step = steps[args.family](device)

    def wait():
        if device.type == "cuda":
            torch.cuda.synchronize()

    for _ in range(args.warmup):
        step()
    wait()
    ms = []
    for _ in range(args.steps):
        start = time.perf_counter()
        step()
        wait()
        ms.append((time.perf_counter() - start) * 1e3)
    ms.sort()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    cuda_peak = torch.cuda.max_memory_allocated(device) / 2**20 if device.type == "cuda" else 0.0
    print(f"{args.family} ms_per_step={ms[len(ms) // 2]:.3f} min={ms[0]:.3f} peak_rss_mib={peak:.1f} "
          f"cuda_peak_mib={cuda_peak:.1f} steps={args.steps}")


if __name__ == "__main__":
    main()
