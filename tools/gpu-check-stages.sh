# shellcheck shell=bash
# Sourced by tools/gpu-check.sh: stages with time bounds, one overall deadline, and a results table
# that is on disk whatever happens. The device tool kills a command at its timeout_s, and then
# nothing runs after it; so here every stage has its own bound, cut so that the stages after it
# keep their share, the table (summary.md) is rewritten after every stage, a watchdog ends the
# script at its deadline, and a trap on TERM/INT/HUP stops the running stage and writes the table.
#
# Needs LOGDIR, OUTDIR (may be empty), COMMAND_NAME (build or test), DEADLINE (seconds after the
# start; SECONDS counts from the start), SCALE (GPU_CHECK_TIME_SCALE) and write_summary (defined by
# the caller) before begin_command runs.
#
# LOGDIR/stages.tsv keeps every stage of both commands, one line each:
#   COMMAND <tab> STAGE <tab> CLASS <tab> TEXT
# CLASS is ok, skipped, failed, timeout (a stage stopped at its bound: nothing failed in what ran,
# but it did not finish) or inconclusive (the same, said of the sanitizer).

STAGE_PID=""
STAGE_NAME=""
STAGE_START=0
WATCHDOG_PID=""
FINISHED=0

# seconds N: N scaled by GPU_CHECK_TIME_SCALE and rounded (a rehearsal on a slower machine
# stretches every bound and deadline alike; tools/gpu-check-selftest.sh shrinks them).
seconds() { awk -v n="$1" -v s="$SCALE" 'BEGIN { printf "%d", n * s + 0.5 }'; }

# left: seconds until the deadline.
left() { echo $((DEADLINE - SECONDS)); }

# time_for BOUND RESERVE: BOUND (already scaled) cut so that RESERVE (scaled) seconds remain before
# the deadline for what comes after; 0 when nothing is left.
time_for() {
  local bound=$1 reserve=$2 room
  room=$((DEADLINE - SECONDS - reserve))
  ((room < 0)) && room=0
  ((room < bound)) && bound=$room
  echo "$bound"
}

# record NAME CLASS TEXT: appends a stage's outcome to stages.tsv and rewrites the table.
record() {
  local name=$1 class=$2 text=$3
  printf '%s\t%s\t%s\t%s\n' "$COMMAND_NAME" "$name" "$class" "${text//$'\t'/ }" >>"$LOGDIR/stages.tsv"
  echo "==== $name: $class: $text"
  write_summary_safely
}

skip_stage() { record "$1" skipped "$2"; }
fail_stage() { record "$1" failed "$2"; }

# run_stage NAME BOUND RESERVE LOG CMD...: runs CMD for at most time_for(BOUND, RESERVE) seconds
# with its output in LOG. CMD runs under timeout(1), in a process group of its own, so that a
# stage stopped at its bound takes its children (ctest's tests, mpirun's ranks) with it.
# STAGE_JUDGE, when set to a function name, is called as JUDGE LOG RC TIMED_OUT and may print
# "CLASS<tab>TEXT" to replace the default verdict (it is reset after each stage).
# Returns 0 when the stage passed, 1 otherwise.
run_stage() {
  local name=$1 bound=$2 reserve=$3 log=$4 limit rc timed_out=0 class text verdict
  shift 4
  limit=$(time_for "$bound" "$reserve")
  if ((limit < 1)); then
    record "$name" timeout "not started: no time left before the deadline ($(seconds_text "$DEADLINE"))"
    STAGE_JUDGE=""
    return 1
  fi
  echo
  echo "==== $name (at most $limit s, $(left) s to the deadline): $*"
  STAGE_NAME=$name
  STAGE_START=$SECONDS
  timeout --kill-after=10 "$limit" "$@" </dev/null >"$log" 2>&1 &
  STAGE_PID=$!
  wait "$STAGE_PID"
  rc=$?
  STAGE_PID=""
  STAGE_NAME=""
  local took=$((SECONDS - STAGE_START))
  [[ $rc -eq 124 || ($rc -eq 137 && $took -ge $limit) ]] && timed_out=1
  if ((timed_out)); then
    class=timeout
    text="stopped at its bound after $took s (log $log)"
  elif ((rc == 0)); then
    class=ok
    text="$took s"
  else
    class=failed
    text="exit $rc after $took s (log $log)"
  fi
  if [[ -n ${STAGE_JUDGE:-} ]]; then
    verdict=$("$STAGE_JUDGE" "$log" "$rc" "$timed_out")
    if [[ -n $verdict ]]; then
      class=${verdict%%$'\t'*}
      text=${verdict#*$'\t'}
    fi
  fi
  STAGE_JUDGE=""
  if [[ $class != ok ]]; then
    echo "---- the end of $log:"
    tail -n 15 "$log" | cut -c1-300
  fi
  record "$name" "$class" "$text"
  [[ $class == ok ]]
}

seconds_text() { echo "$1 s after the start"; }

# The result of the stages so far: prints the closing line; returns 0 (passed), 1 (failed) or 3
# (no failure, but a stage did not finish).
result_line() {
  local failed timeouts
  failed=$(awk -F'\t' '$3 == "failed"' "$LOGDIR/stages.tsv" 2>/dev/null | wc -l)
  timeouts=$(awk -F'\t' '$3 == "timeout" || $3 == "inconclusive"' "$LOGDIR/stages.tsv" 2>/dev/null | wc -l)
  if ((failed > 0)); then
    echo "Result: FAILED ($failed stage(s) failed; see the stages above)."
    return 1
  elif ((timeouts > 0)); then
    echo "Result: INCONCLUSIVE: no stage failed, but $timeouts did not finish within its time bound."
    return 3
  fi
  echo "Result: every stage passed."
  return 0
}

# The table as markdown rows: | command | stage | status |.
stage_rows() {
  echo "| command | stage | status |"
  echo "|---|---|---|"
  [[ -f $LOGDIR/stages.tsv ]] || return 0
  awk -F'\t' '{ c = $3; if (c == "failed") c = "FAILED"; else if (c == "timeout") c = "TIMED OUT";
                else if (c == "inconclusive") c = "INCONCLUSIVE"; printf "| %s | %s | %s: %s |\n", $1, $2, c, $4 }' \
    "$LOGDIR/stages.tsv"
}

# write_summary runs with errors ignored: the table must never be what stops the check.
write_summary_safely() {
  write_summary >"$LOGDIR/summary.md.tmp" 2>/dev/null
  mv "$LOGDIR/summary.md.tmp" "$LOGDIR/summary.md"
  [[ -n $OUTDIR && -f $LOGDIR/summary.md ]] && cp "$LOGDIR/summary.md" "$OUTDIR/" 2>/dev/null
  return 0
}

# Stops the running stage (timeout(1) passes the signal on to its process group) and notes it.
stop_stage() {
  local why=$1
  if [[ -n $STAGE_PID ]]; then
    kill -TERM "$STAGE_PID" 2>/dev/null
    wait "$STAGE_PID" 2>/dev/null
    STAGE_PID=""
    record "$STAGE_NAME" timeout "stopped after $((SECONDS - STAGE_START)) s: $why"
  fi
}

on_signal() {
  trap '' TERM INT HUP
  echo
  echo "==== $1 at $SECONDS s: stopping"
  stop_stage "$1 ($SECONDS s after the start; deadline $DEADLINE s)"
  record "(the $COMMAND_NAME command)" timeout "ended early by $1, $SECONDS s after the start"
  exit 3
}

# begin_command: the traps and the watchdog. The watchdog sends TERM at the deadline plus a
# margin, in case a bound was misjudged; it is ended by end_command.
begin_command() {
  trap 'on_signal TERM' TERM
  trap 'on_signal INT' INT
  trap 'on_signal HUP' HUP
  trap 'end_command' EXIT
  (
    trap 'kill "$sleeper" 2>/dev/null; exit 0' TERM
    sleep $((DEADLINE + 5)) &
    sleeper=$!
    wait "$sleeper" && kill -TERM $$
  ) </dev/null >/dev/null 2>&1 &
  WATCHDOG_PID=$!
}

# end_command (the EXIT trap): the last table, copied to OUTDIR, then COMMAND_FINISH if set.
end_command() {
  ((FINISHED)) && return 0
  FINISHED=1
  [[ -n $WATCHDOG_PID ]] && kill "$WATCHDOG_PID" 2>/dev/null
  [[ -n ${COMMAND_FINISH:-} ]] && "$COMMAND_FINISH"
  write_summary_safely
  return 0
}
