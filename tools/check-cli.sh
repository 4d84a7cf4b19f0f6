#!/usr/bin/env bash
# Checks the `ember` tool's promises: --version, `devices`, and that mistakes end with a message
# and a non-zero exit code, never a crash. Run by ctest (test "cli"); usage:
#   check-cli.sh EMBER VERSION [CUDA_DRIVER_STUB]
# CUDA_DRIVER_STUB, in a build with CUDA: the toolkit's stub libcuda.so, which stands in for a
# driver so that libember loads its CUDA backend here too (the stub then answers "no driver").
set -uo pipefail

if [[ $# -lt 2 || $# -gt 3 ]]; then
  echo "usage: $0 PATH_TO_EMBER EXPECTED_VERSION [CUDA_DRIVER_STUB]" >&2
  exit 2
fi
ember=$1
version=$2
driver_stub=${3:-}
failures=0
checks=0

# expect NAME WANTED_EXIT_CODE STREAM REGEX -- COMMAND...   (STREAM: stdout or stderr)
expect() {
  local name=$1 want_rc=$2 stream=$3 regex=$4
  shift 5
  local out err rc
  out=$(mktemp) err=$(mktemp)
  "$@" >"$out" 2>"$err"
  rc=$?
  checks=$((checks + 1))
  local text
  text=$(cat "$([[ $stream == stdout ]] && echo "$out" || echo "$err")")
  if [[ $rc -ne $want_rc ]] || ! grep -Eq -- "$regex" <<<"$text"; then
    failures=$((failures + 1))
    echo "FAIL $name: wanted exit code $want_rc and $stream matching /$regex/; got exit code $rc"
    echo "--- stdout"; cat "$out"; echo "--- stderr"; cat "$err"
  else
    echo "ok   $name"
  fi
  rm -f "$out" "$err"
}

expect "--version" 0 stdout "^ember ${version//./\\.}\$" -- "$ember" --version
expect "--help" 0 stdout "devices" -- "$ember" --help
expect "no subcommand prints help" 0 stdout "Subcommands:" -- "$ember"
expect "devices" 0 stdout "^CUDA available: (True|False)" -- env -u EMBER_DEVICE "$ember" devices
expect "devices: count" 0 stdout "^CUDA devices: +[0-9]+\$" -- env -u EMBER_DEVICE "$ember" devices
expect "devices: MPS" 0 stdout "^MPS available: +(True|False)" -- env -u EMBER_DEVICE "$ember" devices
expect "devices: choice" 0 stdout "^Chosen device: +(cpu|cuda:0|mps:0)\$" -- env -u EMBER_DEVICE "$ember" devices
expect "EMBER_DEVICE=cpu" 0 stdout "^Chosen device: +cpu \(set by EMBER_DEVICE\)\$" -- env EMBER_DEVICE=cpu "$ember" devices
# Without an NVIDIA driver the CUDA backend (libember_cuda.so) is never loaded, nor cuBLAS,
# cuBLASLt, cuDNN or the CUDA runtime with it (src/backend/cuda_loader.cpp): a CPU user pays
# nothing for the GPU code. LD_DEBUG=files names every library the loader opens.
if env -u EMBER_DEVICE "$ember" devices | grep -q "no NVIDIA driver"; then
  checks=$((checks + 1))
  loaded=$(env -u EMBER_DEVICE LD_DEBUG=files "$ember" devices 2>&1 >/dev/null |
    grep -Eo 'file=[^ ]*lib(ember_cuda|cublas|cublasLt|cudnn[a-z_]*|cudart)\.so[^ ]*' | sort -u)
  if [[ -n $loaded ]]; then
    failures=$((failures + 1))
    echo "FAIL no driver, no GPU libraries: \`ember devices\` loaded"
    echo "$loaded"
  else
    echo "ok   no driver, no GPU libraries loaded"
  fi
fi
# With a driver (here the toolkit's stub), the backend is loaded: every symbol it needs resolves
# (it is opened with RTLD_NOW), its probe runs, and the stub's "no driver" comes back as the reason.
if [[ -n $driver_stub ]]; then
  stub_dir=$(mktemp -d)
  ln -s "$driver_stub" "$stub_dir/libcuda.so.1"
  expect "a driver loads the CUDA backend" 0 stderr 'file=[^ ]*libember_cuda\.so' -- \
    env -u EMBER_DEVICE LD_LIBRARY_PATH="$stub_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" LD_DEBUG=files "$ember" devices
  expect "the CUDA backend's answer" 0 stdout "^CUDA available: False \(.+\)" -- \
    env -u EMBER_DEVICE LD_LIBRARY_PATH="$stub_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$ember" devices
  rm -rf "$stub_dir"
fi
expect "bad EMBER_DEVICE" 1 stderr "^error: .*EMBER_DEVICE" -- env EMBER_DEVICE=gpu:x "$ember" devices
expect "unknown subcommand" 2 stderr "^error: unknown command .frobnicate." -- "$ember" frobnicate
expect "unknown flag" 2 stderr "--frobnicate" -- "$ember" --frobnicate
expect "unknown flag of devices" 2 stderr "--frobnicate" -- "$ember" devices --frobnicate
expect "two subcommands" 2 stderr "devices" -- "$ember" devices devices

# train and eval: usage mistakes and bad input.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
expect "train --help" 0 stdout "--optimizer" -- "$ember" train --help
expect "train: bad --progress" 2 stderr "--progress" -- "$ember" train --progress sideways
expect "train: bad --lr" 2 stderr "--lr" -- "$ember" train --lr fast
expect "train: unknown model" 1 stderr "^error: --model 'resnet' is not one of: mlp, cnn" -- "$ember" train --model resnet
expect "train: missing data" 1 stderr "^error: .*/nonexistent" -- "$ember" train --data /nonexistent --out "$scratch/x"
expect "train: bad --nan-policy" 2 stderr "--nan-policy" -- "$ember" train --nan-policy ignore
expect "train: --resume with --lr" 1 stderr "^error: --lr cannot be combined with --resume" -- "$ember" train --resume "$scratch" --lr 1
expect "train: --resume of no run" 1 stderr "^error: .*config.json" -- "$ember" train --resume "$scratch/none"
expect "eval: no run" 1 stderr "^error: .*config.json" -- "$ember" eval "$scratch/none"
expect "eval: RUN_DIR required" 2 stderr "RUN_DIR" -- "$ember" eval

# convert: safetensors -> torch.save -> npz -> torch.save gives back the same bytes (ember's
# torch.save files are deterministic, and the archive's folder is the file's stem).
weights="$(cd "$(dirname "$0")/.." && pwd)/tests/io/golden/state_dict.safetensors"
mkdir -p "$scratch/a" "$scratch/b"
expect "convert to .pt" 0 stdout "^wrote 8 tensors .*\(torch.save\)" -- "$ember" convert "$weights" "$scratch/a/w.pt"
expect "convert .pt to .npz" 0 stdout "\(npz\)" -- "$ember" convert "$scratch/a/w.pt" "$scratch/w.npz"
expect "convert .npz to .pt" 0 stdout "\(torch.save\)" -- "$ember" convert "$scratch/w.npz" "$scratch/b/w.pt"
checks=$((checks + 1))
if cmp -s "$scratch/a/w.pt" "$scratch/b/w.pt"; then echo "ok   convert round trip"; else
  failures=$((failures + 1)); echo "FAIL convert round trip: $scratch/b/w.pt differs from $scratch/a/w.pt"; fi
expect "convert: unknown extension" 1 stderr "^error: .*extension" -- "$ember" convert "$weights" "$scratch/w.onnx"
expect "convert: missing input" 1 stderr "^error: .*nonexistent" -- "$ember" convert "$scratch/nonexistent.pt" "$scratch/x.safetensors"
expect "convert: --key without such names" 1 stderr "^error: .*'optimizer\.'" -- "$ember" convert "$weights" "$scratch/x.pt" --key optimizer
# Ctrl-C: the first SIGINT saves a checkpoint and exits with 130; --resume then finishes the run.
data=/usr/share/datasets/fashion-mnist
if [[ -e $data/train-images-idx3-ubyte || -e $data/train-images-idx3-ubyte.gz ]]; then
  run="$scratch/run"
  # 300 steps on one CPU thread (about half a second on a fast 2024 core, minutes under the
  # sanitizers): the run is still training when the signal comes, within a tenth of a second of
  # the banner. The trainer checks for Ctrl-C after every step, so a signal before the first step
  # stops after it. The CPU even on a GPU machine, where 300 steps could end before the signal.
  "$ember" train --epochs 1 --limit 19200 --device cpu --out "$run" --progress lines --threads 1 \
    >"$scratch/log" 2>&1 &
  pid=$!
  # The banner's last line comes after the Ctrl-C handler is installed; a loaded CI machine may
  # take a while to load the data set before it, so wait up to a minute for it.
  for _ in $(seq 1 600); do grep -q "run dir" "$scratch/log" && break; sleep 0.1; done
  kill -INT "$pid" 2>/dev/null || echo "note: the run ended before Ctrl-C was sent; it is too short for this check"
  wait "$pid"
  rc=$?
  checks=$((checks + 1))
  if [[ $rc -eq 130 && -f $run/checkpoint.safetensors ]] && grep -q "resume with: ember train --resume" "$scratch/log"; then
    echo "ok   Ctrl-C saves a checkpoint"
  else
    failures=$((failures + 1))
    echo "FAIL Ctrl-C saves a checkpoint: exit code $rc"; cat "$scratch/log"
  fi
  expect "train --resume finishes the run" 0 stdout "^done: best test accuracy" -- "$ember" train --resume "$run" --progress quiet
  expect "eval of the run" 0 stdout "^test accuracy [0-9.]+% \([0-9]+/10000\)" -- "$ember" eval "$run"
else
  echo "skip Ctrl-C and eval checks: Fashion-MNIST is not installed in $data"
fi

echo "$((checks - failures)) passed, $failures failed"
[[ $failures -eq 0 ]]
