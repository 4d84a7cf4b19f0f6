#!/usr/bin/env bash
# The test suite under the sanitizers (docs/HARDENING.md), CPU only:
#   asan  build-asan/: AddressSanitizer + UndefinedBehaviorSanitizer (GCC), the whole suite;
#   tsan  build-tsan/: ThreadSanitizer with Archer (clang 14 and LLVM's OpenMP runtime), the
#         tests that run more than one thread.
# Each configures, builds and tests with the preset of that name, through tools/test.sh. The tsan
# preset needs clang 14, its sanitizer runtimes and LLVM's OpenMP runtime (Debian clang-14,
# libclang-rt-14-dev, libomp-14-dev), which this installs when they are missing.
# Usage: tools/sanitize.sh [asan|tsan]...   (default: asan tsan)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

presets=("$@")
[[ ${#presets[@]} -eq 0 ]] && presets=(asan tsan)

for preset in "${presets[@]}"; do
  case $preset in
    asan) ;;
    tsan) tools/install-deps.sh clang-14 libclang-rt-14-dev libomp-14-dev ;;
    *) echo "usage: $0 [asan|tsan]..." >&2; exit 2 ;;
  esac
  echo "== sanitizer preset $preset (build-$preset/)"
  start=$SECONDS
  tools/test.sh "$preset"
  echo "== $preset: built and tested in $((SECONDS - start)) s"
done
