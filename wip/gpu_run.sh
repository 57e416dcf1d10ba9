#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The GPU run the wip/ series need, in one device call on a tree with them applied
# (git am --3way wip/<name>.mbox for each; README.md here says what each must show).
# From the repository root of the device's copy: bash wip/gpu_run.sh [build|tests|rows|san|all]
# Writes under $OUT/r and packs it as $OUT/res.tgz (the device returns at most 8 files).
# Timings on the H200 (2026-12-04): build 110 s, full ctest 200 s, rows ~120 s, sanitizers ~60 s.
set -uo pipefail
export CMAKE_GENERATOR=Ninja
OUT=${OUT:-$PWD/out}
R=$OUT/r
mkdir -p "$R"
B=build-bench/benchmarks
what=${1:-all}
say() { echo "$*" | tee -a "$R/summary.txt"; }
rb() {  # BIN FILTER NAME [ENV=...]
  timeout 200 "$B/$1" --benchmark_filter="$2" --benchmark_out="$R/$3.json" --benchmark_out_format=json \
    --benchmark_counters_tabular=true >"$R/$3.log" 2>&1
  say "$3 rc $?"
}
san() {  # TOOL BIN FILTER
  timeout 150 compute-sanitizer --tool "$1" --error-exitcode 99 "build-bench/$2" --gtest_filter="$3" --gtest_brief=1 \
    >"$R/san_$1_$(basename "$2")_$RANDOM.log" 2>&1
  say "san $1 $2 [$3] rc $?"
}
if [[ $what == build || $what == all ]]; then
  t0=$(date +%s)
  { cmake --preset bench >"$R/configure.log" 2>&1 && cmake --build --preset bench -j 16 >"$R/build.log" 2>&1; }
  say "build rc $? $(($(date +%s) - t0)) s"
fi
if [[ $what == tests || $what == all ]]; then
  timeout 400 ctest --test-dir build-bench -L gpu -j 8 --output-on-failure >"$R/ctest_gpu.log" 2>&1
  say "ctest rc $?; $(grep -E 'tests passed|tests failed' "$R/ctest_gpu.log")"
fi
if [[ $what == rows || $what == all ]]; then
  rb matmul/bench_scaled_matmul 'two_partials_vs_192|best_vs_cublaslt' scaled
fi
if [[ $what == san || $what == all ]]; then
  for tool in memcheck racecheck synccheck; do
    san $tool tests/matmul/test_scaled_matmul_gpu 'ScaledMatmul/*.TwoPartialsTiles:ScaledMatmulWgmma.TwoPartials*'
  done
fi
tar czf "$OUT/res.tgz" -C "$OUT" r
