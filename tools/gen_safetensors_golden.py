#!/usr/bin/env python3
"""Writes the safetensors golden files that tests/io/test_safetensors.cpp reads.

Each file is written by the reference writer (safetensors.torch.save_file, or
safetensors.numpy.save_file when PyTorch is missing: both end in the same Rust serializer), so
the C++ tests check that ember reads the reference's output exactly and that ember's writer
produces the same bytes for the same tensors. The values are spelled out here and again in the
C++ test; float16/bfloat16 values are given as bit patterns so both sides agree to the bit.

Usage: python3 tools/gen_safetensors_golden.py [OUT_DIR]   (default: tests/io/golden)
Needs: safetensors, numpy, and optionally torch (CPU build is enough).
"""
import os
import struct
import sys

import numpy as np

try:
    import torch
    from safetensors.torch import save_file as torch_save_file
except ImportError:  # the numpy writer produces the same bytes
    torch = None
from safetensors import TensorSpec, serialize_file
from safetensors.numpy import save_file as numpy_save_file

# float16 bit patterns: 1, -2, 65504 (max), 2^-24 (smallest subnormal), -0, inf, -inf, NaN.
F16_BITS = [0x3C00, 0xC000, 0x7BFF, 0x0001, 0x8000, 0x7C00, 0xFC00, 0x7E00]
# bfloat16 bit patterns: 1, -3, 1.0078125, max finite, smallest subnormal, inf, -0, NaN.
BF16_BITS = [0x3F80, 0xC040, 0x3F81, 0x7F7F, 0x0001, 0x7F80, 0x8000, 0x7FC0]


def all_dtypes_numpy():
    """One tensor per safetensors dtype ember supports, with edge values, as numpy arrays.

    bfloat16 has no numpy dtype; it is added separately (see write_all_dtypes).
    """
    return {
        "bool": np.array([[True, False, True], [False, False, True]], dtype=np.bool_),
        "u8": np.array([0, 1, 127, 128, 255], dtype=np.uint8),
        "i8": np.array([-128, -1, 0, 1, 127], dtype=np.int8),
        "i16": np.array([[-32768, -2], [3, 32767]], dtype=np.int16),
        "i32": np.array([-2147483648, -7, 0, 9, 2147483647], dtype=np.int32),
        "i64": np.array([[-9223372036854775808], [-5], [6], [9223372036854775807]], dtype=np.int64),
        "f16": np.array(F16_BITS, dtype=np.uint16).view(np.float16).reshape(2, 4),
        "f32": np.array([0.5, -1.25, 3.4028234663852886e38, 1e-45, -0.0, np.inf, -np.inf, np.nan],
                        dtype=np.float32).reshape(2, 2, 2),
        "f64": np.array([1.0 / 3.0, -2.5e-308, 5e-324, 1.7976931348623157e308], dtype=np.float64),
        "scalar_f32": np.array(2.75, dtype=np.float32),  # 0-dim
        "empty_f32": np.zeros((0, 3), dtype=np.float32),  # no elements
        "empty_i64": np.zeros((2, 0), dtype=np.int64),
    }


def write_all_dtypes(path):
    arrays = all_dtypes_numpy()
    bf16_bits = np.array(BF16_BITS, dtype=np.uint16)
    metadata = {"format": "pt"}
    if torch is not None:
        tensors = {name: torch.from_numpy(a.copy()) for name, a in arrays.items()}
        tensors["bf16"] = torch.from_numpy(bf16_bits.view(np.int16).copy()).view(torch.bfloat16)
        torch_save_file(tensors, path, metadata=metadata)
    else:
        # numpy has no bfloat16: hand the bit patterns to the reference serializer directly, as
        # safetensors.numpy.save_file does for the other arrays.
        specs = {name: TensorSpec(dtype=a.dtype.name, shape=list(a.shape), data_ptr=a.ctypes.data,
                                  data_len=a.nbytes) for name, a in arrays.items()}
        specs["bf16"] = TensorSpec(dtype="bfloat16", shape=[8], data_ptr=bf16_bits.ctypes.data,
                                   data_len=bf16_bits.nbytes)
        serialize_file(specs, path, metadata=metadata)


def write_state_dict(path):
    """Names that sort differently by dtype and by byte order, and names JSON must escape."""
    arrays = {
        "layer.10.weight": np.arange(6, dtype=np.float32).reshape(2, 3) / 4,
        "layer.2.weight": np.arange(4, dtype=np.float32).reshape(2, 2) - 1.5,
        "layer.2.bias": np.array([0.25, -0.75], dtype=np.float32),
        "Zeta.num_batches_tracked": np.array(7, dtype=np.int64),
        "émbed.wéight": np.array([1.5, 2.5, -3.5], dtype=np.float64),
        'quote"back\\slash\nnewline\ttab\x01ctl': np.array([1, 2, 3], dtype=np.int8),
        "mask": np.array([True, False], dtype=np.bool_),
        "a": np.array([-1, 2], dtype=np.int16),
    }
    metadata = {"note": 'ember "golden" \\ ünïcode\n'}
    if torch is not None:
        torch_save_file({k: torch.from_numpy(v.copy()) for k, v in arrays.items()}, path, metadata=metadata)
    else:
        numpy_save_file(arrays, path, metadata=metadata)


def write_no_tensors(path):
    if torch is not None:
        torch_save_file({}, path)
    else:
        numpy_save_file({}, path)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "io", "golden")
    os.makedirs(out, exist_ok=True)
    write_all_dtypes(os.path.join(out, "all_dtypes.safetensors"))
    write_state_dict(os.path.join(out, "state_dict.safetensors"))
    write_no_tensors(os.path.join(out, "no_tensors.safetensors"))
    for name in sorted(os.listdir(out)):
        p = os.path.join(out, name)
        with open(p, "rb") as f:
            data = f.read()
        (n,) = struct.unpack("<Q", data[:8])
        print(f"{name}: {len(data)} bytes, header {n} bytes: {data[8:8 + n].decode()}")


if __name__ == "__main__":
    main()
