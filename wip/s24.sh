#!/usr/bin/env bash
# The next session's device calls (written 2026-12-07, twenty-third session).
#  bash wip/s24.sh        the first call: on an H200, s21_h200.sh (the whole suite and the issues' goal rows); on
#                         anything else (or an H200 with KF_AB_ONLY=1), an abpair against main of tf32-filter-column
#                         (step 7's filter-column tiles for TF32 NHWC: one 8 x (ht + 2) pixel box a filter column's
#                         three taps, where the load probes found the pixel boxes setting the TF32 C128 layer's
#                         time), with its tests and the sanitizers on the float filter-column cases. ~450 s.
# Rows: TF32 NHWC best / best_fused / cuDNN on the three 3x3 layers, the patch's tf32 columns_vs_one_tap pairs
# (the planned tiles against one tap a k-step in one binary), and the TF32 dx and training-step rows of the 3x3
# layers (dx runs the forward on the turned filter), alternated twice.
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
# wip/probes/desc_shift.cu (~15 s): can a wgmma A descriptor start at any row of a swizzled halo box, 8-row
# groups 1280 bytes apart (the nine taps of one (8 + 2) x (16 + 2) box)? Printed in full; the rest follows.
{ nvcc -std=c++17 -O3 -arch=sm_90a -Iinclude wip/probes/desc_shift.cu -o /tmp/desc_shift && /tmp/desc_shift; } \
  >"$OUT/desc_shift.txt" 2>&1; cat "$OUT/desc_shift.txt"
[[ $name == *H200* && -z ${KF_AB_ONLY:-} ]] && exec bash wip/s21_h200.sh
export KF_AB='tf32-filter-column:*f32_implicit_gemm_wgmma_columns_*:*f32_best_tf32_columns_*'
export KF_SAN_BIN=test_conv2d_nhwc_gpu
export KF_AB_TESTS='test_conv2d_nhwc_gpu test_conv2d_backward_gpu test_conv2d_gpu'
mkdir -p "$OUT/r"
echo "device: $name" | tee -a "$OUT/r/summary.txt"
KF_ROWS='conv2d_nhwc/tf32/(best|best_fused|cudnn|cudnn_fused|columns_vs_one_tap)/n32_c(64_56x56|128_28x28|256_14x14)_k|conv2d_backward/tf32/(data|step)/n32_c(64_56x56|128_28x28|256_14x14)_k' \
  timeout 560 bash wip/gpu_run.sh abpair >/dev/null 2>&1
echo "abpair rc $?" >>"$OUT/r/summary.txt"
cd "$OUT" && rm -f res.tgz && tar czf res.tgz r && rm -rf r
tar xzf res.tgz -O r/summary.txt | tail -80
