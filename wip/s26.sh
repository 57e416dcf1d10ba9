#!/usr/bin/env bash
# Device calls (written 2026-12-07, twenty-fourth session; maxnreg and fp32e ran and landed in the twenty-fifth):
#  bash wip/s26.sh suite    everything built, the CPU conv2d tests, the whole `ctest -L gpu` (-j 8), the goal
#                           rows and the fp32-emulation accuracy tables (s21_h200.sh, on any Hopper). ~450 s.
#  bash wip/s26.sh close    the sanitized binaries built, then s23_h200_close.sh (the sanitizers, bench_matmul's pairs).
#  bash wip/s26.sh fine     an abpair of wip/fp32e-fine-short-k.mbox (matmul step 15 promotes every 8 of k below
#                           k = 1024): both fp32-emulation test binaries (their accuracy tables in the logs), the
#                           sanitizers on a k = 200 case, the matmul fp32_emulated rows (k >= 1024: unchanged). ~350 s.
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT/r"
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "device: $name" | tee -a "$OUT/r/summary.txt"
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
  close)  # on any Hopper, a fresh machine: the sanitized binaries and bench_matmul built, then the sanitizers on the
    # sm_90a families and bench_matmul's pairs (after `suite` on a warm machine, run s23_h200_close.sh alone: built)
    t0=$(date +%s)
    { cmake --preset bench && cmake --build --preset bench -j 16 --target test_matmul_tensor_core \
        test_matmul_tensor_core_f16 test_scaled_matmul_gpu test_conv2d_gpu test_conv2d_nhwc_gpu test_conv2d_backward_gpu \
        test_fp32_emulated_gpu test_conv2d_fp32_emulated_gpu test_filter2d_gpu bench_matmul; } >"$OUT/r/build.log" 2>&1
    echo "build rc $? $(($(date +%s) - t0)) s" >>"$OUT/r/summary.txt"
    KF_ANY_HOPPER=1 exec bash wip/s23_h200_close.sh
    ;;
  fine)
    KF_BENCH=matmul/bench_matmul abpair 'fp32e-fine-short-k:Fp32EmulatedPath/Fp32Emulated.FusedBiasAndThresholdRelu/0' \
      test_fp32_emulated_gpu 'test_fp32_emulated_gpu test_conv2d_fp32_emulated_gpu test_matmul_cpu' \
      'matmul/fp32_emulated/best_vs_cublas/'
    ;;
esac
