#!/usr/bin/env python3
"""Writes the PyTorch-format golden files that tests/io/test_pytorch_format.cpp reads.

Every .pt file here is written by torch.save itself (a few are then patched, see below), so the
C++ tests check that ember reads PyTorch's real output. For each readable file the expected
contents are written beside it:

  tests/io/golden/torch/<name>.pt            the file torch.save wrote
  tests/io/golden/torch/<name>.safetensors   every tensor in it, contiguous, by path ("model.0.weight")
                                             plus, for optimizer files, one more step's data:
                                             "step.param.<i>" (the parameters the state belongs to),
                                             "step.grad.<i>" (the next gradient) and "step.next.<i>"
                                             (the parameters after PyTorch's next step)
  tests/io/golden/torch/expected.json        per file: the structure, every value typed exactly

The JSON gives each value as a one-key object naming its kind:
  {"none": null} {"bool": b} {"int": "<decimal>"} {"float": "<16 hex digits: the IEEE bits>"}
  {"str": s} {"bytes": "<hex>"} {"list": [...]} {"tuple": [...]} {"dict": [[k, v], ...]}
  {"odict": [[k, v], ...]} {"dtype": "float16"} {"device": "cuda:1"}
  {"tensor": {"name": <key in the .safetensors>, "dtype": ..., "shape": [...], "stride": [...],
              "offset": <storage offset>, "storage": <storage number in this file>,
              "storage_numel": <elements in that storage>, "requires_grad": b, "parameter": b}}
Tensors with the same "storage" share one storage in PyTorch (and must in ember).

Files ember must refuse are listed under "refused" with the words its message must contain.

Patched files (PyTorch cannot write them on a CPU-only machine, or at all on a little-endian one):
  cuda.pt        a cpu file whose storage location strings say "cuda:0"
  big_endian.pt  a file whose byteorder record says "big", its data records byte-swapped; torch.load
                 reads it back to the original values (checked here)

Usage: python3 tools/gen_torch_golden.py [OUT_DIR]   (default: tests/io/golden/torch)
Needs: torch, numpy, safetensors. Rerunning it gives the same bytes, except legacy.pt and
torchscript.pt (PyTorch writes a random key into each).
"""
import collections
import copy
import io
import json
import math
import os
import pickle
import pickletools
import struct
import sys
import zipfile

import numpy as np
import torch
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "io", "golden", "torch")
EXPECTED = {"files": {}, "refused": {}}

DTYPE_NAMES = {
    torch.float32: "float32", torch.float64: "float64", torch.float16: "float16", torch.bfloat16: "bfloat16",
    torch.int8: "int8", torch.int16: "int16", torch.int32: "int32", torch.int64: "int64", torch.uint8: "uint8",
    torch.bool: "bool",
}


def path_of(name):
    return os.path.join(OUT, name)


class Describer:
    """Turns a Python value into the typed JSON above, collecting its tensors by path."""

    def __init__(self):
        self.tensors = {}
        self.storages = {}  # data_ptr of a storage -> its number

    def storage_number(self, t):
        key = (t.untyped_storage().data_ptr(), t.untyped_storage().nbytes())
        if key not in self.storages:
            self.storages[key] = len(self.storages)
        return self.storages[key]

    def __call__(self, value, path):
        if value is None:
            return {"none": None}
        if isinstance(value, bool):
            return {"bool": value}
        if isinstance(value, int):
            return {"int": str(value)}
        if isinstance(value, float):
            return {"float": "%016x" % struct.unpack("<Q", struct.pack("<d", value))[0]}
        if isinstance(value, str):
            return {"str": value}
        if isinstance(value, bytes):
            return {"bytes": value.hex()}
        if isinstance(value, torch.dtype):
            return {"dtype": DTYPE_NAMES[value]}
        if isinstance(value, torch.device):
            return {"device": str(value)}
        if isinstance(value, torch.Tensor):
            name = path or "tensor"
            assert name not in self.tensors, name
            self.tensors[name] = value.detach().clone().contiguous()
            return {"tensor": {
                "name": name, "dtype": DTYPE_NAMES[value.dtype], "shape": list(value.shape),
                "stride": list(value.stride()), "offset": value.storage_offset(),
                "storage": self.storage_number(value),
                "storage_numel": value.untyped_storage().nbytes() // value.element_size(),
                "requires_grad": value.requires_grad, "parameter": isinstance(value, torch.nn.Parameter)}}
        if isinstance(value, list):
            return {"list": [self(v, join(path, i)) for i, v in enumerate(value)]}
        if isinstance(value, tuple):
            return {"tuple": [self(v, join(path, i)) for i, v in enumerate(value)]}
        if isinstance(value, dict):
            kind = "odict" if isinstance(value, collections.OrderedDict) else "dict"
            return {kind: [[self(k, None), self(v, join(path, k))] for k, v in value.items()]}
        raise TypeError(f"cannot describe {type(value)}")


def join(path, key):
    return str(key) if not path else f"{path}.{key}"


def save_readable(name, value, expect=None, extra_tensors=None, **save_args):
    """torch.save(value) to <name>.pt; its description into expected.json, its tensors (and those
    `extra_tensors()` returns, called after the save) into <name>.safetensors. `expect` replaces
    `value` as what loading gives."""
    torch.save(value, path_of(name + ".pt"), **save_args)
    describe = Describer()
    entry = {"value": describe(value if expect is None else expect, ""), "storages": len(describe.storages)}
    # The file must load in PyTorch as the allow-listed reader does (whose unpickler does not know
    # protocol 4's FRAME opcode: those files are checked with the full unpickler).
    weights_only = save_args.get("pickle_protocol", 2) < 4
    back = torch.load(path_of(name + ".pt"), weights_only=weights_only, map_location="cpu")
    assert Describer()(back, "") == entry["value"], name
    tensors = dict(describe.tensors)
    tensors.update(extra_tensors() if extra_tensors else {})
    if tensors:
        save_file(tensors, path_of(name + ".safetensors"))
    entry["tensors"] = bool(tensors)
    EXPECTED["files"][name + ".pt"] = entry
    return entry


# ---- a small model and its optimizers ----

def make_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.ReLU(), torch.nn.Linear(4, 2))


def batch(step):
    g = torch.Generator().manual_seed(100 + step)
    return torch.randn(5, 3, generator=g), torch.randn(5, 2, generator=g)


def train_step(model, opt, step):
    x, y = batch(step)
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()


def next_step_tensors(model, opt, step):
    """The parameters before one more step, its gradients, and the parameters after it; taken
    on copies, so that `model` and `opt` (and the state_dicts sharing their tensors) stay as they are."""
    model, opt = copy.deepcopy((model, opt))
    params = [p for group in opt.param_groups for p in group["params"]]
    out = {f"step.param.{i}": p.detach().clone() for i, p in enumerate(params)}
    x, y = batch(step)
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    out.update({f"step.grad.{i}": p.grad.detach().clone() for i, p in enumerate(params)})
    opt.step()
    out.update({f"step.next.{i}": p.detach().clone() for i, p in enumerate(params)})
    return out


def two_groups(model, lr0, lr1):
    """Group 0: the first Linear and the BatchNorm; group 1: the last Linear, another lr."""
    return [{"params": list(model[0].parameters()) + list(model[1].parameters()), "lr": lr0},
            {"params": list(model[3].parameters()), "lr": lr1}]


def optimizer_file(name, make, steps, note):
    model = make_model()
    opt = make(model)
    for s in range(steps):
        train_step(model, opt, s)
    extra = next_step_tensors(model, opt, steps)
    entry = save_readable(name, opt.state_dict(), extra_tensors=lambda: extra)
    entry["optimizer"] = {"kind": type(opt).__name__, "note": note, "num_params": len(extra) // 3}


def write_model_files():
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    train_step(model, opt, 0)
    save_readable("state_dict", model.state_dict())

    model = make_model()
    adam = torch.optim.Adam(model.parameters(), lr=0.01)
    for s in range(2):
        train_step(model, adam, s)
    ckpt = {"model": model.state_dict(), "optimizer": adam.state_dict(), "epoch": 3, "loss": 0.25, "name": "run-1",
            "flags": [True, False, None], "shape": (2, 3)}
    extra = next_step_tensors(model, adam, 2)
    entry = save_readable("checkpoint", ckpt, extra_tensors=lambda: extra)
    entry["optimizer"] = {"kind": "Adam", "note": "checkpoint['optimizer']", "num_params": 6}
    entry = save_readable("checkpoint_p4", ckpt, extra_tensors=lambda: extra, pickle_protocol=4)
    entry["optimizer"] = {"kind": "Adam", "note": "checkpoint['optimizer'], pickle protocol 4", "num_params": 6}
    entry["weights_only"] = False  # torch.load(weights_only=True) does not know protocol 4's FRAME
    ops = {op.name for op, _, _ in pickletools.genops(read_member(path_of("checkpoint_p4.pt"), "data.pkl"))}
    assert {"FRAME", "SHORT_BINUNICODE", "MEMOIZE"} <= ops, ops

    optimizer_file("optim_sgd", lambda m: torch.optim.SGD(two_groups(m, 0.1, 0.05), lr=0.1, momentum=0.9,
                                                          nesterov=True, weight_decay=0.01), 3,
                   "SGD momentum=0.9 nesterov weight_decay=0.01, groups lr 0.1 / 0.05")
    optimizer_file("optim_adamw", lambda m: torch.optim.AdamW(two_groups(m, 0.01, 0.002), betas=(0.8, 0.99),
                                                              weight_decay=0.05, amsgrad=True), 3,
                   "AdamW betas=(0.8, 0.99) weight_decay=0.05 amsgrad, groups lr 0.01 / 0.002")
    optimizer_file("optim_rmsprop", lambda m: torch.optim.RMSprop(m.parameters(), lr=0.01, alpha=0.9, centered=True,
                                                                  momentum=0.5, weight_decay=0.02), 3,
                   "RMSprop centered momentum=0.5 alpha=0.9 weight_decay=0.02")
    optimizer_file("optim_adadelta", lambda m: torch.optim.Adadelta(two_groups(m, 1.0, 0.5), rho=0.8, eps=1e-5), 2,
                   "Adadelta rho=0.8 eps=1e-5, groups lr 1.0 / 0.5")
    return model


# ---- dtypes, views, values ----

def write_dtypes():
    def bits(patterns, dtype):  # 16-bit patterns as a float16/bfloat16 tensor
        return torch.from_numpy(np.array(patterns, dtype=np.uint16).view(np.int16)).view(dtype)

    f16 = bits([0x3C00, 0xC000, 0x7BFF, 0x0001, 0x8000, 0x7C00], torch.float16)
    bf16 = bits([0x3F80, 0xC040, 0x3F81, 0x7F7F, 0x0001, 0x7FC0], torch.bfloat16)
    save_readable("dtypes", {
        "float32": torch.tensor([[0.5, -1.25, 3.4028234663852886e38], [1e-45, -0.0, float("inf")]]),
        "float64": torch.tensor([1.0 / 3.0, -2.5e-308, 5e-324, float("nan")], dtype=torch.float64),
        "float16": f16.reshape(2, 3),
        "bfloat16": bf16,
        "int8": torch.tensor([-128, -1, 0, 127], dtype=torch.int8),
        "int16": torch.tensor([[-32768, 32767]], dtype=torch.int16),
        "int32": torch.tensor([-2147483648, 7, 2147483647], dtype=torch.int32),
        "int64": torch.tensor([-9223372036854775808, -5, 9223372036854775807], dtype=torch.int64),
        "uint8": torch.tensor([0, 1, 128, 255], dtype=torch.uint8),
        "bool": torch.tensor([[True, False], [False, True]]),
    })


def write_views():
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    save_readable("views", [t, t[1:], t.t(), t[:, ::2]])
    big = torch.arange(20, dtype=torch.int32)
    save_readable("slice", big[5:11].view(2, 3))  # the whole storage of 20 is saved; offset 5
    torch.manual_seed(1)
    save_readable("tensors", {
        "scalar": torch.tensor(3.5),
        "int_scalar": torch.tensor(-7, dtype=torch.int64),
        "empty": torch.zeros(0, 3),
        "parameter": torch.nn.Parameter(torch.randn(2, 2)),
        "frozen_parameter": torch.nn.Parameter(torch.randn(3), requires_grad=False),
        "leaf": torch.randn(3, requires_grad=True),
        "channels_last": torch.arange(24, dtype=torch.float32).reshape(1, 2, 3, 4).to(
            memory_format=torch.channels_last),
        "expanded": torch.tensor([1.0, 2.0]).expand(3, 2),
    })


def write_values():
    save_readable("values", {
        "dtype": torch.float16,
        "dtypes": [torch.float32, torch.float64, torch.bfloat16, torch.int64, torch.bool, torch.uint8],
        "device": torch.device("cpu"),
        "cuda_device": torch.device("cuda", 1),
        "nested": {1: {2: "two", -3: [1, 2.5]}, 0: {}},
        "big": 2 ** 40,
        "int64_min": -2 ** 63,
        "int64_max": 2 ** 63 - 1,
        "byte": 255,
        "neg": -1,
        "int32_edge": [2 ** 31 - 1, -2 ** 31, 2 ** 31, 65536],
        "nan": float("nan"),
        "inf": float("inf"),
        "ninf": float("-inf"),
        "negzero": -0.0,
        "pi": math.pi,
        "unicode": "héllo wörld ✓ 🐍 \x00 end",
        "bytes": b"\x00\xffabc\n",
        "empty_str": "",
        "empty_list": [],
        "empty_tuple": (),
        "one_tuple": (1,),
        "long_tuple": (1, 2, 3, 4, 5),
        "true": True,
        "none": None,
        "odict": collections.OrderedDict([("b", 1), ("a", 2)]),
        "repeated": ["same", "same", ("x", "x")],
    })


# ---- patched files ----

def read_member(path, suffix):
    with zipfile.ZipFile(path) as z:
        (member,) = [n for n in z.namelist() if n.endswith("/" + suffix)]
        return z.read(member)


def rewrite_zip(src, dst, change):
    """Copies the archive, passing each member's (name, bytes) through `change`; stored entries."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            zout.writestr(zipfile.ZipInfo(info.filename, date_time=(1980, 1, 1, 0, 0, 0)),
                          change(info.filename, zin.read(info.filename)))


def write_cuda():
    value = {"w": torch.tensor([[1.0, 2.0], [3.0, 4.0]]), "step": torch.tensor(5, dtype=torch.int64)}
    tmp = path_of("cuda.tmp")
    torch.save(value, tmp)
    old, new = b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0"

    def change(name, data):
        if name.endswith("/data.pkl"):
            assert data.count(old) == 1, data
            return data.replace(old, new)
        return data

    rewrite_zip(tmp, path_of("cuda.pt"), change)
    os.remove(tmp)
    assert b"cuda:0" in read_member(path_of("cuda.pt"), "data.pkl")
    describe = Describer()
    EXPECTED["files"]["cuda.pt"] = {"value": describe(value, ""), "storages": 2, "tensors": True,
                                    "location": "cuda:0"}
    save_file(describe.tensors, path_of("cuda.safetensors"))
    back = torch.load(path_of("cuda.pt"), weights_only=True, map_location="cpu")
    assert torch.equal(back["w"], value["w"]) and torch.equal(back["step"], value["step"])


def write_big_endian():
    value = {"f32": torch.tensor([1.5, -2.25, 1e30]), "i64": torch.tensor([1, -2, 2 ** 40]),
             "f16": torch.tensor([0.5, -3.0], dtype=torch.float16), "i16": torch.tensor([[258, -2]], dtype=torch.int16),
             "u8": torch.tensor([1, 200], dtype=torch.uint8)}
    tmp = path_of("big.tmp")
    torch.save(value, tmp)
    sizes = {str(i): t.element_size() for i, t in enumerate(value.values())}  # records in pickling order

    def change(name, data):
        if name.endswith("/byteorder"):
            assert data == b"little"
            return b"big"
        key = name.rsplit("/", 1)[-1]
        if "/data/" in name and key in sizes:
            n = sizes[key]
            return b"".join(data[i:i + n][::-1] for i in range(0, len(data), n))
        return data

    rewrite_zip(tmp, path_of("big_endian.pt"), change)
    os.remove(tmp)
    back = torch.load(path_of("big_endian.pt"), weights_only=True)
    for k, v in value.items():
        assert torch.equal(back[k], v), k
    describe = Describer()
    EXPECTED["files"]["big_endian.pt"] = {"value": describe(value, ""), "storages": len(value), "tensors": True,
                                          "byteorder": "big"}
    save_file(describe.tensors, path_of("big_endian.safetensors"))


# ---- files ember must refuse ----

class CustomThing:
    def __init__(self):
        self.x = 1


def refused(name, phrases, write):
    write(path_of(name))
    EXPECTED["refused"][name] = phrases


def write_refused(model):
    refused("module.pt", ["Sequential"], lambda p: torch.save(model, p))
    refused("custom_class.pt", ["CustomThing"], lambda p: torch.save({"obj": CustomThing()}, p))
    refused("numpy_scalar.pt", ["numpy"], lambda p: torch.save({"x": np.float64(1.5)}, p))
    refused("numpy_array.pt", ["numpy"], lambda p: torch.save({"a": np.arange(4.0)}, p))
    refused("legacy.pt", ["_use_new_zipfile_serialization"],
            lambda p: torch.save({"w": torch.ones(2)}, p, _use_new_zipfile_serialization=False))
    refused("torchscript.pt", ["TorchScript"],
            lambda p: torch.jit.save(torch.jit.script(torch.nn.Linear(2, 1)), p))
    refused("complex.pt", ["complex"], lambda p: torch.save({"z": torch.tensor([1 + 2j])}, p))
    refused("uint16.pt", ["uint16"], lambda p: torch.save({"u": torch.tensor([1, 2], dtype=torch.uint16)}, p))


def main():
    global OUT
    if len(sys.argv) > 1:
        OUT = sys.argv[1]
    os.makedirs(OUT, exist_ok=True)
    for name in os.listdir(OUT):  # what an earlier run wrote
        if name.endswith((".pt", ".safetensors", ".json")):
            os.remove(path_of(name))
    model = write_model_files()
    write_dtypes()
    write_views()
    write_values()
    write_cuda()
    write_big_endian()
    write_refused(model)
    with open(path_of("expected.json"), "w", encoding="utf-8") as f:  # compact: one line per file
        f.write("{\n")
        for section, last in (("files", False), ("refused", True)):
            f.write(f' "{section}": {{\n')
            items = list(EXPECTED[section].items())
            for i, (name, entry) in enumerate(items):
                f.write(f"  {json.dumps(name)}: {json.dumps(entry, ensure_ascii=False, separators=(',', ':'))}")
                f.write(",\n" if i + 1 < len(items) else "\n")
            f.write(" }\n" if last else " },\n")
        f.write("}\n")
    json.load(open(path_of("expected.json"), encoding="utf-8"))
    total = 0
    for name in sorted(os.listdir(OUT)):
        size = os.path.getsize(path_of(name))
        total += size
        print(f"{name}: {size} bytes")
    print(f"total: {total} bytes")


if __name__ == "__main__":
    main()
