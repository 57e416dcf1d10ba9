#!/usr/bin/env bash
# The seventeenth session's A/B calls, two or three patches a call (gpu_run.sh abpair: the trees built at once,
# rows alternated main, patch 1, patch 2, main, ...), so that a scarce device start tests four patches in
# two calls instead of four:
#   (pwland and pw, the 16-bit 1x1 layer's loads together and staged y, ran and landed in this session)
#   pwsplit: how that gain splits (pw-y-only-probe: the loads stage by stage again; pw-loads-only-probe: y
#         from registers again)
#   (conv and fp8, the eighteenth session's: run, their patches landed or dropped; wip/README.md)
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
  *)
    echo "usage: bash wip/s17_calls.sh pwsplit" >&2
    exit 2
    ;;
esac
tar xzf "$OUT/res.tgz" -O r/summary.txt | tail -80
