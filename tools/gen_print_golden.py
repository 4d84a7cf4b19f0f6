#!/usr/bin/env python3
"""Writes tests/io/golden/print_public.jsonl: tensors and the text PyTorch's repr() prints for
them, for tests/io/test_print.cpp, which must print the same bytes. Or, with --check, verifies
that the installed PyTorch still prints every case of such a file the same way.

The file holds one JSON object per line, with the keys in this order (tests/io/golden/PRINT.md):
  note           how the values were drawn (see VALUE KINDS below)
  dtype          float32 float64 float16 bfloat16 int64 int32 int16 int8 uint8 bool
  shape          list of sizes; [] is a 0-dim tensor
  requires_grad  whether the tensor is a leaf that requires grad
  values         the elements in row-major order: floats as Python's float.hex() of the exact value
                 ("0x1.8000000000000p+0"; "nan", "inf", "-inf" as such), integers as JSON integers,
                 bools as JSON booleans
  repr           what repr(tensor) prints, with PyTorch's default print options

VALUE KINDS (the "note"). Floating draws are made in float32 and then converted to the case's dtype,
so float16 and bfloat16 values are rounded (and a big float16 overflows to inf, which is a case
too), and float64 values have float32's precision, as in the committed file; only grad64 has full
float64 mantissas.
  rand     uniform in [0, 1)                      randn    standard normal
  int      integral: floats in [-20, 20), int16 in [-1000, 1000), int8 and uint8 over their whole
           range; int64 and int32 in [-1000, 1000) or, for one case in four, in [0, 1e6) with two
           elements from [-1000, 1000) among them (columns of very different widths)
  big      randn * 10**k, k in 3..12 per tensor   small    randn * 10**-k, k in 3..9 per tensor
  mixed    randn * 10**k, k in -7..6 per element (fixed and scientific notation meet)
  special  randn with up to 6 elements made nan, inf, -inf, 0 or -0
  bool     True with probability 0, 1/2 or 1 per tensor (all-True, all-False and mixed widths)
  grad     float32 randn, requires_grad=True      grad64   the same in float64
  seed     the fixed tensor [1., 2., 3.]

The cases (which dtype, shape and kind, in which order) are those of the committed file, listed in
PLAN, so a regenerated file has the same 257 cases with fresh draws. Together they cover every
dtype suffix, 0-dim and empty tensors, summarisation past 1000 elements (threshold), 80-column
wrapping, integral floats, scientific notation, nan/inf/-0 and requires_grad.

Run (needs torch):
  python3 tools/gen_print_golden.py [--out FILE] [--seed N]   write the golden file (default: the
                                                               committed one)
  python3 tools/gen_print_golden.py --check FILE              rebuild each case from its values,
      print it with the installed PyTorch, report every case whose text differs; exit status 1 if
      any does, or if a line breaks the format above.
"""
import argparse
import difflib
import json
import math
import os
import sys

import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "io", "golden",
                   "print_public.jsonl")
DEFAULT_SEED = 20221209
KEYS = ["note", "dtype", "shape", "requires_grad", "values", "repr"]

DTYPES = {
    "float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
    "bfloat16": torch.bfloat16, "int64": torch.int64, "int32": torch.int32, "int16": torch.int16,
    "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool,
}
FLOATING = ("float32", "float64", "float16", "bfloat16")

# dtype -> {shape: the kinds drawn for that shape, in order}. Empty shapes print "tensor([], ...)";
# 1001 elements and more are summarised ("..."); [4, 25], [30] and [40, 40] wrap at 80 columns.
PLAN = {
    "float32": {
        (): "rand big", (1,): "rand", (3,): "rand big small special", (5,): "mixed",
        (2, 2): "special", (2, 3): "small", (1, 4): "small", (2, 3, 4): "big small",
        (2, 1, 2, 3): "randn", (30,): "rand mixed", (7, 12): "randn", (0,): "big mixed",
        (0, 3): "int", (2, 0, 2): "rand randn int", (1001,): "randn small",
        (40, 40): "rand randn big small mixed", (3, 20, 20): "int mixed special",
        (11,): "rand big special", (4, 25): "int special",
    },
    "float64": {
        (): "big mixed", (1,): "rand small", (3,): "randn", (5,): "randn int big special",
        (2, 2): "rand big small", (2, 3): "rand int big mixed", (3, 1): "big small mixed",
        (1, 4): "rand randn big small mixed", (2, 3, 4): "mixed", (2, 1, 2, 3): "int big",
        (30,): "randn int big", (7, 12): "rand big small", (0,): "rand big small mixed",
        (2, 0, 2): "rand randn int big mixed", (1001,): "randn int mixed",
        (40, 40): "mixed special", (3, 20, 20): "randn big",
        (11,): "rand randn int mixed special", (4, 25): "rand big mixed special",
    },
    "float16": {
        (): "rand int mixed special", (1,): "randn int mixed", (3,): "rand int big",
        (5,): "int small special", (2, 2): "small", (2, 3): "int special",
        (3, 1): "rand int big special", (1, 4): "int", (2, 3, 4): "rand",
        (2, 1, 2, 3): "rand randn int small", (30,): "small", (0,): "big mixed", (0, 3): "randn",
        (2, 0, 2): "mixed special", (1001,): "rand big", (40, 40): "rand special",
        (3, 20, 20): "rand randn int big", (11,): "randn small", (4, 25): "rand randn big",
    },
    "bfloat16": {
        (): "randn small", (1,): "rand randn mixed", (3,): "randn", (5,): "big", (2, 2): "mixed",
        (2, 3): "big", (2, 3, 4): "randn int special", (2, 1, 2, 3): "randn int small special",
        (30,): "randn int small mixed special", (7, 12): "randn mixed",
        (0,): "rand int mixed special", (0, 3): "big", (2, 0, 2): "rand randn int",
        (1001,): "randn small mixed", (40, 40): "int mixed special", (3, 20, 20): "randn big",
        (11,): "small special", (4, 25): "randn int special",
    },
    "int64": {
        (1,): "int", (5,): "int", (2, 2): "int", (2, 3): "int", (1, 4): "int", (2, 3, 4): "int",
        (30,): "int", (7, 12): "int", (2, 0, 2): "int", (40, 40): "int", (3, 20, 20): "int",
        (11,): "int",
    },
    "int32": {
        (5,): "int", (3, 1): "int", (2, 3, 4): "int", (30,): "int", (7, 12): "int", (0,): "int",
        (2, 0, 2): "int", (4, 25): "int",
    },
    "int16": {
        (): "int", (5,): "int", (2, 3): "int", (1, 4): "int", (2, 3, 4): "int",
        (2, 1, 2, 3): "int", (7, 12): "int", (0,): "int", (0, 3): "int", (2, 0, 2): "int",
        (1001,): "int", (4, 25): "int",
    },
    "int8": {
        (): "int", (1,): "int", (2, 2): "int", (3, 1): "int", (30,): "int", (0,): "int",
        (0, 3): "int", (2, 0, 2): "int", (1001,): "int", (11,): "int", (4, 25): "int",
    },
    "uint8": {
        (1,): "int", (3,): "int", (5,): "int", (2, 2): "int", (2, 3): "int", (0,): "int",
        (0, 3): "int", (3, 20, 20): "int", (4, 25): "int",
    },
    "bool": {
        (3,): "bool", (5,): "bool", (1, 4): "bool", (2, 3, 4): "bool", (30,): "bool",
        (7, 12): "bool", (0, 3): "bool", (2, 0, 2): "bool", (1001,): "bool", (11,): "bool",
        (4, 25): "bool",
    },
}
# Leaves that require grad (the suffix "requires_grad=True"), then the fixed case, last.
GRAD_PLAN = [("grad", (3,)), ("grad64", (3,)), ("grad", (2, 2)), ("grad64", (2, 2)), ("grad", ()),
             ("grad64", ()), ("grad", (2, 3)), ("grad64", (2, 3)), ("seed", (3,))]

SPECIALS = (math.nan, math.inf, -math.inf, 0.0, -0.0)


def use_default_print_options():
    """repr() as a fresh interpreter prints it: precision 4, threshold 1000, edgeitems 3,
    linewidth 80, automatic scientific notation, float32 as the default dtype (no suffix)."""
    torch.set_printoptions(profile="default", sci_mode=None)
    torch.set_default_dtype(torch.float32)


class Draws:
    """Every random choice comes from one seeded torch generator, so a seed gives one file."""

    def __init__(self, seed):
        self.gen = torch.Generator().manual_seed(seed)

    def integer(self, low, high):
        """One integer in [low, high)."""
        return int(torch.randint(low, high, (1,), generator=self.gen))

    def rand(self, shape):
        return torch.rand(shape, generator=self.gen)

    def randn(self, shape, dtype=torch.float32):
        return torch.randn(shape, generator=self.gen, dtype=dtype)

    def randint(self, low, high, shape):
        return torch.randint(low, high, shape, generator=self.gen)

    def positions(self, numel, count):
        """`count` distinct flat indices below numel."""
        return torch.randperm(numel, generator=self.gen)[:count].tolist()


def draw_floating(note, shape, dtype, draws):
    """A float32 draw of kind `note`, converted to `dtype`."""
    if note == "rand":
        t = draws.rand(shape)
    elif note == "randn":
        t = draws.randn(shape)
    elif note == "int":
        t = draws.randint(-20, 20, shape).float()
    elif note == "big":
        t = draws.randn(shape) * 10.0 ** draws.integer(3, 13)
    elif note == "small":
        t = draws.randn(shape) * 10.0 ** -draws.integer(3, 10)
    elif note == "mixed":
        t = draws.randn(shape) * torch.pow(10.0, draws.randint(-7, 7, shape).float())
    elif note == "special":
        t = draws.randn(shape)
        flat = t.view(-1)
        for i in draws.positions(t.numel(), min(t.numel(), 6)):
            flat[i] = SPECIALS[draws.integer(0, len(SPECIALS))]
    else:
        raise ValueError(f"no floating draw of kind {note!r}")
    return t.to(dtype)


def draw_integral(dtype, shape, draws):
    """An "int" draw for an integer dtype."""
    if dtype == torch.int8:
        return draws.randint(-128, 128, shape).to(dtype)
    if dtype == torch.uint8:
        return draws.randint(0, 256, shape).to(dtype)
    if dtype in (torch.int64, torch.int32) and draws.integer(0, 4) == 0:
        t = draws.randint(0, 10**6, shape)
        flat = t.view(-1)
        for i in draws.positions(t.numel(), min(t.numel(), 2)):
            flat[i] = draws.integer(-1000, 1000)
        return t.to(dtype)
    return draws.randint(-1000, 1000, shape).to(dtype)


def draw_bool(shape, draws):
    probability = (0.0, 0.5, 1.0)[draws.integer(0, 3)]
    return draws.rand(shape) < probability


def draw_case(note, dtype_name, shape, draws):
    """The tensor of one case."""
    dtype = DTYPES[dtype_name]
    if note == "grad":
        return draws.randn(shape).requires_grad_(True)
    if note == "grad64":
        return draws.randn(shape, dtype=torch.float64).requires_grad_(True)
    if note == "seed":
        return torch.tensor([1.0, 2.0, 3.0])
    if note == "bool":
        return draw_bool(shape, draws)
    if dtype_name in FLOATING:
        return draw_floating(note, shape, dtype, draws)
    if note != "int":
        raise ValueError(f"no {dtype_name} draw of kind {note!r}")
    return draw_integral(dtype, shape, draws)


def planned_cases():
    """(note, dtype name, shape) of every case, in file order."""
    for dtype_name, shapes in PLAN.items():
        for shape, notes in shapes.items():
            for note in notes.split():
                yield note, dtype_name, shape
    for note, shape in GRAD_PLAN:
        yield note, ("float64" if note == "grad64" else "float32"), shape


def encode_values(t):
    """The elements, row-major, exactly: hex floats, JSON integers or booleans."""
    flat = t.detach().reshape(-1)
    if t.dtype.is_floating_point:
        # Every float dtype converts to float64 exactly; float.hex writes "nan", "inf", "-inf".
        return [float.hex(x) for x in flat.to(torch.float64).tolist()]
    return flat.tolist()  # Python ints, or bools for torch.bool


def record(note, t):
    dtype_name = next(name for name, dtype in DTYPES.items() if dtype == t.dtype)
    return {"note": note, "dtype": dtype_name, "shape": list(t.shape), "requires_grad": t.requires_grad,
            "values": encode_values(t), "repr": repr(t)}


def generate(out, seed):
    use_default_print_options()
    draws = Draws(seed)
    lines = []
    for note, dtype_name, shape in planned_cases():
        t = draw_case(note, dtype_name, shape, draws)
        assert t.dtype == DTYPES[dtype_name] and tuple(t.shape) == shape, (note, dtype_name, shape)
        lines.append(json.dumps(record(note, t)))
    with open(out, "w", encoding="ascii", newline="\n") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {len(lines)} cases to {out} (PyTorch {torch.__version__}, seed {seed})")


class FormatError(Exception):
    pass


def decode_case(case):
    """Rebuilds the tensor a line describes, checking that the line follows the format."""
    if list(case) != KEYS:
        raise FormatError(f"keys {list(case)}, expected {KEYS} in that order")
    if case["dtype"] not in DTYPES:
        raise FormatError(f"unknown dtype {case['dtype']!r}")
    dtype = DTYPES[case["dtype"]]
    shape = case["shape"]
    values = case["values"]
    if not isinstance(shape, list) or not all(isinstance(s, int) and s >= 0 for s in shape):
        raise FormatError(f"bad shape {shape!r}")
    if len(values) != math.prod(shape):
        raise FormatError(f"{len(values)} values for shape {shape}")
    if dtype.is_floating_point:
        if not all(isinstance(v, str) for v in values):
            raise FormatError("a floating value that is not a hex-float string")
        exact = [float.fromhex(v) for v in values]
        t = torch.tensor(exact, dtype=torch.float64).to(dtype)
        # The value must survive the round trip through the dtype, sign of zero included.
        back = [float.hex(x) for x in t.to(torch.float64).tolist()]
        for i, (v, b) in enumerate(zip(values, back)):
            if float.hex(float.fromhex(v)) != b:
                raise FormatError(f"value {i} ({v}) is not exact in {case['dtype']} (it becomes {b})")
    elif dtype == torch.bool:
        if not all(isinstance(v, bool) for v in values):
            raise FormatError("a bool value that is not a JSON boolean")
        t = torch.tensor(values, dtype=torch.bool)
    else:
        info = torch.iinfo(dtype)
        if not all(isinstance(v, int) and not isinstance(v, bool) and info.min <= v <= info.max for v in values):
            raise FormatError(f"a value that is not an integer in {case['dtype']}'s range")
        t = torch.tensor(values, dtype=torch.int64).to(dtype)
    t = t.reshape(shape)
    if not isinstance(case["requires_grad"], bool):
        raise FormatError("requires_grad is not a JSON boolean")
    if case["requires_grad"]:
        if not dtype.is_floating_point:
            raise FormatError(f"requires_grad on a {case['dtype']} tensor")
        t.requires_grad_(True)
    return t


def check(path):
    """Prints each case whose repr differs under the installed PyTorch; returns the exit status."""
    use_default_print_options()
    agree = differ = malformed = 0
    with open(path, encoding="ascii") as f:
        lines = [line for line in f.read().split("\n") if line]
    for index, line in enumerate(lines):
        label = f"case {index}"
        try:
            case = json.loads(line)
            if not isinstance(case, dict):
                raise FormatError("the line is not a JSON object")
            label += f" ({case.get('note')}, {case.get('dtype')}, shape {case.get('shape')})"
            actual = repr(decode_case(case))
        except (json.JSONDecodeError, FormatError) as e:
            malformed += 1
            print(f"{label}: malformed: {e}")
            continue
        if actual == case["repr"]:
            agree += 1
            continue
        differ += 1
        print(f"{label}: PyTorch {torch.__version__} prints it differently")
        diff = difflib.unified_diff(case["repr"].split("\n"), actual.split("\n"), "file", "installed", lineterm="")
        for diff_line in diff:
            print("    " + diff_line)
    print(f"{agree}/{len(lines)} reprs agree with PyTorch {torch.__version__}"
          + (f", {differ} differ" if differ else "") + (f", {malformed} malformed" if malformed else ""))
    return 0 if agree == len(lines) else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=OUT, help="where to write the golden file (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="seed of the draws (default: %(default)s)")
    parser.add_argument("--check", metavar="FILE", help="verify FILE against the installed PyTorch instead of writing")
    args = parser.parse_args()
    if args.check and (args.out != OUT or args.seed != DEFAULT_SEED):
        parser.error("--check reads a file: it takes neither --out nor --seed")
    if args.check:
        return check(args.check)
    generate(args.out, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
