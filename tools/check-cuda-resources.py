#!/usr/bin/env python3
"""Build-time check that every CUDA kernel in a binary can be launched at its largest block size.

For each kernel (entry function) and each GPU architecture whose machine code (a cubin) is in the
given files, the check reads the kernel's registers per thread, its static shared memory and its
launch bound, and fails when

  * registers x threads do not fit the register file one block may use (64 K registers on every
    architecture ember builds for; allocated per warp in units of 256), where "threads" is the
    kernel's __launch_bounds__ maximum, or 1024, the hardware's largest block, for a kernel
    without one (such a kernel must fit any block the hardware allows: nothing at build time
    says which block size its launches use);
  * its static shared memory exceeds the 48 KiB a block may use without opting in;
  * its launch bound exceeds 1024 threads;
  * an architecture named by --archs (CMAKE_CUDA_ARCHITECTURES) has no machine code in the files:
    nothing would have been checked for it.

Why launch bounds: ptxas then limits the kernel's registers to what its bound allows (spilling if
it must), so that the block size the launches use is guaranteed launchable, and the check reads
the bound from the binary instead of guessing it from the launch sites. A launch with more threads
than the bound fails at once with an error instead of running.

Where the numbers come from: the cubins embedded in the files (the `.nv_fatbin` section of objects,
shared libraries and executables; members of static archives; bare .cubin and .fatbin files). A
kernel's register count is its EIATTR_REGCOUNT entry in the cubin's `.nv.info` (older cubins also
keep it in the top byte of the `.text.<kernel>` section's sh_info, which must then agree); its static shared memory is the
size of `.nv.shared.<kernel>` (less the 1 KiB that sm_90 and later place at the front of it when
the cubin has a `.nv.shared.reserved.*` section); its launch bound is EIATTR_MAX_THREADS (or
EIATTR_REQNTID) of `.nv.info.<kernel>`. These are the values `ptxas -v` prints and `cuobjdump
--dump-resource-usage` shows, read directly: cuobjdump is not part of every CUDA installation (pip's
nvidia-cuda-nvcc has none), and ptxas output exists only while compiling.
tests/cuda/check_cuda_resources_test.py compares the numbers with `ptxas -v` for the same kernels.

Compressed cubins (nvcc -Xfatbin=-compress-all) are decompressed with the `zstd` program.

Usage: check-cuda-resources.py [--archs "80-real;90"] [--verbose] FILE...
Exit status 0 when every kernel fits, 1 when one does not (each is named on stderr), 2 on a usage
or file error.
"""

import argparse
import os
import re
import shutil
import struct
import subprocess
import sys

FATBIN_MAGIC = 0xBA55ED50
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
EM_CUDA = 190
STO_CUDA_ENTRY = 0x10  # st_other bit of a kernel's (entry function's) symbol

# Entries of .nv.info sections: a format byte, an attribute byte, then either a 16-bit value or
# (EIFMT_SVAL) a 16-bit size and that many bytes.
EIFMT_SVAL = 0x04
EIATTR_MAX_THREADS = 0x05
EIATTR_REQNTID = 0x10
EIATTR_REGCOUNT = 0x2F

HARDWARE_MAX_THREADS = 1024
STATIC_SHARED_LIMIT = 48 * 1024
RESERVED_SHARED = 1024  # cudaDevAttrReservedSharedMemoryPerBlock on compute capability 8.0 and later
REGISTER_UNIT = 256  # registers are allocated per warp in units of 256 (compute capability 5.0 on)
WARP = 32


class CheckError(Exception):
    """A file that cannot be read as claimed: a usage error, not a kernel over a limit."""


def registers_per_block(arch):
    """The register file one block may use on compute capability `arch` (e.g. 80)."""
    if arch < 50:
        raise CheckError(f"sm_{arch}: architectures before sm_50 are not known to this check")
    return 32768 if arch in (53, 62) else 65536


class Kernel:
    def __init__(self, name, arch, registers, shared, max_threads, origin):
        self.name = name  # mangled
        self.arch = arch
        self.registers = registers
        self.shared = shared  # static shared memory the kernel declares, in bytes
        self.max_threads = max_threads  # the launch bound, or None
        self.origin = origin


# ---------------------------------------------------------------------------------------------
# ELF


class Elf:
    def __init__(self, data, what):
        if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
            raise CheckError(f"{what}: not a 64-bit little-endian ELF file")
        self.data = data
        self.what = what
        (self.machine,) = struct.unpack_from("<H", data, 0x12)
        (self.flags,) = struct.unpack_from("<I", data, 0x30)
        (shoff,) = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
        if shoff + shnum * shentsize > len(data):
            raise CheckError(f"{what}: truncated section table")
        self.sections = []
        for i in range(shnum):
            name, kind, _, _, offset, size, link, info, _, entsize = struct.unpack_from(
                "<IIQQQQIIQQ", data, shoff + i * shentsize)
            self.sections.append({"name_at": name, "type": kind, "offset": offset, "size": size, "link": link,
                                  "info": info, "entsize": entsize})
        names = self.sections[shstrndx] if shstrndx < shnum else None
        for s in self.sections:
            s["name"] = self.string(names, s["name_at"]) if names else ""

    def string(self, table, at):
        start = table["offset"] + at
        end = self.data.find(b"\0", start)
        return self.data[start:end].decode("utf-8", "replace")

    def contents(self, section):
        if section["type"] == 8:  # SHT_NOBITS (.nv.shared.*): a size, no bytes
            return b""
        end = section["offset"] + section["size"]
        if end > len(self.data):
            raise CheckError(f"{self.what}: section {section['name']} runs past the end of the file")
        return self.data[section["offset"]:end]

    def by_name(self):
        return {s["name"]: s for s in self.sections}

    def symbols(self):
        for s in self.sections:
            if s["type"] != 2:  # SHT_SYMTAB
                continue
            strings = self.sections[s["link"]]
            body = self.contents(s)
            for at in range(0, len(body) - 23, 24):
                name, info, other, shndx, _, _ = struct.unpack_from("<IBBHQQ", body, at)
                yield self.string(strings, name), info, other, shndx


def nv_info_entries(body, what):
    """(attribute, value bytes) of each entry of a .nv.info section."""
    at = 0
    while at + 4 <= len(body):
        fmt, attr = body[at], body[at + 1]
        if fmt == EIFMT_SVAL:
            (size,) = struct.unpack_from("<H", body, at + 2)
            if at + 4 + size > len(body):
                raise CheckError(f"{what}: a .nv.info entry runs past its section")
            yield attr, body[at + 4:at + 4 + size]
            at += 4 + size
        else:
            yield attr, body[at + 2:at + 4]
            at += 4


def cubin_kernels(data, origin):
    """The kernels of one cubin, as Kernel objects."""
    elf = Elf(data, origin)
    if elf.machine != EM_CUDA:
        raise CheckError(f"{origin}: an ELF file of machine {elf.machine}, not a cubin")
    arch = (elf.flags >> 8) & 0xFF
    sections = elf.by_name()
    reserved = any(name.startswith(".nv.shared.reserved.") for name in sections)
    symbols = list(elf.symbols())

    regcount = {}  # symbol index -> registers, from the cubin-wide .nv.info
    if ".nv.info" in sections:
        for attr, value in nv_info_entries(elf.contents(sections[".nv.info"]), origin):
            if attr == EIATTR_REGCOUNT and len(value) >= 8:
                index, registers = struct.unpack_from("<II", value)
                regcount[index] = registers

    kernels = []
    for index, (name, info, other, shndx) in enumerate(symbols):
        if info & 0xF != 2 or not other & STO_CUDA_ENTRY:  # a FUNC that is an entry point
            continue
        text = sections.get(".text." + name)
        if text is None:
            raise CheckError(f"{origin}: kernel {name} has no .text section")
        # Older cubins keep the count in the top byte of the .text section's sh_info as well; sm_90
        # cubins of CUDA 13 only in EIATTR_REGCOUNT.
        in_text = text["info"] >> 24
        if index in regcount:
            registers = regcount[index]
            if in_text not in (0, registers):
                raise CheckError(f"{origin}: kernel {name}: EIATTR_REGCOUNT says {registers} registers, its "
                                 f".text section {in_text}; this check does not understand this cubin")
        elif in_text:
            registers = in_text
        else:
            raise CheckError(f"{origin}: kernel {name} (sm_{arch}): no register count found in the cubin")
        shared_section = sections.get(".nv.shared." + name)
        shared = shared_section["size"] if shared_section else 0
        if reserved and shared_section and arch >= 80:
            shared = max(0, shared - RESERVED_SHARED)
        bounds = []
        info_section = sections.get(".nv.info." + name)
        if info_section is not None:
            for attr, value in nv_info_entries(elf.contents(info_section), origin):
                if attr in (EIATTR_MAX_THREADS, EIATTR_REQNTID) and len(value) >= 12:
                    x, y, z = struct.unpack_from("<III", value)
                    bounds.append(x * y * z)
        kernels.append(Kernel(name, arch, registers, shared, min(bounds) if bounds else None, origin))
    return kernels


# ---------------------------------------------------------------------------------------------
# Containers: fatbins, host ELF files, static archives


def decompress(payload, what):
    zstd = shutil.which("zstd")
    if zstd is None:
        raise CheckError(f"{what}: the cubin is compressed (zstd) and the `zstd` program is not installed "
                         "(Debian: apt-get install zstd)")
    result = subprocess.run([zstd, "-dc"], input=payload, capture_output=True, check=False)
    if result.returncode != 0:
        raise CheckError(f"{what}: zstd could not decompress the cubin: {result.stderr.decode().strip()}")
    return result.stdout


def fatbin_cubins(data, origin):
    """The cubins of one or more fatbins laid end to end (as the linker concatenates them)."""
    cubins = []
    at = 0
    while at + 16 <= len(data):
        (magic,) = struct.unpack_from("<I", data, at)
        if magic != FATBIN_MAGIC:
            if data[at:at + 8] == bytes(8):  # alignment padding between fatbins
                at += 8
                continue
            raise CheckError(f"{origin}: unexpected bytes at offset {at} of the fatbin section")
        _, header_size, body_size = struct.unpack_from("<HHQ", data, at + 4)
        entry = at + header_size
        end = entry + body_size
        if end > len(data):
            raise CheckError(f"{origin}: truncated fatbin")
        while entry < end:
            kind, _, entry_header, payload_size = struct.unpack_from("<HHIQ", data, entry)
            (compressed_size,) = struct.unpack_from("<Q", data, entry + 0x10)
            payload = data[entry + entry_header:entry + entry_header + payload_size]
            if kind == 2:  # machine code (1 is PTX, which has no register counts yet)
                if payload[:4] == ZSTD_MAGIC:
                    payload = decompress(payload[:compressed_size or len(payload)], origin)
                elif payload[:4] != b"\x7fELF":
                    raise CheckError(f"{origin}: a cubin in a format this check does not know (compressed "
                                     "other than with zstd?); build without -Xfatbin=-compress-all")
                cubins.append(payload)
            if entry_header < 16:
                raise CheckError(f"{origin}: malformed fatbin entry")
            entry += entry_header + payload_size
        at = (end + 7) // 8 * 8
    return cubins


def archive_members(data, origin):
    """(name, bytes) of each member of a static library."""
    at = 8
    long_names = b""
    while at + 60 <= len(data):
        header = data[at:at + 60]
        name = header[:16].decode("ascii", "replace").strip()
        size = int(header[48:58].decode("ascii").strip() or 0)
        body = data[at + 60:at + 60 + size]
        if name == "//":
            long_names = body
        elif name not in ("/", "/SYM64/"):
            if name.startswith("/") and name[1:].isdigit():
                start = int(name[1:])
                name = long_names[start:long_names.index(b"/\n", start)].decode("utf-8", "replace")
            yield name.rstrip("/"), body
        if at + 60 + size > len(data):
            raise CheckError(f"{origin}: truncated archive member {name}")
        at += 60 + size + (size & 1)


def file_kernels(data, origin):
    if data[:8] == b"!<arch>\n":
        kernels = []
        for name, body in archive_members(data, origin):
            if body[:4] == b"\x7fELF":
                kernels += file_kernels(body, f"{origin}({name})")
        return kernels
    if len(data) >= 4 and struct.unpack_from("<I", data)[0] == FATBIN_MAGIC:
        cubins = fatbin_cubins(data, origin)
    else:
        elf = Elf(data, origin)
        if elf.machine == EM_CUDA:
            return cubin_kernels(data, origin)
        cubins = []
        for section in elf.sections:
            # .nv_fatbin: whole-program device code; __nv_relfatbin: relocatable (-rdc) objects.
            if section["name"] in (".nv_fatbin", "__nv_relfatbin"):
                cubins += fatbin_cubins(elf.contents(section), origin)
    kernels = []
    for cubin in cubins:
        kernels += cubin_kernels(cubin, origin)
    return kernels


# ---------------------------------------------------------------------------------------------
# The check


def requested_archs(spec):
    """The real architectures of a CMAKE_CUDA_ARCHITECTURES value ("80-real;90" -> {80, 90}).

    Entries ending in -virtual produce PTX only; "native", "all" and "all-major" name no fixed
    architecture and are skipped."""
    archs = set()
    for item in re.split(r"[;,\s]+", spec.strip()):
        if not item or item.endswith("-virtual") or item in ("native", "all", "all-major", "OFF"):
            continue
        match = re.fullmatch(r"(\d+)[a-z]?(-real)?", item)
        if not match:
            raise CheckError(f"--archs: cannot read architecture '{item}'")
        archs.add(int(match.group(1)))
    return archs


def demangle(names):
    cxxfilt = shutil.which("c++filt")
    if not cxxfilt or not names:
        return {n: n for n in names}
    result = subprocess.run([cxxfilt], input="\n".join(names) + "\n", capture_output=True, text=True, check=False)
    lines = result.stdout.splitlines()
    if result.returncode != 0 or len(lines) != len(names):
        return {n: n for n in names}
    return dict(zip(names, lines))


def problems_of(kernel, pretty):
    """The limits `kernel` breaks, each as one line naming it."""
    where = f"kernel {pretty} (sm_{kernel.arch}, {kernel.origin})"
    problems = []
    limit = registers_per_block(kernel.arch)
    threads = kernel.max_threads if kernel.max_threads is not None else HARDWARE_MAX_THREADS
    block = "its __launch_bounds__" if kernel.max_threads is not None else (
        "the largest block the hardware allows: it has no __launch_bounds__")
    if threads > HARDWARE_MAX_THREADS:
        problems.append(f"{where}: its __launch_bounds__ of {threads} threads exceeds the hardware's "
                        f"{HARDWARE_MAX_THREADS} threads per block")
    per_warp = -(-kernel.registers * WARP // REGISTER_UNIT) * REGISTER_UNIT
    allocated = per_warp * -(-threads // WARP)
    if allocated > limit:
        problems.append(
            f"{where}: {kernel.registers} registers x {threads} threads ({block}) = "
            f"{kernel.registers * threads} registers, {allocated} as allocated per warp in units of "
            f"{REGISTER_UNIT}, over the limit of {limit} registers per block; give it __launch_bounds__ "
            f"with the block size its launches use, or lower that block size")
    if kernel.shared > STATIC_SHARED_LIMIT:
        problems.append(f"{where}: {kernel.shared} bytes of static shared memory, over the limit of "
                        f"{STATIC_SHARED_LIMIT} bytes per block")
    return problems


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", help="objects, shared or static libraries, executables, cubins, fatbins")
    parser.add_argument("--archs", default="", help="CMAKE_CUDA_ARCHITECTURES: each real architecture named must "
                        "have machine code in the files")
    parser.add_argument("--verbose", "-v", action="store_true", help="print every kernel's numbers")
    args = parser.parse_args(argv)
    try:
        wanted = requested_archs(args.archs)
        kernels = []
        for path in args.files:
            try:
                with open(path, "rb") as f:
                    data = f.read()
            except OSError as e:
                raise CheckError(f"{path}: {e.strerror}") from e
            kernels += file_kernels(data, os.path.basename(path))
        found = {k.arch for k in kernels}
        for k in kernels:
            registers_per_block(k.arch)  # an unknown architecture is an error, not a pass
    except CheckError as e:
        print(f"check-cuda-resources: error: {e}", file=sys.stderr)
        return 2

    failures = []
    if not kernels:
        failures.append("no CUDA kernel (no machine code) was found in " + ", ".join(args.files) +
                        ": nothing was checked")
    for arch in sorted(wanted - found):
        if kernels:
            failures.append(f"no sm_{arch} machine code was found although --archs names it: nothing was "
                            f"checked for sm_{arch}")
    pretty = demangle(sorted({k.name for k in kernels}))
    seen = set()
    unbounded = set()
    for k in sorted(kernels, key=lambda k: (k.arch, pretty[k.name])):
        key = (k.name, k.arch, k.registers, k.shared, k.max_threads)
        if key in seen:  # a template instantiated in several translation units
            continue
        seen.add(key)
        if k.max_threads is None:
            unbounded.add(k.name)
        if args.verbose:
            bound = k.max_threads if k.max_threads is not None else "-"
            print(f"sm_{k.arch} REG:{k.registers:<3} THREADS:{bound!s:<5} SHARED:{k.shared:<6} {pretty[k.name]}")
        failures += problems_of(k, pretty[k.name])

    for line in failures:
        print(f"check-cuda-resources: FAILED: {line}", file=sys.stderr)
    if failures:
        return 1
    archs = ", ".join(f"sm_{a}" for a in sorted(found))
    print(f"check-cuda-resources: {len({k.name for k in kernels})} kernels ({archs}) within the limits of a block: "
          f"registers x threads <= 64K, static shared memory <= 48 KiB; {len(unbounded)} without __launch_bounds__ "
          f"fit {HARDWARE_MAX_THREADS} threads")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
