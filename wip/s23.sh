#!/usr/bin/env bash
# The next session's first device call (written 2026-12-07, twenty-second session): on an H200, s21_h200.sh
# (the whole suite and the issues' goal rows); on anything else (an H100, as the last eight sessions got),
# the k-loop probes of step 7 against main: the TF32 / fp16 / bf16 NHWC C128 and C256 layers with the
# producer's loads removed (c128-math-only-probe: every stage "lands" at once, so a tile costs its products
# and the consumers' own instructions), with only the pixel box (c128-a-only-probe) and with only the filter
# slices (c128-b-only-probe); rows alternated twice. Their outputs are wrong by design (bench_conv_nhwc's check
# is off in the probes); no tests. ~350 s. KF_AB_ONLY=1 runs the probes on an H200 too.
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
[[ $name == *H200* && -z ${KF_AB_ONLY:-} ]] && exec bash wip/s21_h200.sh
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT/r"
echo "device: $name" | tee -a "$OUT/r/summary.txt"
KF_AB='c128-math-only-probe c128-a-only-probe c128-b-only-probe' \
  KF_ROWS='conv2d_nhwc/(tf32|fp16|bf16)/(best|cudnn)/n32_c(128_28x28|256_14x14)_k' \
  timeout 520 bash wip/gpu_run.sh abpair >/dev/null 2>&1
echo "abpair rc $?" >>"$OUT/r/summary.txt"
cd "$OUT" && rm -f res.tgz && tar czf res.tgz r && rm -rf r
tar xzf res.tgz -O r/summary.txt | tail -80
