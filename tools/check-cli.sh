#!/usr/bin/env bash
# Checks the `ember` tool's promises: --version, `devices`, and that mistakes end with a message
# and a non-zero exit code, never a crash. Run by ctest (test "cli"); usage: check-cli.sh EMBER VERSION
set -uo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 PATH_TO_EMBER EXPECTED_VERSION" >&2
  exit 2
fi
ember=$1
version=$2
failures=0
checks=0

# expect NAME WANTED_EXIT_CODE STREAM REGEX -- COMMAND...   (STREAM: stdout or stderr)
expect() {
  local name=$1 want_rc=$2 stream=$3 regex=$4
  shift 5
  local out err rc
  out=$(mktemp) err=$(mktemp)
  "$@" >"$out" 2>"$err"
  rc=$?
  checks=$((checks + 1))
  local text
  text=$(cat "$([[ $stream == stdout ]] && echo "$out" || echo "$err")")
  if [[ $rc -ne $want_rc ]] || ! grep -Eq -- "$regex" <<<"$text"; then
    failures=$((failures + 1))
    echo "FAIL $name: wanted exit code $want_rc and $stream matching /$regex/; got exit code $rc"
    echo "--- stdout"; cat "$out"; echo "--- stderr"; cat "$err"
  else
    echo "ok   $name"
  fi
  rm -f "$out" "$err"
}

expect "--version" 0 stdout "^ember ${version//./\\.}\$" -- "$ember" --version
expect "--help" 0 stdout "devices" -- "$ember" --help
expect "no subcommand prints help" 0 stdout "Subcommands:" -- "$ember"
expect "devices" 0 stdout "^CUDA available: (True|False)" -- env -u EMBER_DEVICE "$ember" devices
expect "devices: count" 0 stdout "^CUDA devices: +[0-9]+\$" -- env -u EMBER_DEVICE "$ember" devices
expect "devices: MPS" 0 stdout "^MPS available: +(True|False)" -- env -u EMBER_DEVICE "$ember" devices
expect "devices: choice" 0 stdout "^Chosen device: +(cpu|cuda:0|mps:0)\$" -- env -u EMBER_DEVICE "$ember" devices
expect "EMBER_DEVICE=cpu" 0 stdout "^Chosen device: +cpu \(set by EMBER_DEVICE\)\$" -- env EMBER_DEVICE=cpu "$ember" devices
expect "bad EMBER_DEVICE" 1 stderr "^error: .*EMBER_DEVICE" -- env EMBER_DEVICE=gpu:x "$ember" devices
expect "unknown subcommand" 2 stderr "^error: unknown command .frobnicate." -- "$ember" frobnicate
expect "unknown flag" 2 stderr "--frobnicate" -- "$ember" --frobnicate
expect "unknown flag of devices" 2 stderr "--frobnicate" -- "$ember" devices --frobnicate
expect "two subcommands" 2 stderr "devices" -- "$ember" devices devices

echo "$((checks - failures)) passed, $failures failed"
[[ $failures -eq 0 ]]
