# shellcheck shell=bash
# Sourced by tools/gpu-check.sh (the test command): one epoch of mlp and cnn with `ember train` on
# the GPU, on the CPU and on the GPU with --amp, each run a stage with its own bound; the table of
# throughput, accuracy and GPU memory (runs_table); one cnn epoch on 2 ranks over NCCL (nccl_run).
# Nothing is downloaded: without Fashion-MNIST on disk, training is skipped (and said so).
# LOGDIR/runs.tsv lists the runs started (model|role|label|out|limit), so that the table can be
# written from any trap.

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

DATA=""

# train_runs BOUND RESERVE: each run for at most BOUND seconds, keeping RESERVE for what follows.
# The float32 runs of both models come first, so that the --amp runs are the ones dropped when
# time runs short.
train_runs() {
  local bound=$1 reserve=$2 run model role dev label out limit smi_pid
  if [[ ! -x $BUILD/ember ]]; then
    fail_stage train "$BUILD/ember was not built"
    return
  fi
  if ! DATA=$(find_data); then
    skip_stage train "Fashion-MNIST not found (looked in ${GPU_CHECK_DATA:+$GPU_CHECK_DATA, }/usr/share/datasets/fashion-mnist, the bundle, shared/, ../shared/, data/; set GPU_CHECK_DATA); this script downloads nothing"
    return
  fi
  for run in mlp:gpu mlp:cpu cnn:gpu cnn:cpu mlp:gpu-amp cnn:gpu-amp; do
    model=${run%%:*}
    role=${run#*:}
    dev=$DEVICE
    [[ $role == cpu ]] && dev=cpu
    label=$(run_label "$role")
    out="$LOGDIR/train-$model-$label"
    rm -rf "$out"
    mkdir -p "$out"
    limit=${GPU_CHECK_LIMIT:-}
    # A full cnn epoch on the CPU takes minutes: the cpu run trains on fewer images (samples/s does
    # not depend on how many), and so do the "gpu" runs of a rehearsal, which train on the CPU too.
    [[ -z $limit && $model == cnn && ($role == cpu || $GPU -eq 0) ]] && limit=${GPU_CHECK_CPU_CNN_LIMIT:-10000}
    local args=(train --model "$model" --epochs 1 --device "$dev" --data "$DATA" --out "$out" --progress lines)
    [[ -n $limit ]] && args+=(--limit "$limit")
    [[ $role == gpu-amp ]] && args+=(--amp)
    echo "$model|$role|$label|$out|${limit:-all}" >>"$LOGDIR/runs.tsv"
    # The GPU's memory use while the GPU run trains: the driver's view (context included).
    smi_pid=""
    if [[ $role == gpu* && $GPU -eq 1 ]] && command -v nvidia-smi >/dev/null; then
      timeout "$((bound + 15))" nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 250 \
        >"$out/nvidia-smi-memory.log" 2>&1 &
      smi_pid=$!
    fi
    run_stage "train-$model-$label" "$bound" "$reserve" "$out/train.log" "$BUILD/ember" "${args[@]}"
    if [[ -n $smi_pid ]]; then
      kill "$smi_pid" 2>/dev/null
      wait "$smi_pid" 2>/dev/null
    fi
  done
}

# model_steps BOUND RESERVE: one training step of each model family (bench/models, ember::models)
# on the device, timed by bench_models: 3 warm-up steps, then the median of 10; its lines (ms per
# step, peak host and GPU memory) go to LOGDIR/model-steps.log and into the table.
model_steps() {
  local bench=$BUILD/bench/bench_models
  if [[ ! -x $bench ]]; then
    fail_stage model-steps "$bench was not built (benchmarks on, and Google Benchmark found?)"
    return
  fi
  # shellcheck disable=SC2016  # the inner shell's variables
  run_stage model-steps "$1" "$2" "$LOGDIR/model-steps.log" bash -c \
    'rc=0; for f in $("$1" --list | cut -d" " -f1); do "$1" --family "$f" --device "$2" --steps 10 --warmup 3 || rc=1; done; exit $rc' \
    _ "$bench" "$DEVICE"
}

# The model families' step lines, as a table ("" when model_steps did not run).
model_steps_table() {
  [[ -s $LOGDIR/model-steps.log ]] || return 0
  echo "| model family | ms per step | host peak MiB | GPU peak MiB (ember's allocator) |"
  echo "|---|---|---|---|"
  sed -n 's/^\([a-z0-9_]*\) ms_per_step=\([0-9.]*\).*peak_rss_mib=\([0-9.]*\).*cuda_peak_mib=\([0-9.]*\).*/| \1 | \2 | \3 | \4 |/p' \
    "$LOGDIR/model-steps.log"
}

# nccl_run BOUND RESERVE: data parallelism over NCCL (src/distributed/nccl/nccl_transport.cpp) needs a
# GPU per rank: NCCL refuses two ranks on one GPU. With two or more GPUs and Open MPI, one cnn
# epoch on 2 ranks.
nccl_run() {
  local gpus=0 out
  [[ $GPU -eq 1 ]] && command -v nvidia-smi >/dev/null && gpus=$(timeout 20 nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
  if [[ $GPU -eq 0 ]]; then
    skip_stage nccl "GPU_CHECK_DEVICE=$DEVICE"
  elif [[ $gpus -lt 2 ]]; then
    skip_stage nccl "$gpus GPU(s): NCCL needs one per rank, so 2 ranks need 2 GPUs"
  elif ! command -v mpirun >/dev/null; then
    skip_stage nccl "mpirun not found (Debian: openmpi-bin libopenmpi-dev, then rebuild)"
  elif [[ -z $DATA ]]; then
    skip_stage nccl "Fashion-MNIST not found"
  else
    out="$LOGDIR/train-cnn-2-ranks-cuda"
    rm -rf "$out"
    run_stage nccl "$1" "$2" "$LOGDIR/nccl.log" env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
      EMBER_DIST_TIMEOUT=60 mpirun -np 2 "$BUILD/ember" train --model cnn --epochs 1 --device cuda --data "$DATA" \
      --out "$out" --progress lines
  fi
}

# The last row's value of a metrics.csv column ("" when the column is missing).
csv_column() {
  local file=$1 pattern=$2
  [[ -f $file ]] || return 0
  awk -F, -v pat="$pattern" 'NR == 1 { for (i = 1; i <= NF; i++) if (tolower($i) ~ pat) col = i; next }
    col { v = $col } END { if (col) print v }' "$file"
}

# The driver's peak memory use during the run, minus the use before it (MiB).
smi_peak_mib() {
  local f=$1/nvidia-smi-memory.log
  [[ -s $f ]] || {
    echo "n/a"
    return 0
  }
  awk 'NR == 1 { base = $1 } $1 + 0 > max { max = $1 + 0 } END { if (NR) printf "%d MiB", max - base; else print "n/a" }' "$f"
}

runs_table() {
  [[ -s $LOGDIR/runs.tsv ]] || return 0
  local model role label out limit sps acc peak smi speedup cpu_sps
  declare -A sps_of=()
  while IFS='|' read -r model role label out limit; do
    sps_of[$model-$role]=$(csv_column "$out/metrics.csv" '^samples_per_second$')
  done <"$LOGDIR/runs.tsv"
  echo "data: \`${DATA:-?}\`"
  echo
  echo "| model | device | train images | samples/s | test accuracy | peak GPU memory (ember) | GPU memory used (nvidia-smi) | speedup vs cpu |"
  echo "|---|---|---|---|---|---|---|---|"
  sort -s -t'|' -k1,1r "$LOGDIR/runs.tsv" | while IFS='|' read -r model role label out limit; do
    sps=${sps_of[$model-$role]:-}
    acc=$(csv_column "$out/metrics.csv" '^test_accuracy$')
    [[ -n $acc ]] && acc=$(awk -v a="$acc" 'BEGIN { printf "%.2f%%", 100 * a }')
    peak="n/a"
    smi="n/a"
    speedup="—"
    if [[ $role == gpu* ]]; then
      peak=$(csv_column "$out/metrics.csv" '^peak_gpu_mib$')
      [[ $peak =~ ^[0-9.]+$ ]] && peak="$peak MiB"
      smi=$(smi_peak_mib "$out")
      cpu_sps=${sps_of[$model-cpu]:-}
      if [[ -n $sps && -n $cpu_sps ]]; then
        speedup=$(awk -v g="$sps" -v c="$cpu_sps" 'BEGIN { if (c > 0) printf "%.1fx", g / c; else print "n/a" }')
      fi
    fi
    echo "| $model | $label | $limit | ${sps:-none} | ${acc:-none} | ${peak:-n/a} | $smi | $speedup |"
  done
  echo
  echo "samples/s and test accuracy come from each run's metrics.csv (one epoch; test accuracy on the"
  echo "full test set); \"none\" where the run wrote none (see its stage). \"peak GPU memory (ember)\" is"
  echo "what the run directory reports; the nvidia-smi column is the driver's peak during the run above"
  echo "the use before it, CUDA context and cached blocks included."
}
