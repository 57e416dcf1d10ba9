#!/usr/bin/env bash
# The k-loop probes' second call (written 2026-12-07, twenty-second session), after s23.sh on the same warm
# machine, on whatever came: step 7 with only the pixel box loaded (c128-a-only-probe) and with only the
# filter slices (c128-b-only-probe), against main, on the TF32 / fp16 / bf16 NHWC C128 and C256 rows,
# alternated twice; outputs wrong by design, no tests. ~350 s.
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT/r"
echo "device: $name" | tee -a "$OUT/r/summary.txt"
KF_AB='c128-a-only-probe c128-b-only-probe' \
  KF_ROWS='conv2d_nhwc/(tf32|fp16|bf16)/(best|cudnn)/n32_c(128_28x28|256_14x14)_k' \
  timeout 560 bash wip/gpu_run.sh abpair >/dev/null 2>&1
echo "abpair rc $?" >>"$OUT/r/summary.txt"
cd "$OUT" && rm -f res.tgz && tar czf res.tgz r && rm -rf r
tar xzf res.tgz -O r/summary.txt | tail -80
