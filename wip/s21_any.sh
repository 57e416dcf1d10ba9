#!/usr/bin/env bash
# The twenty-first session's last call (2026-12-07): on an H200, wip/s21_h200.sh (the suite and the goal rows);
# on anything else, bench_conv built and `gpu_run.sh profilesrc` (per-instruction stall samples of the TF32
# NHWC C128 layer, ours and cuDNN's).
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
[[ $name == *H200* ]] && exec bash wip/s21_h200.sh
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT/r"
echo "device: $name" | tee -a "$OUT/r/summary.txt"
export CMAKE_GENERATOR=Ninja
t0=$(date +%s)
{ cmake --preset bench >"$OUT/r/configure.log" 2>&1 && cmake --build --preset bench -j 16 --target bench_conv >"$OUT/r/build.log" 2>&1; }
echo "build bench_conv rc $? $(($(date +%s) - t0)) s" | tee -a "$OUT/r/summary.txt"
bash wip/gpu_run.sh profilesrc
cd "$OUT" && rm -f res.tgz && tar czf res.tgz r && rm -rf r
tar xzf res.tgz -O r/summary.txt
