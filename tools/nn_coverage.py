#!/usr/bin/env python3
"""Prints how many of torch.nn's module classes ember::nn has, and names each missing one with the
reason it is missing. docs/NN-COVERAGE.md holds its output (--markdown).

torch.nn's classes are every class exported by torch.nn that derives from nn.Module, less the
Lazy* ones (ember infers no shapes lazily). ember's are the classes declared in
include/ember/nn/*.h that derive, directly or through another ember class, from ember::nn::Module
(an alias of a template's instance, `using MaxUnpool2d = MaxUnpool<2>`, counts as its template);
ember's helper bases that PyTorch does not export (Loss, Loss3, BatchNormBase) do not count.

Run: /path/to/python-with-torch tools/nn_coverage.py [--markdown]
"""
import os
import re
import sys

import torch
import torch.nn as nn

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

# Why a class is missing, for those left out on purpose or waiting on a named piece of work. A
# missing class not listed here is reported as "not built yet (issue 30)".
REASONS = {
    "Container": "deprecated in PyTorch since 0.4 (use Sequential, ModuleList or ModuleDict)",
    "NLLLoss2d": "deprecated alias of NLLLoss, which takes [N, C, H, W] input",
    "DataParallel": "single-process multi-GPU replication; ember's data parallelism is "
                    "DistributedDataParallel, which PyTorch also recommends instead",
    "SyncBatchNorm": "needs cross-process batch statistics; waits for multi-GPU runs to be testable here",
    "CrossMapLRN2d": "legacy Lua-Torch layer kept in PyTorch for old checkpoints; LocalResponseNorm is its replacement",
}


def torch_classes():
    return sorted(n for n in dir(nn) if isinstance(getattr(nn, n), type)
                  and issubclass(getattr(nn, n), nn.Module) and "Lazy" not in n)


def ember_classes():
    parent = {}
    header_dir = os.path.join(ROOT, "include", "ember", "nn")
    pattern = re.compile(r"^class\s+(\w+)\s*(?:final\s*)?:\s*public\s+(?:std::enable_shared_from_this<\w+>|(\w+))",
                         re.M)
    # `using MaxUnpool2d = MaxUnpool<2>;`: a class named by an alias of a template's instance.
    alias = re.compile(r"^using\s+(\w+)\s*=\s*(\w+)\s*<", re.M)
    for name in sorted(os.listdir(header_dir)):
        if name.endswith(".h"):
            with open(os.path.join(header_dir, name)) as f:
                text = f.read()
            for m in pattern.finditer(text):
                parent[m.group(1)] = m.group(2) or ""
            for m in alias.finditer(text):
                parent.setdefault(m.group(1), m.group(2))
    parent["Module"] = ""

    def is_module(name, seen=()):
        if name == "Module":
            return True
        base = parent.get(name, "")
        return bool(base) and base not in seen and is_module(base, seen + (name,))

    return sorted(n for n in parent if is_module(n))


def main():
    markdown = "--markdown" in sys.argv
    theirs = torch_classes()
    ours = set(ember_classes())
    have = [n for n in theirs if n in ours]
    missing = [n for n in theirs if n not in ours]
    if markdown:
        print("# torch.nn coverage\n")
        print(f"Made by `tools/nn_coverage.py --markdown` against PyTorch {torch.__version__}: every class that")
        print("torch.nn exports and that derives from nn.Module, less the Lazy* ones.\n")
        print(f"**ember::nn has {len(have)} of torch.nn's {len(theirs)} module classes.**\n")
        print("## Present\n")
        print(", ".join(f"`{n}`" for n in have) + "\n")
        print(f"## Missing ({len(missing)})\n")
        print("| class | why |\n| --- | --- |")
        for n in missing:
            print(f"| `{n}` | {REASONS.get(n, 'not built yet (issue 30)')} |")
    else:
        print(f"{len(have)} of {len(theirs)} module classes")
        for n in missing:
            print(f"  missing {n}: {REASONS.get(n, 'not built yet (issue 30)')}")


if __name__ == "__main__":
    main()
