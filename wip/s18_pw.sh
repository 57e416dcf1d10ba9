#!/usr/bin/env bash
# The eighteenth session's call for gradient step 9 (the TF32 pointwise dw on mma.sync), in the
# working tree as it is: build the backward tests and bench_conv, the step's tests (the suite's
# f32_nhwc_tf32 filter cases, the exact long splits), the whole test_conv2d_backward_gpu, the
# sanitizers on the step's cases, then the 1x1 TF32 rows (best = step 9, filter_gemm = step 2,
# filter_wgmma = step 4, and the step) twice. Writes $OUT/res.tgz and prints the summary.
set -uo pipefail
export CMAKE_GENERATOR=Ninja
OUT=${OUT:-$PWD/out}
R=$OUT/r
mkdir -p "$R"
say() { echo "$*" | tee -a "$R/summary.txt"; }
(sleep $((${KF_CALL_LIMIT:-585} - 15)); cp "$R/summary.txt" "$OUT/summary_partial.txt") >/dev/null 2>&1 &
disown
say "device: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
t0=$(date +%s)
cmake --preset bench >"$R/configure.log" 2>&1 || say "configure failed"
cmake --build --preset bench -j 16 --target test_conv2d_backward_gpu bench_conv >"$R/build.log" 2>&1
say "build rc $? ($(( $(date +%s) - t0 )) s)"
grep -E "error|spill" "$R/build.log" | head -20 >>"$R/summary.txt"
T=$(find build-bench/tests -name test_conv2d_backward_gpu -type f | head -1)
timeout 200 "$T" --gtest_filter='*Pointwise*:*f32_nhwc_tf32*1x1*:*f32_nhwc_tf32*pointwise*' --gtest_brief=1 >"$R/pw_tests.log" 2>&1
say "pointwise tests rc $? ($(grep -c '^\[       OK' "$R/pw_tests.log") ok lines)"
grep -E "FAILED|Failure|want|error" "$R/pw_tests.log" | head -30 >>"$R/summary.txt"
tail -3 "$R/pw_tests.log" >>"$R/summary.txt"
t1=$(date +%s)
timeout 300 "$T" --gtest_brief=1 >"$R/all_tests.log" 2>&1
say "test_conv2d_backward_gpu rc $? ($(( $(date +%s) - t1 )) s)"
grep -E "FAILED" "$R/all_tests.log" | head -20 >>"$R/summary.txt"
tail -3 "$R/all_tests.log" >>"$R/summary.txt"
for tool in memcheck racecheck synccheck; do
  timeout 120 compute-sanitizer --tool $tool --error-exitcode 99 "$T" \
    --gtest_filter='*f32_nhwc_tf32_best*1x1*:*f32_nhwc_tf32_best*pointwise*:*Pointwise*c64_k64_33x31*:*Pointwise*relu1*' \
    --gtest_brief=1 >"$R/san_$tool.log" 2>&1
  say "san $tool rc $?"
  grep -E "ERROR SUMMARY|Invalid|Race|Barrier" "$R/san_$tool.log" | head -5 >>"$R/summary.txt"
done
for i in 1 2; do
  BENCHMARK_FILTER='conv2d_backward/tf32/(filter|filter_gemm|filter_wgmma|step)/n32_c256_56x56_k64_1x1' timeout 120 \
    build-bench/benchmarks/conv/bench_conv --benchmark_out="$R/rows_$i.json" --benchmark_out_format=json \
    >"$R/rows_$i.log" 2>&1
  say "rows $i rc $?"
  python3 -c "
import json, sys
for b in json.load(open(sys.argv[1]))['benchmarks']:
    print(b['name'].split('/min_time')[0], 'ours %.1f us' % (b.get('gpu_s', 0) * 1e6),
          'base %.1f us' % (b.get('baseline_s', 0) * 1e6), 'frac %.3f' % b.get('frac_cudnn', 0),
          'diff %.2g' % b.get('diff_vs_cudnn', 0), b.get('error_message', ''))" "$R/rows_$i.json" >>"$R/summary.txt"
done
KF_BENCH_MIN_TIME=0.001 timeout 90 ncu --clock-control none -k 'regex:conv2d_wgrad_pointwise' --launch-skip 2 --launch-count 1 \
  --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
  --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,gpu__time_duration.sum \
  build-bench/benchmarks/conv/bench_conv --benchmark_filter='conv2d_backward/tf32/filter/n32_c256_56x56_k64_1x1' \
  >"$R/ncu_pw.txt" 2>&1
say "ncu rc $?: $(grep -E 'Duration|DRAM Throughput|Memory Throughput|Issue Slots Busy|No Eligible|dram__bytes_(read|write).sum|Stall' "$R/ncu_pw.txt" | awk '{print $1, $2, $(NF-1), $(NF)}' | tr '\n' ' ')"
cd "$OUT" && tar czf res.tgz r && rm -rf r
tar xzf res.tgz -O r/summary.txt | tail -60
