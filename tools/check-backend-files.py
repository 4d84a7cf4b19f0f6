#!/usr/bin/env python3
"""Checks that the backends' files mirror each other by op family (docs/ARCHITECTURE.md).

src/backend/entry_points.def declares every kernel entry point once, with its family:
EMBER_BACKEND_ENTRY(family, name, (parameters), (arguments)). Each family's kernels live in files
named after it, src/backend/cpu/<family>.cpp and src/backend/cuda/<family>.cu (or .cpp, for a
family that calls a vendor library from host code), so that a newcomer finds an op's kernels on
every backend under one name. This check fails when a family's file is missing, when an entry
point is not defined in its family's file, or when it is defined in another file.

Usage: tools/check-backend-files.py [REPOSITORY_ROOT] [--cpu-only]
       tools/check-backend-files.py --self-test
--cpu-only skips the CUDA backend (a checkout without src/backend/cuda/).
"""
import re
import sys
import tempfile
from pathlib import Path

ENTRY = re.compile(r"^EMBER_BACKEND_ENTRY\(\s*(\w+)\s*,\s*(\w+)\s*,", re.MULTILINE)
BACKENDS = [("cpu", "CpuBackend", (".cpp",)), ("cuda", "CudaBackend", (".cu", ".cpp"))]


def entries(root):
    text = (root / "src" / "backend" / "entry_points.def").read_text(encoding="utf-8")
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))
    return [(m.group(1), m.group(2)) for m in ENTRY.finditer(text)]


def check(root, backends):
    found = entries(root)
    family_of = {name: family for family, name in found}
    problems = []
    for folder, cls, suffixes in backends:
        base = root / "src" / "backend" / folder
        definitions = {}  # entry point -> files that define it
        for path in sorted(p for p in base.iterdir() if p.suffix in (".cpp", ".cu")):
            for name in set(re.findall(rf"\b{cls}::(\w+)\s*\(", path.read_text(encoding="utf-8"))):
                definitions.setdefault(name, []).append(path)
        for family in sorted({f for f, _ in found}):
            if not any((base / (family + s)).exists() for s in suffixes):
                problems.append(f"src/backend/{folder}/{family}{suffixes[0]}: missing (the {family} family's "
                                f"kernels on this backend)")
        for name, family in family_of.items():
            files = definitions.get(name, [])
            home = [p for p in files if p.stem == family]
            if not home:
                problems.append(f"{cls}::{name} is not defined in src/backend/{folder}/{family}.* "
                                f"(its family, entry_points.def)")
            for stray in (p for p in files if p.stem != family):
                problems.append(f"{stray.relative_to(root).as_posix()}: defines {cls}::{name}, which belongs to "
                                f"the {family} family's file")
    if problems:
        print("the backends' files do not mirror entry_points.def's families:")
        for problem in problems:
            print("  " + problem)
        return len(problems)
    names = ", ".join(f"{folder}/" for folder, _, _ in backends)
    print(f"backend files: {len(found)} entry points in {len({f for f, _ in found})} families, "
          f"each in its family's file under {names}")
    return 0


def self_test():
    """One family whose CPU file is right, whose CUDA kernel sits in another family's file, and
    one family with no CPU file: the check must report exactly those two problems."""
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        files = {
            "src/backend/entry_points.def": "// comment EMBER_BACKEND_ENTRY(ignored, x,\n"
                                            "EMBER_BACKEND_ENTRY(copy, fill, (int a), (a))\n"
                                            "EMBER_BACKEND_ENTRY(pool, pool2d, (int a), (a))\n",
            "src/backend/cpu/copy.cpp": "void CpuBackend::fill(int a) {}\n",
            "src/backend/cuda/copy.cu": "void CudaBackend::fill(int a) {}\nvoid CudaBackend::pool2d(int) {}\n",
            "src/backend/cuda/pool.cu": "",
        }
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        failed = check(root, BACKENDS)
    # cpu/pool.cpp missing, CpuBackend::pool2d nowhere, CudaBackend::pool2d not in pool.cu and
    # defined in copy.cu.
    if failed != 4:
        print(f"self-test: expected 4 problems, the check reported {failed}")
        return 1
    print("self-test: the check reports a missing family file, a missing kernel and a kernel in the wrong file")
    return 0


def main():
    args = sys.argv[1:]
    if args == ["--self-test"]:
        return self_test()
    cpu_only = "--cpu-only" in args
    args = [a for a in args if a != "--cpu-only"]
    root = Path(args[0]) if args else Path(__file__).resolve().parent.parent
    backends = BACKENDS[:1] if cpu_only or not (root / "src" / "backend" / "cuda").is_dir() else BACKENDS
    return 1 if check(root, backends) else 0


if __name__ == "__main__":
    sys.exit(main())
