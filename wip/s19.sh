#!/usr/bin/env bash
# The nineteenth session's device calls, on a tree with wip/pw-truncate.mbox and wip/fp8-square.mbox applied.
#   first: on an H200 the bench workflow from a fresh tree, timed, then everything built (s14_first.sh);
#          elsewhere the landing call of the two patches (s18_land.sh).
#   suite: (after first on the H200) the whole ctest -L gpu, timed, then the filter pairs' first run (s19_pairs.sh 1).
#   rows:  (after suite) the rows the issues' goals are read from (s14_rows.sh without tests).
set -uo pipefail
OUT=${OUT:-$PWD/out}
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case ${1:-first} in
first)
  if [[ $name == *H200* ]]; then bash wip/s14_first.sh; else KF_CALL_LIMIT=${KF_CALL_LIMIT:-590} bash wip/s18_land.sh; fi ;;
suite)  # gputests leaves $OUT/r; the pairs' part 1 appends to it and packs it
  bash wip/gpu_run.sh gputests
  rm -f "$OUT/res.tgz"
  KF_CALL_LIMIT=${KF_CALL_LIMIT:-590} bash wip/s19_pairs.sh 1 ;;
rows)
  bash wip/s14_rows.sh ;;
esac
