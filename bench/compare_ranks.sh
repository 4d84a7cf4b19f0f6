#!/usr/bin/env bash
# Data-parallel training on one machine: `ember train` as one process (1 and 2 threads) against
# `mpirun -np 2` (one thread per rank), same recipe and batch per process. Runs the three
# alternately so that drift in machine load hits all alike, and prints medians of samples/s
# (the trainer's own figure for the epoch: samples of every rank over the epoch's seconds) and
# every run.
#
# A 2-rank job with batch B per rank steps with 2B samples; it is compared here with one process
# at batch B (the same work per process), which is how data parallelism is used to scale.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
usage() {
  cat <<EOF
Usage: bench/compare_ranks.sh [--ember PATH] [--runs N] [--models "mlp cnn"] [--limit N]
  --ember PATH   ember binary (default: build/ember if it exists, else build-cpu/ember)
  --runs N       runs per configuration (default: 3)
  --models LIST  from mlp and cnn (default: "mlp cnn"); 1 epoch each
  --limit N      train on the first N images only (default: all 60,000)
EOF
}
die() { echo "compare_ranks.sh: error: $*" >&2; exit 1; }

ember=$here/build/ember
[[ -x $ember ]] || ember=$here/build-cpu/ember
runs=3 models="mlp cnn" limit=""
while (($#)); do
  case $1 in
    -h|--help) usage; exit 0 ;;
    --ember) ember=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done
[[ -x $ember ]] || die "ember binary not found: $ember"
command -v mpirun >/dev/null || die "mpirun not found (Debian: apt-get install openmpi-bin)"
[[ $runs =~ ^[1-9][0-9]*$ ]] || die "--runs must be a positive integer"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 EMBER_DEVICE=cpu
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

configs=("1 process, 1 thread" "1 process, 2 threads" "2 ranks, 1 thread each")
# The epoch's samples/s, from the trainer's metrics.csv.
samples_per_second() { sed -n 2p "$1/metrics.csv" | cut -d, -f6; }

declare -A results
for model in $models; do
  recipe=(train --model "$model" --epochs 1 --progress quiet)
  [[ -n $limit ]] && recipe+=(--limit "$limit")
  [[ $model == mlp ]] && recipe+=(--optimizer sgd)
  for run in $(seq "$runs"); do
    for config in "${configs[@]}"; do
      out=$work/$model-$run-${config//[ ,]/_}
      case $config in
        "1 process, 1 thread") OMP_NUM_THREADS=1 "$ember" "${recipe[@]}" --out "$out" >/dev/null ;;
        "1 process, 2 threads") OMP_NUM_THREADS=2 "$ember" "${recipe[@]}" --out "$out" >/dev/null ;;
        *) OMP_NUM_THREADS=1 mpirun -np 2 "$ember" "${recipe[@]}" --out "$out" >/dev/null ;;
      esac
      sps=$(samples_per_second "$out")
      results[$model|$config]+="$sps "
      echo "run $run  $model  $config: $sps samples/s"
    done
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
echo
echo "| model | configuration | samples/s (median of $runs) | vs 1 process, 1 thread |"
echo "|---|---|---:|---:|"
for model in $models; do
  base=$(median <<<"${results[$model|1 process, 1 thread]}")
  for config in "${configs[@]}"; do
    m=$(median <<<"${results[$model|$config]}")
    printf "| %s | %s | %.0f | %.2fx |\n" "$model" "$config" "$m" "$(awk -v a="$m" -v b="$base" 'BEGIN{print a/b}')"
  done
done
