#!/usr/bin/env bash
# The next session's device calls (written 2026-12-07, twenty-fourth session), in this order, chained on one
# warm machine:
#  bash wip/s26.sh suite    everything built, the CPU conv2d tests, the whole `ctest -L gpu` (-j 8; never yet run
#                           whole on main with step 12) and the goal rows (s21_h200.sh, on any Hopper). ~370 s.
#  bash wip/s26.sh maxnreg  an abpair of wip/halo-maxnreg.mbox (step 12's producer gives its registers to the
#                           consumers: setmaxnreg 40 / 232; the fused BN 128 instance's 16-byte stack gone): its
#                           tests and sanitizers, then the NHWC best and best_fused rows with cuDNN's (cudnn,
#                           cudnn_fused) on the three 3x3 layers in the three types, alternated twice. ~400 s.
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT/r"
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "device: $name" | tee -a "$OUT/r/summary.txt"
#  bash wip/s26.sh fp32e    an abpair of wip/halo-fp32e.mbox (step 13: step 9's fp32 emulation on step 12's halo
#                           tiles, hi and lo boxes side by side in one A slot; step 12's producer generalized to
#                           two parts): the fp32-emulation, NHWC and backward tests, the sanitizers on two of its
#                           cases, then the fp32_emulated best_vs_cudnn rows in both layouts and the TF32 NHWC best
#                           rows (step 12 unchanged), alternated twice. ~450 s.
layers='n32_c(64_56x56|128_28x28|256_14x14)_k'
# abpair PATCH:SANITIZER-FILTER SANITIZER-BINARY TESTS ROWS: one patch against main, packed as $OUT/res.tgz.
abpair() {
  KF_AB=$1 KF_SAN_BIN=$2 KF_AB_TESTS=$3 KF_ROWS=$4 timeout 540 bash wip/gpu_run.sh abpair >/dev/null 2>&1
  echo "abpair rc $?" >>"$OUT/r/summary.txt"
  cd "$OUT" && rm -f res.tgz && tar czf res.tgz r && rm -rf r
  tar xzf res.tgz -O r/summary.txt | tail -90
}
case ${1:-suite} in
  suite) KF_ANY_HOPPER=1 exec bash wip/s21_h200.sh ;;
  maxnreg)
    abpair 'halo-maxnreg:*implicit_gemm_wgmma_c12_13x13_k130_3x3_p1_relu:*implicit_gemm_wgmma_boxes_c16_5x6_k70_3x3_p1_n9' \
      test_conv2d_nhwc_gpu 'test_conv2d_nhwc_gpu test_conv2d_backward_gpu' \
      "conv2d_nhwc/(tf32|fp16|bf16)/(best|best_fused|cudnn|cudnn_fused)/$layers"
    ;;
  fp32e)
    abpair 'halo-fp32e:*c32_13x17_k64_3x3_p1_n2*:*c130_7x11_k7_3x3_p1_n2_misaligned*:*c64_12x10_k64_3x3_p2x0*' \
      test_conv2d_fp32_emulated_gpu 'test_conv2d_fp32_emulated_gpu test_conv2d_nhwc_gpu test_conv2d_backward_gpu' \
      "conv2d(_nhwc)?/fp32_emulated/best_vs_cudnn/$layers|conv2d_nhwc/tf32/best/$layers"
    ;;
esac
