#!/usr/bin/env python3
"""Reads a run folder's TensorBoard event files with TensorBoard's own loader and prints every
scalar tag with its (step, value) pairs. A manual check that ember's SummaryWriter writes files
TensorBoard accepts; not part of the build.

Usage: tools/check_tensorboard.py RUN_DIR   (with tensorboard installed, e.g. in a venv:
       python3 -m venv /tmp/tbvenv && /tmp/tbvenv/bin/pip install tensorboard)
Exits 1 when the folder holds no scalars, 2 on bad usage.
"""
import os
import sys

from tensorboard.backend.event_processing import event_accumulator


def main() -> int:
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        print(f"usage: {sys.argv[0]} RUN_DIR  (a folder holding events.out.tfevents.* files)", file=sys.stderr)
        return 2
    run_dir = sys.argv[1]
    files = sorted(f for f in os.listdir(run_dir) if f.startswith("events.out.tfevents."))
    print(f"event files: {', '.join(files) if files else '(none)'}")
    # size_guidance 0: keep every scalar rather than TensorBoard's default reservoir sample.
    acc = event_accumulator.EventAccumulator(run_dir, size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    tags = acc.Tags().get("scalars", [])
    if not tags:
        print(f"{run_dir}: no scalars found", file=sys.stderr)
        return 1
    for tag in sorted(tags):
        events = acc.Scalars(tag)
        print(f"{tag}: {len(events)} points")
        print("  " + ", ".join(f"({e.step}, {e.value:.6g})" for e in events))
    return 0


if __name__ == "__main__":
    sys.exit(main())
