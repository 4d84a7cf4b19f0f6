#!/usr/bin/env bash
# `ember train` under mpirun, end to end, on a small slice of Fashion-MNIST:
#  1. 2 ranks with batch 32 each reach the same train loss and test accuracy as 1 process with
#     batch 64 (data parallelism changes who computes, not what);
#  2. a 2-rank run stopped mid-epoch resumes alone, then continues with 3 ranks; rank 0 alone
#     writes the run directory and every step of the way exits 0.
# Usage: check_train.sh MPIEXEC EMBER_BINARY
set -euo pipefail
mpiexec=$1 ember=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "check_train: $*" >&2; exit 1; }
run_mpi() { local n=$1; shift; timeout 300 "$mpiexec" -np "$n" --oversubscribe "$ember" "$@"; }
common=(train --model mlp --optimizer sgd --epochs 1 --limit 2560 --progress quiet)

run_mpi 2 "${common[@]}" --batch-size 32 --out "$work/two" | tee "$work/two.log"
"$ember" "${common[@]}" --batch-size 64 --out "$work/one" | tee "$work/one.log"
grep -q "ranks      2 (mpirun)" "$work/two.log" || fail "the 2-rank run did not say it ran on 2 ranks"
# epoch,train_loss,test_loss,test_accuracy,...: losses agree to 1e-5 (sums in another order),
# the accuracy exactly.
two=$(sed -n 2p "$work/two/metrics.csv" | cut -d, -f1-4)
one=$(sed -n 2p "$work/one/metrics.csv" | cut -d, -f1-4)
awk -F, -v a="$two" -v b="$one" 'BEGIN {
  split(a, x, ","); split(b, y, ",")
  d2 = x[2] - y[2]; d3 = x[3] - y[3]
  exit !(b != "" && x[1] == y[1] && d2 < 1e-5 && d2 > -1e-5 && d3 < 1e-5 && d3 > -1e-5 && x[4] == y[4])
}' || fail "2 ranks x batch 32 gave '$two', 1 process x batch 64 gave '$one'"

# An interrupted run exits with 130, as after Ctrl-C.
status=0
run_mpi 2 "${common[@]}" --batch-size 32 --out "$work/resumed" --stop-after-steps 15 >"$work/stop.log" 2>&1 || status=$?
cat "$work/stop.log"
[[ $status -ne 0 ]] || fail "the stopped run exited 0; an interrupted run exits non-zero"
grep -q "interrupted in epoch 1 after step 15/40" "$work/stop.log" || fail "the 2-rank run did not stop at step 15"
[[ -f $work/resumed/checkpoint.safetensors && ! -f $work/resumed/model.safetensors ]] \
  || fail "the stopped run should hold a checkpoint and no weights yet"
# Alone, with the same batch per rank: 15 steps of 2 ranks are 30 of one.
"$ember" train --resume "$work/resumed" --progress lines | tee "$work/alone.log"
grep -q "epoch 1/1  train_loss" "$work/alone.log" || fail "resuming alone did not finish the epoch"
[[ $(wc -l <"$work/resumed/metrics.csv") -eq 2 ]] || fail "metrics.csv should hold one epoch after resuming alone"
run_mpi 3 train --resume "$work/resumed" --epochs 2 --progress quiet | tee "$work/three.log"
grep -q "ranks      3 (mpirun)" "$work/three.log" || fail "the 3-rank resume did not say it ran on 3 ranks"
[[ $(wc -l <"$work/resumed/metrics.csv") -eq 3 ]] || fail "metrics.csv should hold two epochs after the 3-rank resume"
echo "check_train: ok"
