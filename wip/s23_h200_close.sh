#!/usr/bin/env bash
# The Hopper-steps issue's remaining H200 checks (written 2026-12-07, twenty-second session), for the call after
# s21_h200.sh on the same warm H200 (build-bench built there): compute-sanitizer memcheck / racecheck / synccheck
# on the sm_90a kernels (scripts/gpu_check.sh sm90a_sanitize: the wgmma matmul and conv2d, NCHW and NHWC, the
# filter gradients, fp32 emulation, the TMA filter2d) and bench_matmul's paired rows (best_vs_cublas and
# mcast_a_vs_b, ratios printed). Exits at once on anything but an H200. ~300-500 s (untimed as a whole).
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT/r"
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "device: $name" | tee -a "$OUT/r/summary.txt"
[[ $name == *H200* || -n ${KF_ANY_HOPPER:-} ]] || { echo "not an H200: nothing run"; exit 0; }
[[ -x build-bench/tests/matmul/test_matmul_gpu ]] || { echo "build-bench not built: run s21_h200.sh first"; exit 0; }
t0=$(date +%s)
OUT=$OUT/r BUILD_DIR=build-bench SAN_TIMEOUT=120 timeout 560 bash scripts/gpu_check.sh sm90a_sanitize pairs \
  >"$OUT/r/close.log" 2>&1
echo "gpu_check sm90a_sanitize pairs rc $? $(($(date +%s) - t0)) s" >>"$OUT/r/summary.txt"
cat "$OUT/r/close.log" >>"$OUT/r/summary.txt"
cd "$OUT" && rm -f res.tgz && tar czf res.tgz r && rm -rf r
tar xzf res.tgz -O r/summary.txt | tail -80
