#!/usr/bin/env bash
# Packs what tools/gpu-check.sh needs on the lent GPU machine and cannot get there. That machine is
# a bare CUDA image (nvcc, g++, CMake, ninja, python3) without ember's Debian build dependencies
# and without network access; only the working tree travels, plus up to 8 git-ignored folders,
# 64 MiB in all. So the dependencies are fetched here, from Debian 12's apt, and carried:
#   DIR/deps.tar.gz    a tree rooted at usr/: oneDNN (with libOpenCL.so.1, which it links),
#                      OpenBLAS's OpenMP build (with libgfortran and libquadmath, and its CMake
#                      config rewritten to be relocatable), nlohmann-json, CLI11, zlib and the
#                      googletest sources (for add_subdirectory); no docs, man pages or static libs;
#   DIR/MANIFEST.txt   packages and versions, sizes, and the newest GLIBC_ each library needs;
#   DIR/fashion-mnist/ a copy of the data set's 4 .gz files (symlinks would not travel);
# (The golden files the tests compare with live in the repository and travel with the tree.)
# Re-running replaces these three; a failed run leaves the previous bundle as it was.
# Needs apt with network access: run it on the development machine, not on the GPU machine.
# Usage: tools/gpu-bundle.sh [DIR]   (DIR defaults to .gpu-bundle at the repository root)
set -euo pipefail

if [[ $# -gt 1 ]]; then
  echo "usage: $0 [DIR]" >&2
  exit 2
fi
if [[ $# -eq 1 ]]; then
  mkdir -p "$1"
  DIR=$(cd "$1" && pwd)
fi
cd "$(dirname "${BASH_SOURCE[0]}")/.."
DIR=${DIR:-$PWD/.gpu-bundle}
mkdir -p "$DIR"
DATA=/usr/share/datasets/fashion-mnist
LIMIT_MIB=60
die() { echo "gpu-bundle: $*" >&2; exit 1; }

packages=(
  libdnnl-dev libdnnl2 ocl-icd-libopencl1                       # oneDNN 2.6.3 and the OpenCL loader it links
  libopenblas-openmp-dev libopenblas0-openmp libgfortran5 libquadmath0  # OpenBLAS 0.3.21 (OpenMP)
  nlohmann-json3-dev libcli11-dev zlib1g-dev zlib1g googletest
)
# What is kept, relative to the extracted packages' root (globs; each must match something).
keep=(
  'usr/include/dnnl*' usr/include/oneapi 'usr/lib/x86_64-linux-gnu/libdnnl.so*'
  'usr/lib/x86_64-linux-gnu/libOpenCL.so.1*'
  usr/include/x86_64-linux-gnu/openblas-openmp
  'usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas*.so*'
  'usr/lib/x86_64-linux-gnu/openblas-openmp/cmake/openblas/OpenBLAS*.cmake'
  'usr/lib/x86_64-linux-gnu/libgfortran.so.5*' 'usr/lib/x86_64-linux-gnu/libquadmath.so.0*'
  usr/include/nlohmann usr/share/cmake/nlohmann_json usr/include/CLI usr/share/cmake/CLI11
  usr/include/zlib.h usr/include/zconf.h usr/lib/x86_64-linux-gnu/libz.so 'lib/x86_64-linux-gnu/libz.so.1*'
  usr/src/googletest
)
required=(
  usr/include/oneapi/dnnl/dnnl.h usr/include/dnnl.hpp usr/lib/x86_64-linux-gnu/libdnnl.so.2
  usr/lib/x86_64-linux-gnu/libOpenCL.so.1 usr/include/x86_64-linux-gnu/openblas-openmp/cblas.h
  usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0
  usr/lib/x86_64-linux-gnu/openblas-openmp/cmake/openblas/OpenBLASConfig.cmake
  usr/lib/x86_64-linux-gnu/libgfortran.so.5 usr/lib/x86_64-linux-gnu/libquadmath.so.0
  usr/src/googletest/CMakeLists.txt usr/include/nlohmann/json.hpp usr/include/CLI/CLI.hpp
  usr/include/zlib.h usr/lib/x86_64-linux-gnu/libz.so usr/lib/x86_64-linux-gnu/libz.so.1
)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work"/{debs,root,tree,out/fashion-mnist}

echo "gpu-bundle: downloading ${#packages[@]} packages"
if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-deb >/dev/null 2>&1; then
  die "no apt-get/dpkg-deb here; this script needs Debian 12's apt and network access; run it on the development machine, not the GPU machine"
fi
if ! (cd "$work/debs" && apt-get download -q "${packages[@]}" >"$work/apt.log" 2>&1); then
  grep -v '_apt' "$work/apt.log" >&2 || true
  die "apt-get download failed; this script needs Debian 12's apt and network access; run it on the development machine, not the GPU machine (if a package is not found, run apt-get update first)"
fi

{
  echo "# ember GPU bundle, made by tools/gpu-bundle.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "# package version .deb-bytes"
} >"$work/out/MANIFEST.txt"
for deb in "$work"/debs/*.deb; do
  dpkg-deb -x "$deb" "$work/root"
  echo "$(dpkg-deb -f "$deb" Package Version | awk '{ printf "%s ", $2 }')$(stat -c %s "$deb")" >>"$work/out/MANIFEST.txt"
done

shopt -s nullglob
for pattern in "${keep[@]}"; do
  # shellcheck disable=SC2206  # the glob is meant to expand here
  matches=("$work"/root/$pattern)
  [[ ${#matches[@]} -gt 0 ]] || die "no $pattern in the downloaded packages"
  (cd "$work/root" && cp -a --parents "${matches[@]#"$work"/root/}" "$work/tree/")
done
shopt -u nullglob

# zlib1g ships libz.so.1 under /lib, and libz.so points there by an absolute link: bring them together.
mv "$work"/tree/lib/x86_64-linux-gnu/libz.so.1* "$work/tree/usr/lib/x86_64-linux-gnu/"
rm -rf "$work/tree/lib"
ln -sfn libz.so.1 "$work/tree/usr/lib/x86_64-linux-gnu/libz.so"
# OpenBLAS's config names /usr paths; make them relative to the config file.
config_dir=$work/tree/usr/lib/x86_64-linux-gnu/openblas-openmp/cmake/openblas
# shellcheck disable=SC2016  # ${CMAKE_CURRENT_LIST_DIR} is for CMake, not for the shell
sed -i -e 's|/usr/include/x86_64-linux-gnu/openblas-openmp/*|${CMAKE_CURRENT_LIST_DIR}/../../../../../include/x86_64-linux-gnu/openblas-openmp|' \
       -e 's|/usr/lib/x86_64-linux-gnu/openblas-openmp/*libopenblas\.so|${CMAKE_CURRENT_LIST_DIR}/../../libopenblas.so|' \
       "$config_dir/OpenBLASConfig.cmake"
! grep -q '/usr/' "$config_dir/OpenBLASConfig.cmake" || die "OpenBLASConfig.cmake still names /usr paths"
[[ -d $config_dir/../../../../../include/x86_64-linux-gnu/openblas-openmp && -e $config_dir/../../libopenblas.so ]] ||
  die "the rewritten OpenBLASConfig.cmake paths do not resolve"
broken=$(find "$work/tree" -xtype l)
[[ -z $broken ]] || die "broken links in the bundle: $broken"

tar -C "$work/tree" --owner=0 --group=0 --numeric-owner -czf "$work/out/deps.tar.gz" usr
tar -tzf "$work/out/deps.tar.gz" >"$work/listing"
for path in "${required[@]}"; do
  grep -qxF "$path" "$work/listing" || die "$path is missing from deps.tar.gz"
done

{
  echo "# deps.tar.gz: $(stat -c %s "$work/out/deps.tar.gz") bytes, $(du -sb "$work/tree" | cut -f1) bytes unpacked"
  echo "# newest GLIBC_ / GLIBCXX_ symbol version each shared library needs"
  while IFS= read -r lib; do
    needs=$(objdump -T "$lib" | grep -o 'GLIBC_[0-9.]*' | sort -Vu | tail -1 || true)
    needs_cxx=$(objdump -T "$lib" | grep -o 'GLIBCXX_[0-9.]*' | sort -Vu | tail -1 || true)
    echo "${lib#"$work"/tree/} ${needs:--} ${needs_cxx:--}"
  done < <(find "$work/tree" -type f -name '*.so*' | sort)
} >>"$work/out/MANIFEST.txt"

[[ -d $DATA ]] || die "$DATA is missing; install dataset-fashion-mnist (tools/install-deps.sh)"
for name in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  [[ -f $DATA/$name.gz ]] || die "$DATA/$name.gz is missing"
  cp -L "$DATA/$name.gz" "$work/out/fashion-mnist/"
  echo "# fashion-mnist/$name.gz: $(stat -c %s "$DATA/$name.gz") bytes"
done >>"$work/out/MANIFEST.txt"

rm -rf "$DIR/deps.tar.gz" "$DIR/MANIFEST.txt" "$DIR/fashion-mnist" "$DIR/shared"
mv "$work/out/deps.tar.gz" "$work/out/MANIFEST.txt" "$work/out/fashion-mnist" "$DIR/"

total=$(du -sb "$DIR" | cut -f1)
# (A tracked file deleted in the working tree, someone's work in progress, counts nothing.)
tracked=$({ git ls-files -z | du --files0-from=- -cb 2>/dev/null || true; } | tail -1 | cut -f1)
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
echo "gpu-bundle: $DIR: $(mib "$total") MiB (deps.tar.gz $(mib "$(stat -c %s "$DIR/deps.tar.gz")") MiB); tracked files: $(mib "$tracked") MiB"
echo "gpu-bundle: the working tree and the carried folders must stay under 64 MiB in all: now $(mib $((total + tracked))) MiB"
if [[ $total -gt $((LIMIT_MIB * 1048576)) ]]; then
  die "$DIR is over $LIMIT_MIB MiB: it would not travel to the GPU machine with the working tree"
fi
