#!/usr/bin/env bash
# Installs the Debian 12 packages that ember needs to build and test, and only those missing.
# Quiet and quick when everything is there; uses sudo when not run as root.
# Usage: tools/install-deps.sh [EXTRA_PACKAGE...]   (extra packages for one job, e.g. the
# sanitizer and fuzzing builds' clang, are checked and installed the same way)
# The CUDA toolkit is optional and not installed here: with nvcc on PATH (or in /usr/local/cuda)
# the default build links the CUDA runtime, without it ember builds for the CPU alone.
set -euo pipefail

packages=(
  g++ cmake ninja-build pkg-config            # toolchain (CMake >= 3.25: Debian 12 has 3.25.1)
  libdnnl-dev libopenblas-openmp-dev           # matrix products (oneDNN float32, OpenBLAS float64), OpenMP builds
  libgtest-dev libgmock-dev libbenchmark-dev   # tests and benchmarks
  libcli11-dev                                 # the `ember` command-line tool
  libcairo2-dev fonts-dejavu-core              # curves.png of `ember train` (drawn with cairo)
  nlohmann-json3-dev zlib1g-dev                # configuration files and compressed data sets
  libisal-dev                                  # fast CRC-32 for torch.save and .npz archives (optional)
  libopenmpi-dev openmpi-bin                   # distributed training: MPI launches ranks and carries CPU tensors
  dataset-fashion-mnist                        # the data set the trainer uses
  python3 zstd                                 # with CUDA: the build-time check of the kernels' resources reads (compressed) cubins
  "$@"
)

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "install-deps: not a Debian-based system; install the equivalents of: ${packages[*]}" >&2
  exit 0
fi

missing=()
for package in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null || true)
  [[ $status == installed ]] || missing+=("$package")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

sudo=()
if [[ $(id -u) -ne 0 ]]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "install-deps: missing ${missing[*]}; run this script as root or install sudo" >&2
    exit 1
  fi
  sudo=(sudo)
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
