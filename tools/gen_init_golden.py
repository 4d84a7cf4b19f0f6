#!/usr/bin/env python3
"""Writes tests/nn/golden/init_golden.safetensors: what torch.nn.init's functions fill a tensor
with after torch.manual_seed(seed), and four torch.rand float64 draws taken right after (which
tell whether the initialiser consumed as many generator values as PyTorch's), for
tests/nn/test_init.cpp; and calculate_gain's values.

Run with the PyTorch venv: ~/.cache/ember-bench/torch-venv/bin/python tools/gen_init_golden.py

The metadata follows tests/support/golden_cases.h: "case<i>" = "FN,seed=..,shape=AxB,dtype=..,
key=value,..." with FN the init function, and the tensors "case<i>.out" and "case<i>.after".
"gain<i>" = "nonlinearity,param,value" (param "none" when not given).
"""
import math
import os
import warnings

import torch
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "nn", "golden", "init_golden.safetensors")
DTYPES = {"float64": torch.float64, "float32": torch.float32}

# (function, seed, shape, dtype, keyword arguments)
CASES = [
    ("uniform_", 1, (5, 7), "float64", {"a": -0.3, "b": 0.8}),
    ("uniform_", 2, (6, 5), "float32", {}),
    ("normal_", 3, (4, 9), "float64", {"mean": 0.5, "std": 2.0}),
    ("normal_", 4, (3, 4), "float64", {}),
    ("normal_", 5, (3, 4), "float32", {"mean": -1.0, "std": 0.5}),
    ("normal_", 6, (8, 8), "float32", {}),
    ("trunc_normal_", 7, (6, 7), "float64", {}),
    ("trunc_normal_", 8, (6, 7), "float64", {"mean": 0.0, "std": 1.0, "a": 1.5, "b": 3.0}),
    ("trunc_normal_", 9, (4, 5), "float64", {"mean": 2.0, "std": 0.5, "a": -1.0, "b": 0.5}),
    ("trunc_normal_", 10, (9, 8), "float64", {"mean": 0.3, "std": 0.2, "a": 0.0, "b": 1.0}),
    ("trunc_normal_", 11, (3, 4), "float32", {"std": 0.02, "a": -0.04, "b": 0.04}),
    ("trunc_normal_", 12, (3, 5), "float32", {"mean": 0.0, "std": 1.0, "a": 2.0, "b": 4.0}),
    # Either side of the 30% of the mass where the sampler switches: 0.341 (normal), 0.288 (uniform).
    ("trunc_normal_", 27, (4, 6), "float64", {"a": 0.0, "b": 1.0}),
    ("trunc_normal_", 28, (4, 6), "float64", {"a": 0.0, "b": 0.8}),
    ("xavier_uniform_", 13, (5, 3, 2, 2), "float64", {"gain": 0.7}),
    ("xavier_normal_", 14, (4, 6), "float64", {"gain": 1.3}),
    ("xavier_uniform_", 15, (4, 3), "float32", {}),
    ("kaiming_uniform_", 16, (6, 4, 3), "float64", {"a": math.sqrt(5)}),
    ("kaiming_uniform_", 17, (5, 4), "float32", {"mode": "fan_out", "nonlinearity": "relu"}),
    ("kaiming_normal_", 18, (8, 3, 2), "float64", {"mode": "Fan_Out", "nonlinearity": "tanh"}),
    ("kaiming_normal_", 19, (3, 4), "float32", {"a": 0.2}),
    ("orthogonal_", 20, (6, 4), "float64", {}),
    ("orthogonal_", 21, (3, 7), "float64", {"gain": 2.0}),
    ("orthogonal_", 22, (4, 2, 3), "float64", {"gain": 0.5}),
    ("orthogonal_", 23, (5, 5), "float64", {}),
    ("orthogonal_", 24, (6, 4), "float32", {}),
    ("sparse_", 25, (10, 6), "float64", {"sparsity": 0.3, "std": 0.05}),
    ("sparse_", 26, (7, 3), "float64", {"sparsity": 0.5}),
    ("eye_", 0, (3, 5), "float64", {}),
    ("eye_", 0, (4, 2), "float32", {}),
    ("dirac_", 0, (6, 2, 3), "float64", {"groups": 2}),
    ("dirac_", 0, (4, 4, 3, 3), "float64", {}),
    ("dirac_", 0, (3, 2, 3, 2, 3), "float32", {"groups": 3}),
    ("constant_", 0, (2, 3), "float64", {"val": 0.25}),
]

GAINS = [("linear", None), ("conv1d", None), ("conv2d", None), ("conv3d", None), ("conv_transpose1d", None),
         ("conv_transpose2d", None), ("conv_transpose3d", None), ("sigmoid", None), ("tanh", None),
         ("relu", None), ("leaky_relu", None), ("leaky_relu", 0.2), ("leaky_relu", 3), ("selu", None),
         ("tanh", 7.0)]


def main():
    tensors, meta = {}, {"count": str(len(CASES)), "count.gain": str(len(GAINS))}
    for i, (fn, seed, shape, dtype, kwargs) in enumerate(CASES):
        torch.manual_seed(seed)
        t = torch.empty(shape, dtype=DTYPES[dtype])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            getattr(torch.nn.init, fn)(t, **kwargs)
        tensors[f"case{i}.out"] = t.contiguous()
        tensors[f"case{i}.after"] = torch.rand(4, dtype=torch.float64)
        fields = [fn, f"seed={seed}", "shape=" + "x".join(map(str, shape)), f"dtype={dtype}"]
        fields += [f"{k}={v!r}" if isinstance(v, float) else f"{k}={v}" for k, v in kwargs.items()]
        meta[f"case{i}"] = ",".join(fields)
    for i, (name, param) in enumerate(GAINS):
        meta[f"gain{i}"] = f"{name},{'none' if param is None else repr(float(param))}," + \
            repr(float(torch.nn.init.calculate_gain(name, param)))
    meta["torch_version"] = torch.__version__
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    save_file(tensors, OUT, metadata=meta)
    print(f"wrote {len(CASES)} cases to {os.path.normpath(OUT)} ({os.path.getsize(OUT)} bytes)")


if __name__ == "__main__":
    main()
