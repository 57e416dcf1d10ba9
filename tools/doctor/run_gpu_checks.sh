#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The doctor's GPU checks, from the repository root on a GPU machine, after a
# build in build-bench (cmake --preset bench && cmake --build --preset bench):
#   - kernelforge-doctor: text, --json, --bandwidth, --self-test (and --all --json)
#   - ctest: the doctor's whole run, the core tests (pinned_buffer/copy_async among them), examples 04 and 05
#   - example 04 (timeline.png, timeline.csv) and example 05
# Everything goes to $OUT (default: gpu-checks/). Then, on any machine:
#   python3 tools/doctor/update_readme.py $OUT/doctor.txt      # README "Something is wrong?" output
#   cp $OUT/timeline.png examples/04_streams_overlap/timeline_h200.png
# Exit status: 0 when every step passed; the log says which failed.
set -uo pipefail
build=${BUILD_DIR:-build-bench}
out=${OUT:-gpu-checks}
mkdir -p "$out"
doctor="$build/tools/doctor/kernelforge-doctor"
failed=()
step() {  # step <name> <command...>: runs it, output to $out/<name>.txt and the screen
  local name=$1 rc=0
  shift
  echo "==== $name: $*"
  "$@" >"$out/$name.txt" 2>&1 || rc=$?
  cat "$out/$name.txt"
  echo "==== $name: exit $rc"
  (( rc == 0 )) || failed+=("$name (exit $rc)")
}
[[ -x $doctor ]] || { echo "no $doctor: build first (cmake --preset bench && cmake --build --preset bench)"; exit 1; }

step doctor "$doctor"
"$doctor" --json >"$out/doctor.json" 2>"$out/doctor_json.stderr" || failed+=("doctor --json (exit $?)")
step doctor_bandwidth "$doctor" --bandwidth
step doctor_self_test "$doctor" --self-test
"$doctor" --all --json >"$out/doctor_all.json" 2>>"$out/doctor_json.stderr" || failed+=("doctor --all --json (exit $?)")
step ctest_gpu ctest --test-dir "$build" --output-on-failure \
  -R 'doctor_|test_core|example_04|example_05'
step example_04 "$build/examples/04_streams_overlap/example_04_streams_overlap" --out "$out"
mkdir -p "$out/8_streams"
step example_04_8_streams "$build/examples/04_streams_overlap/example_04_streams_overlap" --streams 8 --chunks 32 --out "$out/8_streams"
step example_05 "$build/examples/05_device_query/example_05_device_query"
nvidia-smi >"$out/nvidia-smi.txt" 2>&1 || true

echo
if (( ${#failed[@]} )); then
  printf 'FAILED: %s\n' "${failed[@]}"
  exit 1
fi
echo "all GPU checks PASSED; outputs in $out/"
