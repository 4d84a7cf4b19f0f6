#!/usr/bin/env bash
# The whole test suite, from a fresh checkout: installs what is missing, configures and builds
# everything with a preset (default: "default", in build/) and runs ctest on 2 cores, printing
# the output of any test that fails.
# Usage: tools/test.sh [PRESET]   (default, cpu, cuda, asan or tsan; see CMakePresets.json.
#                                 tools/sanitize.sh runs the last two, installing what tsan needs)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
preset=${1:-default}

tools/install-deps.sh
cmake --preset "$preset"
cmake --build --preset "$preset"
ctest --preset "$preset"
