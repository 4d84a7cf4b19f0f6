#!/usr/bin/env bash
# The main job, from a fresh checkout: installs what is missing (Fashion-MNIST included),
# configures and builds the `ember` tool and the walkthrough example with the "default" preset
# (build/), shows the devices and the walkthrough, then trains with `ember train`'s defaults.
# Extra arguments after the preset go to `ember train` (e.g. tools/run.sh default --model cnn).
# Usage: tools/run.sh [PRESET]   (default, cpu or cuda; see CMakePresets.json)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
preset=${1:-default}
shift || true
case $preset in
  default) build_dir=build ;;
  *) build_dir=build-$preset ;;  # the binaryDir of each preset in CMakePresets.json
esac

tools/install-deps.sh
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" --target ember_cli example_devices

echo "== ember devices"
"$build_dir/ember" devices
echo "== examples/devices (the walkthrough)"
"$build_dir/examples/devices"
echo "== ember train $*"
"$build_dir/ember" train "$@"
