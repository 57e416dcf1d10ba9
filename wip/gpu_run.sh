#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The GPU run the wip/ series need, in one device call on a tree with them applied
# (git am --3way wip/<name>.mbox; README.md here says what each must show).
# From the repository root of the device's copy: bash wip/gpu_run.sh [build|tests|san|rows|all|ncu|workflow|gputests|land|train|mintime|buildtime|profile1x1|ab|abfresh|abland|abpair|abpair2|tmaprobe|ncufp8|ncufp8mem|profilesrc|tmac128]
# (mintime, after workflow: bench_conv's preset rows at KF_BENCH_MIN_TIME 0.1 and 0.05, each timed, JSON kept)
# (workflow: the bench workflow from scratch, timed, then the rest built, ~505 s on 2026-12-05;
#  land: a fresh machine's one call for a change on main: everything built, the CPU conv2d tests, ctest -L gpu;
#  train: every layer's training step in every mode through torch, conv_rows.conv_train_rows)
# (ncu after rows: it profiles step 6's and step 7's kernels through the package rows installed)
# Writes under $OUT/r and packs it as $OUT/res.tgz (the device returns at most 8 files).
# A warm machine keeps what an earlier call changed in its copy of the tree (patches applied
# there stay applied, and ninja may not rebuild what the next copy brings back; the copy's .git
# need not match this checkout's HEAD, so `git checkout` there is no reset; 2026-12-05): a call
# that patches the tree undoes its patches before it ends (`ab` does).
# Timings on the H200 (2026-12-04): build of the conv2d tests ~90 s, test_conv2d_backward_gpu
# ~5 s, the sanitizers ~60 s, the Python package ~85 s and the rows ~60 s.
set -uo pipefail
if [[ $# -gt 1 ]]; then  # several modes: one after another, in the order given
  for mode in "$@"; do bash "${BASH_SOURCE[0]}" "$mode"; done
  exit 0
fi
export CMAKE_GENERATOR=Ninja
OUT=${OUT:-$PWD/out}
R=$OUT/r
mkdir -p "$R"
B=build-bench/tests/conv2d
what=${1:-all}
say() { echo "$*" | tee -a "$R/summary.txt"; }
# The files a call patched and put back: touched now, so that ninja rebuilds what was built from
# the patched text (the next call's copy of the tree brings their old times back; 2026-12-05).
if [[ -f build-bench/.kf_touch ]]; then
  sort -u build-bench/.kf_touch | xargs -r touch
  rm -f build-bench/.kf_touch
fi
# The 16-bit dw and step rows of the C256 and 1x1 layers (or KF_ROWS, a Google Benchmark filter), paired
# with cuDNN: LABEL -> $R/rows_LABEL.json, a line a row in the summary.
ROWS_DEFAULT='conv2d_backward/(fp16|bf16)/(filter|step)/n32_c256_(56x56_k64_1x1|14x14_k256_3x3_p1)'
rows_of() {  # LABEL (KF_BENCH: the benchmark binary under build-bench/benchmarks, default conv/bench_conv)
  BENCHMARK_FILTER="${KF_ROWS:-$ROWS_DEFAULT}" timeout 150 "build-bench/benchmarks/${KF_BENCH:-conv/bench_conv}" \
    --benchmark_out="$R/rows_$1.json" --benchmark_out_format=json >"$R/rows_$1.log" 2>&1
  say "rows $1 rc $?"
  python3 -c "
import json, sys
for b in json.load(open(sys.argv[1]))['benchmarks']:
    extra = ' '.join('%s %.4g' % (k, v) for k, v in sorted(b.items())
                     if isinstance(v, float) and ('frac_c' in k or '_over_' in k or 'error' in k))
    print(b['name'].split('/iterations')[0].split('/min_time')[0], 'ours %.1f us' % (b.get('gpu_s', 0) * 1e6),
          'base %.1f us' % (b.get('baseline_s', 0) * 1e6), extra)" "$R/rows_$1.json" >>"$R/summary.txt"
}
san() {  # TOOL FILTER (of KF_SAN_BIN, a test binary under build-bench/tests, default test_conv2d_backward_gpu)
  timeout 150 compute-sanitizer --tool "$1" --error-exitcode 99 \
    "$(find build-bench/tests -name "${KF_SAN_BIN:-test_conv2d_backward_gpu}" -type f | head -1)" --gtest_filter="$2" \
    --gtest_brief=1 >"$R/san_$1_$RANDOM.log" 2>&1
  say "san $1 [$2] rc $?"
}
ncu_kernels() {  # ours|cudnn: sets k and base, ncu's kernel filter for our kernels or cuDNN's. Ours by namespace
  # (a name filter like conv2d_ also catches cuDNN's engine search, which runs first; kf:: alone also caught
  # bench_conv's comparison kernels, kf::bench::compare_kernel: 2026-12-05)
  k='regex:kf::detail::' base=demangled
  [[ $1 == cudnn ]] && k='regex:nvjet|xmma|cutlass|splitK|^Kernel' base=function
}
undo_patch() {  # NAME: wip/NAME.mbox taken back out, and what it touched marked for the next call's touch
  patch -R -p1 -s <"wip/$1.mbox" || say "patch -R $1 failed"
  sed -n 's#^+++ b/##p' "wip/$1.mbox" >>build-bench/.kf_touch
}
ab_tests() {  # LABEL: each of $AB_TESTS ("binary" or "binary:gtest filter"), found under build-bench/tests
  local t bin gfilter
  for t in $AB_TESTS; do
    bin=${t%%:*} gfilter='*'
    [[ $t == *:* ]] && gfilter=${t#*:}
    timeout 150 "$(find build-bench/tests -name "$bin" -type f | head -1)" --gtest_filter="$gfilter" --gtest_brief=1 \
      >"$R/${bin}_$1.log" 2>&1
    say "$bin [$gfilter] ($1) rc $? $(grep -E 'PASSED|FAILED' "$R/${bin}_$1.log" | tail -3 | tr '\n' ' ')"
    grep -E "^\[  FAILED|Failure" "$R/${bin}_$1.log" | head -20 >>"$R/summary.txt"
  done
}
if [[ $what == build || $what == all ]]; then
  t0=$(date +%s)
  { cmake --preset bench >"$R/configure.log" 2>&1 &&
    cmake --build --preset bench -j 16 --target test_conv2d test_conv2d_backward_gpu >"$R/build.log" 2>&1; }
  say "build rc $? $(($(date +%s) - t0)) s"
fi
if [[ $what == tests || $what == all ]]; then
  "$B/test_conv2d" --gtest_brief=1 >"$R/cpu.log" 2>&1
  say "test_conv2d rc $? $(tail -1 "$R/cpu.log")"
  timeout 300 "$B/test_conv2d_backward_gpu" --gtest_brief=1 >"$R/bwd.log" 2>&1
  say "test_conv2d_backward_gpu rc $? $(grep -E 'PASSED|FAILED' "$R/bwd.log" | tail -2 | tr '\n' ' ')"
fi
if [[ $what == san || $what == all ]]; then
  for tool in memcheck racecheck synccheck; do san $tool '*Filter*f32_nchw_exact_best*'; done
  # gradient step 7: the float NCHW best dx cases at stride 2 and 3
  for tool in memcheck racecheck synccheck; do san $tool '*Data*f32_nchw*best*'; done
fi
if [[ $what == rows || $what == all ]]; then
  site=/tmp/kf-site
  CMAKE_BUILD_PARALLEL_LEVEL=16 python3 -m pip install --upgrade --no-build-isolation --no-deps --no-index --target $site \
    -C cmake.define.CMAKE_CUDA_ARCHITECTURES=90 -C build-dir=$site.build . >"$R/pip.log" 2>&1
  say "pip rc $?"
  # dw of exact fp32 NCHW through torch: best (steps 5 / 6) against implicit_gemm (step 2) and
  # cuDNN, paired; best's kernels timed by torch.profiler (us a call)
  (cd benchmarks/python && PYTHONPATH=$site:. timeout 240 python3 - >"$R/rows.txt" 2>&1 <<'PY'
import json, os, torch, conv_rows
import kernelforge as kf
from gpu_timing import gpu_ms_paired
from torch.profiler import profile, ProfilerActivity
torch.backends.cudnn.benchmark, torch.backends.cudnn.allow_tf32 = True, False
bwd = torch.ops.aten.convolution_backward
out = []
for name, n, c, h, w, k, r, s, stride, pad in conv_rows.CONV_LAYERS:
    x, wt = torch.randn(n, c, h, w, device="cuda"), torch.randn(k, c, r, s, device="cuda")
    p, q = (h + 2 * pad - r) // stride + 1, (w + 2 * pad - s) // stride + 1
    dy, dw = torch.randn(n, k, p, q, device="cuda"), torch.empty_like(wt)
    theirs = lambda: bwd(dy, x, wt, None, [stride] * 2, [pad] * 2, [1, 1], False, [0, 0], 1, [False, True, False])
    row = {"name": name}
    for v in ("best", "implicit_gemm"):
        ours = lambda: kf.conv2d_backward_filter(x, dy, wt.shape, stride=stride, padding=pad, out=dw, variant=v)
        a, b = gpu_ms_paired(ours, theirs)
        got, want = ours()[0], theirs()[1]
        row.update({f"{v}_ms": a, f"torch_ms_{v}": b, f"{v}_over_torch": b / a,
                    f"{v}_diff": float((got - want).abs().max() / want.abs().max())})
        if v == "best":
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(10):
                    ours()
                torch.cuda.synchronize()
            ks = {}
            for e in prof.events():
                if e.device_type.name == "CUDA":
                    ks.setdefault(e.name[:60], []).append(e.device_time)
            row["best_kernels_us"] = {kk: sum(vv) / 10 for kk, vv in ks.items()}
    out.append(row)
    print(name, " ".join(f"{kk}={vv:.4g}" if isinstance(vv, float) else f"{kk}={vv}"
                         for kk, vv in row.items() if kk != "name"), flush=True)
# dx of the stem (gradient step 7 under best, step 2's dcol + col2im under implicit_gemm) against cuDNN
name, n, c, h, w, k, r, s, stride, pad = [l for l in conv_rows.CONV_LAYERS if l[0].startswith("N16_C3")][0]
x_shape, wt = (n, c, h, w), torch.randn(k, c, r, s, device="cuda")
p, q = (h + 2 * pad - r) // stride + 1, (w + 2 * pad - s) // stride + 1
dy, dx = torch.randn(n, k, p, q, device="cuda"), torch.empty(x_shape, device="cuda")
theirs = lambda: bwd(dy, dx, wt, None, [stride] * 2, [pad] * 2, [1, 1], False, [0, 0], 1, [True, False, False])
row = {"name": name + "_dx"}
for v in ("best", "implicit_gemm"):
    ours = lambda: kf.conv2d_backward_data(dy, wt, x_shape, stride=stride, padding=pad, out=dx, variant=v)
    a, b = gpu_ms_paired(ours, theirs)
    got, want = ours(), theirs()[0]
    row.update({f"{v}_ms": a, f"torch_ms_{v}": b, f"{v}_over_torch": b / a,
                f"{v}_diff": float((got - want).abs().max() / want.abs().max())})
out.append(row)
print(row["name"], " ".join(f"{kk}={vv:.4g}" for kk, vv in row.items() if kk != "name"), flush=True)
json.dump(out, open(os.environ["OUT"] + "/r/wgrad_fp32.json", "w"), indent=1)
PY
  )
  say "rows rc $?"
  cat "$R/rows.txt" >>"$R/summary.txt"
fi
case $what in  # after rows for train (the package in /tmp/kf-site); workflow on a fresh tree
workflow)
  nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv >"$R/smi.txt"
  rm -rf build-bench
  t0=$(date +%s)
  cmake --workflow --preset bench >"$R/workflow.log" 2>&1
  say "bench workflow rc $? $(($(date +%s) - t0)) s"
  grep -E "^\[[0-9]+/[0-9]+\]" "$R/workflow.log" | tail -1 >>"$R/summary.txt"
  grep -E "Test +#|tests passed|Total Test" "$R/workflow.log" >>"$R/summary.txt"
  mkdir -p "$R/results" && cp build-bench/results/*.json "$R/results/" 2>/dev/null
  t0=$(date +%s)
  cmake --build --preset bench -j 16 >"$R/build_tests.log" 2>&1
  say "build the rest rc $? $(($(date +%s) - t0)) s"
  ;;
train)  # every layer's training step, every mode (conv_rows.conv_train_rows), package in /tmp/kf-site
  (cd benchmarks/python && PYTHONPATH=/tmp/kf-site:. timeout 280 python3 - >"$R/train.txt" 2>&1 <<'PY'
import json, os, conv_rows
rows = conv_rows.conv_train_rows()
for r in rows:
    if "error" in r:
        print(r["name"], "error", r["error"]); continue
    print(f"{r['name']:<58} step {r['kf_over_torch']:.3f} fwd {r['forward_kf_over_torch']:.3f} "
          f"dgrad {r['dgrad_kf_over_torch']:.3f} wgrad {r['wgrad_kf_over_torch']:.3f}", flush=True)
json.dump(rows, open(os.environ["OUT"] + "/r/train.json", "w"), indent=1)
PY
  )
  say "train rc $?"
  cat "$R/train.txt" >>"$R/summary.txt"
  ;;
esac
if [[ $what == land ]]; then  # a fresh machine's one call for a change landed on main: everything built, the CPU conv2d
  # tests, the whole GPU suite, the sanitizers on $KF_SAN (a gtest filter of test_conv2d_backward_gpu), the 16-bit C256 and 1x1 rows
  t0=$(date +%s)
  { cmake --preset bench >"$R/configure.log" 2>&1 && cmake --build --preset bench -j 16 >"$R/build.log" 2>&1; }
  say "build everything rc $? $(($(date +%s) - t0)) s"
  "$B/test_conv2d" --gtest_brief=1 >"$R/cpu.log" 2>&1
  say "test_conv2d rc $? $(tail -1 "$R/cpu.log")"
  t0=$(date +%s)
  timeout 280 ctest --test-dir build-bench -L gpu -j 8 --timeout 270 >"$R/ctest_gpu.log" 2>&1
  say "ctest -L gpu rc $? $(($(date +%s) - t0)) s: $(grep -E 'tests passed|tests failed' "$R/ctest_gpu.log")"
  grep -E "Failed|\*\*\*|Not Run" "$R/ctest_gpu.log" >>"$R/summary.txt"
  rows_of land  # before the sanitizers: the rows are what a call cut short by its time limit must keep
  [[ -n ${KF_SAN:-} ]] && for tool in memcheck racecheck synccheck; do san $tool "$KF_SAN"; done
fi
if [[ $what == gputests ]]; then  # after workflow (build-bench, everything built): the whole GPU suite
  t0=$(date +%s)
  cmake --build --preset bench -j 16 >"$R/build_rest2.log" 2>&1
  say "build rc $? $(($(date +%s) - t0)) s"
  t0=$(date +%s)
  ctest --test-dir build-bench -L gpu -j 8 --timeout 300 >"$R/ctest_gpu.log" 2>&1
  say "ctest -L gpu rc $? $(($(date +%s) - t0)) s: $(grep -E 'tests passed|tests failed' "$R/ctest_gpu.log")"
  grep -E "Failed|\*\*\*|Not Run|Skipped" "$R/ctest_gpu.log" >>"$R/summary.txt"
fi
if [[ $what == mintime ]]; then  # after workflow (build-bench built): bench_conv at KF_MINTIMES (default 0.1 0.05) s a row
  filter=$(python3 -c "import json; p=json.load(open('CMakePresets.json')); print([t for t in p['testPresets'] if t['name']=='bench'][0]['environment']['BENCHMARK_FILTER'])")
  for mt in ${KF_MINTIMES:-0.1 0.05}; do
    t0=$(date +%s)
    BENCHMARK_FILTER="$filter" KF_BENCH_MIN_TIME=$mt timeout 400 build-bench/benchmarks/conv/bench_conv \
      --benchmark_out="$R/bench_conv_mt$mt.json" --benchmark_out_format=json >"$R/bench_conv_mt$mt.log" 2>&1
    say "bench_conv min_time $mt rc $? $(($(date +%s) - t0)) s"
  done
fi
if [[ $what == ncu ]]; then  # after rows (the package in /tmp/kf-site): step 6's and step 7's kernels profiled
  cat >/tmp/ncu_calls.py <<'PY'
import torch
import kernelforge as kf
torch.manual_seed(0)
x, dy = torch.randn(32, 128, 28, 28, device="cuda"), torch.randn(32, 128, 28, 28, device="cuda")
for _ in range(2):
    kf.conv2d_backward_filter(x, dy, (128, 128, 3, 3), padding=1)  # step 6 at C128
w, dy = torch.randn(64, 3, 7, 7, device="cuda"), torch.randn(16, 64, 112, 112, device="cuda")
for _ in range(2):
    kf.conv2d_backward_data(dy, w, (16, 3, 224, 224), stride=2, padding=3)  # the stem's dx
torch.cuda.synchronize()
PY
  PYTHONPATH=/tmp/kf-site timeout 240 ncu --clock-control none --launch-skip 0 --launch-count 12 \
    -k regex:'wgrad_winograd|dgrad_parity' --section SpeedOfLight --section WarpStateStats --section Occupancy \
    --section LaunchStats python3 /tmp/ncu_calls.py >"$R/ncu.txt" 2>&1
  say "ncu rc $? (r/ncu.txt)"
fi
if [[ $what == ab ]]; then  # wip/<name>.mbox for each name in $KF_AB, in turn, on what the tree has: rows, tests, sanitizers
  # (KF_AB="wgrad-slice-cluster:*Filter*split_* other:*Filter*x_*": name:sanitizer filter (of KF_SAN_BIN; - for none);
  #  the rows: rows_of; the GPU tests: KF_AB_TESTS, default test_conv2d_backward_gpu; build-bench kept)
  AB_TESTS=${KF_AB_TESTS:-test_conv2d_backward_gpu}  # each "binary" or "binary:gtest filter", as abfresh's
  AB_BINS=$(for t in $AB_TESTS; do echo "${t%%:*}"; done)
  [[ -f build-bench/build.ninja ]] || cmake --preset bench >"$R/configure.log" 2>&1
  t0=$(date +%s)
  cmake --build --preset bench -j 16 --target "$(basename "${KF_BENCH:-bench_conv}")" $AB_BINS >"$R/build_base.log" 2>&1
  say "build base rc $? $(($(date +%s) - t0)) s"
  rows_of base
  applied=""
  for item in ${KF_AB:-}; do
    name=${item%%:*} filter=${item#*:}
    patch -p1 -s <"wip/$name.mbox" || say "patch $name failed"
    t0=$(date +%s)
    cmake --build --preset bench -j 16 --target "$(basename "${KF_BENCH:-bench_conv}")" test_conv2d $AB_BINS >"$R/build_$name.log" 2>&1
    say "build $name rc $? $(($(date +%s) - t0)) s"
    "$B/test_conv2d" --gtest_brief=1 >"$R/cpu_$name.log" 2>&1
    say "test_conv2d ($name) rc $? $(tail -1 "$R/cpu_$name.log")"
    grep -E "^\[  FAILED|Failure" "$R/cpu_$name.log" | head -10 >>"$R/summary.txt"
    rows_of "$name"  # before the tests and sanitizers: what a call cut short must keep
    ab_tests "$name"
    [[ $filter != - ]] && for tool in memcheck racecheck synccheck; do san $tool "$filter"; done
    applied="$name $applied"
  done
  for name in ${applied:-}; do undo_patch "$name"; done  # the copy as it came: a warm machine keeps it
fi
if [[ $what == abland ]]; then  # a fresh machine: main's rows (KF_BENCH, KF_ROWS), then every patch of KF_AB ("name:sanitizer
  # filter of KF_SAN_BIN" ...) applied, everything built, ctest -L gpu, the rows again, the sanitizers; the patches undone
  t0=$(date +%s)
  { cmake --preset bench >"$R/configure.log" 2>&1 &&
    cmake --build --preset bench -j 16 --target "$(basename "${KF_BENCH:-bench_conv}")" >"$R/build_base.log" 2>&1; }
  say "build base rc $? $(($(date +%s) - t0)) s"
  rows_of base
  for item in ${KF_AB:-}; do patch -p1 -s <"wip/${item%%:*}.mbox" || say "patch ${item%%:*} failed"; done
  t0=$(date +%s)
  cmake --build --preset bench -j 16 >"$R/build.log" 2>&1
  say "build everything (patched) rc $? $(($(date +%s) - t0)) s"
  grep -E "error" "$R/build.log" | head -5 >>"$R/summary.txt"
  rows_of patched
  t0=$(date +%s)
  timeout 280 ctest --test-dir build-bench -L gpu -j 8 --timeout 270 >"$R/ctest_gpu.log" 2>&1
  say "ctest -L gpu (patched) rc $? $(($(date +%s) - t0)) s: $(grep -E 'tests passed|tests failed' "$R/ctest_gpu.log")"
  grep -E "Failed|\*\*\*|Not Run" "$R/ctest_gpu.log" >>"$R/summary.txt"
  for item in ${KF_AB:-}; do
    filter=${item#*:}
    [[ $filter != - ]] && for tool in memcheck racecheck synccheck; do san $tool "$filter"; done
  done
  rows_of patched2
  for item in ${KF_AB:-}; do undo_patch "${item%%:*}"; done
fi
if [[ $what == abfresh ]]; then  # one patch (KF_AB="name:sanitizer filter") on a fresh machine short of device time:
  # patched first (build, test_conv2d_backward_gpu, sanitizers, the rows), then main's rows; build-bench kept
  name=${KF_AB%%:*} filter=${KF_AB#*:}
  KF_ROWS=${KF_ROWS:-'conv2d_backward/(fp16|bf16)/(filter|step)/n32_c256_14x14_k256_3x3_p1'}  # the C256 rows only
  # KF_AB_TESTS: the GPU test binaries to build and run patched (default test_conv2d_backward_gpu), each
  # "binary" or "binary:gtest filter" (a patch to a shared kernel: the other families' binaries, filtered)
  AB_TESTS=${KF_AB_TESTS:-test_conv2d_backward_gpu}
  patch -p1 -s <"wip/$name.mbox" || say "patch $name failed"
  t0=$(date +%s)
  { cmake --preset bench >"$R/configure.log" 2>&1 &&
    cmake --build --preset bench -j 16 --target "$(basename "${KF_BENCH:-bench_conv}")" $(for t in $AB_TESTS; do echo "${t%%:*}"; done) \
      >"$R/build_$name.log" 2>&1; }
  say "build $name rc $? $(($(date +%s) - t0)) s"
  grep -E "error" "$R/build_$name.log" | head -5 >>"$R/summary.txt"
  rows_of "$name"  # before the tests: what a call cut short must keep
  ab_tests "$name"
  for tool in memcheck racecheck synccheck; do san $tool "$filter"; done
  patch -R -p1 -s <"wip/$name.mbox" || say "patch -R $name failed"
  # What the patch touched, rebuilt: the copy's old timestamps would not make ninja do it (2026-12-05)
  sed -n 's#^+++ b/##p' "wip/$name.mbox" | while read -r f; do [[ -e $f ]] && touch "$f"; done
  t0=$(date +%s)
  cmake --build --preset bench -j 16 --target "$(basename "${KF_BENCH:-bench_conv}")" >"$R/build_main.log" 2>&1
  say "build main rc $? $(($(date +%s) - t0)) s"
  rows_of main  # main rebuilt after the patch went back: nothing for the next call to touch
fi
if [[ $what == abpair ]]; then  # patches (KF_AB="name:sanitizer filter of KF_SAN_BIN ..."; - for none): main in build-bench and
  # each patched copy in /tmp/kf-ab-<name>/build-bench, built at once, then KF_BENCH's KF_ROWS alternated main, each patch,
  # main, ... (KF_PAIRS rounds, default 2): a change's rows against main's where one run of each cannot tell a change from
  # the machine. Then per patch: KF_AB_TESTS (each "binary" or "binary:gtest filter", as ab's) and the sanitizers; and
  # with KF_NCU_ROW (a benchmark filter), each tree's kernels of that row under ncu (KF_NCU_K: the kernel regex)
  # (an item may name its own sanitizer binary: "name@binary:filter", else KF_SAN_BIN's)
  names=""
  for item in ${KF_AB:-}; do names="$names $(item_name=${item%%:*}; echo "${item_name%%@*}")"; done
  AB_TESTS=${KF_AB_TESTS:-}
  target=$(basename "${KF_BENCH:-bench_conv}")
  jobs=$((16 / (1 + $(echo $names | wc -w))))
  t0=$(date +%s)
  { cmake --preset bench >"$R/configure.log" 2>&1 &&
    cmake --build --preset bench -j $jobs --target "$target" >"$R/build_main.log" 2>&1; } &
  for name in $names; do
    rm -rf "/tmp/kf-ab-$name" && mkdir -p "/tmp/kf-ab-$name" && tar --exclude=./build-bench -cf - . | tar -xf - -C "/tmp/kf-ab-$name"
    (cd "/tmp/kf-ab-$name" && patch -p1 -s <"wip/$name.mbox") || say "patch $name failed"
    { (cd "/tmp/kf-ab-$name" && cmake --preset bench >"$R/configure_$name.log" 2>&1 &&
       cmake --build --preset bench -j $jobs --target "$target" $([[ $name == *-probe ]] || for t in $AB_TESTS; do echo "${t%%:*}"; done) \
         >"$R/build_$name.log" 2>&1); } &
  done
  wait
  say "builds $(($(date +%s) - t0)) s: $(ls build-bench/benchmarks/${KF_BENCH:-conv/bench_conv} /tmp/kf-ab-*/build-bench/benchmarks/${KF_BENCH:-conv/bench_conv} 2>&1 | wc -l) binaries"
  for round in $(seq "${KF_PAIRS:-2}"); do
    rows_of "main$round"
    for name in $names; do (cd "/tmp/kf-ab-$name" && rows_of "$name$round"); done
  done
  for item in ${KF_AB:-}; do
    name=${item%%:*} filter=${item#*:}
    [[ $item == *:* ]] || filter=-
    san_bin=${KF_SAN_BIN:-}
    [[ $name == *@* ]] && san_bin=${name#*@}
    name=${name%%@*}
    (
      [[ -n $san_bin ]] && export KF_SAN_BIN=$san_bin
      cd "/tmp/kf-ab-$name" || exit
      [[ -n $AB_TESTS && $name != *-probe ]] && ab_tests "$name"  # a probe's output is wrong by design
      [[ $filter != - ]] && for tool in memcheck racecheck synccheck; do san $tool "$filter"; done
    )
  done
  if [[ -n ${KF_NCU_ROW:-} ]]; then
    for tree in . $(for name in $names; do echo "/tmp/kf-ab-$name"; done); do
      tag=$(basename "$tree"); [[ $tree == . ]] && tag=main
      KF_BENCH_MIN_TIME=0.001 timeout 60 ncu --clock-control none -k "regex:${KF_NCU_K:-implicit_gemm_wgmma_fp32_emulated}" \
        --launch-count 2 --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
        --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum \
        "$tree/build-bench/benchmarks/${KF_BENCH:-conv/bench_conv}" --benchmark_filter="$KF_NCU_ROW" >"$R/ncu_$tag.txt" 2>&1
      # DRAM reads past the inputs' bytes: partial-sector writes read back (NCHW's 16-byte runs of y)
      say "ncu $tag rc $?: $(grep -E 'Duration|Issue Slots Busy|No Eligible|dram__bytes_(read|write).sum|lts__t_bytes.sum' "$R/ncu_$tag.txt" | awk '{print $1, $(NF-1), $(NF)}' | tr '\n' ' ')"
    done
  fi
fi
if [[ $what == profilesrc ]]; then  # after a build of bench_conv: per-SASS-instruction stall samples (ncu's source page,
  # CSV) of one launch of ours and one of cuDNN's on KF_PROFILE_ROWS' first row (default: the TF32 NHWC C128 layer)
  b=build-bench/benchmarks/conv/bench_conv
  row=${KF_PROFILE_ROWS:-conv2d_nhwc/tf32/best/n32_c128_28x28_k128_3x3_p1}
  row=${row%% *}
  for who in ours cudnn; do
    ncu_kernels "$who"
    KF_BENCH_MIN_TIME=0.001 timeout 150 ncu --clock-control none --kernel-name-base $base -k "$k" --launch-skip 2 --launch-count 1 \
      --section SourceCounters --section WarpStateStats --import-source no -f -o "/tmp/src_$who" \
      "$b" --benchmark_filter="$row" >"$R/ncusrc_$who.log" 2>&1
    say "ncu source $who rc $?"
    ncu --import "/tmp/src_$who.ncu-rep" --page source --print-source sass --csv >"$R/ncusrc_$who.csv" 2>&1
    say "ncu source page $who rc $? ($(wc -l <"$R/ncusrc_$who.csv") lines)"
  done
fi
if [[ $what == profile1x1 ]]; then  # after a build of bench_conv: the 1x1 layer's 16-bit forward and dw, and the C256 dw, ours and cuDNN's, under ncu
  # (the layers below cuDNN in the training step). Ours and cuDNN's kernels are captured apart (-k): without a filter the
  # first launches are cuDNN's engine search and ours are never reached (2026-12-05, sixth session).
  b=build-bench/benchmarks/conv/bench_conv
  # KF_PROFILE_ROWS (space-separated row filters) replaces the three rows, e.g. the TF32 NHWC C128 layer:
  # KF_PROFILE_ROWS='conv2d_nhwc/tf32/best/n32_c128_28x28_k128_3x3_p1' bash wip/gpu_run.sh profile1x1
  for row in ${KF_PROFILE_ROWS:-'conv2d_nhwc/fp16/best/n32_c256_56x56_k64_1x1' 'conv2d_backward/fp16/filter/n32_c256_56x56_k64_1x1' \
    'conv2d_backward/fp16/filter/n32_c256_14x14_k256_3x3_p1'}; do
    tag=$(echo "$row" | tr '/' '_')
    for who in ours cudnn; do
      ncu_kernels "$who"
      KF_BENCH_MIN_TIME=0.001 timeout 120 ncu --clock-control none --kernel-name-base $base -k "$k" --launch-skip 2 --launch-count 4 \
        --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
        --section Occupancy --section LaunchStats --section ComputeWorkloadAnalysis --section SourceCounters \
        --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,lts__t_bytes.sum \
        "$b" --benchmark_filter="$row" >"$R/ncu_${tag}_$who.txt" 2>&1
      say "ncu $row $who rc $? ($(grep -c 'Section: GPU Speed Of Light' "$R/ncu_${tag}_$who.txt") kernels)"
    done
  done
fi
if [[ $what == ncufp8 ]]; then  # after a build of bench_scaled_matmul (main's, and /tmp/kf-ab-*'s if an abpair built them):
  # the FP8 kernel at 4096^3 per-tensor with source-level stall sampling (where the staged store's ~2,000 cycles a
  # tile go), one warm launch (the spot check and warm-ups skipped) per tree; the source page kept as CSV
  for tree in . /tmp/kf-ab-*; do
    [[ -x $tree/build-bench/benchmarks/matmul/bench_scaled_matmul ]] || continue
    tag=$(basename "$tree"); [[ $tree == . ]] && tag=main
    KF_BENCH_MIN_TIME=0.001 timeout 150 ncu --clock-control none -k 'regex:scaled_wgmma' --launch-skip 3 --launch-count 1 \
      --set full --import-source yes -o "$R/ncufp8_$tag" \
      "$tree/build-bench/benchmarks/matmul/bench_scaled_matmul" \
      --benchmark_filter='matmul/fp8_per_tensor/best_vs_cublaslt/4096x4096x4096' >"$R/ncufp8_$tag.log" 2>&1
    say "ncufp8 $tag rc $?"
    ncu --import "$R/ncufp8_$tag.ncu-rep" --page source --csv --print-source sass >"$R/ncufp8_$tag.csv" 2>/dev/null
    rm -f "$R/ncufp8_$tag.ncu-rep"  # (tens of MB: the CSV of the source page is what comes back)
    python3 -c "
import csv, sys
rows = list(csv.reader(sys.stdin))
at = next((i for i, r in enumerate(rows) if 'Source' in r), 0)  # (the first line names the kernel)
head, rows = rows[at], rows[at:]
stall = [i for i, h in enumerate(head) if 'Warp Stall Sampling (All' in h]
src = head.index('Source') if 'Source' in head else 1
if not stall: sys.exit(0)
total = sum(float(r[stall[0]] or 0) for r in rows[1:] if len(r) > stall[0] and r[stall[0]].replace('.', '').isdigit())
top = sorted((float(r[stall[0]]), r[src]) for r in rows[1:] if len(r) > stall[0] and r[stall[0]].replace('.', '').isdigit())[-25:]
for v, t in reversed(top): print('%5.1f%%  %s' % (100 * v / max(total, 1), t[:110]))" <"$R/ncufp8_$tag.csv" >>"$R/summary.txt"
  done
fi
if [[ $what == abpair2 ]]; then  # after an abpair: a second binary (KF_BENCH2, e.g. matmul/bench_matmul) built in main and in
  # each /tmp/kf-ab-* tree, its KF_ROWS2 alternated main, each patch, main, ... (KF_PAIRS rounds, default 2)
  t0=$(date +%s)
  for tree in . /tmp/kf-ab-*; do
    [[ -d $tree/build-bench ]] || continue
    (cd "$tree" && cmake --build --preset bench -j 16 --target "$(basename "$KF_BENCH2")" >>"$R/build2.log" 2>&1) ||
      say "build2 $tree failed"
  done
  say "abpair2 builds $(($(date +%s) - t0)) s"
  for round in $(seq "${KF_PAIRS:-2}"); do
    for tree in . /tmp/kf-ab-*; do
      [[ -x $tree/build-bench/benchmarks/$KF_BENCH2 ]] || continue
      tag=$(basename "$tree"); [[ $tree == . ]] && tag=main
      (cd "$tree" && KF_BENCH=$KF_BENCH2 KF_ROWS=$KF_ROWS2 rows_of "${tag#kf-ab-}_2nd$round")
    done
  done
fi
if [[ $what == ncufp8mem ]]; then  # after an abpair (fp8-store-probe and the store patches): where the 144 tile's store costs L2 traffic
  # (the 14th session's lts__t_bytes: 830 MB main, 736 MB without the store, for 32 MB of D). At 4096^3 per-tensor, ours
  # (main and the probe) and cuBLASLt's kernel, one warm launch each: L2 sectors by operation, DRAM bytes, SM cycles.
  m=gpu__time_duration.sum,sm__cycles_active.avg,sm__cycles_active.max,lts__t_bytes.sum,lts__t_sectors_op_read.sum
  m=$m,lts__t_sectors_op_write.sum,lts__t_sectors_op_red.sum,lts__t_sectors_op_atom.sum,dram__bytes_read.sum
  m=$m,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum
  m=$m,lts__t_sector_op_read_hit_rate.pct,lts__t_sector_op_write_hit_rate.pct,l1tex__m_xbar2l1tex_read_bytes.sum
  m=$m,l1tex__m_l1tex2xbar_write_bytes.sum,smsp__inst_executed.sum
  for tree in . /tmp/kf-ab-*; do
    [[ -x $tree/build-bench/benchmarks/matmul/bench_scaled_matmul ]] || continue
    tag=$(basename "$tree"); [[ $tree == . ]] && tag=main
    KF_BENCH_MIN_TIME=0.001 timeout 120 ncu --clock-control none -k 'regex:scaled_wgmma|nvjet' --launch-skip 4 \
      --launch-count 4 --metrics "$m" "$tree/build-bench/benchmarks/matmul/bench_scaled_matmul" \
      --benchmark_filter='matmul/fp8_per_tensor/best_vs_cublaslt/4096x4096x4096' >"$R/ncufp8mem_$tag.txt" 2>&1
    say "ncufp8mem $tag rc $?"
    grep -E '^  [a-zA-Z_]+|lts__|dram__|gpu__time|sm__cycles|l1tex__|smsp__inst' "$R/ncufp8mem_$tag.txt" | awk '{print $1, $NF}' \
      | sed 's/(CUtensorMap.*//' >>"$R/summary.txt"
  done
fi
if [[ $what == tmaprobe ]]; then  # wip/probes/tma_rows.cu: TMA boxes of step 3's geometries streamed into a ring, no math (~10 s)
  nvcc -std=c++17 -O3 -arch=sm_90a -Iinclude wip/probes/tma_rows.cu -o /tmp/tma_rows >"$R/tma_build.log" 2>&1 &&
    timeout 60 /tmp/tma_rows >"$R/tma_rows.txt" 2>&1
  say "tmaprobe rc $?"
  cat "$R/tma_rows.txt" >>"$R/summary.txt"
fi
if [[ $what == tmac128 ]]; then  # wip/probes/tma_c128.cu: the TF32 NHWC C128 layer's stages streamed into a ring, no math (~30 s)
  nvcc -std=c++17 -O3 -arch=sm_90a -Iinclude -lcuda wip/probes/tma_c128.cu -o /tmp/tma_c128 >"$R/tma_c128_build.log" 2>&1 &&
    timeout 60 /tmp/tma_c128 >"$R/tma_c128.txt" 2>&1
  say "tmac128 rc $?"
  cat "$R/tma_c128.txt" >>"$R/summary.txt"
fi
if [[ $what == buildtime ]]; then  # the bench build timed, its longest units (ninja log), then bench_conv as the preset runs it
  # (writes straight to $OUT: a call that runs out of time still returns what it wrote)
  t0=$(date +%s)
  cmake --preset bench >"$OUT/configure.log" 2>&1
  t1=$(date +%s)
  cmake --build --preset benchmarks -j 16 >"$OUT/build.log" 2>&1
  echo "configure $((t1 - t0)) s, build rc $? $(($(date +%s) - t1)) s" | tee -a "$OUT/summary.txt"
  awk 'NR>1 {printf "%7.1f %7.1f %s\n", ($2-$1)/1000, $1/1000, $4}' build-bench/.ninja_log | sort -rn | head -30 >>"$OUT/summary.txt"
  filter=$(python3 -c "import json; p=json.load(open('CMakePresets.json')); t=[t for t in p['testPresets'] if t['name']=='bench'][0]['environment']; print(t['BENCHMARK_FILTER'], t['KF_BENCH_MIN_TIME'])")
  t0=$(date +%s)
  BENCHMARK_FILTER="${filter% *}" KF_BENCH_MIN_TIME="${filter#* }" timeout 200 build-bench/benchmarks/conv/bench_conv \
    --benchmark_out="$OUT/bench_conv.json" --benchmark_out_format=json >"$OUT/bench_conv.log" 2>&1
  echo "bench_conv (bench preset) rc $? $(($(date +%s) - t0)) s" | tee -a "$OUT/summary.txt"
  exit 0
fi
tar czf "$OUT/res.tgz" -C "$OUT" r
