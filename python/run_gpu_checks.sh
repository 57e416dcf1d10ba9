#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Python package's GPU checks, in one command, from the repository root of a
# machine with a GPU and python3 with torch, cupy, nanobind, scikit-build-core and
# pytest installed (no network needed):
#   python/run_gpu_checks.sh            # OUT=/some/dir also writes $OUT/bench_python.json
# Builds the package for one architecture (KF_CUDA_ARCHITECTURES, default 90) into
# a temporary target directory, runs the pytest suite, both examples and the
# benchmark. Exit status: non-zero if the build, a test or an example failed.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
archs=${KF_CUDA_ARCHITECTURES:-90}
python=${PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
command -v nvcc >/dev/null 2>&1 || export PATH="/usr/local/cuda/bin:$PATH"
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
status=0
step() {  # step <label> <command...>: runs it, reports the time, remembers a failure
  local label=$1 start rc=0
  shift
  echo; echo "==== $label"
  start=$(date +%s)
  "$@" || rc=$?
  echo "==== $label: exit $rc after $(( $(date +%s) - start )) s"
  (( rc == 0 )) || status=1
  return "$rc"
}

step "build + install (sm_${archs})" "$python" -m pip install --no-build-isolation --no-deps --no-index \
  --target "$tmp/site" -C cmake.define.CMAKE_CUDA_ARCHITECTURES="$archs" -C build-dir="$tmp/build" . \
  || exit 1
export PYTHONPATH="$tmp/site${PYTHONPATH:+:$PYTHONPATH}"
"$python" -c 'import kernelforge as kf; print("kernelforge", kf.__version__, kf.compiled_architectures(),
  "from", kf.__file__, "| GPUs:", kf.device_count())' || exit 1

step "pytest" "$python" -m pytest -q -p no:cacheprovider python/tests
step "example threshold_relu" "$python" examples/python/threshold_relu.py
step "example cupy_vector_add" "$python" examples/python/cupy_vector_add.py
if [[ -n "${OUT:-}" ]]; then
  step "bench_python" "$python" benchmarks/python/bench_python.py --out "$OUT/bench_python.json"
else
  step "bench_python" "$python" benchmarks/python/bench_python.py
fi
echo
if (( status == 0 )); then echo "GPU CHECKS PASSED"; else echo "GPU CHECKS FAILED"; fi
exit "$status"
