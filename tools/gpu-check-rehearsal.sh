#!/usr/bin/env bash
# Rehearses tools/gpu-check.sh as it will run on the lent GPU machine, on this Debian machine
# without a GPU: the check starts on a bare, offline CUDA image, so a missing dependency found there
# costs a share of a 15-minute device budget. Here, inside a private mount namespace, an overlay on
# /usr hides every file of ember's Debian build and run dependencies (oneDNN, OpenBLAS and
# libgfortran, GoogleTest, nlohmann-json, CLI11, zlib's headers, cairo, pkg-config, MPI, Google
# Benchmark) and the CUDA toolkit's cuDNN, which is offered instead the way pip's nvidia-cudnn wheel
# lays it out (no unversioned libcudnn.so). Then gpu-check.sh runs with GPU_CHECK_DEVICE=cpu and the
# bundle from tools/gpu-bundle.sh. Nothing outside the namespace changes.
#
# Usage: tools/gpu-check-rehearsal.sh LOGDIR   (as root; needs overlayfs and unshare)
# Environment: passed on to gpu-check.sh (GPU_CHECK_LIMIT for a quicker run, ...);
#   REHEARSAL_BUILD_DIR  build folder [/tmp/ember-gpu-rehearsal-build], started afresh unless
#   REHEARSAL_KEEP_BUILD=1 (to go on after a fix)
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 LOGDIR" >&2
  exit 2
fi
[[ $(id -u) -eq 0 ]] || { echo "gpu-check-rehearsal: needs root (mount namespace, overlay)" >&2; exit 1; }
mkdir -p "$1"
LOGDIR=$(cd "$1" && pwd)
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[[ -f .gpu-bundle/deps.tar.gz ]] || { echo "gpu-check-rehearsal: run tools/gpu-bundle.sh first" >&2; exit 1; }

hidden_packages=(
  libdnnl-dev libdnnl2 ocl-icd-libopencl1 libopenblas-openmp-dev libopenblas0-openmp libgfortran5
  libgtest-dev libgmock-dev googletest nlohmann-json3-dev libcli11-dev zlib1g-dev libcairo2-dev
  pkgconf pkgconf-bin pkg-config libopenmpi-dev openmpi-bin libbenchmark-dev
)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for package in "${hidden_packages[@]}"; do
  dpkg-query -L "$package" 2>/dev/null || true
done | while IFS= read -r path; do
  [[ $path == /usr/* && ( -f $path || -L $path ) ]] && echo "$path"
done >"$work/hide"

cuda=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
cudnn_lib=$(dirname "$(readlink -f "$cuda/lib64/libcudnn.so")")
mkdir -p "$work/pip/nvidia/cudnn/include" "$work/pip/nvidia/cudnn/lib" "$work/up" "$work/overlay-work"
cp "$cuda"/include/cudnn*.h "$work/pip/nvidia/cudnn/include/"
cp -a "$cudnn_lib"/libcudnn*.so.* "$work/pip/nvidia/cudnn/lib/"
# What pip's wheel lacks: unversioned names, and headers beside the toolkit.
find "$cudnn_lib" "$cuda/include" -maxdepth 1 \( -name 'libcudnn*.so' -o -name 'cudnn*.h' \) >>"$work/hide"
echo "gpu-check-rehearsal: hiding $(wc -l <"$work/hide") files; cuDNN offered as pip's wheel in $work/pip"

export REHEARSAL_WORK=$work LOGDIR
export REHEARSAL_BUILD_DIR=${REHEARSAL_BUILD_DIR:-/tmp/ember-gpu-rehearsal-build}
[[ ${REHEARSAL_KEEP_BUILD:-0} == 1 ]] || rm -rf "$REHEARSAL_BUILD_DIR"
# shellcheck disable=SC2016  # expanded by the inner shell
unshare -m bash -c '
  set -euo pipefail
  mount --make-rprivate /
  mount -t overlay overlay -o "lowerdir=/usr,upperdir=$REHEARSAL_WORK/up,workdir=$REHEARSAL_WORK/overlay-work" /usr
  xargs -d "\n" rm -f <"$REHEARSAL_WORK/hide"
  for gone in dnnl.h gtest/gtest.h nlohmann/json.hpp CLI/CLI.hpp zlib.h cairo/cairo.h; do
    [[ ! -e /usr/include/$gone ]] || { echo "rehearsal: /usr/include/$gone is still there" >&2; exit 1; }
  done
  ! command -v pkg-config >/dev/null || { echo "rehearsal: pkg-config is still there" >&2; exit 1; }
  export PYTHONPATH=$REHEARSAL_WORK/pip${PYTHONPATH:+:$PYTHONPATH}
  GPU_CHECK_DEVICE=cpu GPU_CHECK_BUILD_DIR=$REHEARSAL_BUILD_DIR GPU_CHECK_BUNDLE=.gpu-bundle \
    tools/gpu-check.sh "$LOGDIR"
'
