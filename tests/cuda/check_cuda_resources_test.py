#!/usr/bin/env python3
"""Tests of tools/check-cuda-resources.py on small kernels that nvcc compiles here (no GPU needed).

The check must pass on kernels within the limits and report the registers and static shared memory
that `ptxas -v` prints for them; fail, naming the kernel, its registers, its block size and the
limit, on a kernel over the register limit; fail on static shared memory over 48 KiB (a cubin whose
shared section is enlarged by hand: ptxas itself refuses such a kernel); fail when an architecture
of --archs has no machine code; and read objects, static and shared libraries and compressed
fatbins alike.

Usage: check_cuda_resources_test.py --nvcc PATH --script tools/check-cuda-resources.py
"""

import argparse
import importlib.util
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

ARGS = None
GENCODE = ["-gencode", "arch=compute_80,code=sm_80", "-gencode", "arch=compute_90,code=[sm_90,compute_90]"]

# Within the limits: a bounded kernel with shared memory, one just under 48 KiB of shared memory
# (on sm_90 its shared section also holds the 1 KiB the system reserves), an unbounded kernel with
# few registers, and a heavy kernel whose launch bound makes ptxas spill to stay within 64 registers.
FITS_CU = r"""
__global__ void __launch_bounds__(256) bounded(float* x) {
  __shared__ float s[1000];
  s[threadIdx.x] = x[threadIdx.x];
  __syncthreads();
  x[threadIdx.x] = s[255 - threadIdx.x];
}
__global__ void __launch_bounds__(128) near_shared_limit(float* x) {
  __shared__ float s[12160];
  for (int i = threadIdx.x; i < 12160; i += 128) s[i] = x[i];
  __syncthreads();
  x[threadIdx.x] = s[12159 - threadIdx.x];
}
__global__ void unbounded(float* x, int n) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) x[i] = x[i] * 2;
}
template <int N>
__global__ void __launch_bounds__(1024) spilling(double* x) {
  double acc[N];
#pragma unroll
  for (int i = 0; i < N; ++i) acc[i] = x[threadIdx.x + i * 1024];
#pragma unroll
  for (int k = 0; k < 8; ++k)
#pragma unroll
    for (int i = 0; i < N; ++i) acc[i] = acc[i] * acc[(i + k) % N] + 1.0;
  double s = 0;
#pragma unroll
  for (int i = 0; i < N; ++i) s += acc[i];
  x[threadIdx.x] = s;
}
template __global__ void spilling<40>(double*);
"""

# Over the limit: the same heavy kernel without launch bounds needs more than 64 registers, so a
# block of 1024 threads, which nothing forbids its launches to use, cannot be launched.
HEAVY_CU = r"""
__global__ void __launch_bounds__(256) bounded(float* x) { x[threadIdx.x] += 1; }
template <int N>
__global__ void too_many_registers(double* x) {
  double acc[N];
#pragma unroll
  for (int i = 0; i < N; ++i) acc[i] = x[threadIdx.x + i * 1024];
#pragma unroll
  for (int k = 0; k < 8; ++k)
#pragma unroll
    for (int i = 0; i < N; ++i) acc[i] = acc[i] * acc[(i + k) % N] + 1.0;
  double s = 0;
#pragma unroll
  for (int i = 0; i < N; ++i) s += acc[i];
  x[threadIdx.x] = s;
}
template __global__ void too_many_registers<40>(double*);
"""


def load_script():
    spec = importlib.util.spec_from_file_location("check_cuda_resources", ARGS.script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def ptxas_report(stderr):
    """{(mangled kernel, arch): (registers, shared bytes)} from nvcc -Xptxas -v output."""
    report = {}
    current = None
    for line in stderr.splitlines():
        m = re.search(r"Compiling entry function '([^']+)' for 'sm_(\d+)'", line)
        if m:
            current = (m.group(1), int(m.group(2)))
            continue
        m = re.search(r"Used (\d+) registers", line)
        if m and current:
            shared = re.search(r"(\d+) bytes smem", line)
            report[current] = (int(m.group(1)), int(shared.group(1)) if shared else 0)
            current = None
    return report


class CheckCudaResourcesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="check-cuda-resources-")
        cls.check = load_script()
        cls.fits_o, cls.fits_ptxas = cls.compile("fits", FITS_CU, ["-c", "-Xcompiler=-fPIC"])
        cls.heavy_o, cls.heavy_ptxas = cls.compile("heavy", HEAVY_CU, ["-c"])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    @classmethod
    def compile(cls, name, source, flags, gencode=GENCODE, suffix=".o"):
        cu = os.path.join(cls.dir, name + ".cu")
        with open(cu, "w") as f:
            f.write(source)
        out = os.path.join(cls.dir, name + suffix)
        result = subprocess.run([ARGS.nvcc, *gencode, "-Xptxas", "-v", *flags, cu, "-o", out], capture_output=True,
                                text=True, check=False)
        if result.returncode != 0:
            raise AssertionError(f"nvcc failed on {name}.cu:\n{result.stderr}")
        return out, ptxas_report(result.stderr)

    def run_check(self, *args):
        return subprocess.run([sys.executable, ARGS.script, *args], capture_output=True, text=True, check=False)

    def kernels(self, path):
        with open(path, "rb") as f:
            return {(k.name, k.arch): k for k in self.check.file_kernels(f.read(), os.path.basename(path))}

    def test_numbers_are_those_ptxas_prints(self):
        kernels = self.kernels(self.fits_o)
        self.assertEqual(set(kernels), set(self.fits_ptxas), "the same kernels and architectures as ptxas compiled")
        for key, (registers, shared) in self.fits_ptxas.items():
            self.assertEqual((kernels[key].registers, kernels[key].shared), (registers, shared), key)
        bounds = {name: k.max_threads for (name, arch), k in kernels.items() if arch == 80}
        self.assertEqual(bounds, {"_Z7boundedPf": 256, "_Z17near_shared_limitPf": 128, "_Z9unboundedPfi": None,
                                  "_Z8spillingILi40EEvPd": 1024})

    def test_passes_within_limits(self):
        result = self.run_check("--archs=80-real;90", "--verbose", self.fits_o)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("4 kernels (sm_80, sm_90)", result.stdout)
        self.assertIn("1 without __launch_bounds__", result.stdout)
        self.assertRegex(result.stdout, r"sm_90 REG:\d+ +THREADS:128 +SHARED:48640 +near_shared_limit")

    def test_fails_on_registers_over_the_limit(self):
        key = ("_Z18too_many_registersILi40EEvPd", 80)
        registers = self.heavy_ptxas[key][0]
        self.assertGreater(registers, 64, "the test kernel must need more than 64 registers to be over the limit")
        result = self.run_check("--archs=80-real;90", self.heavy_o)
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        failures = [line for line in result.stderr.splitlines() if "FAILED" in line]
        self.assertEqual(len(failures), 2, result.stderr)  # sm_80 and sm_90; the bounded kernel passes
        self.assertIn("too_many_registers<40>", failures[0])
        self.assertIn(f"(sm_80, heavy.o): {registers} registers x 1024 threads", failures[0])
        self.assertIn("no __launch_bounds__", failures[0])
        self.assertIn("over the limit of 65536 registers per block", failures[0])

    def test_fails_on_static_shared_memory_over_the_limit(self):
        cubin, _ = self.compile("shared", FITS_CU, ["-cubin"], gencode=["-arch=sm_80"], suffix=".cubin")
        with open(cubin, "rb") as f:
            data = bytearray(f.read())
        # Enlarge bounded()'s .nv.shared section to 48 KiB + 4 bytes in the section table.
        elf = self.check.Elf(bytes(data), "shared.cubin")
        (shoff,) = struct.unpack_from("<Q", data, 0x28)
        (shentsize,) = struct.unpack_from("<H", data, 0x3A)
        index = [s["name"] for s in elf.sections].index(".nv.shared._Z7boundedPf")
        struct.pack_into("<Q", data, shoff + index * shentsize + 0x20, 49156)
        with open(cubin, "wb") as f:
            f.write(data)
        result = self.run_check(cubin)
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        self.assertIn("kernel bounded(float*) (sm_80, shared.cubin): 49156 bytes of static shared memory, over the "
                      "limit of 49152 bytes per block", result.stderr)

    def test_fails_when_an_architecture_has_no_code(self):
        result = self.run_check("--archs=80-real;90;100-real", self.fits_o)
        self.assertEqual(result.returncode, 1)
        self.assertIn("no sm_100 machine code was found", result.stderr)
        # PTX-only entries and "native" name no machine code to look for.
        self.assertEqual(self.run_check("--archs=80-real;90;120-virtual;native", self.fits_o).returncode, 0)

    def test_fails_on_a_file_without_device_code(self):
        host = os.path.join(self.dir, "host.cpp")
        with open(host, "w") as f:
            f.write("int host_only() { return 1; }\n")
        subprocess.run([ARGS.nvcc, "-c", host, "-o", host + ".o"], check=True)
        result = self.run_check(host + ".o")
        self.assertEqual(result.returncode, 1)
        self.assertIn("no CUDA kernel", result.stderr)

    def test_reads_libraries_and_compressed_code(self):
        expected = {key: (k.registers, k.shared, k.max_threads) for key, k in self.kernels(self.fits_o).items()}
        archive = os.path.join(self.dir, "libfits.a")
        subprocess.run(["ar", "rcs", archive, self.fits_o], check=True)
        shared = os.path.join(self.dir, "libfits.so")
        # No CUDA runtime in it: a plain -shared links the toolkit's libcudart_static.a, which a
        # toolkit whose runtime comes from pip's wheel lacks.
        subprocess.run([ARGS.nvcc, "-shared", "-cudart", "none", self.fits_o, "-o", shared], check=True)
        for path in (archive, shared):
            got = {key: (k.registers, k.shared, k.max_threads) for key, k in self.kernels(path).items()}
            self.assertEqual(got, expected, path)
            self.assertEqual(self.run_check("--archs=80-real;90", path).returncode, 0, path)
        compressed, _ = self.compile("compressed", FITS_CU, ["-c", "-Xfatbin=-compress-all"])
        if shutil.which("zstd"):
            got = {key: (k.registers, k.shared, k.max_threads) for key, k in self.kernels(compressed).items()}
            self.assertEqual(got, expected)
        else:  # without the zstd program the check says so instead of passing
            result = self.run_check(compressed)
            self.assertEqual(result.returncode, 2)
            self.assertIn("zstd", result.stderr)

    def test_unknown_arguments_are_errors(self):
        self.assertEqual(self.run_check("--archs=eighty", self.fits_o).returncode, 2)
        self.assertEqual(self.run_check(os.path.join(self.dir, "missing.o")).returncode, 2)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--nvcc", required=True)
    parser.add_argument("--script", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2)
