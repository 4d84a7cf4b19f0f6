#!/usr/bin/env bash
# Side by side: one epoch of `ember train` and of the PyTorch baseline
# (../shared/baselines/pytorch_fashion_mnist.py) on the same machine, recipe and thread count.
# Prints a Markdown table: training samples/s, test accuracy and peak RSS of each process.
#
# Usage: bench/train_vs_pytorch.sh [EMBER_BINARY] [MODEL...]
#   PYTHON   a Python with torch and numpy (default: python3)
#   THREADS  CPU threads for both (default: all cores)
#   EPOCHS   epochs per run (default: 1)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ember=${1:-$here/build/ember}
shift || true
models=("${@:-mlp cnn}")
# shellcheck disable=SC2206
models=(${models[*]})
python=${PYTHON:-python3}
threads=${THREADS:-$(nproc)}
epochs=${EPOCHS:-1}
baseline=$here/../shared/baselines/pytorch_fashion_mnist.py
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Peak resident set of a finished command, from GNU time's report (kB -> MiB).
peak_rss_mib() { awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "$1"; }

echo "| model | recipe | framework | samples/s | test accuracy | peak RSS (MiB) |"
echo "| --- | --- | --- | ---: | ---: | ---: |"
for model in "${models[@]}"; do
  if [[ $model == mlp ]]; then recipe=(--optimizer sgd --lr 1e-3); else recipe=(--optimizer adadelta --lr 1.0); fi
  label="${recipe[*]} batch 64, $epochs epoch(s), $threads threads"

  /usr/bin/time -v -o "$work/ember.time" "$ember" train --model "$model" "${recipe[@]}" --scheduler none \
    --batch-size 64 --epochs "$epochs" --threads "$threads" --progress quiet --out "$work/run-$model" >"$work/ember.log"
  row=$(tail -n 1 "$work/run-$model/metrics.csv")
  IFS=, read -r _ _ _ accuracy seconds rate <<<"$row"
  printf "| %s | %s | ember | %.0f | %.4f | %s |\n" "$model" "$label" "$rate" "$accuracy" "$(peak_rss_mib "$work/ember.time")"

  /usr/bin/time -v -o "$work/torch.time" "$python" "$baseline" --model "$model" "${recipe[@]}" --batch-size 64 \
    --epochs "$epochs" --threads "$threads" >"$work/torch.log"
  rate=$(grep '"epoch"' "$work/torch.log" | tail -n 1 | sed -E 's/.*"samples_per_second": ([0-9.]+).*/\1/')
  accuracy=$(grep '"epoch"' "$work/torch.log" | tail -n 1 | sed -E 's/.*"test_accuracy": ([0-9.]+).*/\1/')
  version=$(tail -n 1 "$work/torch.log" | sed -E 's/.*"framework": "([^"]+)".*/\1/')
  printf "| %s | %s | %s | %.0f | %.4f | %s |\n" "$model" "$label" "$version" "$rate" "$accuracy" "$(peak_rss_mib "$work/torch.time")"
done
