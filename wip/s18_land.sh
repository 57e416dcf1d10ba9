#!/usr/bin/env bash
# The landing call for wip/pw-truncate.mbox and wip/fp8-square.mbox (apply both first: patch -p1 < wip/<name>.mbox):
# gradient step 9 with truncated operands and the FP8 two-partials tile at 128 x 128, in the working tree as it is
# (2048^3 among the FP8 shapes: a narrow shape that now runs the two-partials tile by shape). Most important first
# (the call may be cut short:
# the summary so far is copied to $OUT/summary_partial.txt KF_CALL_LIMIT - 15 s in): the build, the three
# changes' GPU tests, their rows, the sanitizers, the pack rows, ncu of step 9. Writes $OUT/res.tgz.
set -uo pipefail
export CMAKE_GENERATOR=Ninja
OUT=${OUT:-$PWD/out}
R=$OUT/r
mkdir -p "$R"
say() { echo "$*" | tee -a "$R/summary.txt"; }
(sleep $((${KF_CALL_LIMIT:-585} - 15)); cp "$R/summary.txt" "$OUT/summary_partial.txt") >/dev/null 2>&1 &
disown
rows() {  # LABEL BINARY FILTER
  BENCHMARK_FILTER="$3" timeout 120 "build-bench/benchmarks/$2" --benchmark_out="$R/rows_$1.json" \
    --benchmark_out_format=json >"$R/rows_$1.log" 2>&1
  say "rows $1 rc $?"
  python3 -c "
import json, sys
for b in json.load(open(sys.argv[1]))['benchmarks']:
    extra = ' '.join('%s %.4g' % (k, v) for k, v in sorted(b.items()) if isinstance(v, float) and k.startswith('frac'))
    print(b['name'].split('/min_time')[0], 'ours %.1f us' % (b.get('gpu_s', 0) * 1e6),
          'base %.1f us' % (b.get('baseline_s', 0) * 1e6), extra, b.get('error_message', ''))" "$R/rows_$1.json" >>"$R/summary.txt"
}
say "device: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
t0=$(date +%s)
cmake --preset bench >"$R/configure.log" 2>&1 || say "configure failed"
cmake --build --preset bench -j 16 --target test_conv2d_backward_gpu test_scaled_matmul_gpu test_matmul_pack \
  test_matmul_pack_layout bench_conv bench_scaled_matmul >"$R/build.log" 2>&1
say "build rc $? ($(( $(date +%s) - t0 )) s)"
grep -E "error" "$R/build.log" | head -20 >>"$R/summary.txt"
T=$(find build-bench/tests -name test_conv2d_backward_gpu -type f | head -1)
S=$(find build-bench/tests -name test_scaled_matmul_gpu -type f | head -1)
t1=$(date +%s)
timeout 200 "$T" --gtest_brief=1 >"$R/conv_backward.log" 2>&1
say "test_conv2d_backward_gpu rc $? ($(( $(date +%s) - t1 )) s): $(tail -1 "$R/conv_backward.log")"
grep -E "FAILED|want" "$R/conv_backward.log" | head -10 >>"$R/summary.txt"
t1=$(date +%s)
timeout 240 "$S" --gtest_brief=1 >"$R/scaled.log" 2>&1
say "test_scaled_matmul_gpu rc $? ($(( $(date +%s) - t1 )) s): $(tail -1 "$R/scaled.log")"
grep -E "FAILED|Failure" "$R/scaled.log" | head -10 >>"$R/summary.txt"
rows pw conv/bench_conv 'conv2d_backward/tf32/(filter|step)/n32_c256_56x56_k64_1x1'
KF_BENCH_FP8_SHAPES=4096x4096x4096,8192x8192x8192,4096x7168x16384,8192x8192x1024,2048x2048x2048 \
  KF_BENCH_MIN_TIME=0.1 rows fp8 matmul/bench_scaled_matmul \
  'fp8_(per_tensor|rowwise)/best_vs_cublaslt/(4096x4096x4096|8192x8192x8192|4096x7168x16384|8192x8192x1024|2048x2048x2048)|fp8_per_tensor/two_partials_vs_192/4096x4096x4096'
for tool in memcheck racecheck synccheck; do
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 99 "$T" \
    --gtest_filter='*f32_nhwc_tf32_best*1x1*:*f32_nhwc_tf32_best*pointwise*:*Pointwise*c64_k64_33x31*:*Pointwise*relu1*' \
    --gtest_brief=1 >"$R/san_pw_$tool.log" 2>&1
  say "san pw $tool rc $?"
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 99 "$S" --gtest_filter='*TwoPartialsMatchWideTile*' \
    --gtest_brief=1 >"$R/san_fp8_$tool.log" 2>&1
  say "san fp8 $tool rc $?"
done
for t in test_matmul_pack test_matmul_pack_layout; do
  timeout 60 "$(find build-bench/tests -name $t -type f | head -1)" --gtest_brief=1 >"$R/$t.log" 2>&1
  say "$t rc $?: $(tail -1 "$R/$t.log")"
done
KF_BENCH_MIN_TIME=0.001 timeout 60 ncu --clock-control none -k 'regex:conv2d_wgrad_pointwise' --launch-skip 2 --launch-count 1 \
  --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
  --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
  build-bench/benchmarks/conv/bench_conv --benchmark_filter='conv2d_backward/tf32/filter/n32_c256_56x56_k64_1x1' \
  >"$R/ncu_pw.txt" 2>&1
say "ncu rc $?: $(grep -E 'Duration|DRAM Throughput|Issued Warp|No Eligible|dram__bytes_read.sum' "$R/ncu_pw.txt" | awk '{print $1, $2, $(NF-1), $(NF)}' | tr '\n' ' ')"
cd "$OUT" && tar czf res.tgz r && rm -rf r
tar xzf res.tgz -O r/summary.txt | tail -60
