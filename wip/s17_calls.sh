#!/usr/bin/env bash
# The seventeenth session's A/B calls, two or three patches a call (gpu_run.sh abpair: the trees built at once,
# rows alternated main, patch 1, patch 2, main, ...), so that a scarce device start tests four patches in
# two calls instead of four:
#   pwland: one call: the whole GPU suite on main + pointwise-both, the 1x1 rows against cuDNN, the sanitizers
#   pw:   the 16-bit 1x1 layer: tile-loads-together (a tile's four channel-block boxes asked for at once; the
#         DRAM probe streamed a stage's blocks together at 2.58-2.68 TB/s, one block a stage at 2.23-2.30),
#         and pointwise-both (it with staged-y: y through shared memory and TMA stores, whole 128-byte rows)
#   conv: nchw-quad-stores (issue 29's NCHW stores, with the ncu line) and c128-bn64-probe (issue 27's C128)
#   fp8:  fp8-pack, fp8-blockwise-two-partials and fp8-square-probe (issue 26: 128 x 128 with two partial
#         sets where 128 x 144 runs today)
#   fp8b: at once after fp8 (its trees): bench_matmul's pack and fp32_emulated rows in the same trees
#         (abpair2: the pack's f32 / f16 rows, and matmul steps 15 / 16 with the split pair)
# Each prints the summary's tail; the results come back as $OUT/res.tgz.
OUT=${OUT:-$PWD/out}
export OUT
mkdir -p "$OUT/r"
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" | tee -a "$OUT/r/summary.txt"
# A call cut short by its limit returns only a few files under $OUT: the summary so far is copied there
# KF_CALL_LIMIT - 15 s in (the run's timeout_s; default 585).
(sleep $((${KF_CALL_LIMIT:-585} - 15)); cp "$OUT/r/summary.txt" "$OUT/summary_partial.txt") >/dev/null 2>&1 &
disown
case ${1:-} in
  pwland)  # one call for a scarce device: main with pointwise-both applied, everything built, ctest -L gpu, the
    # 1x1 and stem rows against cuDNN (main's ratios from earlier runs: H100 fp16 / bf16 forward 0.864 / 0.866,
    # step 0.898 / 0.902), the sanitizers on the NHWC *1x1* cases; the patch taken back out at the end
    R=$OUT/r
    patch -p1 -s <wip/pointwise-both.mbox || echo "patch pointwise-both failed" | tee -a "$R/summary.txt"
    KF_ROWS='conv2d_nhwc/(fp16|bf16)/(best|best_fused|cudnn|cudnn_fused)/(n32_c256_56x56_k64_1x1|n16_c3_224x224_k64_7x7_s2_p3)|conv2d_backward/(fp16|bf16)/(data|filter|step)/n32_c256_56x56_k64_1x1' \
      KF_SAN_BIN=test_conv2d_nhwc_gpu KF_SAN='*16_implicit_gemm_wgmma_*1x1*' bash wip/gpu_run.sh land
    patch -R -p1 -s <wip/pointwise-both.mbox
    sed -n 's#^+++ b/##p' wip/pointwise-both.mbox >>build-bench/.kf_touch
    ;;
  pw)  # the 16-bit 1x1 layer (issue 27's forward, 28's step): tile-loads-together, and it with staged-y (the
    # staged y's own effect is the difference: one tree fewer to build on a scarce device)
    KF_AB='tile-loads-together:*1x1* pointwise-both:*1x1*' \
      KF_AB_TESTS='test_conv2d_nhwc_gpu:*1x1*:Conv2dNhwcCases.* test_conv2d_backward_gpu:*1x1*' \
      KF_SAN_BIN=test_conv2d_nhwc_gpu \
      KF_ROWS='conv2d_nhwc/(fp16|bf16)/(best|best_fused|cudnn|cudnn_fused)/(n32_c256_56x56_k64_1x1|n16_c3_224x224_k64_7x7_s2_p3)|conv2d_backward/(fp16|bf16)/(data|step)/n32_c256_56x56_k64_1x1' \
      KF_NCU_ROW='conv2d_nhwc/fp16/best/n32_c256_56x56_k64_1x1' KF_NCU_K='implicit_gemm_wgmma' bash wip/gpu_run.sh abpair
    ;;
  conv)
    KF_AB='nchw-quad-stores:*LastRoundSplit*:*InfAndNan* c128-bn64-probe' \
      KF_AB_TESTS='test_conv2d_fp32_emulated_gpu test_conv2d_gpu test_conv2d_epilogue test_conv2d' \
      KF_SAN_BIN=test_conv2d_fp32_emulated_gpu \
      KF_ROWS='conv2d(_nhwc)?/fp32_emulated/best_vs_cudnn/n32_|conv2d/tf32/(best|cudnn)/n32_|conv2d_nhwc/(tf32|fp16|bf16)/(best|cudnn)/n32_c128' \
      KF_NCU_ROW='conv2d/fp32_emulated/best_vs_cudnn/n32_c128' bash wip/gpu_run.sh abpair
    ;;
  fp8)
    KF_BENCH=matmul/bench_scaled_matmul \
      KF_AB='fp8-pack@test_matmul_pack:*SmallShapesForSanitizers* fp8-blockwise-two-partials@test_scaled_matmul_gpu:*TwoPartials*:*LastRoundSplit* fp8-square-probe' \
      KF_AB_TESTS='test_matmul_pack test_matmul_pack_layout test_scaled_matmul_gpu test_matmul_cpu' \
      KF_BENCH_MIN_TIME=0.1 \
      KF_ROWS='fp8_per_tensor/(nn|tt)_vs_tn|fp8_(per_tensor|rowwise|blockwise)/best_vs_cublaslt/(4096x4096x4096|8192x8192x8192|8192x8192x1024|4096x7168x16384)|fp8_blockwise/two_partials_vs_192' \
      bash wip/gpu_run.sh abpair
    ;;
  fp8b)  # at once after `fp8`, on the same warm machine (its /tmp/kf-ab-* trees)
    KF_BENCH2=matmul/bench_matmul KF_ROWS2='matmul/pack/|matmul/fp32_emulated/best_vs_cublas/' bash wip/gpu_run.sh abpair2
    ;;
  *)
    echo "usage: bash wip/s17_calls.sh pwland|pw|conv|fp8|fp8b" >&2
    exit 2
    ;;
esac
tar xzf "$OUT/res.tgz" -O r/summary.txt | tail -80
