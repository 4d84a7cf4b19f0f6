#!/usr/bin/env bash
# Runs one job of ember_mpi_scenarios under mpirun and checks that it ended, failed, and said
# which rank was at fault. Usage: check_scenario.sh MPIEXEC SCENARIOS_BINARY late-rank|dead-rank
set -uo pipefail
mpiexec=$1 binary=$2 scenario=$3
output=$(timeout 120 "$mpiexec" -np 2 --oversubscribe "$binary" "$scenario" 2>&1)
status=$?
echo "$output"
echo "-- mpirun exited with $status"
fail() { echo "check_scenario: $scenario: $*" >&2; exit 1; }
[[ $status -ne 124 ]] || fail "the job hung (killed after 120 s)"
[[ $status -ne 0 ]] || fail "the job succeeded although rank 1 misbehaved"
case $scenario in
  late-rank)
    grep -q "scenario: error after" <<<"$output" || fail "rank 0 did not report an error"
    grep -q "all_reduce #1 of float32 \[4\] on cpu (sum) timed out after 2 s on rank 0 of 2: rank 1 did not arrive" \
      <<<"$output" || fail "the timeout message does not name the collective and rank 1"
    ;;
  dead-rank)
    # Open MPI stops the job when a rank dies; its message names the rank. If it did not, ember's
    # timeout would (EMBER_DIST_TIMEOUT), naming rank 1 as not answering.
    grep -Eq "process rank 1 .*signal 9|rank 1 did not (arrive|answer)" <<<"$output" \
      || fail "nothing in the output names rank 1 as the one that died"
    ;;
esac
echo "check_scenario: $scenario: ok"
