#!/usr/bin/env bash
# The next session's device calls, most valuable first, on a tree with wip/filter-pairs.mbox,
# wip/pw-truncate.mbox and wip/fp8-square.mbox applied (`for p in filter-pairs pw-truncate fp8-square; do
# patch -p1 < wip/$p.mbox; done`). Each call packs $OUT/res.tgz (a call cut short leaves
# $OUT/summary_partial.txt). `bash wip/s20.sh one|two|three`:
#   one (~450 s fresh): everything built, the whole `ctest -L gpu` with the pairs off, timed (every test of
#       the three patches but the pairs'); the pairs' first checks (one case of each form, 12 s limits) and
#       test_conv2d_nhwc_gpu / test_conv2d_fp32_emulated_gpu with them on; the 1x1 TF32 dw (pw-truncate) rows.
#   two (~450 s): the rows the issues' goals are read from: pairs_vs_single (3x3, three types), step 9's
#       fp32-emulation rows with the pairs on and off alternated, the FP8 best_vs_cublaslt rows
#       (fp8-square), matmul fp32_emulated best_vs_cublas.
#   three (~300 s): the sanitizers on the three patches' cases, and ncu of gradient step 9.
# On an H200 (issue 25's figure), a call of its own: `bash wip/gpu_run.sh workflow` (the bench workflow from a
# fresh tree, timed, then the rest built: ~500 s).
set -uo pipefail
export CMAKE_GENERATOR=Ninja
OUT=${OUT:-$PWD/out}
R=$OUT/r
mkdir -p "$R"
say() { echo "$*" | tee -a "$R/summary.txt"; }
(sleep $((${KF_CALL_LIMIT:-585} - 15)); cp "$R/summary.txt" "$OUT/summary_partial.txt") >/dev/null 2>&1 &
disown
say "device: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) ($1)"
bin() { find build-bench -name "$1" -type f | head -1; }
rows() {  # LABEL BINARY FILTER [PAIRS 0|1]
  KF_CONV2D_FILTER_PAIRS=${4:-1} BENCHMARK_FILTER="$3" timeout 150 "build-bench/benchmarks/$2" \
    --benchmark_out="$R/rows_$1.json" --benchmark_out_format=json >"$R/rows_$1.log" 2>&1
  say "rows $1 rc $?"
  python3 -c "
import json, sys
try:
    rows = json.load(open(sys.argv[1]))['benchmarks']
except Exception as e:
    rows = []; print('unreadable:', e)
for b in rows:
    extra = ' '.join('%s %.4g' % (k, v) for k, v in sorted(b.items())
                     if isinstance(v, float) and ('_over_' in k or k.startswith('frac') or 'error' in k))
    print(b['name'].split('/min_time')[0], 'ours %.1f us' % (b.get('gpu_s', 0) * 1e6),
          'base %.1f us' % (b.get('baseline_s', 0) * 1e6), extra, b.get('error_message', ''))" "$R/rows_$1.json" \
    >>"$R/summary.txt"
}
case $1 in
one)
  t0=$(date +%s)
  { cmake --preset bench >"$R/configure.log" 2>&1 && cmake --build --preset bench -j 16 >"$R/build.log" 2>&1; }
  say "build everything rc $? ($(( $(date +%s) - t0 )) s)"
  grep -E "error" "$R/build.log" | head -10 >>"$R/summary.txt"
  t0=$(date +%s)
  timeout 280 ctest --test-dir build-bench -L gpu -j 8 --timeout 270 >"$R/ctest_gpu.log" 2>&1
  say "ctest -L gpu (pairs off) rc $? ($(( $(date +%s) - t0 )) s): $(grep -E 'tests passed|tests failed' "$R/ctest_gpu.log")"
  grep -E "Failed|\*\*\*|Not Run" "$R/ctest_gpu.log" >>"$R/summary.txt"
  T=$(bin test_conv2d_nhwc_gpu) E=$(bin test_conv2d_fp32_emulated_gpu)
  for c in f32_implicit_gemm_wgmma_c24_11x13_k257_1x1_n3 f32_implicit_gemm_wgmma_resnet_c64_28x28 \
           f16_implicit_gemm_wgmma_columns_c64_56x56 bf16_best_pairs_c256_9x15; do
    KF_CONV2D_FILTER_PAIRS=1 timeout 12 "$T" --gtest_filter="*$c*" --gtest_brief=1 >"$R/one_$c.log" 2>&1
    say "pairs $c rc $? $(grep -E 'PASSED|FAILED|Failure' "$R/one_$c.log" | head -3 | tr '\n' ' ')"
  done
  KF_CONV2D_FILTER_PAIRS=1 timeout 60 "$T" --gtest_brief=1 >"$R/nhwc_pairs.log" 2>&1
  say "test_conv2d_nhwc_gpu pairs on rc $?: $(tail -1 "$R/nhwc_pairs.log")"
  grep -E "FAILED|Failure" "$R/nhwc_pairs.log" | head -10 >>"$R/summary.txt"
  KF_CONV2D_FILTER_PAIRS=1 timeout 60 "$E" --gtest_brief=1 >"$R/fp32e_pairs.log" 2>&1
  say "test_conv2d_fp32_emulated_gpu pairs on rc $?: $(tail -1 "$R/fp32e_pairs.log")"
  grep -E "FAILED|Failure" "$R/fp32e_pairs.log" | head -10 >>"$R/summary.txt"
  rows pw conv/bench_conv 'conv2d_backward/tf32/(filter|step)/n32_c256_56x56_k64_1x1' 0
  ;;
two)
  rows pairs conv/bench_conv 'conv2d_nhwc/(tf32|fp16|bf16)/(pairs_vs_single|cudnn)/n32_c(64|128|256)_(56x56|28x28|14x14)_k(64|128|256)_3x3'
  F9='conv2d(_nhwc)?/fp32_emulated/best_vs_cudnn/n32_c(64|128|256)_(56x56|28x28|14x14)'
  rows fp32e_on1 conv/bench_conv "$F9" 1
  rows fp32e_off1 conv/bench_conv "$F9" 0
  rows fp32e_on2 conv/bench_conv "$F9" 1
  KF_BENCH_FP8_SHAPES=4096x4096x4096,8192x8192x8192,4096x7168x16384,8192x8192x1024,1024x1024x1024,128x8192x8192 \
    KF_BENCH_MIN_TIME=0.1 rows fp8 matmul/bench_scaled_matmul 'best_vs_cublaslt/'
  rows matmul matmul/bench_matmul 'matmul/fp32_emulated/best_vs_cublas/'
  ;;
three)
  T=$(bin test_conv2d_nhwc_gpu) S=$(bin test_scaled_matmul_gpu) W=$(bin test_conv2d_backward_gpu)
  for tool in memcheck racecheck synccheck; do
    KF_CONV2D_FILTER_PAIRS=1 timeout 60 compute-sanitizer --tool $tool --error-exitcode 99 "$T" \
      --gtest_filter='*_implicit_gemm_wgmma_pairs_*:*_implicit_gemm_wgmma_columns_c128*:*f32_implicit_gemm_wgmma_c24_11x13*' \
      --gtest_brief=1 >"$R/san_pairs_$tool.log" 2>&1
    say "san pairs $tool rc $?"
    timeout 60 compute-sanitizer --tool $tool --error-exitcode 99 "$W" \
      --gtest_filter='*f32_nhwc_tf32_best*1x1*:*Pointwise*c64_k64_33x31*' --gtest_brief=1 >"$R/san_pw_$tool.log" 2>&1
    say "san pw $tool rc $?"
    timeout 60 compute-sanitizer --tool $tool --error-exitcode 99 "$S" --gtest_filter='*TwoPartialsMatchWideTile*' \
      --gtest_brief=1 >"$R/san_fp8_$tool.log" 2>&1
    say "san fp8 $tool rc $?"
  done
  # gradient step 9 (the 1x1 TF32 dw) under ncu: pw-truncate's rounding instructions gone from its k-loop
  KF_BENCH_MIN_TIME=0.001 timeout 60 ncu --clock-control none -k 'regex:conv2d_wgrad_pointwise' --launch-skip 2 \
    --launch-count 1 --section SpeedOfLight --section WarpStateStats --metrics dram__bytes_read.sum,gpu__time_duration.sum \
    build-bench/benchmarks/conv/bench_conv --benchmark_filter='conv2d_backward/tf32/filter/n32_c256_56x56_k64_1x1' \
    >"$R/ncu_pw.txt" 2>&1
  say "ncu pw rc $?: $(grep -E 'Duration|DRAM Throughput|dram__bytes_read.sum' "$R/ncu_pw.txt" | awk '{print $1, $(NF-1), $NF}' | tr '\n' ' ')"
  ;;
esac
cd "$OUT" && tar czf res.tgz r && rm -rf r
tar xzf res.tgz -O r/summary.txt | tail -70
