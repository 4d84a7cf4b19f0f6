# shellcheck shell=bash
# Sourced by tools/gpu-check.sh: what the machine has, and how to build on a machine that has none
# of ember's Debian dependencies. The lent GPU machine is such a machine: a CUDA image (nvcc, g++,
# CMake, ninja, python3 with pip's nvidia-* packages), offline, reached with only the working tree
# and a few carried folders. tools/gpu-bundle.sh packs the dependencies for it (.gpu-bundle/).
#
# Defines:
#   record_machine             prints the OS, compilers, tools and the CUDA libraries it can find
#   use_bundle DIR             unpacks DIR/deps.tar.gz once (into DIR/root), exports LD_LIBRARY_PATH
#                              and appends the matching CMake settings to CONFIGURE_EXTRA
#   check_libraries BUILD      checks that what the build made finds the libraries it links
# The CUDA libraries themselves are found by cmake/EmberCuda.cmake: beside nvcc, else in pip's
# nvidia-* wheels of python3.
# CONFIGURE_EXTRA (an array) must exist before these run.

# The CUDA toolkit's root: the folder above the nvcc on PATH, else $CUDA_HOME or /usr/local/cuda.
cuda_root() {
  local nvcc
  nvcc=$(command -v nvcc || true)
  if [[ -n $nvcc ]]; then
    dirname "$(dirname "$(readlink -f "$nvcc")")"
  else
    echo "${CUDA_HOME:-/usr/local/cuda}"
  fi
}

# The folders nvidia/ of pip's nvidia-* wheels that python3 sees, one a line (what
# cmake/EmberCuda.cmake asks too, when the toolkit lacks a CUDA library).
pip_nvidia_dirs() {
  command -v python3 >/dev/null || return 0
  python3 -c "import importlib.util as u; s = u.find_spec('nvidia'); print('\n'.join(s.submodule_search_locations or []) if s else '')" 2>/dev/null || true
}

record_machine() {
  local tool
  echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "kernel: $(uname -srm)"
  [[ -r /etc/os-release ]] && echo "os: $(. /etc/os-release && echo "${PRETTY_NAME:-unknown}")"
  echo "cpus: $(nproc); memory: $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)"
  echo "C library: $(ldd --version 2>&1 | head -1)"
  for tool in g++ nvcc cmake ninja python3 compute-sanitizer nvidia-smi mpirun pkg-config; do
    if command -v "$tool" >/dev/null; then
      echo "$tool: $(command -v "$tool"): $(timeout 5 "$tool" --version 2>&1 | grep -m1 -E '[0-9]+\.[0-9]+' || echo '?')"
    else
      echo "$tool: not found"
    fi
  done
  echo "CUDA toolkit root: $(cuda_root)"
  echo "libraries the loader's cache knows, where the file is there (cudart, cudnn, cublas, nccl, dnnl, openblas, cairo):"
  ldconfig -p 2>/dev/null | grep -E 'libcudart|libcudnn\.so|libcublas(Lt)?\.so|libnccl\.so|libdnnl|libopenblas|libcairo\.so' |
    while read -r line; do [[ -e ${line##*=> } ]] && echo "  $line"; done
  find "$(cuda_root)"/ -maxdepth 4 \( -name 'libcudart*' -o -name 'libcudnn.so*' -o -name 'libcublas*.so*' \
    -o -name 'cudnn.h' -o -name 'cublas_v2.h' \) 2>/dev/null | sort | sed 's/^/  in the toolkit: /' || true
  local dir
  echo "pip's nvidia-* wheels of $(command -v python3 || echo 'no python3'):"
  while IFS= read -r dir; do
    [[ -n $dir ]] || continue
    find "$dir"/ -maxdepth 3 \( -name 'libcudart*' -o -name 'libcudnn.so*' -o -name 'libcublas*.so*' \
      -o -name 'cudnn.h' -o -name 'cublas_v2.h' \) 2>/dev/null | sort | sed 's/^/  /'
  done < <(pip_nvidia_dirs)
  command -v python3 >/dev/null && timeout 10 python3 -m pip list 2>/dev/null | grep -iE '^(nvidia-|torch )' | sed 's/^/  pip: /'
  return 0
}

# check_libraries BUILD: every program and library that the build made finds each library it
# links (the CUDA driver aside: the static runtime loads it at run time), and the CUDA backend
# loads with all its symbols bound, as libember does when a driver is present.
check_libraries() {
  local build=$1 file bad=0 missing
  for file in "$build"/ember "$build"/lib*.so "$build"/tests/ember_tests; do
    [[ -f $file ]] || continue
    echo "== $file"
    ldd "$file" | grep -E 'not found|cudart|cublas|cudnn|nccl|dnnl|openblas|libember' | sed 's/^/  /'
    missing=$(ldd "$file" | grep 'not found' | grep -v 'libcuda\.so')
    if [[ -n $missing ]]; then
      echo "  MISSING: $missing"
      bad=1
    fi
  done
  if [[ -f $build/libember_cuda.so ]]; then
    if python3 -c 'import ctypes, os, sys; ctypes.CDLL(sys.argv[1], mode=os.RTLD_NOW)' "$build/libember_cuda.so"; then
      echo "$build/libember_cuda.so loads (every symbol bound)"
    else
      echo "$build/libember_cuda.so does not load"
      bad=1
    fi
  fi
  return $bad
}

use_bundle() {
  local dir root lib
  dir=$(cd "$1" && pwd)
  root=$dir/root/usr
  lib=$root/lib/x86_64-linux-gnu
  if [[ ! -f $dir/root/.unpacked || $dir/deps.tar.gz -nt $dir/root/.unpacked ]]; then
    rm -rf "$dir/root"
    mkdir -p "$dir/root"
    tar -xzf "$dir/deps.tar.gz" -C "$dir/root" || return 1
    touch "$dir/root/.unpacked"
  fi
  # The bundled libraries find each other (libdnnl needs libOpenCL, OpenBLAS needs libgfortran)
  # through the loader's path, at link time and at run time.
  export LD_LIBRARY_PATH=$lib:$lib/openblas-openmp${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  CONFIGURE_EXTRA+=(
    -DCMAKE_PREFIX_PATH="$root"
    -DOpenBLAS_DIR="$lib/openblas-openmp/cmake/openblas"
    -Dnlohmann_json_DIR="$root/share/cmake/nlohmann_json"
    -DCLI11_DIR="$root/share/cmake/CLI11"
    -DEMBER_DNNL_INCLUDE_DIR="$root/include"
    -DEMBER_DNNL_LIBRARY="$lib/libdnnl.so"
    -DZLIB_INCLUDE_DIR="$root/include"
    -DZLIB_LIBRARY="$lib/libz.so"
    -DEMBER_GTEST_SOURCE_DIR="$root/src/googletest"
  )
  echo "bundle: $dir (LD_LIBRARY_PATH=$LD_LIBRARY_PATH)"
  printf '  %s\n' "${CONFIGURE_EXTRA[@]}"
}
