#!/usr/bin/env bash
# Side-by-side CPU training benchmark: `ember train` against the PyTorch reference script
# (bench/pytorch_fashion_mnist.py, a copy of the reference recipe the project was given), same recipe, data, seed and thread count.
# Runs ember and PyTorch alternately so that drift in machine load hits both alike, then prints
# medians as a Markdown table, every individual run (so the medians can be checked) and, per
# model, ember's best time against PyTorch's best (targets: <= 0.5x for mlp, <= 0.7x for cnn).
#
# Environment: EMBER_TORCH_VENV  virtualenv with torch + numpy, created if missing or broken
#                                (default: ~/.cache/ember-bench/torch-venv)
#              EMBER_BENCH_DATA  Fashion-MNIST IDX folder (default: /usr/share/datasets/fashion-mnist)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
baseline=$here/bench/pytorch_fashion_mnist.py
data=${EMBER_BENCH_DATA:-/usr/share/datasets/fashion-mnist}
venv=${EMBER_TORCH_VENV:-$HOME/.cache/ember-bench/torch-venv}

usage() {
  cat <<EOF
Usage: bench/compare_pytorch.sh [--ember PATH] [--runs N] [--models "mlp cnn"] [--limit N] [--threads "1 2"]
  --ember PATH     ember binary (default: build/ember if it exists, else build-cpu/ember)
  --runs N         runs per framework, model and thread count (default: 3)
  --models LIST    models, from mlp and cnn (default: "mlp cnn")
  --limit N        train on the first N images only (default: all 60,000); 1 epoch either way
  --threads LIST   CPU thread counts (default: "1 2")
PyTorch comes from \$EMBER_TORCH_VENV (default ~/.cache/ember-bench/torch-venv), set up on first use.
EOF
}

die() { echo "compare_pytorch.sh: error: $*" >&2; exit 1; }
is_count() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }

# --- arguments ---------------------------------------------------------------------------------
ember=$here/build/ember
[[ -x $ember ]] || ember=$here/build-cpu/ember
runs=3 models="mlp cnn" limit="" threads="1 2"
while (($#)); do
  case $1 in
    -h|--help) usage; exit 0 ;;
    --ember|--runs|--models|--limit|--threads)
      (($# >= 2)) || die "$1 needs a value"
      case $1 in
        --ember) ember=$2 ;; --runs) runs=$2 ;; --models) models=$2 ;;
        --limit) limit=$2 ;; --threads) threads=$2 ;;
      esac
      shift 2 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done
is_count "$runs" || die "--runs must be a positive integer, got '$runs'"
[[ -z $limit ]] || is_count "$limit" || die "--limit must be a positive integer, got '$limit'"
for t in $threads; do is_count "$t" || die "--threads must list positive integers, got '$t'"; done
for m in $models; do [[ $m == mlp || $m == cnn ]] || die "unknown model '$m' (mlp or cnn)"; done
[[ -n ${threads// /} && -n ${models// /} ]] || die "--threads and --models must not be empty"

# --- prerequisites -----------------------------------------------------------------------------
[[ -x $ember ]] || die "ember binary not found or not executable: $ember (build it, or pass --ember)"
[[ -f $baseline ]] || die "PyTorch reference script not found: $baseline"
[[ -d $data ]] || die "Fashion-MNIST not found at $data (the four IDX files, gzipped or not)"
[[ -x /usr/bin/time ]] || die "/usr/bin/time (GNU time) is missing, needed for peak RSS: apt-get install time"

# The PyPI torch wheel for Linux x86_64 is a CUDA build: libtorch_python.so and libtorch_cuda.so
# list cudart, cublas, cudnn, cufile, cusparseLt, nvshmem, nccl... as DT_NEEDED, so `import torch`
# fails without the nvidia-* / cuda-toolkit wheels even on CPU (checked with torch 2.15.0 and
# `pip install --no-deps`: "libcufile.so.0: cannot open shared object file"). CPU-only wheels live
# only on download.pytorch.org, which is not reachable, so we take the full dependency set (~5 GB venv).
torch_ok() { "$venv/bin/python" -c 'import torch, numpy; torch.randn(2) @ torch.randn(2)' >/dev/null 2>&1; }
ensure_torch() {
  torch_ok && return
  echo "Setting up PyTorch in $venv (pip install torch numpy; several GB, a few minutes)..." >&2
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv" || die "python3 -m venv $venv failed"
  "$venv/bin/python" -m pip install --progress-bar off torch numpy >&2 || die "pip install torch numpy failed"
  torch_ok || die "torch still does not import in $venv; remove that folder and retry"
}
ensure_torch
torch_version=$("$venv/bin/python" -c 'import torch; print(torch.__version__)')
# The CUDA build's libraries alone weigh a lot in PyTorch's peak RSS; report it so the RSS ratio
# can be read fairly (a CPU-only build, where one can be had, would sit lower).
import_rss=$(/usr/bin/time -f %M "$venv/bin/python" -c 'import torch, numpy' 2>&1 >/dev/null | tail -n 1)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
results=$work/runs.tsv   # model threads framework run samples/s train_s accuracy rss_mib

# --- one measured run --------------------------------------------------------------------------
recipe() { if [[ $1 == mlp ]]; then echo "--optimizer sgd --lr 1e-3"; else echo "--optimizer adadelta --lr 1.0"; fi; }
limit_args() { [[ -z $limit ]] || echo "--limit $limit"; }

# timed BASE THREADS CMD...: runs CMD under GNU time, output in BASE.log, time's report in BASE.time.
# OpenMP is capped too so neither side spins extra threads. A failure stops the benchmark with the
# log's tail, since a silently missing run would skew the medians.
timed() {
  local base=$1 nthreads=$2; shift 2
  local rc=0
  OMP_NUM_THREADS=$nthreads /usr/bin/time -v -o "$base.time" "$@" >"$base.log" 2>&1 || rc=$?
  if ((rc != 0)); then
    echo "compare_pytorch.sh: error: run failed (exit $rc): $*" >&2
    echo "--- last lines of its output ---" >&2
    tail -n 20 "$base.log" >&2
    exit 1
  fi
}
peak_rss_mib() { awk -F': ' '/Maximum resident set size/ {printf "%.1f", $2 / 1024}' "$1.time"; }

# ember writes RUN/metrics.csv; columns are looked up by header name, not position.
run_ember() {  # model threads run
  local base=$work/ember-$1-$2-$3
  # shellcheck disable=SC2046
  timed "$base" "$2" "$ember" train --model "$1" $(recipe "$1") --scheduler none --batch-size 64 --epochs 1 \
    --seed 0 --data "$data" $(limit_args) --threads "$2" --progress quiet --out "$base.run"
  [[ -f $base.run/metrics.csv ]] || die "ember wrote no $base.run/metrics.csv; its output: $(tail -n 5 "$base.log")"
  local row
  row=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
                 $1 == 1 { print col["samples_per_second"] ? $col["samples_per_second"] : "",
                                 col["train_seconds"] ? $col["train_seconds"] : "",
                                 col["test_accuracy"] ? $col["test_accuracy"] : "" }' "$base.run/metrics.csv")
  [[ $(wc -w <<<"$row") == 3 ]] || die "cannot read epoch 1 from $base.run/metrics.csv: $(head -n 2 "$base.run/metrics.csv")"
  printf '%s\t%s\tember\t%s\t%s\t%s\n' "$1" "$2" "$3" "$(tr ' ' '\t' <<<"$row")" "$(peak_rss_mib "$base")" >>"$results"
}

run_torch() {  # model threads run
  local base=$work/torch-$1-$2-$3
  # shellcheck disable=SC2046
  timed "$base" "$2" "$venv/bin/python" "$baseline" --model "$1" $(recipe "$1") --batch-size 64 --epochs 1 \
    --seed 0 --data "$data" $(limit_args) --threads "$2"
  local row
  row=$(python3 -c 'import json, sys
for line in open(sys.argv[1]):
    if line.startswith("{") and json.loads(line).get("epoch") == 1:
        r = json.loads(line); print(r["samples_per_second"], r["train_seconds"], r["test_accuracy"])' "$base.log") \
    || die "cannot read the epoch-1 JSON line from the PyTorch output: $(tail -n 3 "$base.log")"
  printf '%s\t%s\tpytorch\t%s\t%s\t%s\n' "$1" "$2" "$3" "$(tr ' ' '\t' <<<"$row")" "$(peak_rss_mib "$base")" >>"$results"
}

# --- benchmark ---------------------------------------------------------------------------------
echo "# ember vs PyTorch, CPU training, 1 epoch, batch 64, seed 0"
echo
echo "- date: $(date '+%Y-%m-%d %H:%M:%S %Z')"
echo "- machine: $(lscpu | sed -n 's/^Model name: *//p' | head -n 1), nproc $(nproc)"
echo "- ember: $("$ember" --version) ($ember)"
echo "- PyTorch: $torch_version ($venv); \`import torch\` alone: $((import_rss / 1024)) MiB peak RSS"
echo "- training images: ${limit:-all (60,000)}; runs: $runs each, alternating ember/PyTorch; threads: $threads"
echo "- recipes: mlp $(recipe mlp), scheduler none; cnn $(recipe cnn), scheduler none"
echo
: >"$results"
for model in $models; do
  for t in $threads; do
    for ((i = 1; i <= runs; i++)); do
      echo "running $model, $t thread(s), run $i/$runs ..." >&2
      run_ember "$model" "$t" "$i"
      run_torch "$model" "$t" "$i"
    done
  done
done

# --- report: medians, targets, individual runs --------------------------------------------------
python3 - "$results" <<'EOF'
import sys
from collections import defaultdict
from statistics import median

rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
runs = defaultdict(list)  # (model, threads, framework) -> [(sps, secs, acc, rss)]
for model, t, fw, _, sps, secs, acc, rss in rows:
    runs[model, int(t), fw].append(tuple(map(float, (sps, secs, acc, rss))))
med = {k: [median(col) for col in zip(*v)] for k, v in runs.items()}
models = list(dict.fromkeys(r[0] for r in rows))
threads = sorted({int(r[1]) for r in rows})
targets = {"mlp": 0.5, "cnn": 0.7}

print("| model | threads | ember samples/s | PyTorch samples/s | time ratio ember/PyTorch "
      "| ember RSS MiB | PyTorch RSS MiB | RSS ratio |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for m in models:
    for t in threads:
        e, p = med[m, t, "ember"], med[m, t, "pytorch"]
        print(f"| {m} | {t} | {e[0]:.0f} | {p[0]:.0f} | {e[1] / p[1]:.2f} "
              f"| {e[3]:.0f} | {p[3]:.0f} | {e[3] / p[3]:.2f} |")
print()
for m in models:
    et, es = min((med[m, t, "ember"][1], t) for t in threads)
    pt, ps = min((med[m, t, "pytorch"][1], t) for t in threads)
    ratio, goal = et / pt, targets[m]
    verdict = "met" if ratio <= goal else "NOT met"
    line = (f"- {m}: ember best {et:.2f} s (threads={es}) vs PyTorch best {pt:.2f} s (threads={ps}): "
            f"{ratio:.2f}x (target <= {goal}x: {verdict})")
    if 1 in threads and 2 in threads:
        line += f"; ember 2-thread speedup over 1 thread {med[m, 1, 'ember'][1] / med[m, 2, 'ember'][1]:.2f}x"
    else:
        line += "; ember 2-vs-1-thread speedup: n/a (needs --threads with 1 and 2)"
    print(line)
print()
print("Individual runs (medians above are over these):")
print()
print("| model | threads | framework | run | samples/s | train s | test accuracy | peak RSS MiB |")
print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
for model, t, fw, i, sps, secs, acc, rss in rows:
    print(f"| {model} | {t} | {fw} | {i} | {float(sps):.0f} | {float(secs):.3f} | {float(acc):.4f} | {rss} |")
EOF
