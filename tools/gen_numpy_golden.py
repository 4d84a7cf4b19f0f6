#!/usr/bin/env python3
"""Writes the NumPy golden files that tests/io/test_numpy.cpp reads (tests/io/golden/numpy/).

Each .npy file is written by numpy.save (or numpy.lib.format.write_array, for the 2.0 and 3.0
format versions), each .npz by numpy.savez or numpy.savez_compressed, so the C++ tests check that
ember reads NumPy's output exactly and that ember's writer produces the same bytes for the same
arrays. The values are spelled out here and again in the C++ test; float16 values are given as
bit patterns so both sides agree to the bit.

Also written: files NumPy writes that ember refuses (complex, uint16, object, strings, structured
dtypes), so that the tests check the error messages on NumPy's own output.

Usage: python3 tools/gen_numpy_golden.py [OUT_DIR]   (default: tests/io/golden/numpy)
Needs: numpy. The .npz files carry a fixed timestamp, so rerunning the script with the same NumPy
gives the same bytes.
"""
import io
import os
import sys
import time
import zipfile
from unittest import mock

import numpy as np

# float16 bit patterns: 1, -2, 65504 (max), 2^-24 (smallest subnormal), -0, inf, -inf, NaN.
F16_BITS = [0x3C00, 0xC000, 0x7BFF, 0x0001, 0x8000, 0x7C00, 0xFC00, 0x7E00]


def all_dtypes():
    """One array per dtype ember and NumPy share, with edge values (file name -> array)."""
    return {
        "b1": np.array([[True, False, True], [False, False, True]], dtype=np.bool_),
        "u1": np.array([0, 1, 127, 128, 255], dtype=np.uint8),
        "i1": np.array([-128, -1, 0, 1, 127], dtype=np.int8),
        "i2": np.array([[-32768, -2], [3, 32767]], dtype=np.int16),
        "i4": np.array([-2147483648, -7, 0, 9, 2147483647], dtype=np.int32),
        "i8": np.array([[-9223372036854775808], [-5], [6], [9223372036854775807]], dtype=np.int64),
        "f2": np.array(F16_BITS, dtype=np.uint16).view(np.float16).reshape(2, 4),
        "f4": np.array([0.5, -1.25, 3.4028234663852886e38, 1e-45, -0.0, np.inf, -np.inf, np.nan],
                       dtype=np.float32).reshape(2, 2, 2),
        "f8": np.array([1.0 / 3.0, -2.5e-308, 5e-324, 1.7976931348623157e308], dtype=np.float64),
    }


def shapes():
    """0-d, empty and wide shapes (the header's spare space depends on the first dimension)."""
    return {
        "scalar_f8": np.array(2.75, dtype=np.float64),
        "empty_f4": np.zeros((0, 3), dtype=np.float32),
        "empty_1d_i8": np.zeros((0,), dtype=np.int64),
        "wide_i2": np.zeros((1234567, 0), dtype=np.int16),
        "many_dims_u1": np.arange(2 * 1 * 3 * 1 * 2 * 1 * 2, dtype=np.uint8).reshape(2, 1, 3, 1, 2, 1, 2),
    }


def other_layouts():
    """Fortran order and big-endian data, which ember reads but never writes."""
    return {
        "fortran_i4": np.asfortranarray(np.arange(24, dtype=np.int32).reshape(2, 3, 4)),
        "be_f8": all_dtypes()["f8"].astype(">f8"),
        "be_i2": all_dtypes()["i2"].astype(">i2"),
        "be_f2": all_dtypes()["f2"].astype(">f2"),
        "be_fortran_f4": np.asfortranarray((np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5).astype(">f4")),
    }


def unsupported():
    """Arrays NumPy saves whose dtypes ember lacks."""
    return {
        "c8": np.array([1 + 2j, -3.5j], dtype=np.complex64),
        "u2": np.array([1, 65535], dtype=np.uint16),
        "U3": np.array(["ab", "cde"]),
        "structured": np.array([(1.5, 2)], dtype=[("a", "<f4"), ("b", "<i4")]),
        "object": np.array([1, "a"], dtype=object),
    }


def npz_arrays():
    """The arrays of the .npz goldens, in the order savez writes them (keywords, then arr_0)."""
    return {
        "weight": np.arange(6, dtype=np.float32).reshape(2, 3) / 2,
        "bias": np.array([0.25, -0.75, 1e300], dtype=np.float64),
        "mask": np.array([True, False, True], dtype=np.bool_),
        "ids": np.array([[1, -2], [3, 4]], dtype=np.int64),
        "half": np.array(F16_BITS[:4], dtype=np.uint16).view(np.float16),
        "step": np.array(7, dtype=np.int32),
        "empty": np.zeros((0, 2), dtype=np.uint8),
        "encoder/layer.0": np.array([-1, 2, -3], dtype=np.int8),
    }


def write_npz(path, compressed):
    arrays = npz_arrays()
    positional = np.array([[1.5], [-2.5]], dtype=np.float32)  # stored as "arr_0"
    save = np.savez_compressed if compressed else np.savez
    # zipfile stamps entries with the current local time; a fixed one keeps reruns byte-identical.
    with mock.patch.object(time, "localtime", lambda *_: time.gmtime(1_700_000_000)):
        save(path, positional, **arrays)


def describe(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] == b"\x93NUMPY":
        major = data[6]
        n = int.from_bytes(data[8:10], "little") if major == 1 else int.from_bytes(data[8:12], "little")
        start = 10 if major == 1 else 12
        return f"{len(data)} bytes, v{major}.{data[7]}, {data[start:start + n].decode('utf8').rstrip()}"
    with zipfile.ZipFile(path) as z:
        return f"{len(data)} bytes, " + ", ".join(f"{i.filename} ({i.compress_type})" for i in z.infolist())


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "io",
                                                               "golden", "numpy")
    os.makedirs(out, exist_ok=True)
    for group in (all_dtypes(), shapes(), other_layouts()):
        for name, a in group.items():
            np.save(os.path.join(out, name + ".npy"), a)
    for name, a in unsupported().items():
        np.save(os.path.join(out, "unsupported_" + name + ".npy"), a, allow_pickle=True)
    # The 2.0 and 3.0 versions, which numpy.save only picks for huge headers or non-latin-1 field
    # names, written explicitly.
    for version in ((2, 0), (3, 0)):
        buf = io.BytesIO()
        np.lib.format.write_array(buf, np.arange(6, dtype=np.float32).reshape(2, 3) - 1, version=version)
        with open(os.path.join(out, f"v{version[0]}_f4.npy"), "wb") as f:
            f.write(buf.getvalue())
    write_npz(os.path.join(out, "savez.npz"), compressed=False)
    write_npz(os.path.join(out, "savez_compressed.npz"), compressed=True)
    for name in sorted(os.listdir(out)):
        print(f"{name}: {describe(os.path.join(out, name))}")


if __name__ == "__main__":
    main()
