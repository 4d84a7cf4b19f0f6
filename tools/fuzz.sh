#!/usr/bin/env bash
# Fuzzes ember's readers of outside data with libFuzzer, AddressSanitizer and UBSan.
#
#   tools/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     default: 60 seconds, every target
#   tools/fuzz.sh --merge [TARGET...]                  minimise the work corpora into fuzz/corpus/
#
# Targets (fuzz/fuzz_<target>.cpp): safetensors, checkpoint, idx, device, npy, torch_load. Each
# runs alone, one process at a time, for SECONDS_PER_TARGET, starting from its committed seeds
# (fuzz/corpus/<target>/) and every input that ever failed (fuzz/regressions/<target>/); new
# inputs go to a working corpus in build-fuzz/fuzz-work/<target>/, failing ones to
# build-fuzz/fuzz-artifacts/<target>/. A failure is anything but an ember::Error escaping (a crash,
# a sanitizer report, a leak, a timeout, an allocation over the limit); copy the artifact into
# fuzz/regressions/<target>/, fix the reader,
# and the normal test suite (FuzzReplay) replays it from then on. See docs/HARDENING.md.
#
# Needs clang 14 with libFuzzer (Debian: clang, libclang-rt-14-dev) and clang's OpenMP
# (libomp-14-dev), besides ember's usual dependencies (tools/install-deps.sh); missing Debian
# packages are installed, with sudo when not root. EMBER_FUZZ_JOBS sets the build's parallel jobs
# (default: all cores); EMBER_FUZZ_SKIP_BUILD=1 fuzzes the binaries already in build-fuzz/.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-fuzz
all_targets=(safetensors checkpoint idx device npy torch_load)

merge=0
if [[ ${1:-} == --merge ]]; then
  merge=1
  shift
elif [[ ${1:-} =~ ^[0-9]+$ ]]; then
  seconds=$1
  shift
fi
seconds=${seconds:-60}
targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
  [[ " ${all_targets[*]} " == *" $t "* ]] || { echo "fuzz.sh: unknown target '$t' (targets: ${all_targets[*]})" >&2; exit 2; }
done

# The limits. Inputs are at most max_len bytes, and no reader may allocate more than its input
# justifies before checking it: safetensors and checkpoints hold their tensors' bytes, IDX files
# too, except that gzip may legitimately expand 1032-fold, so a 64 KiB gzip file can hold ~66 MiB
# of data (read into a buffer of at most 64 MiB that then grows). Any single allocation over
# malloc_limit_mb therefore is a finding, and so is an input that runs longer than timeout_s.
max_len_of() {
  case $1 in
    safetensors | checkpoint | npy | torch_load) echo 65536 ;;
    idx) echo 65536 ;;
    device) echo 256 ;;
  esac
}
malloc_limit_mb=256
rss_limit_mb=2048
timeout_s=10

# ---- dependencies ----
"$root/tools/install-deps.sh" clang libclang-rt-14-dev libomp-14-dev

# ---- build: everything instrumented (the top-level EMBER_FUZZ option adds the sanitizers) ----
if [[ ! -f $build/CMakeCache.txt ]]; then
  launcher=()
  command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DEMBER_FUZZ=ON -DEMBER_WITH_CUDA=OFF \
    -DEMBER_BUILD_TESTS=OFF -DEMBER_BUILD_BENCHMARKS=OFF -DEMBER_BUILD_EXAMPLES=OFF \
    -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" "${launcher[@]}" >/dev/null
fi
if [[ ${EMBER_FUZZ_SKIP_BUILD:-0} != 1 ]]; then
  cmake --build "$build" -j "${EMBER_FUZZ_JOBS:-$(nproc)}" --target "${targets[@]/#/fuzz_}"
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

if [[ $merge -eq 1 ]]; then
  for t in "${targets[@]}"; do
    work=$build/fuzz-work/$t
    mkdir -p "$work"
    before=$(ls "$root/fuzz/corpus/$t" | wc -l)
    # Edges only (-use_counters=0): merging by hit counts too would keep several times the files.
    "$build/fuzz/fuzz_$t" -merge=1 -use_counters=0 -max_len="$(max_len_of "$t")" -rss_limit_mb=$rss_limit_mb \
      -malloc_limit_mb=$malloc_limit_mb -timeout=$timeout_s "$root/fuzz/corpus/$t" "$work" >"$build/fuzz-merge-$t.log" 2>&1
    echo "$t: corpus $before -> $(ls "$root/fuzz/corpus/$t" | wc -l) files, $(du -sb "$root/fuzz/corpus/$t" | cut -f1) bytes"
  done
  exit 0
fi

# ---- fuzz, one target at a time ----
failed=0
printf '%-12s %12s %8s %8s  %s\n' target executions seconds crashes artifacts
for t in "${targets[@]}"; do
  work=$build/fuzz-work/$t
  artifacts=$build/fuzz-artifacts/$t
  mkdir -p "$work" "$artifacts" "$root/fuzz/regressions/$t"
  log=$build/fuzz-$t.log
  before=$(ls "$artifacts" | wc -l)
  start=$SECONDS
  set +e
  "$build/fuzz/fuzz_$t" -max_total_time="$seconds" -max_len="$(max_len_of "$t")" -timeout=$timeout_s \
    -rss_limit_mb=$rss_limit_mb -malloc_limit_mb=$malloc_limit_mb -artifact_prefix="$artifacts/" \
    -print_final_stats=1 "$work" "$root/fuzz/corpus/$t" "$root/fuzz/regressions/$t" >"$log" 2>&1
  rc=$?
  set -e
  elapsed=$((SECONDS - start))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  if [[ -z $execs ]]; then  # a crash ends the run before the final stats; take the last status line
    execs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')
  fi
  crashes=$(($(ls "$artifacts" | wc -l) - before))
  [[ $rc -ne 0 || $crashes -gt 0 ]] && failed=1
  printf '%-12s %12s %8s %8s  %s\n' "$t" "${execs:-?}" "$elapsed" "$crashes" \
    "$([[ $crashes -gt 0 ]] && echo "$artifacts (log: $log)" || echo -)"
done
exit $failed
