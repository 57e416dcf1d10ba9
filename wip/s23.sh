#!/usr/bin/env bash
# The next session's device calls (written 2026-12-07, twenty-second session).
#  bash wip/s23.sh        the first call: on an H200, s21_h200.sh (the whole suite and the issues' goal rows); on
#                         anything else (an H100, as the last eight sessions got; or an H200 with KF_AB_ONLY=1), an
#                         abpair against main of conv-desc-advance (conv2d steps 7 and 9 build their wgmma
#                         descriptors by addition: the TF32 ping-pong k-loop 128 -> 96 SASS instructions, step 9's
#                         k-block 346 -> 308), with its tests and the sanitizers on the NHWC wgmma ragged cases, and of
#                         c128-math-only-probe (the producer's loads removed: every stage "lands" at once, so a tile
#                         costs its products and the consumers' own instructions). ~500 s.
#  bash wip/s23.sh more   the next call on the same machine: the probes with only the pixel box loaded
#                         (c128-a-only-probe) and with only the filter slices (c128-b-only-probe). ~350 s.
# Rows: the TF32 / fp16 / bf16 NHWC C128 and C256 layers and the NCHW fp32-emulation rows, alternated twice. A
# probe's output is wrong by design (bench_conv_nhwc's check is off in it) and runs no tests.
mode=${1:-first}
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
OUT=${OUT:-$PWD/out}
case $mode in
  first)
    [[ $name == *H200* && -z ${KF_AB_ONLY:-} ]] && exec bash wip/s21_h200.sh
    export KF_AB='conv-desc-advance:*implicit_gemm_wgmma_boxes*:*implicit_gemm_wgmma_misaligned_y* c128-math-only-probe'
    export KF_SAN_BIN=test_conv2d_nhwc_gpu
    export KF_AB_TESTS='test_conv2d_nhwc_gpu test_conv2d_backward_gpu test_conv2d_fp32_emulated_gpu test_conv2d_gpu'
    ;;
  more) export KF_AB='c128-a-only-probe c128-b-only-probe' ;;
  *)
    echo "usage: bash wip/s23.sh [first|more]" >&2
    exit 2
    ;;
esac
mkdir -p "$OUT/r"
echo "device: $name ($mode)" | tee -a "$OUT/r/summary.txt"
KF_ROWS='conv2d_nhwc/(tf32|fp16|bf16)/(best|cudnn)/n32_c(128_28x28|256_14x14)_k|conv2d/fp32_emulated/best_vs_cudnn/n32_' \
  timeout 560 bash wip/gpu_run.sh abpair >/dev/null 2>&1
echo "abpair rc $?" >>"$OUT/r/summary.txt"
cd "$OUT" && rm -f res.tgz && tar czf res.tgz r && rm -rf r
tar xzf res.tgz -O r/summary.txt | tail -80
