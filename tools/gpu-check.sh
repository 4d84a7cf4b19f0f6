#!/usr/bin/env bash
# The checks that need an NVIDIA GPU, in one go (under 8 minutes on one H100-class GPU):
#   1. nvidia-smi, to record the machine;
#   2. configure and build build-gpu (the "cuda" preset: CUDA required; warnings not errors here),
#      for the GPU's own architecture, without benchmarks and examples;
#   3. the whole test suite (ctest), in which the device-parity suites now run instead of skipping;
#   4. one epoch of mlp and cnn with `ember train` on the GPU, on the CPU and on the GPU with --amp
#      (bfloat16 autocast; its rows say "-amp"), then a table of throughput, accuracy and peak GPU
#      memory, with the speedup over the CPU (LOGDIR/summary.md);
#   5. compute-sanitizer memcheck over the device suites, when it is installed;
#   6. with two or more GPUs and Open MPI: one cnn epoch on 2 ranks over NCCL (`mpirun -np 2`).
# Every stage's exit status is recorded; a failed stage does not stop the later ones. The script
# exits non-zero when any stage failed, after printing the table. Nothing is downloaded: without
# Fashion-MNIST on disk, training is skipped (and said so).
#
# Usage: tools/gpu-check.sh LOGDIR
# Environment (all optional):
#   GPU_CHECK_DEVICE      device for the accelerator runs [cuda]; "cpu" rehearses the script on a
#                         machine without a GPU (skips nvidia-smi and the sanitizer)
#   GPU_CHECK_BUILD_DIR   build folder [build-gpu]
#   GPU_CHECK_SKIP_BUILD  1: use the existing build folder as it is
#   GPU_CHECK_SKIP_TESTS  1: skip ctest and the sanitizer
#   GPU_CHECK_DATA        Fashion-MNIST folder [first of /usr/share/datasets/fashion-mnist,
#                         shared/fashion-mnist, ../shared/fashion-mnist, data/fashion-mnist]
#   GPU_CHECK_LIMIT       --limit for every training run (a quick rehearsal)
#   GPU_CHECK_CPU_CNN_LIMIT  --limit for the CPU cnn run only [10000]: a full CPU epoch of the cnn
#                         takes minutes, and samples/s does not depend on the limit
#   GPU_CHECK_SANITIZER_TIMEOUT  seconds for compute-sanitizer [180]
#   GPU_CHECK_BUNDLE      dependencies packed by tools/gpu-bundle.sh, for a machine without ember's
#                         Debian packages [.gpu-bundle when it holds deps.tar.gz]; "none": never
#   GPU_CHECK_ARCHIVE     also pack LOGDIR (without model files) into this .tar.gz at the end
#   GPU_CHECK_WERROR      1: compiler warnings are errors, as in CI [0]
#   GPU_CHECK_DEADLINE    seconds after the start by which everything, the table included, must be
#                         done: the suite is cut to leave 150 s, the sanitizer to leave 20 [none]
#
# On the lent GPU machine (bare and offline; docs/GPU-CHECK.md): run tools/gpu-bundle.sh here first,
# then one device call that carries .gpu-bundle and runs
#   tools/gpu-check.sh /tmp/gpu-check; rc=$?  (with GPU_CHECK_ARCHIVE=$OUT/gpu-check.tar.gz)
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 LOGDIR" >&2
  exit 2
fi
mkdir -p "$1"
LOGDIR=$(cd "$1" && pwd)
cd "$(dirname "${BASH_SOURCE[0]}")/.."

DEVICE=${GPU_CHECK_DEVICE:-cuda}
BUILD=${GPU_CHECK_BUILD_DIR:-build-gpu}
SANITIZER_TIMEOUT=${GPU_CHECK_SANITIZER_TIMEOUT:-180}
JOBS=$(nproc)
SANITIZER=$(command -v compute-sanitizer || true)
for candidate in "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer" /usr/local/cuda/bin/compute-sanitizer; do
  [[ -z $SANITIZER && -x $candidate ]] && SANITIZER=$candidate
done
GPU=1
[[ $DEVICE == cpu ]] && GPU=0
BUNDLE=${GPU_CHECK_BUNDLE:-}
[[ -z $BUNDLE && -f .gpu-bundle/deps.tar.gz ]] && BUNDLE=.gpu-bundle
[[ $BUNDLE == none ]] && BUNDLE=""
declare -a CONFIGURE_EXTRA=()
# shellcheck source=tools/gpu-check-env.sh
source tools/gpu-check-env.sh

# ---- stage bookkeeping ----
declare -a STAGES=()
declare -A STATUS=()
FAILED=0

# run_stage NAME LOG CMD...: runs CMD with its output in LOG (also shown), records the status.
run_stage() {
  local name=$1 log=$2
  shift 2
  echo
  echo "==== $name: $*"
  local start=$SECONDS rc
  set +e
  "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  set -e
  STAGES+=("$name")
  if [[ $rc -eq 0 ]]; then
    STATUS[$name]="ok ($((SECONDS - start)) s)"
  else
    STATUS[$name]="FAILED, exit $rc ($((SECONDS - start)) s, log $log)"
    FAILED=1
  fi
  echo "==== $name: ${STATUS[$name]}"
  return 0
}

fail_stage() {
  STAGES+=("$1")
  STATUS[$1]="FAILED: $2"
  FAILED=1
  echo
  echo "==== $1: FAILED: $2"
}

skip_stage() {
  STAGES+=("$1")
  STATUS[$1]="skipped: $2"
  echo
  echo "==== $1: skipped: $2"
}

# ---- the time limit ----
# GPU_CHECK_DEADLINE: seconds after the start by which the script must have ended (the device
# tool kills a command at its time limit, and then neither the table nor the archive is made).
DEADLINE=${GPU_CHECK_DEADLINE:-0}
# time_for WANTED RESERVE: WANTED seconds, cut so that RESERVE seconds remain before the deadline
# (at least 1); WANTED itself without a deadline.
time_for() {
  local wanted=$1 reserve=$2
  if [[ $DEADLINE -le 0 ]]; then
    echo "$wanted"
    return 0
  fi
  local left=$((DEADLINE - SECONDS - reserve))
  ((left < 1)) && left=1
  ((left < wanted)) && wanted=$left
  echo "$wanted"
}

# ---- 1. the machine ----
record_machine >"$LOGDIR/machine.log" 2>&1 || true
cat "$LOGDIR/machine.log"
if [[ -n $BUNDLE ]]; then
  if [[ ! -f $BUNDLE/deps.tar.gz ]]; then
    fail_stage bundle "$BUNDLE/deps.tar.gz not found (made by tools/gpu-bundle.sh)"
  else
    # In this shell, not through run_stage's pipeline: its exports and CMake settings must stay.
    if use_bundle "$BUNDLE" >"$LOGDIR/bundle.log" 2>&1; then
      STAGES+=(bundle)
      STATUS[bundle]="ok"
    else
      fail_stage bundle "could not unpack $BUNDLE/deps.tar.gz (log $LOGDIR/bundle.log)"
    fi
    cat "$LOGDIR/bundle.log"
  fi
fi
find_cudnn
if [[ $GPU -eq 1 ]]; then
  if command -v nvidia-smi >/dev/null; then
    run_stage nvidia-smi "$LOGDIR/nvidia-smi.log" nvidia-smi
  else
    fail_stage nvidia-smi "nvidia-smi not found (no NVIDIA driver?)"
  fi
else
  skip_stage nvidia-smi "GPU_CHECK_DEVICE=$DEVICE"
fi

# ---- 2. configure and build ----
if [[ ${GPU_CHECK_SKIP_BUILD:-0} == 1 ]]; then
  skip_stage configure "GPU_CHECK_SKIP_BUILD=1 (using $BUILD as it is)"
  skip_stage build "GPU_CHECK_SKIP_BUILD=1"
else
  # Machine code for this GPU only (the build is for this machine): its compute capability from
  # nvidia-smi; failing that, no setting at all, so that ember's CMake chooses
  # (cmake/EmberDependencies.cmake). -U drops a value cached by an earlier configure.
  # Warnings are not errors here (GPU_CHECK_WERROR=1 makes them so): CI holds the code to -Werror
  # with this machine's g++, and another g++ on the GPU machine must not cost the whole check.
  configure=(cmake --preset cuda -B "$BUILD" -DEMBER_BUILD_BENCHMARKS=OFF -DEMBER_BUILD_EXAMPLES=OFF
    -DEMBER_WARNINGS_AS_ERRORS="$([[ ${GPU_CHECK_WERROR:-0} == 1 ]] && echo ON || echo OFF)")
  cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .' || true)
  if [[ $cap =~ ^[0-9]+$ ]]; then
    configure+=(-DCMAKE_CUDA_ARCHITECTURES="$cap")
  else
    configure+=(-UCMAKE_CUDA_ARCHITECTURES)
  fi
  # A rehearsal without a GPU still builds the CUDA preset where the toolkit is installed.
  if [[ $GPU -eq 0 ]] && ! command -v nvcc >/dev/null; then
    configure=(cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBER_BUILD_BENCHMARKS=OFF
      -DEMBER_BUILD_EXAMPLES=OFF)
  fi
  command -v ccache >/dev/null && configure+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  configure+=("${CONFIGURE_EXTRA[@]}")
  run_stage configure "$LOGDIR/configure.log" "${configure[@]}"
  if [[ ${STATUS[configure]} == ok* ]]; then
    run_stage build "$LOGDIR/build.log" cmake --build "$BUILD" -j"$JOBS"
  else
    skip_stage build "configure failed"
  fi
fi
BUILT=0
[[ -x $BUILD/ember ]] && BUILT=1

# The suite's training tests read Fashion-MNIST where Debian installs it. On a machine without it
# the bundle's copy is linked there (as root; else those tests skip, saying why).
if [[ -n $BUNDLE && ! -e /usr/share/datasets/fashion-mnist && -d $BUNDLE/fashion-mnist && $(id -u) -eq 0 ]]; then
  mkdir -p /usr/share/datasets
  ln -s "$(cd "$BUNDLE/fashion-mnist" && pwd)" /usr/share/datasets/fashion-mnist
  echo "linked /usr/share/datasets/fashion-mnist to $BUNDLE/fashion-mnist for the suite"
fi

# ---- 3. the test suite ----
if [[ ${GPU_CHECK_SKIP_TESTS:-0} == 1 ]]; then
  skip_stage ctest "GPU_CHECK_SKIP_TESTS=1"
elif [[ ! -x $BUILD/tests/ember_tests ]]; then
  fail_stage ctest "$BUILD/tests/ember_tests was not built"
else
  # Bounded so that the training runs (the table) still fit before the deadline.
  CTEST_TIMEOUT=$(time_for 100000 150)
  run_stage ctest "$LOGDIR/ctest.log" timeout "$CTEST_TIMEOUT" ctest --test-dir "$BUILD" -j4 --output-on-failure
  [[ ${STATUS[ctest]} == *"exit 124"* ]] && STATUS[ctest]+=" — stopped after ${CTEST_TIMEOUT} s (GPU_CHECK_DEADLINE)"
  # Which device cases ran and which skipped, for the record.
  "$BUILD/tests/ember_tests" --gtest_filter='*Device*:*Cuda*' --gtest_brief=1 >"$LOGDIR/device-suites.log" 2>&1 || true
fi

# ---- 4. training ----
find_data() {
  local d
  for d in ${GPU_CHECK_DATA:+"$GPU_CHECK_DATA"} /usr/share/datasets/fashion-mnist ${BUNDLE:+"$BUNDLE/fashion-mnist"} \
    shared/fashion-mnist ../shared/fashion-mnist data/fashion-mnist; do
    if [[ -e $d/train-images-idx3-ubyte || -e $d/train-images-idx3-ubyte.gz ]]; then
      echo "$d"
      return 0
    fi
  done
  return 1
}

run_label() {  # the run directory's device part: "cuda", "cpu", or "cpu-as-gpu" in a rehearsal
  local suffix=""
  [[ $1 == gpu-amp ]] && suffix="-amp"
  if [[ $1 == gpu* ]]; then
    if [[ $GPU -eq 1 ]]; then echo "${DEVICE//:/_}$suffix"; else echo "$DEVICE-as-gpu$suffix"; fi
  else
    echo cpu
  fi
}

declare -a RUNS=()
DATA=""
if [[ $BUILT -eq 0 ]]; then
  fail_stage train "$BUILD/ember was not built"
elif ! DATA=$(find_data); then
  skip_stage train "Fashion-MNIST not found (looked in ${GPU_CHECK_DATA:+$GPU_CHECK_DATA, }/usr/share/datasets/fashion-mnist, shared/, ../shared/, data/; set GPU_CHECK_DATA); this script downloads nothing"
else
  for model in mlp cnn; do
    # gpu-amp: the same epoch with --amp (bfloat16 autocast on the GPU; docs/AMP.md), after the
    # float32 runs so that it is the one dropped when time runs short.
    for role in gpu cpu gpu-amp; do
      dev=$DEVICE
      [[ $role == cpu ]] && dev=cpu
      label=$(run_label "$role")
      out="$LOGDIR/train-$model-$label"
      rm -rf "$out"
      limit=${GPU_CHECK_LIMIT:-}
      [[ -z $limit && $role == cpu && $model == cnn ]] && limit=${GPU_CHECK_CPU_CNN_LIMIT:-10000}
      args=(train --model "$model" --epochs 1 --device "$dev" --data "$DATA" --out "$out" --progress lines)
      [[ -n $limit ]] && args+=(--limit "$limit")
      [[ $role == gpu-amp ]] && args+=(--amp)
      mkdir -p "$out"
      # Sample the GPU's memory use while the GPU run trains: the driver's view (context included).
      smi_pid=""
      if [[ $role == gpu* && $GPU -eq 1 ]] && command -v nvidia-smi >/dev/null; then
        nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 250 >"$out/nvidia-smi-memory.log" 2>&1 &
        smi_pid=$!
      fi
      run_stage "train-$model-$label" "$out/train.log" timeout "$(time_for 100000 15)" "$BUILD/ember" "${args[@]}"
      if [[ -n $smi_pid ]]; then
        kill "$smi_pid" 2>/dev/null || true
        wait "$smi_pid" 2>/dev/null || true
      fi
      RUNS+=("$model|$role|$label|$out|${limit:-all}")
    done
  done
fi

# ---- 5. compute-sanitizer (after training, so that the table is there when time runs short) ----
if [[ $GPU -eq 0 ]]; then
  skip_stage sanitizer "GPU_CHECK_DEVICE=$DEVICE"
elif [[ ${GPU_CHECK_SKIP_TESTS:-0} == 1 ]]; then
  skip_stage sanitizer "GPU_CHECK_SKIP_TESTS=1"
elif [[ -z $SANITIZER ]]; then
  skip_stage sanitizer "compute-sanitizer is not installed (not on PATH nor in \$CUDA_HOME/bin or /usr/local/cuda/bin)"
elif [[ ! -x $BUILD/tests/ember_tests ]]; then
  skip_stage sanitizer "$BUILD/tests/ember_tests was not built"
else
  # Memcheck slows kernels down a hundredfold; the time limit keeps the whole check bounded. The
  # stream suite is left out: it queues about a second of matrix products on purpose (to catch missing
  # waits), which memcheck would stretch past the limit.
  SANITIZER_TIMEOUT=$(time_for "$SANITIZER_TIMEOUT" 20)
  run_stage sanitizer "$LOGDIR/sanitizer.log" timeout "$SANITIZER_TIMEOUT" "$SANITIZER" --tool memcheck \
    --error-exitcode 97 "$BUILD/tests/ember_tests" --gtest_filter='*Device*:*Cuda*:-*DeviceCudaStreams*'
  [[ ${STATUS[sanitizer]} == *"exit 124"* ]] && STATUS[sanitizer]+=" — timed out after ${SANITIZER_TIMEOUT} s"
fi

# ---- 6. data parallelism over NCCL, on two GPUs ----
# The NCCL transport (src/backend/cuda/nccl_transport.cpp) needs a GPU per rank: NCCL refuses two
# ranks on one GPU. With two or more GPUs and Open MPI present, one cnn epoch on 2 ranks.
GPUS=0
[[ $GPU -eq 1 ]] && command -v nvidia-smi >/dev/null && GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
if [[ $GPU -eq 0 ]]; then
  skip_stage nccl "GPU_CHECK_DEVICE=$DEVICE"
elif [[ $GPUS -lt 2 ]]; then
  skip_stage nccl "$GPUS GPU(s): NCCL needs one per rank, so 2 ranks need 2 GPUs"
elif ! command -v mpirun >/dev/null; then
  skip_stage nccl "mpirun not found (Debian: openmpi-bin libopenmpi-dev, then rebuild)"
elif [[ -z $DATA ]]; then
  skip_stage nccl "Fashion-MNIST not found"
else
  out="$LOGDIR/train-cnn-2-ranks-cuda"
  rm -rf "$out"
  run_stage nccl "$LOGDIR/nccl.log" env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 EMBER_DIST_TIMEOUT=300 \
    mpirun -np 2 "$BUILD/ember" train --model cnn --epochs 1 --device cuda --data "$DATA" --out "$out" --progress lines
fi

# ---- the table ----
# The last row's value of a metrics.csv column ("" when the column is missing).
csv_column() {
  local file=$1 pattern=$2
  [[ -f $file ]] || return 0
  awk -F, -v pat="$pattern" 'NR == 1 { for (i = 1; i <= NF; i++) if (tolower($i) ~ pat) col = i; next }
    col { v = $col } END { if (col) print v }' "$file"
}

# Peak GPU memory held by ember's tensors, in MiB: metrics.csv's peak_gpu_mib column.
ember_peak_mib() {
  local v
  v=$(csv_column "$1/metrics.csv" '^peak_gpu_mib$')
  echo "${v:-n/a}"
}

# The driver's peak memory use during the run, minus the use before it (MiB).
smi_peak_mib() {
  local f=$1/nvidia-smi-memory.log
  [[ -s $f ]] || {
    echo "n/a"
    return 0
  }
  awk 'NR == 1 { base = $1 } $1 + 0 > max { max = $1 + 0 } END { if (NR) printf "%d", max - base; else print "n/a" }' "$f"
}

declare -A SPS=()
{
  echo "# ember GPU check — $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "Build: \`$BUILD\`; accelerator device: \`$DEVICE\`; data: \`${DATA:-none}\`"
  echo
  echo "| stage | status |"
  echo "|---|---|"
  for s in "${STAGES[@]}"; do echo "| $s | ${STATUS[$s]} |"; done
  echo
  if [[ ${#RUNS[@]} -gt 0 ]]; then
    echo "| model | device | train images | samples/s | test accuracy | peak GPU memory (ember) | GPU memory used (nvidia-smi) | speedup vs cpu |"
    echo "|---|---|---|---|---|---|---|---|"
    for r in "${RUNS[@]}"; do
      IFS='|' read -r model role dev out limit <<<"$r"
      sps=$(csv_column "$out/metrics.csv" '^samples_per_second$')
      SPS[$model-$role]=${sps:-}
    done
    for r in "${RUNS[@]}"; do
      IFS='|' read -r model role dev out limit <<<"$r"
      sps=${SPS[$model-$role]:-}
      acc=$(csv_column "$out/metrics.csv" '^test_accuracy$')
      [[ -n $acc ]] && acc=$(awk -v a="$acc" 'BEGIN { printf "%.2f%%", 100 * a }')
      peak="n/a"
      smi="n/a"
      speedup="—"
      if [[ $role == gpu* ]]; then
        peak=$(ember_peak_mib "$out")
        smi=$(smi_peak_mib "$out")
        [[ $smi != n/a ]] && smi="$smi MiB"
        [[ $peak =~ ^[0-9.]+$ ]] && peak="$peak MiB"
        cpu_sps=${SPS[$model-cpu]:-}
        if [[ -n $sps && -n $cpu_sps ]]; then
          speedup=$(awk -v g="$sps" -v c="$cpu_sps" 'BEGIN { if (c > 0) printf "%.1fx", g / c; else print "n/a" }')
        fi
      fi
      echo "| $model | $dev | $limit | ${sps:-FAILED} | ${acc:-FAILED} | $peak | $smi | $speedup |"
    done
    echo
    echo "samples/s and test accuracy come from each run's metrics.csv (one epoch; test accuracy on the"
    echo "full test set). \"peak GPU memory (ember)\" is what the run directory reports, n/a when it"
    echo "reports none; the nvidia-smi column is the driver's peak during the run above the use before"
    echo "it, CUDA context and cached blocks included."
  fi
  echo
  if [[ $FAILED -eq 0 ]]; then echo "Result: every stage passed."; else echo "Result: FAILED (see the stages above)."; fi
} | tee "$LOGDIR/summary.md"

# One file to bring back (the device tool returns at most 8); model files are left out for size.
if [[ -n ${GPU_CHECK_ARCHIVE:-} ]]; then
  tar -czf "$GPU_CHECK_ARCHIVE" --exclude='*.safetensors' -C "$(dirname "$LOGDIR")" "$(basename "$LOGDIR")" &&
    echo "logs packed into $GPU_CHECK_ARCHIVE ($(stat -c %s "$GPU_CHECK_ARCHIVE") bytes)"
fi

exit "$FAILED"
