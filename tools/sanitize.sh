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

# The extra Debian packages of the tsan preset, installed like tools/install-deps.sh does.
install_tsan_deps() {
  local packages=(clang-14 libclang-rt-14-dev libomp-14-dev) missing=() package status
  command -v dpkg-query >/dev/null 2>&1 || return 0
  for package in "${packages[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null || true)
    [[ $status == installed ]] || missing+=("$package")
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  local sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null 2>&1 || { echo "sanitize: missing ${missing[*]}; run as root or install sudo" >&2; exit 1; }
    sudo=(sudo)
  fi
  echo "sanitize: installing ${missing[*]}"
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

for preset in "${presets[@]}"; do
  case $preset in
    asan) ;;
    tsan) install_tsan_deps ;;
    *) echo "usage: $0 [asan|tsan]..." >&2; exit 2 ;;
  esac
  echo "== sanitizer preset $preset (build-$preset/)"
  start=$SECONDS
  tools/test.sh "$preset"
  echo "== $preset: built and tested in $((SECONDS - start)) s"
done
