#!/usr/bin/env bash
# The next session's first device call (written 2026-12-07, twenty-first session): on an H200, s21_h200.sh
# (the whole suite and the issues' goal rows); on anything else (an H100, as the last six sessions got),
# the stage probe (gpu_run.sh tmac128, TF32 and 16-bit C128 stages without math) and filter-clusters'
# abpair: main against the patch, rows alternated twice, test_conv2d_nhwc_gpu and test_conv2d_backward_gpu
# with the patch, compute-sanitizer memcheck / racecheck / synccheck on the cluster cases. ~500 s.
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
[[ $name == *H200* ]] && exec bash wip/s21_h200.sh
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT/r"
echo "device: $name" | tee -a "$OUT/r/summary.txt"
bash wip/gpu_run.sh tmac128 >/dev/null 2>&1
KF_AB='filter-clusters:*clusters_*' KF_SAN_BIN=test_conv2d_nhwc_gpu \
  KF_AB_TESTS='test_conv2d_nhwc_gpu test_conv2d_backward_gpu' \
  KF_ROWS='conv2d_nhwc/(tf32|fp16|bf16)/(best|cudnn)/n32_c(128_28x28|256_14x14)_k' \
  timeout 520 bash wip/gpu_run.sh abpair >/dev/null 2>&1
echo "abpair rc $?" >>"$OUT/r/summary.txt"
cd "$OUT" && rm -f res.tgz && tar czf res.tgz r && rm -rf r
tar xzf res.tgz -O r/summary.txt | tail -80
