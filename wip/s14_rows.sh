#!/usr/bin/env bash
# The fourteenth session's rows on a built tree (build-bench): bench_conv's
# fp32-emulation and TF32 NHWC rows (three processes), then bench_matmul's fp32_emulated best_vs_cublas rows and
# bench_scaled_matmul's best_vs_cublaslt rows. Optional first argument `tests`: the whole ctest -L gpu first.
OUT=${OUT:-$PWD/out}
R=$OUT/r
mkdir -p "$R"
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" | tee -a "$R/summary.txt"
[[ ${1:-} == tests ]] && bash wip/gpu_run.sh gputests && tar xzf "$OUT/res.tgz" -C "$OUT"
cmake --build --preset bench -j 16 --target bench_conv >"$R/build_rows.log" 2>&1
echo "build bench_conv rc $?" >>"$R/summary.txt"
one() {  # LABEL BINARY FILTER
  BENCHMARK_FILTER="$3" timeout 150 "build-bench/benchmarks/$2" --benchmark_out="$R/rows_$1.json" \
    --benchmark_out_format=json >"$R/rows_$1.log" 2>&1
  echo "rows $1 rc $?" >>"$R/summary.txt"
  python3 -c "
import json, sys
for b in json.load(open(sys.argv[1]))['benchmarks']:
    extra = ' '.join('%s %.4g' % (k, v) for k, v in sorted(b.items())
                     if isinstance(v, float) and ('frac_c' in k or '_over_' in k or 'error' in k))
    print(b['name'].split('/min_time')[0], 'ours %.1f us' % (b['gpu_s'] * 1e6), 'base %.1f us' % (b.get('baseline_s', 0) * 1e6), extra)" \
    "$R/rows_$1.json" >>"$R/summary.txt"
}
one conv1 conv/bench_conv 'conv2d(_nhwc)?/fp32_emulated/best_vs_cudnn/n32_|conv2d/fp32/cudnn/n32_|conv2d_nhwc/tf32/(best|best_fused|cudnn|cudnn_fused)/'
one conv2 conv/bench_conv 'conv2d(_nhwc)?/fp32_emulated/best_vs_cudnn/n32_|conv2d/fp32/cudnn/n32_'
one conv3 conv/bench_conv 'conv2d(_nhwc)?/fp32_emulated/best_vs_cudnn/n32_|conv2d/fp32/cudnn/n32_'
grep -h "cudnn plan" "$R"/rows_conv*.log | sort | uniq -c >>"$R/summary.txt"
cmake --build --preset bench -j 16 --target bench_matmul bench_scaled_matmul >"$R/build_rows2.log" 2>&1
one matmul matmul/bench_matmul 'matmul/fp32_emulated/best_vs_cublas/'
KF_BENCH_MIN_TIME=0.1 one fp8 matmul/bench_scaled_matmul 'best_vs_cublaslt/'
cd "$OUT" && rm -f res.tgz && tar czf res.tgz r && rm -rf r
tar xzf res.tgz -O r/summary.txt | tail -80
