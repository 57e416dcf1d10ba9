#!/usr/bin/env bash
# The filter pairs' first GPU run (NHWC step 7 in clusters of 2 sharing the filter; on under
# KF_CONV2D_FILTER_PAIRS=1 while it is a probe). `bash wip/s19_pairs.sh [1|2|9|q]`: 1 (default): build,
# one case of each form (short limits), test_conv2d_nhwc_gpu and test_conv2d_fp32_emulated_gpu with the
# pairs on (every case the rule takes, and the single-CTA variant), then off, the 3x3 rows paired
# (pairs_vs_single) and against cuDNN; 2: the sanitizers on pair cases, the rows again in a second process;
# 9: step 9's rows with the pairs on and off, alternated; q: as 1 with the TF32 and fp16 paired rows only.
# Writes $OUT/res.tgz.
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
[[ -f build-bench/build.ninja ]] || cmake --preset bench >"$R/configure.log" 2>&1
cmake --build --preset bench -j 16 --target test_conv2d_nhwc_gpu test_conv2d_fp32_emulated_gpu bench_conv \
  >"$R/build.log" 2>&1
say "build rc $? ($(( $(date +%s) - t0 )) s)"
grep -E "error" "$R/build.log" | head -20 >>"$R/summary.txt"
T=$(find build-bench/tests -name test_conv2d_nhwc_gpu -type f | head -1)
"$T" --gtest_filter='Conv2dNhwcCases.*' --gtest_brief=1 >"$R/cpu.log" 2>&1
say "Conv2dNhwcCases rc $?: $(tail -1 "$R/cpu.log")"
PART=${1:-1}
if [[ $PART != 2 ]]; then  # one case of each form first, each with a short limit (the first run hung)
  for c in f32_implicit_gemm_wgmma_c24_11x13_k257_1x1_n3 f32_implicit_gemm_wgmma_resnet_c64_28x28 \
           f16_implicit_gemm_wgmma_columns_c64_56x56 bf16_best_pairs_c256_9x15; do
    KF_CONV2D_FILTER_PAIRS=1 timeout 12 "$T" --gtest_filter="*$c*" --gtest_brief=1 >"$R/one_$c.log" 2>&1
    say "$c rc $? $(grep -E 'PASSED|FAILED|Failure' "$R/one_$c.log" | head -3 | tr '\n' ' ')"
  done
fi
E=$(find build-bench/tests -name test_conv2d_fp32_emulated_gpu -type f | head -1)
[[ $PART != 2 ]] && for on in 1 0; do  # step 9 (fp32 emulation): pairs where its last round is not split
  KF_CONV2D_FILTER_PAIRS=$on timeout 100 "$E" --gtest_brief=1 >"$R/fp32e_pairs$on.log" 2>&1
  say "test_conv2d_fp32_emulated_gpu pairs=$on rc $?: $(tail -1 "$R/fp32e_pairs$on.log")"
  grep -E "FAILED|Failure" "$R/fp32e_pairs$on.log" | head -10 >>"$R/summary.txt"
done
[[ $PART != 2 ]] && for on in 1 0; do
  t1=$(date +%s)
  KF_CONV2D_FILTER_PAIRS=$on timeout 100 "$T" --gtest_brief=1 >"$R/nhwc_pairs$on.log" 2>&1
  say "test_conv2d_nhwc_gpu pairs=$on rc $? ($(( $(date +%s) - t1 )) s): $(tail -1 "$R/nhwc_pairs$on.log")"
  grep -E "FAILED|Failure" "$R/nhwc_pairs$on.log" | head -10 >>"$R/summary.txt"
done
rows() {  # LABEL FILTER [PAIRS: 1 (default) or 0]
  KF_CONV2D_FILTER_PAIRS=${3:-1} BENCHMARK_FILTER="$2" timeout 150 build-bench/benchmarks/conv/bench_conv \
    --benchmark_out="$R/rows_$1.json" --benchmark_out_format=json >"$R/rows_$1.log" 2>&1
  say "rows $1 rc $?"
  python3 -c "
import json, sys
for b in json.load(open(sys.argv[1]))['benchmarks']:
    extra = ' '.join('%s %.4g' % (k, v) for k, v in sorted(b.items()) if isinstance(v, float) and ('_over_' in k or k.startswith('frac')))
    print(b['name'].split('/min_time')[0], 'ours %.1f us' % (b.get('gpu_s', 0) * 1e6),
          'base %.1f us' % (b.get('baseline_s', 0) * 1e6), extra, b.get('error_message', ''))" "$R/rows_$1.json" >>"$R/summary.txt"
}
ROWS='conv2d_nhwc/(tf32|fp16|bf16)/(pairs_vs_single|best|cudnn)/n32_c(64|128|256)_(56x56|28x28|14x14)_k(64|128|256)_3x3'
if [[ $PART == q ]]; then  # a short call: the TF32 and fp16 pairs_vs_single rows alone
  rows pairsq 'conv2d_nhwc/(tf32|fp16)/pairs_vs_single/'
elif [[ $PART == 9 ]]; then  # step 9: its rows with the pairs on and off, alternated (separate processes)
  F9='conv2d(_nhwc)?/fp32_emulated/best_vs_cudnn/n32_c(64|128|256)_(56x56|28x28|14x14)'
  rows fp32e_on1 "$F9" 1; rows fp32e_off1 "$F9" 0; rows fp32e_on2 "$F9" 1; rows fp32e_off2 "$F9" 0
elif [[ $PART == 1 ]]; then
  rows pairs1 'conv2d_nhwc/(tf32|fp16|bf16)/pairs_vs_single/|conv2d_nhwc/tf32/cudnn/n32_c(64|128|256)_(56x56|28x28|14x14)_k(64|128|256)_3x3' 
else
  for tool in memcheck racecheck synccheck; do
    KF_CONV2D_FILTER_PAIRS=1 timeout 100 compute-sanitizer --tool $tool --error-exitcode 99 "$T" \
      --gtest_filter='*_implicit_gemm_wgmma_pairs_*:*_implicit_gemm_wgmma_columns_c128*:*_implicit_gemm_wgmma_misaligned_y_c16*:*f32_implicit_gemm_wgmma_c3_13x29*:*f32_implicit_gemm_wgmma_c24_11x13*' \
      --gtest_brief=1 >"$R/san_$tool.log" 2>&1
    say "san pairs $tool rc $? $(grep -E 'tests? ran|ERROR SUMMARY' "$R/san_$tool.log" | tr '\n' ' ')"
  done
  rows pairs2 "$ROWS"
fi
cd "$OUT" && tar czf res.tgz r && rm -rf r
tar xzf res.tgz -O r/summary.txt | tail -60
