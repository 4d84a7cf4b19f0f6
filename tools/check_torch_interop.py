#!/usr/bin/env python3
"""Checks files written by ember's io::torch_save against PyTorch itself. Run by hand:

    python3 tools/check_torch_interop.py DIR [DIR ...]

For every DIR/<name>.pt:
  * torch.load(weights_only=True) reads it (and again with mmap=True, which needs PyTorch's
    64-byte record alignment);
  * the archive has PyTorch's layout: every entry under "<name>/", data.pkl first, version "3",
    byteorder "little", records stored and aligned to 64 bytes, one record per distinct storage;
  * every tensor equals the one under its path in DIR/<name>.safetensors, if there is one (paths
    as tools/gen_torch_golden.py names them: dict keys and list indices joined by dots,
    "model.0.weight", "optimizer.state.0.exp_avg", "3"; a top-level tensor is "tensor"), bit for
    bit, and no tensor of the .safetensors is left unmatched;
  * if DIR/<name>.json exists (or DIR/expected.json lists <name>.pt under "files", as
    tests/io/golden/torch does: this script passes on those, a check of itself), the loaded
    value's description (tools/gen_torch_golden.py's typed JSON, under "value") is exactly that
    one: kinds, values, dtypes, shapes, strides, offsets, storage sizes and sharing, requires_grad;
  * an optimizer state dict (the value itself, or the value's "optimizer") loads into the matching
    torch.optim optimizer with load_state_dict (kind from <name>.json's "optimizer": {"kind": ...},
    or guessed from the group keys), whose state_dict() then gives the same param_groups, and
    takes a step. When the .safetensors holds "step.param.<i>" and "step.grad.<i>", the
    parameters start there and take that gradient; with "step.next.<i>" too, the result must
    match ember's step.

Prints one PASS/FAIL line per file (with the reasons) and exits non-zero if any failed.

The files come from tools/torch_interop_files.cpp:

    build/ember_torch_interop_files /tmp/interop && python3 tools/check_torch_interop.py /tmp/interop

Re-saving each golden of tests/io/golden/torch with io::torch_save, beside a copy of its
.safetensors and its expected.json entry as <name>.json, checks ember's writer against every
structure the goldens hold.
Needs: torch, safetensors.
"""
import json
import os
import struct
import sys
import traceback
import zipfile

import torch
from safetensors.torch import load_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_torch_golden import Describer  # noqa: E402  (the same typed description as the goldens)

OPTIMIZERS = ("SGD", "Adam", "AdamW", "RMSprop", "Adadelta")


class Failure(Exception):
    pass


def check(ok, message):
    if not ok:
        raise Failure(message)


def check_archive(path, expected_storages):
    stem = os.path.splitext(os.path.basename(path))[0]
    with zipfile.ZipFile(path) as z, open(path, "rb") as f:
        raw = f.read()
        infos = z.infolist()
        names = [i.filename for i in infos]
        check(names and names[0] == f"{stem}/data.pkl", f"the first entry is {names[:1]}, not {stem}/data.pkl")
        for name in names:
            check(name.startswith(stem + "/"), f"entry {name!r} is not under {stem}/")
        check(z.read(f"{stem}/version").strip() == b"3", f"version record is {z.read(stem + '/version')!r}")
        if f"{stem}/byteorder" in names:
            check(z.read(f"{stem}/byteorder") == b"little", "byteorder is not 'little'")
        records = 0
        for info in infos:
            rest = info.filename[len(stem) + 1:]
            if not (rest.startswith("data/") and rest[5:].isdigit()):
                continue
            records += 1
            check(info.compress_type == zipfile.ZIP_STORED, f"{info.filename} is compressed")
            h = info.header_offset
            name_len, extra_len = struct.unpack("<HH", raw[h + 26:h + 30])
            offset = h + 30 + name_len + extra_len
            check(offset % 64 == 0, f"{info.filename}'s data starts at {offset}, not a multiple of 64")
        check(records == expected_storages, f"{records} storage records for {expected_storages} distinct storages")


def tensors_by_path(value, path="", out=None):
    out = {} if out is None else out
    if isinstance(value, torch.Tensor):
        out[path or "tensor"] = value
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            tensors_by_path(v, f"{path}.{i}" if path else str(i), out)
    elif isinstance(value, dict):
        for k, v in value.items():
            tensors_by_path(v, f"{path}.{k}" if path else str(k), out)
    return out


def same_bits(a, b):
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    a, b = a.detach().contiguous(), b.detach().contiguous()
    if a.numel() == 0:
        return True
    return torch.equal(a.view(-1).view(torch.uint8), b.view(-1).view(torch.uint8))


def guess_kind(group):
    if "betas" in group:
        return "AdamW" if group.get("decoupled_weight_decay") else "Adam"
    if "rho" in group:
        return "Adadelta"
    if "alpha" in group:
        return "RMSprop"
    if "nesterov" in group:
        return "SGD"
    raise Failure(f"cannot tell the optimizer from its group keys {sorted(group)}")


def check_optimizer(state, kind, tensors):
    groups = state["param_groups"]
    kind = kind or guess_kind(groups[0])
    check(kind in OPTIMIZERS, f"unknown optimizer kind {kind}")
    count = sum(len(g["params"]) for g in groups)
    params = []
    for i in range(count):
        start = tensors.get(f"step.param.{i}")
        if start is None:  # any values will do: shapes from the state where it has them
            entry = state["state"].get(i, {})
            like = next((t for n, t in entry.items() if n != "step" and isinstance(t, torch.Tensor)), None)
            start = torch.zeros_like(like) if like is not None else torch.zeros(1)
        params.append(start.clone().requires_grad_())
    torch_groups = [{"params": [params[i] for i in g["params"]]} for g in groups]
    opt = getattr(torch.optim, kind)(torch_groups)
    opt.load_state_dict(state)
    saved = opt.state_dict()["param_groups"]
    for g, (ours, theirs) in enumerate(zip(groups, saved)):
        check(set(ours) == set(theirs), f"param_groups[{g}]: load_state_dict added {sorted(set(theirs) - set(ours))}"
              f" and dropped {sorted(set(ours) - set(theirs))}")
        for key in ours:
            check(ours[key] == theirs[key], f"param_groups[{g}][{key!r}]: {ours[key]!r} became {theirs[key]!r}")
    for i, p in enumerate(params):
        grad = tensors.get(f"step.grad.{i}")
        p.grad = grad.clone() if grad is not None else torch.full_like(p, 0.1)
    opt.step()
    for i, p in enumerate(params):
        want = tensors.get(f"step.next.{i}")
        if want is not None:
            err = (p.detach() - want).abs().max().item() if p.numel() else 0.0
            check(err <= 1e-6 + 1e-5 * want.abs().max().item(),
                  f"parameter {i} after PyTorch's step differs from ember's by {err:.3g}")
    return kind


def first_difference(got, want, where="value"):
    """Where two descriptions first differ, and how; None when they are equal."""
    if isinstance(got, dict) and isinstance(want, dict):
        for key in list(want) + [k for k in got if k not in want]:
            if key not in got or key not in want:
                return f"{where}: key {key!r} only in {'the file' if key in got else 'the description'}"
            d = first_difference(got[key], want[key], f"{where}.{key}")
            if d:
                return d
        return None
    if isinstance(got, list) and isinstance(want, list):
        for i, (g, w) in enumerate(zip(got, want)):
            d = first_difference(g, w, f"{where}[{i}]")
            if d:
                return d
        return None if len(got) == len(want) else f"{where}: {len(got)} items, expected {len(want)}"
    return None if got == want else f"{where}: {json.dumps(got)} , expected {json.dumps(want)}"


def check_file(path, description):
    base = os.path.splitext(path)[0]
    if description is None and os.path.exists(base + ".json"):
        with open(base + ".json", encoding="utf-8") as f:
            description = json.load(f)
    description = description or {}
    # Goldens patched in Python (a "cuda:0" location, a big-endian file) or in protocol 4, which
    # torch.load's allow-listed unpickler does not read.
    patched = "location" in description or "byteorder" in description
    load = dict(weights_only=description.get("weights_only", True), map_location="cpu" if patched else None)
    value = torch.load(path, **load)
    described = Describer()(value, "")
    notes = []
    if not patched:
        mapped = torch.load(path, mmap=True, **load)
        check(Describer()(mapped, "") == described, "torch.load(mmap=True) reads something else")
        describe = Describer()
        describe(value, "")
        check_archive(path, len(describe.storages))
        notes.append("layout")
    if "value" in description:
        check(described == description["value"],
              "the value differs from its description: " + str(first_difference(described, description["value"])))
        notes.append("structure")
    tensors = {}
    if os.path.exists(base + ".safetensors"):
        tensors = load_file(base + ".safetensors")
        found = tensors_by_path(value)
        for name, t in found.items():
            check(name in tensors, f"tensor {name} is not in {os.path.basename(base)}.safetensors")
            check(same_bits(t, tensors[name]), f"tensor {name} differs: {t} vs {tensors[name]}")
        unmatched = sorted(n for n in tensors if n not in found and not n.startswith("step."))
        check(not unmatched, f"tensors of the .safetensors not in the file: {unmatched}")
        notes.append(f"{len(found)} tensors")
    state = None
    if isinstance(value, dict) and "param_groups" in value and "state" in value:
        state = value
    elif isinstance(value, dict) and isinstance(value.get("optimizer"), dict) and "param_groups" in value["optimizer"]:
        state = value["optimizer"]
    if state is not None:
        kind = description.get("optimizer", {}).get("kind")
        notes.append(check_optimizer(state, kind, tensors) + " state loads and steps")
    return ", ".join(notes) or "loads"


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    files = []  # (path, description or None)
    for d in argv[1:]:
        if os.path.isfile(d):
            files.append((d, None))
            continue
        listing = {"files": {}, "refused": {}}
        if os.path.exists(os.path.join(d, "expected.json")):
            with open(os.path.join(d, "expected.json"), encoding="utf-8") as f:
                listing = json.load(f)
        for n in sorted(os.listdir(d)):
            if n.endswith(".pt") and n not in listing["refused"]:
                files.append((os.path.join(d, n), listing["files"].get(n)))
    if not files:
        print("no .pt files found")
        return 2
    failed = 0
    for path, description in files:
        try:
            print(f"PASS {path}: {check_file(path, description)}")
        except Failure as e:
            failed += 1
            print(f"FAIL {path}: {e}")
        except Exception as e:  # torch.load's own errors and anything unexpected
            failed += 1
            print(f"FAIL {path}: {type(e).__name__}: {e}")
            if os.environ.get("CHECK_TORCH_INTEROP_TRACEBACK"):
                traceback.print_exc()
    print(f"{len(files) - failed} of {len(files)} files passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
