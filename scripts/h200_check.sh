#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One device session on the H200, in steps, each writing logs and JSON under
# $OUT (the device tool brings them back):
#   scripts/h200_check.sh build        configure + build for sm_90 in build-gpu/
#   scripts/h200_check.sh tests        every GPU test (ctest -L gpu, 8 entries at a time: one
#                                      process per test binary or shard of one)
#   scripts/h200_check.sh sanitize     compute-sanitizer memcheck + racecheck on the families' GPU tests
#   scripts/h200_check.sh bench        the three family benchmarks (JSON)
#   scripts/h200_check.sh sm90a_sanitize  memcheck, racecheck and synccheck on the sm_90a kernels
#                                      (wgmma matmul, wgmma conv2d, TMA filter2d), small cases
#   scripts/h200_check.sh pairs        bench_matmul's paired rows alone (best_vs_cublas, mcast_a_vs_b)
# Steps can be chained: scripts/h200_check.sh build tests sanitize
set -uo pipefail
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
export CMAKE_GENERATOR=Ninja
build=build-gpu
rc=0

step_build() {
  cmake -S . -B $build -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 >"$OUT/configure.log" 2>&1 &&
    cmake --build $build -j 16 >"$OUT/build.log" 2>&1 || { tail -n 60 "$OUT/build.log"; return 1; }
  echo "build: OK"
}

step_tests() {
  ctest --test-dir $build -L gpu -j ${CTEST_JOBS:-8} --output-on-failure >"$OUT/ctest_gpu.log" 2>&1
  local r=$?
  grep -E "tests passed|tests failed|Total Test time|\(Failed\)|Not Run|\*\*\*" "$OUT/ctest_gpu.log" | tail -n 40
  grep -c "Skipped" "$OUT/ctest_gpu.log" | sed 's/^/skipped lines: /'
  return $r
}

sanitize_one() {  # tool binary filter
  local tool=$1 bin=$2 filter=$3 log="$OUT/sanitize_${1}_$(basename "$2").log"
  timeout "${SAN_TIMEOUT:-240}" compute-sanitizer --tool "$tool" --error-exitcode 99 "$build/$bin" --gtest_filter="$filter" \
    --gtest_brief=1 >"$log" 2>&1
  local r=$?
  echo "$tool $(basename "$bin") [$filter]: exit $r; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -n 1)"
  [[ $r -eq 0 ]]
}

step_sanitize() {
  local r=0
  for tool in memcheck racecheck; do
    sanitize_one $tool tests/elementwise/test_elementwise '*:-*Huge*:*huge*' || r=1
    sanitize_one $tool tests/matmul/test_matmul_gpu '*:-*4095*:*Large*' || r=1
    sanitize_one $tool tests/matmul/test_matmul_tensor_core '*:-*4095*:*Large*' || r=1
    sanitize_one $tool tests/matmul/test_matmul_tensor_core_f16 '*:-*4095*:*Large*' || r=1
    sanitize_one $tool tests/matmul/test_matmul_epilogue '*' || r=1
    sanitize_one $tool tests/matmul/test_matmul_large_tile '*' || r=1
    sanitize_one $tool tests/conv2d/test_conv2d_epilogue '*' || r=1
    sanitize_one $tool tests/elementwise/test_transform '*:-*2To31*' || r=1
    sanitize_one $tool tests/filter2d/test_filter2d_gpu '*' || r=1
    sanitize_one $tool tests/conv2d/test_conv2d_gpu '*' || r=1
    sanitize_one $tool tests/core/test_core_gpu '*' || r=1
  done
  return $r
}

step_bench() {
  local r=0 b
  for b in elementwise/bench_elementwise matmul/bench_matmul conv/bench_conv; do
    "$build/benchmarks/$b" --benchmark_out="$OUT/$(basename $b).json" --benchmark_out_format=json \
      --benchmark_counters_tabular=true >"$OUT/$(basename $b).log" 2>&1 || { echo "$b failed"; r=1; }
    echo "$b: $(grep -c '"name"' "$OUT/$(basename $b).json" 2>/dev/null) rows"
  done
  return $r
}

step_sm90a_sanitize() {
  # memcheck on every wgmma case but the big shapes; racecheck and synccheck on
  # two ragged shapes of every wgmma path (their kernels run every role, split-k,
  # cluster exchange and epilogue form: boundary shapes of the 128 x 64 tile and of
  # the cluster split-k's 128 x 128, tile_shapes.hpp), the wgmma conv2d and the TMA filter2d.
  local r=0 tool wide=${SM90A_WIDE:-*wgmma*:-*4095*:*4096*:*8192*:*2048*} small=${SM90A_SMALL:-*wgmma*127x135x*_NN*:*wgmma*129x65x*_TN*:*wgmma_cluster_splitk_127x263x*_NN*:*wgmma_cluster_splitk_129x129x*_TN*}
  sanitize_one memcheck tests/matmul/test_matmul_tensor_core "$wide" || r=1
  sanitize_one memcheck tests/matmul/test_matmul_tensor_core_f16 "$wide" || r=1
  for tool in racecheck synccheck; do
    sanitize_one $tool tests/matmul/test_matmul_tensor_core "$small" || r=1
    sanitize_one $tool tests/matmul/test_matmul_tensor_core_f16 "$small" || r=1
  done
  for tool in memcheck racecheck synccheck; do
    sanitize_one $tool tests/conv2d/test_conv2d_gpu "*implicit_gemm_wgmma*" || r=1
    sanitize_one $tool tests/filter2d/test_filter2d_gpu "*TmaPipeline*" || r=1
  done
  return $r
}

step_pairs() {
  "$build/benchmarks/matmul/bench_matmul" --benchmark_filter="${PAIRS_FILTER:-best_vs_cublas|mcast_a_vs_b}" \
    --benchmark_out="$OUT/bench_matmul_pairs.json" --benchmark_out_format=json --benchmark_counters_tabular=true \
    >"$OUT/bench_matmul_pairs.log" 2>&1 || { tail -n 20 "$OUT/bench_matmul_pairs.log"; return 1; }
  python3 - "$OUT/bench_matmul_pairs.json" <<'PY'
import json, sys
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    ratios = {k: round(v, 4) for k, v in b.items() if k.startswith("frac_") and k != "frac_peak"}
    print(b["name"].split("/iterations")[0], ratios)
PY
}

step_doctor() {  # the doctor's GPU checks (tools/doctor/run_gpu_checks.sh), outputs packed into one tarball
  local r=0
  BUILD_DIR=$build OUT=/tmp/doctor-checks bash tools/doctor/run_gpu_checks.sh >"$OUT/doctor_checks.log" 2>&1 || r=1
  tar -C /tmp -czf "$OUT/doctor_checks.tgz" doctor-checks
  tail -n 15 "$OUT/doctor_checks.log"
  return $r
}

step_python() {  # the Python package's GPU checks (python/run_gpu_checks.sh)
  local r=0
  bash python/run_gpu_checks.sh >"$OUT/python_checks.log" 2>&1 || r=1
  tail -n 25 "$OUT/python_checks.log"
  return $r
}

step_pyprofile() {  # build the Python package once into /tmp/kf-site, then take the torch op's host time apart
  local r=0
  if [[ ! -d /tmp/kf-site/kernelforge ]]; then
    CMAKE_BUILD_PARALLEL_LEVEL=${PY_JOBS:-16} python3 -m pip install --no-build-isolation --no-deps --no-index \
      --target /tmp/kf-site -C cmake.define.CMAKE_CUDA_ARCHITECTURES=90 -C build-dir=/tmp/kf-build . \
      >"$OUT/pip_build.log" 2>&1 || { tail -n 30 "$OUT/pip_build.log"; return 1; }
  fi
  PYTHONPATH=/tmp/kf-site python3 benchmarks/python/profile_torch_op.py --cprofile --out "$OUT/profile_torch_op.json" \
    >"$OUT/profile_torch_op.log" 2>&1 || r=1
  head -n 60 "$OUT/profile_torch_op.log"
  return $r
}

step_racecheck() {  # racecheck on shared-memory kernels, small cases (racecheck is slow)
  local r=0
  sanitize_one racecheck tests/matmul/test_matmul_gpu "MatmulGpu.*" || r=1
  sanitize_one racecheck tests/matmul/test_matmul_tensor_core "*mma_sync_*NN*:-*4095*" || r=1
  sanitize_one racecheck tests/conv2d/test_conv2d_gpu "*" || r=1
  (export KF_MATMUL_VARIANTS=large_tile; sanitize_one racecheck tests/matmul/test_matmul_gpu "Matmul/float.AllTransposes:Matmul/float.AlphaBetaPadding") || r=1
  sanitize_one racecheck tests/matmul/test_matmul_tensor_core_f16 "*fp16_mma_sync*NN*:-*4095*:*4096*" || r=1
  sanitize_one racecheck tests/filter2d/test_filter2d_gpu "*Filter2dFloat*best_3x3*:*Filter2dFloat*smem_tiled_5x5*" || r=1
  sanitize_one memcheck tests/matmul/test_matmul_tensor_core "*:-*4095*" || r=1
  return $r
}

for s in "$@"; do
  start=$(date +%s)
  "step_$s" || rc=1
  echo "== step $s: $(( $(date +%s) - start )) s (rc so far $rc)"
done
exit $rc
