#!/usr/bin/env bash
# shellcheck disable=SC2317  # the commands, judges and finishers are called by name
# The checks that need an NVIDIA GPU, as two commands run one right after the other on the same
# lent machine (docs/GPU-CHECK.md gives the two device calls and their time budget):
#
#   tools/gpu-check.sh build [OUTDIR]   at most 270 s
#     records the machine (LOGDIR/machine.log), unpacks .gpu-bundle, runs nvidia-smi, configures
#     build-gpu (the "cuda" preset, for the GPU's own architecture, with benchmarks, without
#     examples; warnings not errors here) and builds it, each with its bound, then checks that the
#     built programs and libraries find every library they link (cuBLAS and cuDNN from the toolkit
#     or pip's wheels). LOGDIR/build-status.txt says "built", "failed" or "timed out after N s at
#     step k/n".
#   tools/gpu-check.sh test [OUTDIR]    at most 205 s
#     finishes a build that the first command ran out of time for (when time allows), then:
#     the device suites (`*Device*:*Cuda*`, one process), one epoch of mlp and cnn on the GPU, on
#     the CPU and on the GPU with --amp (bfloat16 autocast), one training step of each model family
#     (bench_models, ember::models) on the GPU, the rest of the suite (ctest), and
#     compute-sanitizer memcheck over the device suites; with two GPUs and Open MPI, one cnn epoch
#     on 2 ranks over NCCL. The GPU benchmarks are the training runs' samples/s and the model steps.
#
# Every stage has a time bound inside the command's deadline and leaves room for the stages after
# it; a failed stage does not stop the later ones; the table (LOGDIR/summary.md, also copied to
# OUTDIR) is rewritten after every stage and when the script is stopped (gpu-check-stages.sh).
# A stage stopped at its bound is "TIMED OUT" (the sanitizer's "INCONCLUSIVE"), not failed. Exit
# status: 0 every stage passed, 1 a stage failed, 3 none failed but one did not finish, 2 usage.
# OUTDIR (the device tool's $OUT) receives what is to come back: summary.md, machine.log and the
# logs packed in gpu-check-build.tar.gz / gpu-check.tar.gz (model files left out).
#
# Environment (all optional):
#   GPU_CHECK_LOGDIR      where the logs are kept between the two commands [/tmp/gpu-check]
#   GPU_CHECK_DEVICE      device for the accelerator runs [cuda]; "cpu" rehearses the check on a
#                         machine without a GPU (skips nvidia-smi and the sanitizer)
#   GPU_CHECK_BUILD_DIR   build folder [build-gpu]
#   GPU_CHECK_TIME_SCALE  multiplies every bound and deadline [1]: a rehearsal on 2 cores needs
#                         more time than the 16-core GPU machine (tools/gpu-check-rehearsal.sh);
#                         tools/gpu-check-selftest.sh runs the machinery at 0.1
#   GPU_CHECK_BUILD_DEADLINE, GPU_CHECK_TEST_DEADLINE  each command's deadline in seconds [270, 205]
#   GPU_CHECK_DATA        Fashion-MNIST folder [first of /usr/share/datasets/fashion-mnist,
#                         .gpu-bundle/fashion-mnist, shared/, ../shared/, data/fashion-mnist]
#   GPU_CHECK_LIMIT       --limit for every training run (a quick rehearsal)
#   GPU_CHECK_CPU_CNN_LIMIT  --limit for the cnn runs on the CPU (all three in a rehearsal) [10000]:
#                         a full CPU epoch of the cnn takes minutes; samples/s does not depend on it
#   GPU_CHECK_BUNDLE      dependencies packed by tools/gpu-bundle.sh, for a machine without ember's
#                         Debian packages [.gpu-bundle when it holds deps.tar.gz]; "none": never
#   GPU_CHECK_WERROR      1: compiler warnings are errors, as in CI [0]
#   GPU_CHECK_CUDA_ARCHITECTURES  what to build for [the GPU's compute capability from nvidia-smi,
#                         e.g. 90; without one, cmake/EmberCuda.cmake's choice]
set -uo pipefail

usage() {
  echo "usage: $0 build|test [OUTDIR]   (docs/GPU-CHECK.md)" >&2
  exit 2
}
[[ $# -ge 1 && $# -le 2 ]] || usage
[[ $1 == build || $1 == test ]] || usage
COMMAND_NAME=$1
mkdir -p "${GPU_CHECK_LOGDIR:-/tmp/gpu-check}" || exit 2
LOGDIR=$(cd "${GPU_CHECK_LOGDIR:-/tmp/gpu-check}" && pwd)
OUTDIR=""
if [[ $# -eq 2 && -n $2 ]]; then
  mkdir -p "$2" || exit 2
  OUTDIR=$(cd "$2" && pwd)
fi
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2

DEVICE=${GPU_CHECK_DEVICE:-cuda}
BUILD=${GPU_CHECK_BUILD_DIR:-build-gpu}
SCALE=${GPU_CHECK_TIME_SCALE:-1}
[[ $SCALE =~ ^[0-9]*\.?[0-9]+$ && ! $SCALE =~ ^[0.]+$ ]] || { echo "GPU_CHECK_TIME_SCALE must be a positive number" >&2; exit 2; }
JOBS=$(nproc)
GPU=1
[[ $DEVICE == cpu ]] && GPU=0
BUNDLE=${GPU_CHECK_BUNDLE:-}
[[ -z $BUNDLE && -f .gpu-bundle/deps.tar.gz ]] && BUNDLE=.gpu-bundle
[[ $BUNDLE == none ]] && BUNDLE=""
declare -a CONFIGURE_EXTRA=()
# shellcheck source=tools/gpu-check-env.sh
source tools/gpu-check-env.sh
# shellcheck source=tools/gpu-check-stages.sh
source tools/gpu-check-stages.sh
# shellcheck source=tools/gpu-check-train.sh
source tools/gpu-check-train.sh

# The table: both commands' stages, the training runs, the closing line.
write_summary() {
  echo "# ember GPU check — $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "- build folder \`$BUILD\`; accelerator device \`$DEVICE\`; time scale $SCALE"
  echo "- last command \`$COMMAND_NAME\`: $SECONDS s of its $DEADLINE s"
  [[ -f $LOGDIR/build-status.txt ]] && echo "- build: $(cut -f2 "$LOGDIR/build-status.txt")"
  # The device tool copies the tree anew for each call; a build made for another copy tests that.
  local home
  home=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$BUILD/CMakeCache.txt" 2>/dev/null)
  [[ -n $home && $home != "$PWD" ]] && echo "- NOTE: $BUILD was configured for the tree in $home, not this one ($PWD)"
  echo
  stage_rows
  echo
  runs_table
  echo
  model_steps_table
  echo
  result_line
}

# The bundle: in this shell (its exports and CMake settings must stay), unpacked once per machine.
bundle_stage() {
  [[ -n $BUNDLE ]] || return 0
  if [[ ! -f $BUNDLE/deps.tar.gz ]]; then
    fail_stage bundle "$BUNDLE/deps.tar.gz not found (made by tools/gpu-bundle.sh)"
  elif use_bundle "$BUNDLE" >"$LOGDIR/bundle-$COMMAND_NAME.log" 2>&1; then
    [[ $COMMAND_NAME == build ]] && record bundle ok "unpacked $BUNDLE/deps.tar.gz"
  else
    fail_stage bundle "could not unpack $BUNDLE/deps.tar.gz (log $LOGDIR/bundle-$COMMAND_NAME.log)"
  fi
}

# ---- command 1: the machine, configure, build ----

# Judges the build: where ninja was ([k/n]) when it stopped or failed.
judge_build() {
  local log=$1 rc=$2 timed_out=$3 step first took=$((SECONDS - STAGE_START))
  step=$(grep -oE '^\[[0-9]+/[0-9]+\]' "$log" | tail -1 | tr -d '[]')
  if ((timed_out)); then
    printf 'timeout\ttimed out after %s s at step %s (log %s)\n' "$took" "${step:-0/?}" "$log"
  elif ((rc != 0)); then
    first=$(grep -m1 -E '^FAILED: |error:' "$log" | cut -c1-200)
    printf 'failed\tfailed (exit %s) after %s s at step %s: %s (log %s)\n' "$rc" "$took" "${step:-?}" "$first" "$log"
  fi
}

finish_build() {
  local line
  line=$(awk -F'\t' '$1 == "build" && ($2 == "configure" || $2 == "build")' "$LOGDIR/stages.tsv" 2>/dev/null | tail -1)
  if [[ -z $line ]]; then
    printf 'failed\tneither configured nor built (the command ended first)\n' >"$LOGDIR/build-status.txt"
  else
    printf '%s\t%s %s\n' "$(cut -f3 <<<"$line")" "$(cut -f2 <<<"$line")" "$(cut -f4 <<<"$line")" >"$LOGDIR/build-status.txt"
  fi
  [[ -n $OUTDIR ]] || return 0
  cp "$LOGDIR/machine.log" "$OUTDIR/" 2>/dev/null
  tar -czf "$OUTDIR/gpu-check-build.tar.gz" -C "$(dirname "$LOGDIR")" "$(basename "$LOGDIR")" 2>/dev/null
}

command_build() {
  DEADLINE=$(seconds "${GPU_CHECK_BUILD_DEADLINE:-270}")
  rm -f "$LOGDIR/stages.tsv" "$LOGDIR/runs.tsv" "$LOGDIR/build-status.txt" "$LOGDIR/summary.md"
  COMMAND_FINISH=finish_build
  begin_command
  timeout "$(seconds 30)" bash -c 'source tools/gpu-check-env.sh && record_machine' >"$LOGDIR/machine.log" 2>&1
  cat "$LOGDIR/machine.log"
  [[ -n $OUTDIR ]] && cp "$LOGDIR/machine.log" "$OUTDIR/"
  bundle_stage
  if [[ $GPU -eq 0 ]]; then
    skip_stage nvidia-smi "GPU_CHECK_DEVICE=$DEVICE"
  elif ! command -v nvidia-smi >/dev/null; then
    fail_stage nvidia-smi "nvidia-smi not found (no NVIDIA driver?)"
  else
    run_stage nvidia-smi "$(seconds 20)" "$(seconds 200)" "$LOGDIR/nvidia-smi.log" nvidia-smi
  fi

  # Machine code for this GPU only (the build is for this machine): its compute capability from
  # nvidia-smi; failing that, no setting, so that cmake/EmberCuda.cmake chooses. -U drops a value
  # cached by an earlier configure. Warnings are not errors here (GPU_CHECK_WERROR=1 makes them
  # so): CI holds the code to -Werror with this machine's g++, and another g++ on the GPU machine
  # must not cost the whole check.
  local configure cap cuda
  configure=(cmake --preset cuda -B "$BUILD" -DEMBER_BUILD_BENCHMARKS=ON -DEMBER_BUILD_EXAMPLES=OFF
    -DEMBER_WARNINGS_AS_ERRORS="$([[ ${GPU_CHECK_WERROR:-0} == 1 ]] && echo ON || echo OFF)")
  # On a lent H100 (2026-12), CMake's FindCUDAToolkit found neither nvcc nor the toolkit's headers
  # by itself (the toolkit's bin was not on PATH, and the bundle's prefix path comes first): put
  # the toolkit's compiler first on PATH and name its include folder.
  cuda=$(cuda_root)
  [[ -x $cuda/bin/nvcc ]] && export PATH=$cuda/bin:$PATH
  [[ -d $cuda/targets/x86_64-linux/include ]] && configure+=(-DCUDAToolkit_INCLUDE_DIR="$cuda/targets/x86_64-linux/include")
  cap=${GPU_CHECK_CUDA_ARCHITECTURES:-$(timeout 20 nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')}
  if [[ $cap =~ ^[0-9]+$ ]]; then
    configure+=(-DCMAKE_CUDA_ARCHITECTURES="$cap")
  else
    configure+=(-UCMAKE_CUDA_ARCHITECTURES)
  fi
  command -v ccache >/dev/null && configure+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  configure+=("${CONFIGURE_EXTRA[@]}")
  # Configure takes seconds to a minute (CUDA's compiler checks); the build gets the rest but 20 s
  # for the library check and the table.
  if ! run_stage configure "$(seconds 120)" "$(seconds 60)" "$LOGDIR/configure.log" "${configure[@]}"; then
    skip_stage build "configure failed or was stopped"
    return
  fi
  STAGE_JUDGE=judge_build
  run_stage build "$(left)" "$(seconds 20)" "$LOGDIR/build.log" cmake --build "$BUILD" -j"$JOBS"
  if grep -qP '^build\tbuild\tok\t' "$LOGDIR/stages.tsv"; then
    # shellcheck disable=SC2016  # "$1" is the inner shell's
    run_stage libraries "$(seconds 15)" 0 "$LOGDIR/libraries.log" \
      bash -c 'source tools/gpu-check-env.sh && check_libraries "$1"' _ "$BUILD"
  fi
}

# ---- command 2: tests, training, sanitizer ----

finish_test() {
  [[ -n $OUTDIR ]] || return 0
  cp "$LOGDIR/machine.log" "$OUTDIR/" 2>/dev/null
  tar -czf "$OUTDIR/gpu-check.tar.gz" --exclude='*.safetensors' -C "$(dirname "$LOGDIR")" "$(basename "$LOGDIR")" 2>/dev/null
}

# A stage that timed out but whose log already shows a failure failed; a failed one names (up to
# five of) the tests that failed, from ctest's or GoogleTest's list.
judge_tests() {
  local log=$1 rc=$2 timed_out=$3 names
  if ((!timed_out && rc != 0)); then
    names=$({ sed -n '/The following tests FAILED:/,$p' "$log" | grep -oE '^\s+[0-9]+ - [^ ]+' | awk '{ print $3 }'
      grep -oE '^\[  FAILED  \] [A-Za-z_0-9/.]+' "$log" | awk '{ print $4 }'; } | sort -u | head -5 | paste -sd, -)
    [[ -n $names ]] && printf 'failed\texit %s after %s s: %s (log %s)\n' "$rc" "$((SECONDS - STAGE_START))" "$names" "$log"
    return 0
  fi
  ((timed_out)) || return 0
  if grep -qE '\*\*\*Failed|\*\*\*Exception|^\[  FAILED  \]' "$log"; then
    printf 'failed\tfailures before it was stopped at its bound after %s s (log %s)\n' "$((SECONDS - STAGE_START))" "$log"
  fi
}

# memcheck slows kernels a hundredfold: stopped at its bound it is inconclusive, unless it had
# already reported an error.
judge_sanitizer() {
  local log=$1 rc=$2 timed_out=$3
  ((timed_out)) || return 0
  if grep -qE '^========= (Invalid|Program hit|Error|Uninitialized|Race|Barrier|Leaked)' "$log"; then
    printf 'failed\terrors reported before it was stopped at its bound (log %s)\n' "$log"
  else
    printf 'inconclusive\tno error in what ran, but stopped at its bound after %s s (log %s)\n' \
      "$((SECONDS - STAGE_START))" "$log"
  fi
}

command_test() {
  DEADLINE=$(seconds "${GPU_CHECK_TEST_DEADLINE:-205}")
  if [[ -f $LOGDIR/stages.tsv ]]; then  # a test command run again replaces its own lines
    awk -F'\t' '$1 != "test"' "$LOGDIR/stages.tsv" >"$LOGDIR/stages.tsv.tmp" && mv "$LOGDIR/stages.tsv.tmp" "$LOGDIR/stages.tsv"
  fi
  rm -f "$LOGDIR/runs.tsv"
  COMMAND_FINISH=finish_test
  begin_command
  bundle_stage

  local status=""
  [[ -f $LOGDIR/build-status.txt ]] && status=$(cut -f1 "$LOGDIR/build-status.txt")
  if [[ -z $status ]]; then
    fail_stage build "no $LOGDIR/build-status.txt: the build command has not run on this machine (a fresh machine has no build; run command 1 first)"
    return
  elif [[ $status == timeout ]]; then
    # ninja goes on where it stopped; at least 90 s are kept for the tests.
    STAGE_JUDGE=judge_build
    if run_stage build-resumed "$(left)" "$(seconds 90)" "$LOGDIR/build-resumed.log" cmake --build "$BUILD" -j"$JOBS"; then
      # The build is whole now: its row in the build command's part of the table says so.
      awk -F'\t' -v OFS='\t' '$1 == "build" && $2 == "build" && $3 == "timeout" { $3 = "ok"; $4 = "finished by build-resumed; first " $4 } 1' \
        "$LOGDIR/stages.tsv" >"$LOGDIR/stages.tsv.tmp" && mv "$LOGDIR/stages.tsv.tmp" "$LOGDIR/stages.tsv"
      printf 'ok\tbuild finished by the test command\n' >"$LOGDIR/build-status.txt"
    fi
  fi

  # The suite's training tests read Fashion-MNIST where Debian installs it. On a machine without
  # it the bundle's copy is linked there (as root; else those tests skip, saying why).
  if [[ -n $BUNDLE && ! -e /usr/share/datasets/fashion-mnist && -d $BUNDLE/fashion-mnist && $(id -u) -eq 0 ]]; then
    mkdir -p /usr/share/datasets
    ln -s "$(cd "$BUNDLE/fashion-mnist" && pwd)" /usr/share/datasets/fashion-mnist
  fi

  local tests=$BUILD/tests/ember_tests
  # The device suites first, in one process: what only a GPU can show.
  if [[ ! -x $tests ]]; then
    fail_stage device-suites "$tests was not built"
  else
    STAGE_JUDGE=judge_tests
    run_stage device-suites "$(seconds 60)" "$(seconds 105)" "$LOGDIR/device-suites.log" \
      "$tests" --gtest_filter='*Device*:*Cuda*' --gtest_brief=1 --gtest_output="xml:$LOGDIR/device-suites.xml"
  fi

  train_runs "$(seconds 30)" "$(seconds 45)"
  model_steps "$(seconds 60)" "$(seconds 30)"

  # The rest of the suite, in parallel; the sanitizer keeps 20 s.
  if [[ ! -x $tests ]]; then
    fail_stage ctest "$tests was not built"
  else
    STAGE_JUDGE=judge_tests
    run_stage ctest "$(seconds 600)" "$(seconds 25)" "$LOGDIR/ctest.log" \
      ctest --test-dir "$BUILD" -j"$JOBS" --output-on-failure -E 'Device|Cuda'
  fi

  local sanitizer
  sanitizer=$(command -v compute-sanitizer || true)
  for candidate in "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer" /usr/local/cuda/bin/compute-sanitizer; do
    [[ -z $sanitizer && -x $candidate ]] && sanitizer=$candidate
  done
  if [[ $GPU -eq 0 ]]; then
    skip_stage sanitizer "GPU_CHECK_DEVICE=$DEVICE"
  elif [[ -z $sanitizer ]]; then
    skip_stage sanitizer "compute-sanitizer is not installed (not on PATH nor in \$CUDA_HOME/bin or /usr/local/cuda/bin)"
  elif [[ ! -x $tests ]]; then
    skip_stage sanitizer "$tests was not built"
  else
    # The stream suite is left out: it queues about a second of matrix products on purpose (to
    # catch missing waits), which memcheck would stretch past any bound.
    STAGE_JUDGE=judge_sanitizer
    run_stage sanitizer "$(seconds 60)" "$(seconds 5)" "$LOGDIR/sanitizer.log" "$sanitizer" --tool memcheck \
      --error-exitcode 97 "$tests" --gtest_filter='*Device*:*Cuda*:-*DeviceCudaStreams*' --gtest_brief=1
  fi
  nccl_run "$(seconds 60)" "$(seconds 5)"
}

echo "gpu-check $COMMAND_NAME: logs in $LOGDIR${OUTDIR:+, results copied to $OUTDIR}; time scale $SCALE"
"command_$COMMAND_NAME"
write_summary_safely
cat "$LOGDIR/summary.md"
result_line >/dev/null
exit $?
