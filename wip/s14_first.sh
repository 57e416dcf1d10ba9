#!/usr/bin/env bash
# The fourteenth session's first device call: on an H200, the bench workflow from a fresh tree (issue 25's
# 240 s) and the rest built; on anything else, `land` (everything built, ctest -L gpu, rows).
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT/r"
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "device: $name" | tee -a "$OUT/r/summary.txt"
if [[ $name == *H200* ]]; then
  bash wip/gpu_run.sh workflow
else
  KF_ROWS='conv2d(_nhwc)?/fp32_emulated/best_vs_cudnn/n32_|conv2d/fp32/cudnn/n32_|conv2d_nhwc/tf32/(best|best_fused|cudnn|cudnn_fused)/' \
    bash wip/gpu_run.sh land
  for i in 2 3; do
    BENCHMARK_FILTER='conv2d(_nhwc)?/fp32_emulated/best_vs_cudnn/n32_|conv2d/fp32/cudnn/n32_' timeout 100 \
      build-bench/benchmarks/conv/bench_conv --benchmark_out="$OUT/r/conv_fp32e_$i.json" --benchmark_out_format=json \
      >"$OUT/r/conv_fp32e_$i.log" 2>&1
    echo "conv rows $i rc $?" >>"$OUT/r/summary.txt"
  done
fi
cd "$OUT" && tar czf res.tgz r && rm -rf r
tar xzf res.tgz -O r/summary.txt | tail -70
