#!/usr/bin/env bash
# Rehearses the GPU check (tools/gpu-check.sh) as it will run on the lent GPU machine, on this
# Debian machine without a GPU: that machine starts bare and offline, so a missing dependency found
# there costs a share of a 15-minute device budget. Inside a private mount namespace an overlay on
# /usr hides
#   - every file of ember's Debian build and run dependencies (oneDNN, OpenBLAS and libgfortran,
#     GoogleTest, nlohmann-json, CLI11, zlib's headers, cairo, pkg-config, MPI, Google Benchmark),
#     which come from the bundle (tools/gpu-bundle.sh) instead;
#   - the CUDA toolkit's cuBLAS and cuBLASLt, the CUDA runtime's libraries (shared and static) and
#     cuDNN, libraries and headers, which come instead from pip's nvidia-* wheels installed in a
#     virtual environment whose python3 is first on PATH, as the GPU image's python3 is. The
#     runtime's headers stay beside nvcc: nvcc compiles nothing without them.
# Then the two device calls' commands run one after the other, exactly as docs/GPU-CHECK.md gives
# them, with GPU_CHECK_DEVICE=cpu and GPU_CHECK_CUDA_ARCHITECTURES=90 (what the GPU's nvidia-smi
# says), each with an empty $OUT of its own as the device tool gives.
# Nothing outside the namespace changes.
#
# Usage (as root; needs overlayfs, unshare, and pip's index for the first run):
#   tools/gpu-check-rehearsal.sh LOGDIR           the rehearsal; must end "Result: every stage passed."
#   tools/gpu-check-rehearsal.sh --exec CMD...    runs CMD in the same view (to try a piece)
# Environment:
#   REHEARSAL_TIME_SCALE  GPU_CHECK_TIME_SCALE for the rehearsal [8]: this machine's 2 cores
#                         against the GPU machine's 16
#   REHEARSAL_BUILD_DIR   build folder [/tmp/ember-gpu-rehearsal-build], removed first (the GPU
#                         machine starts bare) unless REHEARSAL_KEEP_BUILD=1
#   REHEARSAL_VENV        the virtual environment with the wheels [/var/tmp/ember-gpu-rehearsal-venv]
#   REHEARSAL_WHEELS      what pip installs there [the versions this machine's toolkit was made of]
#   GPU_CHECK_*           passed on to gpu-check.sh (GPU_CHECK_LIMIT for a quicker run, ...)
set -euo pipefail

# The two device calls' commands (docs/GPU-CHECK.md must show them as they are here); "$OUT" is
# expanded where they run.
# shellcheck disable=SC2016,SC2089,SC2090
CALL_BUILD='tools/gpu-check.sh build "$OUT"'
# shellcheck disable=SC2016,SC2089
CALL_TEST='tools/gpu-check.sh test "$OUT"'

usage() {
  echo "usage: $0 LOGDIR | --exec CMD..." >&2
  exit 2
}
[[ $# -ge 1 ]] || usage
[[ $(id -u) -eq 0 ]] || { echo "gpu-check-rehearsal: needs root (mount namespace, overlay)" >&2; exit 1; }
MODE=rehearse
if [[ $1 == --exec ]]; then
  MODE="exec"
  shift
  [[ $# -ge 1 ]] || usage
else
  [[ $# -eq 1 ]] || usage
  mkdir -p "$1"
  LOGDIR=$(cd "$1" && pwd)
fi
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[[ -f .gpu-bundle/deps.tar.gz ]] || { echo "gpu-check-rehearsal: run tools/gpu-bundle.sh first" >&2; exit 1; }
if [[ $MODE == rehearse ]]; then
  for call in "$CALL_BUILD" "$CALL_TEST"; do
    grep -qF -- "$call" docs/GPU-CHECK.md ||
      { echo "gpu-check-rehearsal: docs/GPU-CHECK.md does not give the command: $call" >&2; exit 1; }
  done
fi

# ---- the wheels ----
VENV=${REHEARSAL_VENV:-/var/tmp/ember-gpu-rehearsal-venv}
WHEELS=${REHEARSAL_WHEELS:-nvidia-cuda-runtime==13.0.96 nvidia-cublas==13.1.0.3 nvidia-cudnn-cu13==9.19.0.56}
if [[ ! -f $VENV/.ember-wheels || $(cat "$VENV/.ember-wheels") != "$WHEELS" ]]; then
  echo "gpu-check-rehearsal: installing $WHEELS into $VENV"
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  # shellcheck disable=SC2086  # one word per requirement
  "$VENV/bin/python3" -m pip install -q --no-deps --disable-pip-version-check $WHEELS
  echo "$WHEELS" >"$VENV/.ember-wheels"
fi

# ---- what the overlay hides ----
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
  [[ $path == /usr/* && (-f $path || -L $path) ]] && echo "$path"
done >"$work/hide"
cuda=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
# The CUDA libraries, wherever under /usr they are (the toolkit's real folders and the system's).
cuda_names=(-name 'libcublas*' -o -name 'libnvblas*' -o -name 'libcudart*' -o -name 'libcudnn*'
  -o -name 'cublas*.h' -o -name 'cudnn*.h')
cuda_dirs=("$(readlink -f "$cuda/lib64")" "$(readlink -f "$cuda/include")" /usr/local/lib /usr/local/include
  /usr/lib/x86_64-linux-gnu /usr/include)
find "${cuda_dirs[@]}" -maxdepth 1 \( "${cuda_names[@]}" \) 2>/dev/null >>"$work/hide"
mkdir -p "$work/up" "$work/overlay-work"
echo "gpu-check-rehearsal: hiding $(wc -l <"$work/hide") files (ember's Debian dependencies, and the toolkit's cuBLAS, CUDA runtime libraries and cuDNN); CUDA libraries from $VENV"

# shellcheck disable=SC2090
export REHEARSAL_WORK=$work REHEARSAL_VENV=$VENV REHEARSAL_CUDA_DIRS="${cuda_dirs[*]}" MODE CALL_BUILD CALL_TEST
export GPU_CHECK_DEVICE=${GPU_CHECK_DEVICE:-cpu}
if [[ $MODE == exec ]]; then
  export GPU_CHECK_BUILD_DIR=${GPU_CHECK_BUILD_DIR:-${REHEARSAL_BUILD_DIR:-/tmp/ember-gpu-rehearsal-build}}
else
  export GPU_CHECK_BUILD_DIR=${REHEARSAL_BUILD_DIR:-/tmp/ember-gpu-rehearsal-build}
fi
export GPU_CHECK_TIME_SCALE=${REHEARSAL_TIME_SCALE:-${GPU_CHECK_TIME_SCALE:-8}}
export GPU_CHECK_BUNDLE=.gpu-bundle
# What nvidia-smi says on an H100 or H200: the check builds machine code for that GPU alone.
export GPU_CHECK_CUDA_ARCHITECTURES=${GPU_CHECK_CUDA_ARCHITECTURES:-90}
if [[ $MODE == rehearse ]]; then
  export GPU_CHECK_LOGDIR=$LOGDIR/check LOGDIR
  # The GPU machine starts bare: no build, no logs, the bundle not yet unpacked.
  [[ ${REHEARSAL_KEEP_BUILD:-0} == 1 ]] || rm -rf "$GPU_CHECK_BUILD_DIR"
  rm -rf "$GPU_CHECK_LOGDIR" "$LOGDIR/out-build" "$LOGDIR/out-test" .gpu-bundle/root
  mkdir -p "$LOGDIR/out-build" "$LOGDIR/out-test"
fi
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
  # shellcheck disable=SC2086  # a list of folders without spaces
  left=$(find $REHEARSAL_CUDA_DIRS -maxdepth 1 \( -name "libcublas*" -o -name "libcudart*" -o -name "libcudnn*" \
           -o -name cudnn.h -o -name cublas_v2.h \) 2>/dev/null | head -3)
  [[ -z $left ]] || { echo "rehearsal: still there: $left" >&2; exit 1; }
  # pip'"'"'s wheels, as the GPU image'"'"'s python3 holds them.
  export PATH=$REHEARSAL_VENV/bin:$PATH
  if [[ $MODE == exec ]]; then
    exec "$@"
  fi
  rc=0
  echo "==== call 1: $CALL_BUILD"
  start=$SECONDS
  OUT=$LOGDIR/out-build bash -c "$CALL_BUILD" || rc=$?
  echo "==== call 1 ended with exit $rc after $((SECONDS - start)) s"
  rc=0
  echo "==== call 2: $CALL_TEST"
  start=$SECONDS
  OUT=$LOGDIR/out-test bash -c "$CALL_TEST" || rc=$?
  echo "==== call 2 ended with exit $rc after $((SECONDS - start)) s"
  exit $rc
' rehearsal "$@"
