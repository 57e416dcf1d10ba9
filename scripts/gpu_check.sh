#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every GPU check of the project, from the repository root of a machine with a
# GPU; each step writes its logs and JSON under $OUT (default out/). Steps run in
# the order given and the exit status is non-zero when any failed:
#   scripts/gpu_check.sh build             configure + build every target in build-gpu/ for this
#                                          GPU (CUDA_ARCHS, default native; 16 jobs, JOBS=...)
#   scripts/gpu_check.sh build:t1,t2       the same, only the named targets
#   scripts/gpu_check.sh tests             every GPU test (ctest -L gpu, CTEST_JOBS=8 entries at a time)
#   scripts/gpu_check.sh test:BIN[:FILTER] one test binary (path under build-gpu/), optional gtest filter
#   scripts/gpu_check.sh bench             the family benchmarks, JSON each
#   scripts/gpu_check.sh bench:BIN:FILTER  one benchmark binary (path under build-gpu/benchmarks/), rows by regex
#   scripts/gpu_check.sh pairs             bench_matmul's paired rows (best_vs_cublas, mcast_a_vs_b), ratios printed
#   scripts/gpu_check.sh sanitize          compute-sanitizer memcheck + racecheck on the families' GPU tests
#   scripts/gpu_check.sh sm90a_sanitize    memcheck, racecheck, synccheck on the sm_90a kernels (wgmma
#                                          matmul and conv2d, NCHW and NHWC, its filter gradients,
#                                          fp32 emulation, TMA filter2d), small cases
#   scripts/gpu_check.sh racecheck         racecheck on the shared-memory kernels, small cases
#   scripts/gpu_check.sh doctor            kernelforge-doctor (text, --json, --bandwidth, --self-test),
#                                          the core tests, examples 04 and 05; outputs in $OUT/doctor/
#   scripts/gpu_check.sh python            the Python package: build for one architecture
#                                          (KF_CUDA_ARCHITECTURES, default 90), pytest, examples, bench
#   scripts/gpu_check.sh pyprofile         the torch op's host time taken apart (package built once)
# For example, a full session: scripts/gpu_check.sh build tests sm90a_sanitize pairs bench
# and a focused one: scripts/gpu_check.sh build:test_matmul_gpu 'test:tests/matmul/test_matmul_gpu:Matmul/half.*'
# After `doctor`: python3 tools/doctor/update_readme.py $OUT/doctor/doctor.txt refreshes the doctor
# output on the site's errors page (docs/pages/howto/errors.md); $OUT/doctor/timeline.png is example 04's figure.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
export CMAKE_GENERATOR=${CMAKE_GENERATOR:-Ninja}
command -v nvcc >/dev/null 2>&1 || export PATH="/usr/local/cuda/bin:$PATH"
build=${BUILD_DIR:-build-gpu}
python=${PYTHON:-python3}
rc=0

# The test binaries the sanitizer steps run (paths under $build).
t_elementwise=tests/elementwise/test_elementwise
t_transform=tests/elementwise/test_transform
t_matmul=tests/matmul/test_matmul_gpu
t_large_tile=tests/matmul/test_matmul_large_tile
t_tc_tf32=tests/matmul/test_matmul_tensor_core
t_tc_f16=tests/matmul/test_matmul_tensor_core_f16
t_matmul_epilogue=tests/matmul/test_matmul_epilogue
t_scaled=tests/matmul/test_scaled_matmul_gpu
t_conv2d=tests/conv2d/test_conv2d_gpu
t_conv2d_epilogue=tests/conv2d/test_conv2d_epilogue
t_conv2d_nhwc=tests/conv2d/test_conv2d_nhwc_gpu
t_conv2d_backward=tests/conv2d/test_conv2d_backward_gpu
t_fp32_emulated=tests/matmul/test_fp32_emulated_gpu
t_conv2d_fp32_emulated=tests/conv2d/test_conv2d_fp32_emulated_gpu
t_filter2d=tests/filter2d/test_filter2d_gpu
t_core=tests/core/test_core_gpu

step_build() {  # [targets, comma-separated]
  local targets=${1:-}
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHS:-native}" \
    >"$OUT/configure.log" 2>&1 || { tail -n 30 "$OUT/configure.log"; return 1; }
  cmake --build "$build" -j "${JOBS:-16}" ${targets:+--target ${targets//,/ }} >"$OUT/build.log" 2>&1 ||
    { tail -n 60 "$OUT/build.log"; return 1; }
  echo "build ${targets:-all}: OK"
}

step_tests() {
  ctest --test-dir "$build" -L gpu -j "${CTEST_JOBS:-8}" --output-on-failure >"$OUT/ctest_gpu.log" 2>&1
  local r=$?
  grep -E "tests passed|tests failed|Total Test time|\(Failed\)|Not Run|\*\*\*" "$OUT/ctest_gpu.log" | tail -n 40
  return $r
}

step_test() {  # BIN[:FILTER]
  local bin=${1%%:*} filter='*' log r
  [[ $1 == *:* ]] && filter=${1#*:}
  log="$OUT/$(basename "$bin")_$(date +%s%N | tail -c 6).log"
  timeout "${TEST_TIMEOUT:-300}" "$build/$bin" --gtest_filter="$filter" --gtest_brief=1 >"$log" 2>&1
  r=$?
  echo "$bin [$filter]: exit $r, $(grep -E '^\[  PASSED|^\[  FAILED|^\[  SKIPPED' "$log" | head -n 3 | tr '\n' ' ')"
  (( r == 0 )) || grep -E '^\[  FAILED|Failure|error' "$log" | head -n 12
  return $r
}

run_bench() {  # BIN FILTER NAME: one benchmark binary, JSON to $OUT/NAME.json
  "$build/benchmarks/$1" --benchmark_filter="$2" --benchmark_out="$OUT/$3.json" --benchmark_out_format=json \
    --benchmark_counters_tabular=true >"$OUT/$3.log" 2>&1 || { echo "$1 failed"; tail -n 20 "$OUT/$3.log"; return 1; }
  echo "$1 [$2]: $(grep -c '"name"' "$OUT/$3.json") rows"
}

step_bench() {  # [BIN:FILTER]
  if [[ -n ${1:-} ]]; then
    run_bench "${1%%:*}" "${1#*:}" "$(basename "${1%%:*}")_$(date +%s%N | tail -c 6)"
    return
  fi
  local r=0 b
  for b in elementwise/bench_elementwise matmul/bench_matmul matmul/bench_scaled_matmul conv/bench_conv; do
    run_bench "$b" . "$(basename $b)" || r=1
  done
  return $r
}

step_pairs() {
  run_bench matmul/bench_matmul "${PAIRS_FILTER:-best_vs_cublas|mcast_a_vs_b}" bench_matmul_pairs || return 1
  "$python" - "$OUT/bench_matmul_pairs.json" <<'PY'
import json, sys
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    ratios = {k: round(v, 4) for k, v in b.items() if k.startswith("frac_") and k != "frac_peak"}
    print(b["name"].split("/iterations")[0], ratios)
PY
}

sanitize_one() {  # TOOL BIN FILTER
  local log="$OUT/sanitize_${1}_$(basename "$2").log"
  timeout "${SAN_TIMEOUT:-240}" compute-sanitizer --tool "$1" --error-exitcode 99 "$build/$2" --gtest_filter="$3" \
    --gtest_brief=1 >"$log" 2>&1
  local r=$?
  echo "$1 $(basename "$2") [$3]: exit $r; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -n 1)"
  [[ $r -eq 0 ]]
}

step_sanitize() {
  local r=0 tool
  for tool in memcheck racecheck; do
    sanitize_one $tool $t_elementwise '*:-*Huge*:*huge*' || r=1
    sanitize_one $tool $t_matmul '*:-*4095*:*Large*' || r=1
    sanitize_one $tool $t_tc_tf32 '*:-*4095*:*Large*' || r=1
    sanitize_one $tool $t_tc_f16 '*:-*4095*:*Large*' || r=1
    sanitize_one $tool $t_matmul_epilogue '*' || r=1
    sanitize_one $tool $t_large_tile '*' || r=1
    sanitize_one $tool $t_conv2d_epilogue '*' || r=1
    sanitize_one $tool $t_transform '*:-*2To31*' || r=1
    sanitize_one $tool $t_filter2d '*' || r=1
    sanitize_one $tool $t_conv2d '*' || r=1
    sanitize_one $tool $t_conv2d_nhwc '*' || r=1
    sanitize_one $tool $t_core '*' || r=1
  done
  return $r
}

step_sm90a_sanitize() {
  # memcheck on every wgmma case but the big shapes; racecheck and synccheck on
  # two ragged shapes of every wgmma path (their kernels run every role, split-k,
  # cluster exchange and epilogue form: boundary shapes of the 128 x 64 tile and of
  # the cluster split-k's 128 x 128, tests/matmul/tile_shapes.hpp), the FP8 wgmma
  # GEMM (its tile tests, 16-bit and float D), the wgmma conv2d and the TMA filter2d.
  local r=0 tool wide=${SM90A_WIDE:-*wgmma*:-*4095*:*4096*:*8192*:*2048*}
  local small=${SM90A_SMALL:-*wgmma*127x135x*_NN*:*wgmma*129x65x*_TN*:*wgmma_cluster_splitk_127x263x*_NN*:*wgmma_cluster_splitk_129x129x*_TN*}
  # FP8: the tile tests (16-bit and float D) and the two-partials tile in every scaling mode (128 x 128 in
  # clusters of 2, and 128 x 64; blockwise reads its scales inside the two-sets loop).
  local scaled="ScaledMatmul/e4m3_e4m3_bf16.WgmmaTiles:ScaledMatmul/e4m3_e5m2_f32.WgmmaTiles"
  scaled+=":ScaledMatmulWgmma.TwoPartials*:ScaledMatmulTwoPartials/e4m3_e4m3_bf16.NarrowTile"
  sanitize_one memcheck $t_tc_tf32 "$wide" || r=1
  sanitize_one memcheck $t_tc_f16 "$wide" || r=1
  for tool in racecheck synccheck; do
    sanitize_one $tool $t_tc_tf32 "$small" || r=1
    sanitize_one $tool $t_tc_f16 "$small" || r=1
  done
  for tool in memcheck racecheck synccheck; do
    sanitize_one $tool $t_scaled "$scaled" || r=1
    sanitize_one $tool $t_conv2d "*implicit_gemm_wgmma*" || r=1
    sanitize_one $tool $t_filter2d "*TmaPipeline*" || r=1
  done
  # The NHWC wgmma conv2d (every type): memcheck on every case, racecheck and
  # synccheck on its ragged ones (boxes spanning images, a misaligned y), the bias
  # staged in shared memory on both schedules (bias_relu_misaligned_y_*), and the
  # case whose warpgroups take more than two tiles each (many_tiles: a staged-bias
  # buffer written again while the other is read, wgmma_store.cuh). The 3x3 stride-1 cases among
  # them run step 12's halo tiles (its two rings), the rest step 7.
  sanitize_one memcheck $t_conv2d_nhwc "*implicit_gemm_wgmma*" || r=1
  for tool in racecheck synccheck; do
    sanitize_one $tool $t_conv2d_nhwc \
      "*implicit_gemm_wgmma_boxes*:*implicit_gemm_wgmma_misaligned_y*:*implicit_gemm_wgmma_bias_relu_misaligned_y*:*implicit_gemm_wgmma_many_tiles*" ||
      r=1
  done
  # The wgmma filter gradients (gradient steps 3 and 4) on their 14x14 ResNet cases, the
  # skinny fp32 emulation (step 17: the split ahead of the products) on its awkward sizes, and
  # conv2d's fp32 emulation: step 13 (halo tiles: the stride-1 3x3 cases, a misaligned one
  # among them) and step 9 (strided and dilated cases).
  local conv_fp32e="*c32_13x17_k64_3x3_p1_n2*:*c130_7x11_k7_3x3_p1_n2_misaligned*:*c64_12x10_k64_3x3_p2x0*"
  conv_fp32e+=":*c64_17x19_k128_3x3_s2_p1_n2_misaligned*:*c64_13x11_k72_3x3_d2_p2*"
  for tool in memcheck racecheck synccheck; do
    sanitize_one $tool $t_conv2d_backward "Conv/Conv2dBackwardFilter.*resnet_c64*" || r=1
    sanitize_one $tool $t_fp32_emulated "Fp32EmulatedSkinny.*" || r=1
    sanitize_one $tool $t_conv2d_fp32_emulated "$conv_fp32e" || r=1
  done
  return $r
}

step_racecheck() {  # racecheck on shared-memory kernels, small cases (racecheck is slow)
  local r=0
  sanitize_one racecheck $t_matmul "MatmulGpu.*" || r=1
  sanitize_one racecheck $t_tc_tf32 "*mma_sync_*NN*:-*4095*" || r=1
  sanitize_one racecheck $t_conv2d "*" || r=1
  # The typed sweeps take their variants from KF_MATMUL_VARIANTS (tests/matmul/matmul_gpu_test.cpp).
  (export KF_MATMUL_VARIANTS=large_tile
   sanitize_one racecheck $t_matmul "Matmul/float.AllTransposes:Matmul/float.AlphaBetaPadding") || r=1
  sanitize_one racecheck $t_tc_f16 "*fp16_mma_sync*NN*:-*4095*:*4096*" || r=1
  sanitize_one racecheck $t_filter2d "*Filter2dFloat*best_3x3*:*Filter2dFloat*smem_tiled_5x5*" || r=1
  sanitize_one racecheck $t_conv2d_nhwc "*few_c3_97x61*:*few_c1_97x61*" || r=1  # conv2d step 10 (the stem)
  sanitize_one memcheck $t_tc_tf32 "*:-*4095*" || r=1
  return $r
}

logged() {  # LOG COMMAND...: run, output to $LOG and the screen, remember a failure
  local log=$1 r=0
  shift
  echo "==== $(basename "$log" .txt): $*"
  "$@" >"$log" 2>&1 || r=$?
  tail -n 20 "$log"
  echo "==== exit $r"
  return $r
}

step_doctor() {
  local d="$OUT/doctor" doctor="$build/tools/doctor/kernelforge-doctor" r=0
  mkdir -p "$d/8_streams"
  [[ -x $doctor ]] || { echo "no $doctor: run the build step first"; return 1; }
  logged "$d/doctor.txt" "$doctor" || r=1
  "$doctor" --json >"$d/doctor.json" 2>"$d/doctor_json.stderr" || r=1
  "$doctor" --all --json >"$d/doctor_all.json" 2>>"$d/doctor_json.stderr" || r=1
  logged "$d/doctor_bandwidth.txt" "$doctor" --bandwidth || r=1
  logged "$d/doctor_self_test.txt" "$doctor" --self-test || r=1
  logged "$d/ctest.txt" ctest --test-dir "$build" --output-on-failure -R 'doctor_|test_core|example_04|example_05' || r=1
  logged "$d/example_04.txt" "$build/examples/04_streams_overlap/example_04_streams_overlap" --out "$d" || r=1
  logged "$d/example_04_8_streams.txt" "$build/examples/04_streams_overlap/example_04_streams_overlap" \
    --streams 8 --chunks 32 --out "$d/8_streams" || r=1
  logged "$d/example_05.txt" "$build/examples/05_device_query/example_05_device_query" || r=1
  nvidia-smi >"$d/nvidia-smi.txt" 2>&1 || true
  return $r
}

python_site() {  # builds the Python package for one architecture into $1 (once)
  [[ -d $1/kernelforge ]] && return 0
  CMAKE_BUILD_PARALLEL_LEVEL=${JOBS:-16} "$python" -m pip install --no-build-isolation --no-deps --no-index \
    --target "$1" -C cmake.define.CMAKE_CUDA_ARCHITECTURES="${KF_CUDA_ARCHITECTURES:-90}" -C build-dir="$1.build" . \
    >"$OUT/pip_build.log" 2>&1 || { tail -n 30 "$OUT/pip_build.log"; return 1; }
}

step_python() {
  local site=${PY_SITE:-/tmp/kf-site} r=0
  python_site "$site" || return 1
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
  "$python" -c 'import kernelforge as kf; print("kernelforge", kf.__version__, kf.compiled_architectures(),
    "from", kf.__file__, "| GPUs:", kf.device_count())' || return 1
  logged "$OUT/pytest.txt" "$python" -m pytest -q -p no:cacheprovider python/tests || r=1
  logged "$OUT/example_threshold_relu.txt" "$python" examples/python/threshold_relu.py || r=1
  logged "$OUT/example_cupy_vector_add.txt" "$python" examples/python/cupy_vector_add.py || r=1
  logged "$OUT/example_train_cnn.txt" "$python" examples/python/train_cnn.py || r=1
  logged "$OUT/bench_python.txt" "$python" benchmarks/python/bench_python.py --out "$OUT/bench_python.json" || r=1
  return $r
}

step_pyprofile() {
  local site=${PY_SITE:-/tmp/kf-site}
  python_site "$site" || return 1
  PYTHONPATH="$site" "$python" benchmarks/python/profile_torch_op.py --cprofile --out "$OUT/profile_torch_op.json" \
    >"$OUT/profile_torch_op.log" 2>&1
  local r=$?
  head -n 60 "$OUT/profile_torch_op.log"
  return $r
}

for item in "$@"; do
  name=${item%%:*} arg=
  [[ $item == *:* ]] && arg=${item#*:}
  declare -F "step_$name" >/dev/null || { echo "unknown step: $name (see the top of $0)"; rc=1; continue; }
  start=$(date +%s)
  "step_$name" ${arg:+"$arg"} || rc=1
  echo "== step $item: $(( $(date +%s) - start )) s (rc so far $rc)"
done
exit $rc
