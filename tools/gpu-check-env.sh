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
#   find_cudnn                 when cuDNN is not beside the CUDA toolkit, looks for pip's
#                              nvidia-cudnn wheel and appends its paths to CONFIGURE_EXTRA
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

# The folder of pip's nvidia-cudnn wheel (nvidia/cudnn, with include/ and lib/), or nothing.
pip_cudnn_dir() {
  command -v python3 >/dev/null || return 0
  python3 - 2>/dev/null <<'EOF' || true
import importlib.util, os
spec = importlib.util.find_spec("nvidia.cudnn")
for root in (spec.submodule_search_locations or []) if spec else []:
    if os.path.isfile(os.path.join(root, "include", "cudnn.h")):
        print(root)
        break
EOF
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
      echo "$tool: $(command -v "$tool"): $("$tool" --version 2>&1 | grep -m1 -E '[0-9]+\.[0-9]+' || echo '?')"
    else
      echo "$tool: not found"
    fi
  done
  echo "CUDA toolkit root: $(cuda_root)"
  echo "cuDNN from pip: $(pip_cudnn_dir)"
  echo "libraries the loader knows (cudnn, cublas, nccl, dnnl, openblas, cairo):"
  ldconfig -p 2>/dev/null | grep -E 'libcudnn\.so|libcublas(Lt)?\.so|libnccl\.so|libdnnl|libopenblas|libcairo\.so' | sed 's/^/  /' || true
  find "$(cuda_root)" -maxdepth 4 \( -name 'libcudnn.so*' -o -name 'libcublas.so*' -o -name 'cudnn.h' \) 2>/dev/null |
    sed 's/^/  in the toolkit: /' || true
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
  # PyTorch's printed outputs, which ../shared holds beside a checkout but which do not travel.
  if [[ ! -d ../shared/golden && -d $dir/shared/golden ]]; then
    CONFIGURE_EXTRA+=(-DEMBER_SHARED_DIR="$dir/shared")
  fi
  echo "bundle: $dir (LD_LIBRARY_PATH=$LD_LIBRARY_PATH)"
  printf '  %s\n' "${CONFIGURE_EXTRA[@]}"
}

find_cudnn() {
  local cuda pip lib
  cuda=$(cuda_root)
  for lib in "$cuda"/lib64/libcudnn.so "$cuda"/targets/*/lib/libcudnn.so /usr/lib/x86_64-linux-gnu/libcudnn.so; do
    [[ -e $lib ]] && return 0  # where ember's CMake looks by itself
  done
  pip=$(pip_cudnn_dir)
  [[ -n $pip ]] || return 0  # CMake will say that cuDNN is missing
  # The wheel has no unversioned libcudnn.so for find_library, so the library is named in full.
  lib=$(find "$pip/lib" -maxdepth 1 -name 'libcudnn.so.[0-9]*' | sort | head -1)
  [[ -n $lib ]] || return 0
  CONFIGURE_EXTRA+=(-DEMBER_CUDNN_LIBRARY="$lib" -DEMBER_CUDNN_INCLUDE_DIR="$pip/include")
  export LD_LIBRARY_PATH=$pip/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  echo "cuDNN: pip's wheel at $pip ($lib)"
}
