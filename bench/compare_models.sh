#!/usr/bin/env bash
# One training step per model family, ember against PyTorch on the CPU: bench_models and
# bench/models/models_pytorch.py run alternately (ember, PyTorch, ember, ...) so that drift in
# machine load hits both alike; prints per family the median over runs of each side's median step
# time, the ratio ember/PyTorch, and each side's peak resident memory.
#
#   bench/compare_models.sh [--bench build/bench/bench_models] [--runs 3] [--families "resnet18 gpt2"]
#                           [--threads 1] [--steps 10] [--warmup 3]
# Environment: EMBER_TORCH_VENV (default ~/.cache/ember-bench/torch-venv), with torch installed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bench=$here/build/bench/bench_models
venv=${EMBER_TORCH_VENV:-$HOME/.cache/ember-bench/torch-venv}
runs=3 families="" threads=1 steps=10 warmup=3
die() { echo "compare_models.sh: error: $*" >&2; exit 1; }
while (($#)); do
  (($# >= 2)) || die "$1 needs a value (or is unknown)"
  case $1 in
    --bench) bench=$2 ;; --runs) runs=$2 ;; --families) families=$2 ;;
    --threads) threads=$2 ;; --steps) steps=$2 ;; --warmup) warmup=$2 ;;
    *) die "unknown argument $1" ;;
  esac
  shift 2
done
[[ -x $bench ]] || die "bench_models not found at $bench (build with benchmarks on, or pass --bench)"
[[ -x $venv/bin/python ]] || die "no Python virtual environment with torch at $venv (set EMBER_TORCH_VENV)"
[[ $runs =~ ^[1-9][0-9]*$ && $threads =~ ^[1-9][0-9]*$ && $steps =~ ^[1-9][0-9]*$ && $warmup =~ ^[1-9][0-9]*$ ]] ||
  die "--runs, --threads, --steps and --warmup must be positive integers"
[[ -n $families ]] || families=$("$bench" --list | awk '{print $1}' | tr '\n' ' ')

field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p"; }
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }

export OMP_NUM_THREADS=$threads
echo "model families, one training step on the CPU, OMP_NUM_THREADS=$threads, $runs alternating runs of $warmup + $steps steps"
echo "$(uname -n), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc --all) CPUs"
echo
echo "| family | configuration | ember ms | PyTorch ms | ratio | ember peak MiB | PyTorch peak MiB |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: |"
for family in $families; do
  config=$("$bench" --list | awk -v f="$family" '$1 == f {$1 = ""; sub(/^ +/, ""); print}')
  e_ms=() t_ms=() e_mem=() t_mem=()
  for ((r = 0; r < runs; r++)); do
    line=$("$bench" --family "$family" --steps "$steps" --warmup "$warmup") || die "bench_models failed on $family"
    e_ms+=("$(field ms_per_step <<<"$line")") e_mem+=("$(field peak_rss_mib <<<"$line")")
    line=$("$venv/bin/python" "$here/bench/models/models_pytorch.py" --family "$family" --steps "$steps" --warmup "$warmup") ||
      die "models_pytorch.py failed on $family"
    t_ms+=("$(field ms_per_step <<<"$line")") t_mem+=("$(field peak_rss_mib <<<"$line")")
    echo "  run $r: $family ember ${e_ms[-1]} ms, PyTorch ${t_ms[-1]} ms" >&2
  done
  em=$(printf '%s\n' "${e_ms[@]}" | median) tm=$(printf '%s\n' "${t_ms[@]}" | median)
  ememory=$(printf '%s\n' "${e_mem[@]}" | median) tmemory=$(printf '%s\n' "${t_mem[@]}" | median)
  printf '| %s | %s | %.1f | %.1f | %.2f | %.0f | %.0f |\n' "$family" "$config" "$em" "$tm" \
    "$(awk -v a="$em" -v b="$tm" 'BEGIN {print a / b}')" "$ememory" "$tmemory"
done
