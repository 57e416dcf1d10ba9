#!/usr/bin/env bash
# The seventeenth session's A/B calls, two or three patches a call (gpu_run.sh abpair: the trees built at once,
# rows alternated main, patch 1, patch 2, main, ...), so that a scarce device start tests four patches in
# two calls instead of four:
#   (pwland and pw, the 16-bit 1x1 layer's loads together and staged y, ran and landed in this session)
#   pwsplit: how that gain splits (pw-y-only-probe: the loads stage by stage again; pw-loads-only-probe: y
#         from registers again)
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
  pwsplit)  # how the 16-bit 1x1 forward's gain splits: main against main with either change switched off
    KF_AB='pw-y-only-probe pw-loads-only-probe' \
      KF_ROWS='conv2d_nhwc/(fp16|bf16)/(best|best_fused|cudnn|cudnn_fused)/n32_c256_56x56_k64_1x1' bash wip/gpu_run.sh abpair
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
    echo "usage: bash wip/s17_calls.sh pwsplit|conv|fp8|fp8b" >&2
    exit 2
    ;;
esac
tar xzf "$OUT/res.tgz" -O r/summary.txt | tail -80
