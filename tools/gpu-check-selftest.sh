#!/usr/bin/env bash
# Checks the GPU check's own machinery (tools/gpu-check.sh and gpu-check-stages.sh) in about a
# minute, without a GPU and without building ember: stand-ins for cmake, ctest, nvidia-smi,
# compute-sanitizer, the ember tool and the test program (in a temporary folder, first on PATH)
# sleep or fail on request, and every bound and deadline is scaled by 0.1. It checks that
#   - a build that outlasts its bound stops inside the command's deadline, saying at which step;
#   - the test command finishes that build, bounds every stage, reports the stopped suite as
#     TIMED OUT and the stopped sanitizer as INCONCLUSIVE, and writes the table and the archive;
#   - a TERM in the middle of a stage stops it, its children too, and still leaves the table;
#   - all stages passing gives "Result: every stage passed." and exit 0, a failing test exit 1.
# Usage: tools/gpu-check-selftest.sh   (prints "N passed, N failed")
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
ROOT=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
marker="gpu-check-selftest-child-$$-$RANDOM"
passed=0
failed=0

check() {  # check NAME CONDITION...: one assertion
  local name=$1
  shift
  if "$@"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL: $name"
  fi
}
has() { grep -qE -- "$2" "$1" 2>/dev/null; }
lacks() { ! grep -qE -- "$2" "$1" 2>/dev/null; }
no_children() { ! pgrep -f "$marker" >/dev/null; }

# ---- the stand-ins ----
mkdir -p "$work/bin" "$work/build/tests" "$work/build/bench" "$work/data"
touch "$work/data/train-images-idx3-ubyte"
cat >"$work/bin/cmake" <<'EOF'
#!/usr/bin/env bash
if [[ $1 == --build ]]; then
  echo "[1/3] Building a.cpp.o"
  echo "[2/3] Building b.cu.o"
  sleep "${FAKE_BUILD_SLEEP:-0}"
  echo "[3/3] Linking ember"
  exit "${FAKE_BUILD_RC:-0}"
fi
echo "-- configured (stand-in)"
EOF
cat >"$work/bin/ctest" <<EOF
#!/usr/bin/env bash
echo "1/2 Test  #1: Suite.first ....   Passed    0.01 sec"
# A child that only the stage's process group reaches, to check that a stopped stage takes it along.
bash -c 'exec -a $marker sleep 300' &
sleep "\${FAKE_CTEST_SLEEP:-0}"
kill \$! 2>/dev/null
echo "100% tests passed, 0 tests failed out of 2"
EOF
cat >"$work/bin/nvidia-smi" <<'EOF'
#!/usr/bin/env bash
case "$*" in
  *compute_cap*) echo "9.0" ;;
  -L) echo "GPU 0: Stand-in GPU (UUID: GPU-0)" ;;
  *-lms*) while :; do echo 500; sleep 0.25; done ;;
  *) echo "stand-in nvidia-smi" ;;
esac
EOF
# shellcheck disable=SC2016  # the stand-in's own $1
printf '#!/usr/bin/env bash\n[[ $1 == --version ]] && exit 0\nsleep 300\n' >"$work/bin/compute-sanitizer"
cat >"$work/build/ember" <<'EOF'
#!/usr/bin/env bash
out="" device=""
while [[ $# -gt 0 ]]; do
  case $1 in --out) out=$2; shift ;; --device) device=$2; shift ;; esac
  shift
done
sps=1000
[[ $device == cpu ]] && sps=100
printf 'epoch,samples_per_second,test_accuracy,peak_gpu_mib\n1,%s,0.85,12\n' "$sps" >"$out/metrics.csv"
echo "trained (stand-in)"
EOF
cat >"$work/build/tests/ember_tests" <<'EOF'
#!/usr/bin/env bash
if [[ ${FAKE_TESTS_RC:-0} != 0 ]]; then
  echo "[  FAILED  ] DeviceParityOps.Add"
  exit "$FAKE_TESTS_RC"
fi
echo "[  PASSED  ] 3 tests."
EOF
cat >"$work/build/bench/bench_models" <<'EOF'
#!/usr/bin/env bash
[[ $1 == --list ]] && printf 'resnet18           a stand-in\ngpt2               a stand-in\n' && exit 0
echo "$2 ms_per_step=1.500 min=1.400 peak_rss_mib=200.0 cuda_peak_mib=64.0 steps=10"
EOF
chmod +x "$work"/bin/* "$work/build/ember" "$work/build/tests/ember_tests" "$work/build/bench/bench_models"

export PATH=$work/bin:$PATH GPU_CHECK_TIME_SCALE=0.1 GPU_CHECK_BUILD_DIR=$work/build GPU_CHECK_BUNDLE=none \
  GPU_CHECK_DATA=$work/data GPU_CHECK_DEVICE=cuda

# run_check NAME COMMAND: one command of the check, with its own $OUT; sets RC and TOOK.
run_check() {
  local name=$1 command=$2
  rm -rf "$work/out-$name"
  mkdir -p "$work/out-$name"
  local start=$SECONDS
  "$ROOT/tools/gpu-check.sh" "$command" "$work/out-$name" >"$work/$name.txt" 2>&1
  RC=$?
  TOOK=$((SECONDS - start))
}

# ---- a build that outlasts its bound (deadline 27 s), then the test command (deadline 21 s) ----
export GPU_CHECK_LOGDIR=$work/log1
FAKE_BUILD_SLEEP=100 run_check build1 build
out=$work/out-build1
check "build: exit 3 when the build is stopped ($RC)" test "$RC" -eq 3
check "build: within its deadline ($TOOK s)" test "$TOOK" -le 30
check "build: the step it stopped at" has "$out/summary.md" '\| build \| build \| TIMED OUT: timed out after [0-9]+ s at step 2/3'
check "build: the status file" has "$work/log1/build-status.txt" '^timeout'
check "build: machine.log and the logs come back" test -s "$out/machine.log" -a -s "$out/gpu-check-build.tar.gz"

FAKE_CTEST_SLEEP=100 run_check test1 test
out=$work/out-test1
check "test: exit 3 when stages were stopped ($RC)" test "$RC" -eq 3
check "test: within its deadline ($TOOK s)" test "$TOOK" -le 24
check "test: the build finished" has "$out/summary.md" '\| build \| build \| ok: finished by build-resumed'
check "test: device suites passed" has "$out/summary.md" '\| test \| device-suites \| ok'
check "test: six training runs" test "$(grep -cE '\| test \| train-(mlp|cnn)-[a-z-]+ \| ok' "$out/summary.md")" -eq 6
check "test: the speedup column" has "$out/summary.md" '\| mlp \| cuda \| all \| 1000 \| 85.00% \| 12 MiB \| 0 MiB \| 10.0x \|'
check "test: the suite stopped at its bound" has "$out/summary.md" '\| test \| ctest \| TIMED OUT: stopped at its bound'
check "test: the stopped suite's children ended" no_children
check "test: the sanitizer inconclusive" has "$out/summary.md" '\| test \| sanitizer \| INCONCLUSIVE: no error in what ran'
check "test: the result line" has "$out/summary.md" '^Result: INCONCLUSIVE'
check "test: the archive" test -s "$out/gpu-check.tar.gz"

# ---- a TERM in the middle of the suite ----
rm -rf "$work/out-term" && mkdir -p "$work/out-term"
GPU_CHECK_DEVICE=cpu FAKE_CTEST_SLEEP=100 "$ROOT/tools/gpu-check.sh" test "$work/out-term" >"$work/term.txt" 2>&1 &
pid=$!
for _ in $(seq 1 100); do
  grep -q 'ctest (at most' "$work/term.txt" 2>/dev/null && break
  sleep 0.1
done
sleep 1
kill -TERM "$pid"
wait "$pid"
RC=$?
check "term: exit 3 ($RC)" test "$RC" -eq 3
check "term: the stage stopped" has "$work/out-term/summary.md" '\| test \| ctest \| TIMED OUT: stopped after [0-9]+ s: TERM'
check "term: the command's row" has "$work/out-term/summary.md" '\| test \| \(the test command\) \| TIMED OUT: ended early by TERM'
check "term: the suite's children ended" no_children

# ---- everything passes; then a failing test ----
export GPU_CHECK_LOGDIR=$work/log2 GPU_CHECK_DEVICE=cpu
run_check build2 build
check "pass: build exit 0 ($RC)" test "$RC" -eq 0
run_check test2 test
check "pass: test exit 0 ($RC)" test "$RC" -eq 0
check "pass: the result line" has "$work/out-test2/summary.md" '^Result: every stage passed\.$'
check "pass: no sanitizer on the CPU" has "$work/out-test2/summary.md" '\| test \| sanitizer \| skipped'
check "pass: the model steps' table" has "$work/out-test2/summary.md" '^\| gpt2 \| 1\.500 \| 200\.0 \| 64\.0 \|$'
FAKE_TESTS_RC=1 run_check test3 test
check "fail: exit 1 ($RC)" test "$RC" -eq 1
check "fail: the stage, naming the test" has "$work/out-test3/summary.md" '\| test \| device-suites \| FAILED: exit 1 after [0-9]+ s: DeviceParityOps.Add \(log'
check "fail: the result line" has "$work/out-test3/summary.md" '^Result: FAILED'
check "fail: the earlier test run's rows replaced" lacks "$work/out-test3/summary.md" '\| test \| device-suites \| ok'

if ((failed > 0)) || [[ -n ${SELFTEST_KEEP:-} ]]; then
  echo "---- logs kept in $work"
  trap - EXIT
fi
echo "$passed passed, $failed failed"
((failed == 0))
