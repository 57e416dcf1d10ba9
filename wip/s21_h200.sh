#!/usr/bin/env bash
# The twenty-first session's H200 call (2026-12-07): on an H200 only (anything else exits at once, so that a
# call that gets an H100 costs its start alone): everything built, the CPU conv2d tests, the whole
# `ctest -L gpu`, the rows the issues' goals are read from -- conv2d fp32 emulation (three processes) and TF32
# NHWC, matmul fp32_emulated best_vs_cublas, FP8 best_vs_cublaslt. ~500 s.
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT/r"
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "device: $name" | tee -a "$OUT/r/summary.txt"
[[ $name == *H200* || -n ${KF_ANY_HOPPER:-} ]] || { echo "not an H200: nothing run"; exit 0; }
KF_ROWS='conv2d(_nhwc)?/fp32_emulated/best_vs_cudnn/n32_|conv2d/fp32/cudnn/n32_|conv2d_nhwc/(tf32|fp16|bf16)/(best|best_fused|cudnn|cudnn_fused)/' \
  bash wip/gpu_run.sh land
tar xzf "$OUT/res.tgz" -C "$OUT" 2>/dev/null
one() {  # LABEL BINARY FILTER
  BENCHMARK_FILTER="$3" timeout 120 "build-bench/benchmarks/$2" --benchmark_out="$OUT/r/rows_$1.json" \
    --benchmark_out_format=json >"$OUT/r/rows_$1.log" 2>&1
  echo "rows $1 rc $?" >>"$OUT/r/summary.txt"
}
KF_BENCH_MIN_TIME=0.1 one fp8 matmul/bench_scaled_matmul "${KF_FP8_ROWS:-best_vs_cublaslt/}"
one conv2 conv/bench_conv 'conv2d(_nhwc)?/fp32_emulated/best_vs_cudnn/n32_|conv2d/fp32/cudnn/n32_'
if [[ -z ${KF_LEAN:-} ]]; then  # KF_LEAN: a short call -- one process of conv rows, no matmul rows
  one conv3 conv/bench_conv 'conv2d(_nhwc)?/fp32_emulated/best_vs_cudnn/n32_|conv2d/fp32/cudnn/n32_'
  one matmul matmul/bench_matmul 'matmul/fp32_emulated/best_vs_cublas/'
fi
# The accuracy tables the tests print: fp32 emulation (ours, SGEMM or cuDNN's exact mode, our exact steps), FP8
# (ours, cuBLASLt).
for t in matmul/test_fp32_emulated_gpu conv2d/test_conv2d_fp32_emulated_gpu matmul/test_scaled_accuracy_gpu; do
  timeout 120 "build-bench/tests/$t" --gtest_filter='*Accuracy*' >"$OUT/r/accuracy_${t#*/}.log" 2>&1
  echo "accuracy ${t#*/} rc $?" >>"$OUT/r/summary.txt"
done
cd "$OUT" && rm -f res.tgz && tar czf res.tgz r && rm -rf r
tar xzf res.tgz -O r/summary.txt | tail -80
