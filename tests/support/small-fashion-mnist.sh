#!/usr/bin/env bash
# Writes the first TRAIN training and TEST test images of Fashion-MNIST, with their labels, into
# DIR as plain IDX files: a data set for `ember train --data DIR` in the scripted tests that check
# what the trainer saves and resumes rather than how well it learns (small_fashion_mnist.h does the
# same for the C++ tests). Each run on the full set decompresses 60,000 images and evaluates
# 10,000 every epoch, which is most of those tests' time under the sanitizers.
# Usage: small-fashion-mnist.sh DIR TRAIN TEST [SOURCE_DIR]   (default /usr/share/datasets/fashion-mnist)
set -euo pipefail
[[ $# -ge 3 ]] || { echo "usage: $0 DIR TRAIN TEST [SOURCE_DIR]" >&2; exit 2; }
dir=$1 train=$2 test=$3 source=${4:-/usr/share/datasets/fashion-mnist}

# A big-endian 32-bit number, as IDX headers hold them.
u32() { printf "\\x$(printf %02x $(($1 >> 24 & 255)))\\x$(printf %02x $(($1 >> 16 & 255)))\\x$(printf %02x $(($1 >> 8 & 255)))\\x$(printf %02x $(($1 & 255)))"; }

# The bytes of NAME in SOURCE_DIR, plain or gzipped.
contents() {
  if [[ -f $source/$1 ]]; then cat "$source/$1"; else gzip -dc "$source/$1.gz"; fi
}

# subset NAME COUNT: the file's header with COUNT for its item count, then the first COUNT items.
# Images (idx3): 16 header bytes (magic, count, rows, cols), 28 x 28 bytes each; labels (idx1):
# 8 header bytes (magic, count), one byte each.
subset() {
  local name=$1 count=$2 header=8 item=1
  [[ $name == *idx3* ]] && header=16 item=784
  # head stops reading early, which ends the decompression with SIGPIPE: not a failure here.
  (
    set +o pipefail
    contents "$name" | head -c 4
    u32 "$count"
    contents "$name" | head -c $((header + count * item)) | tail -c +9
  ) >"$dir/$name"
  [[ $(stat -c %s "$dir/$name") -eq $((header + count * item)) ]] \
    || { echo "$0: $source/$name holds fewer than $count items" >&2; exit 1; }
}

mkdir -p "$dir"
subset train-images-idx3-ubyte "$train"
subset train-labels-idx1-ubyte "$train"
subset t10k-images-idx3-ubyte "$test"
subset t10k-labels-idx1-ubyte "$test"
