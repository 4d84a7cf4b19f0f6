#!/usr/bin/env python3
"""Checks that ember's layers only point downward (docs/ARCHITECTURE.md, "Layers").

Every source folder under src/ and every public header under include/ember/ belongs to one layer;
a file may include headers of its own layer and of the layers below it, never of a layer above.
The check reads the #include "..." lines of src/ and include/ember/ (tests, tools, benchmarks and
examples sit above every layer and are not checked) and exits 1 listing each include that points
upward, or a file it cannot place in a layer.

Usage: tools/check-layers.py [REPOSITORY_ROOT]   (default: the checkout holding this script)
       tools/check-layers.py --self-test          (the check fails on a tree that breaks the rule)
"""
import re
import sys
import tempfile
from pathlib import Path

# Lowest first: (layer, the folders under src/ it holds). A file may include headers of its own
# layer and of every layer before it.
LAYERS = [
    ("base", ["base"]),                # the thread pool and the errors everything throws
    ("core", ["core"]),                # dtypes, devices, scalars, the tensor and its storage, grad mode
    ("kernels", ["kernels"]),          # scalar math written once for the CPU and CUDA backends
    ("backend", ["backend"]),          # the backend interface, the CPU and CUDA backends, availability
    ("amp", ["amp"]),                  # autocast's state and policy, which ops and autograd consult
    # One layer: each op's front end records its backward into the graph (autograd/node.h), and
    # the engine computes gradients with ops (as PyTorch's autograd calls ATen).
    ("ops", ["ops", "autograd"]),
    ("data", ["data"]),                # data sets and the loader
    ("distributed", ["distributed"]),  # processes, collectives
    ("nn", ["nn"]),                    # modules and functional
    ("optim", ["optim"]),              # optimizers, schedulers, gradient clipping and scaling
    ("io", ["io"]),                    # files and text: printing, safetensors, torch.save, numpy, checkpoints
    ("models", ["models"]),            # ember::models: the model families (ResNet, GPT-2, ...), built of nn
    ("umbrella", []),                  # ember.h, which includes everything
]
RANK = {name: i for i, (name, _) in enumerate(LAYERS)}
FOLDER = {folder: name for name, folders in LAYERS for folder in folders}

# Public headers (paths under include/ember/): the layer that implements each. First match wins.
PUBLIC = [
    (r"(error|half|small_vector|threads)\.h", "base"),
    (r"(device|dtype|scalar|tensor|tensor_options|warning|backends|grad_mode)\.h", "core"),
    (r"detail/tensor_impl\.h", "core"),
    (r"cuda\.h", "backend"),
    (r"amp/autocast\.h", "amp"),
    (r"autograd\.h", "ops"),
    (r"(ops|factories|pad|pool1d|interpolate|conv_transpose|sort|scan|indexing|einsum|bitwise|sampling|linalg)\.h", "ops"),
    (r"data/.*", "data"),
    (r"distributed\.h", "distributed"),
    (r"nn/.*", "nn"),
    (r"(optim/.*|amp/grad_scaler\.h|amp\.h)", "optim"),
    (r"(io/.*|print\.h|version\.h)", "io"),
    (r"models/.*", "models"),
    (r"ember\.h", "umbrella"),
]

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def public_layer(relative):
    for pattern, layer in PUBLIC:
        if re.fullmatch(pattern, relative):
            return layer
    return None


def layer_of_include(target):
    """The layer of an include target as written ("backend/backend.h", "ember/tensor.h")."""
    if target.startswith("ember/"):
        return public_layer(target[len("ember/"):])
    return FOLDER.get(target.split("/", 1)[0])


def check(root):
    files = []
    for path in sorted((root / "src").rglob("*")):
        if path.suffix in (".h", ".cpp", ".cu", ".cuh"):
            files.append((path, FOLDER.get(path.relative_to(root / "src").parts[0])))
    for path in sorted((root / "include" / "ember").rglob("*.h")):
        files.append((path, public_layer(path.relative_to(root / "include" / "ember").as_posix())))

    problems = []
    for path, layer in files:
        shown = path.relative_to(root).as_posix()
        if layer not in RANK:
            problems.append(f"{shown}: not in any layer; add its folder or header to tools/check-layers.py")
            continue
        text = path.read_text(encoding="utf-8")
        for match in INCLUDE.finditer(text):
            target = match.group(1)
            line = text.count("\n", 0, match.start()) + 1
            target_layer = layer_of_include(target)
            if target_layer is None:
                if "/" in target:
                    problems.append(f"{shown}:{line}: includes \"{target}\", which is in no layer")
                continue  # a header beside the file ("foo.h"): same folder, same layer
            if RANK[target_layer] > RANK[layer]:
                problems.append(f"{shown}:{line}: includes \"{target}\": {layer} may not include {target_layer}, "
                                f"a layer above it")
    if problems:
        order = " < ".join("/".join(folders) for _, folders in LAYERS[:-1])
        print(f"ember's layers point only downward ({order}); these includes do not:")
        for problem in problems:
            print("  " + problem)
        return len(problems)
    print(f"layers: {len(files)} files, every include points to its own layer or one below")
    return 0


def self_test():
    """A tree with one downward include, one upward include and one file in no layer: the check
    must pass the first and report the other two."""
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        files = {
            "src/core/tensor.cpp": '#include "base/parallel.h"\n#include "ember/tensor.h"\n',
            "src/core/bad.cpp": '#include "core/check.h"\n#include "backend/backend.h"\n',
            "src/mystery/x.cpp": "",
            "include/ember/tensor.h": '#include "ember/device.h"\n',
        }
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        failed = check(root)
    if failed != 2:
        print(f"self-test: expected the check to report 2 problems, it reported {failed}")
        return 1
    print("self-test: the check reports an upward include and a file in no layer, and passes the rest")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent
    return 1 if check(root) else 0


if __name__ == "__main__":
    sys.exit(main())
