#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A focused device session on an existing build-gpu/ (scripts/h200_check.sh
# build), or one that builds only the named targets first; then the named test
# binaries (with optional gtest filters) and benchmark filters, each logged
# under $OUT.
#   scripts/h200_quick.sh 'build:test_matmul_gpu,bench_matmul' 'tests/matmul/test_matmul_gpu:Matmul/half.*' \
#     'bench:matmul/bench_matmul:fp16/.*/4096'
set -uo pipefail
OUT=${OUT:-$PWD/out}
build=build-gpu
rc=0
for item in "$@"; do
  kind=${item%%:*} rest=${item#*:}
  start=$(date +%s)
  if [[ $kind == build ]]; then
    cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 >"$OUT/configure.log" 2>&1 &&
      cmake --build $build -j 16 --target ${rest//,/ } >"$OUT/build.log" 2>&1 || { tail -n 40 "$OUT/build.log"; exit 1; }
    echo "== build [$rest]: $(( $(date +%s) - start )) s"
  elif [[ $kind == bench ]]; then
    bin=${rest%%:*} filter=${rest#*:} name=$(basename "$bin")_$(date +%s%N | tail -c 6)
    "$build/benchmarks/$bin" --benchmark_filter="$filter" --benchmark_out="$OUT/$name.json" --benchmark_out_format=json \
      --benchmark_counters_tabular=true >"$OUT/$name.log" 2>&1 || { echo "$bin failed"; rc=1; }
    echo "== bench $bin [$filter]: $(( $(date +%s) - start )) s"
  else
    bin=$item filter='*'
    [[ $item == *:* ]] && bin=${item%%:*} filter=${item#*:}
    log="$OUT/$(basename "$bin").log"
    timeout "${TEST_TIMEOUT:-300}" "$build/$bin" --gtest_filter="$filter" --gtest_brief=1 >"$log" 2>&1
    r=$?
    (( r == 0 )) || rc=1
    echo "== $bin [$filter]: exit $r, $(grep -E '^\[  PASSED|^\[  FAILED|^\[  SKIPPED' "$log" | head -n 3 | tr '\n' ' ') $(( $(date +%s) - start )) s"
    (( r == 0 )) || grep -E '^\[  FAILED|Failure|error' "$log" | head -n 12
  fi
done
exit $rc
