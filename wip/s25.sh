#!/usr/bin/env bash
# The next device call (written 2026-12-07, twenty-fourth session), whatever GPU comes:
#  1. wip/probes/desc_shift.cu (~15 s): whether one wgmma descriptor reads any row of a swizzled halo box with
#     1280-byte group strides (printed; $OUT/desc_shift.txt).
#  2. an abpair of wip/halo.mbox against main (step 12: halo tiles -- one (8 + S - 1) x (ht + R - 1) pixel box a
#     channel block for every tap of a 3x3 layer, in a ring of its own; the planner gives it every stride-1 3x3
#     NHWC layer on ping-pong, forward and 16-bit dx): its tests (the NHWC cases, the backward's, the CPU conv2d
#     tests) and the sanitizers on a few of its cases, then the rows alternated twice: TF32 / fp16 / bf16 NHWC best
#     on the three 3x3 layers and the 16-bit / TF32 dx rows. ~470 s.
# On an H200 with KF_H200_FIRST=1: s21_h200.sh instead (the whole suite and the goal rows).
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT/r"
echo "device: $name" | tee -a "$OUT/r/summary.txt"
[[ $name == *H200* && -n ${KF_H200_FIRST:-} ]] && exec bash wip/s21_h200.sh
{ nvcc -std=c++17 -O3 -arch=sm_90a -Iinclude wip/probes/desc_shift.cu -o /tmp/desc_shift && /tmp/desc_shift; } \
  >"$OUT/desc_shift.txt" 2>&1
cat "$OUT/desc_shift.txt"
san='*implicit_gemm_wgmma_c12_13x13_k130_3x3_p1_relu:*implicit_gemm_wgmma_boxes_c16_5x6_k70_3x3_p1_n9:*implicit_gemm_wgmma_c5_6x1_k9_3x3_p1_q1'
export KF_AB="halo:$san"
export KF_SAN_BIN=test_conv2d_nhwc_gpu
export KF_AB_TESTS='test_conv2d_nhwc_gpu test_conv2d_backward_gpu test_conv2d'
KF_ROWS='conv2d_nhwc/(tf32|fp16|bf16)/best/n32_c(64_56x56|128_28x28|256_14x14)_k|conv2d_backward/(fp16|tf32)/data/n32_c(64_56x56|128_28x28|256_14x14)_k' \
  timeout 540 bash wip/gpu_run.sh abpair >/dev/null 2>&1
echo "abpair rc $?" >>"$OUT/r/summary.txt"
cd "$OUT" && rm -f res.tgz && tar czf res.tgz r && rm -rf r
tar xzf res.tgz -O r/summary.txt | tail -90
