#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Turns bench_matmul's JSON into the README progression table and a plot.

Usage:
  python3 benchmarks/plot_matmul.py RESULTS.json [--out matmul.png] [--shape 4096x4096x4096] [--fp8 FP8.json]

Prints (markdown):
  * the progression table at --shape: every step of the progression with its
    TFLOP/s, the speed-up over naive and the fraction of cuBLAS (same run);
  * every shape x every row (TFLOP/s, % of cuBLAS of the same precision);
  * the tuning rows (alternative warp_tiled configurations), when present;
  * the paired rows (best_vs_cublas: the library's pick and cuBLAS timed in
    turn, sample by sample), where the ratios to cuBLAS are read from;
  * with --fp8 bench_scaled_matmul.json: the FP8 pairs against cuBLASLt, per scaling mode.
Writes a PNG: TFLOP/s per variant (bars) at each shape, cuBLAS fp32 and TF32 as
reference markers. matplotlib is needed only for the PNG; without it the
tables are still printed and the script says what it skipped.
"""
import argparse
import json
import re
import sys

# The steps in the order a learner reads them (include/kernelforge/kernels/matmul/).
PROGRESSION = ["naive", "coalesced", "smem_tiled", "blocktile_1d", "blocktile_2d", "vectorized", "warp_tiled", "large_tile"]
PAIRED = "best_vs_cublas"  # ours and cuBLAS timed in turn (bench_matmul: time_gpu_paired)
MODES = "mcast_a_vs_b"  # the wgmma clusters sharing A against sharing B, timed in turn
FP8_PAIRED = "best_vs_cublaslt"  # bench_scaled_matmul: kf::scaled_matmul and cuBLASLt's FP8 matmul in turn
NAME = re.compile(r"^matmul/(?P<prec>fp32_emulated|fp32|tf32|fp16|bf16|fp8_per_tensor|fp8_rowwise|fp8_blockwise)/"
                  r"(?P<row>.+)/"
                  r"(?P<shape>\d+x\d+x\d+)(?:/.*)?$")


def load(path):
    """{(precision, row, shape): counters} from a Google Benchmark JSON file."""
    with open(path) as f:
        data = json.load(f)
    rows = {}
    for b in data.get("benchmarks", []):
        if b.get("run_type", "iteration") != "iteration" or b.get("error_occurred") or b.get("skipped"):
            continue
        m = NAME.match(b.get("run_name") or b["name"])
        if not m or "TFLOP/s" not in b:
            continue
        rows[(m["prec"], m["row"], m["shape"])] = b
    return data.get("context", {}), rows


def shape_key(s):
    m, n, k = (int(x) for x in s.split("x"))
    return (m * n * k, m, n, k)


def fmt(x, spec=".1f"):
    return "-" if x is None else format(x, spec)


def progression_table(rows, shape):
    cublas = rows.get(("fp32", "cublas", shape))
    naive = rows.get(("fp32", "naive", shape))
    out = [f"Progression at {shape} (fp32, TFLOP/s; ratios from the same run):", "",
           "| step | kernel | TFLOP/s | x over naive | % of cuBLAS |", "|---|---|---|---|---|"]
    for i, step in enumerate(PROGRESSION, 1):
        r = rows.get(("fp32", step, shape))
        t = r["TFLOP/s"] if r else None
        over = t / naive["TFLOP/s"] if r and naive else None
        frac = 100 * t / cublas["TFLOP/s"] if r and cublas else None
        out.append(f"| {i} | {step} | {fmt(t)} | {fmt(over)} | {fmt(frac)} |")
    # The tensor-core steps (include/kernelforge/kernels/matmul/09_... to 14_...), each against cuBLAS of its precision.
    for step, prec, row, label in (("9, 14", "tf32", "tensor_core_tf32", "tensor_core_tf32 (TF32; wgmma on sm_90)"),
                                   ("9", "tf32", "mma_sync", "mma.sync alone (TF32)"),
                                   ("10", "fp16", "tensor_core_f16", "tensor_core_f16 (fp16, mma.sync)"),
                                   ("11", "fp16", "wgmma_step11", "wgmma + TMA, one warpgroup (fp16)"),
                                   ("12", "fp16", "wgmma_step12", "warp-specialized (fp16)"),
                                   ("13", "fp16", "wgmma_step13", "clusters sharing B (fp16)"),
                                   ("14", "fp16", "wgmma_f16", "wgmma_f16, persistent (fp16)"),
                                   ("14", "bf16", "wgmma_f16", "wgmma_f16, persistent (bf16)")):
        r = rows.get((prec, row, shape))
        ref = rows.get((prec, "cublas", shape))
        if r:
            frac = 100 * r["TFLOP/s"] / ref["TFLOP/s"] if ref else None
            over = r["TFLOP/s"] / naive["TFLOP/s"] if naive else None
            out.append(f"| {step} | {label} | {fmt(r['TFLOP/s'])} | {fmt(over)} | {fmt(frac)} "
                       f"(of cuBLAS {'TF32' if prec == 'tf32' else prec}) |")
    if cublas:
        out.append(f"| | cuBLAS fp32 | {fmt(cublas['TFLOP/s'])} | "
                   f"{fmt(cublas['TFLOP/s'] / naive['TFLOP/s'] if naive else None)} | 100 |")
    for prec, label in (("tf32", "TF32"), ("fp16", "fp16"), ("bf16", "bf16")):
        ref = rows.get((prec, "cublas", shape))
        if ref:
            out.append(f"| | cuBLAS {label} | {fmt(ref['TFLOP/s'])} | | 100 ({label}) |")
    return "\n".join(out)


def all_shapes_table(rows):
    shapes = sorted({s for _, _, s in rows}, key=shape_key)
    names = [(p, r) for p, r in dict.fromkeys((p, r) for p, r, _ in rows)
             if not r.startswith("tuning/") and r not in (PAIRED, MODES)]
    order = {n: i for i, n in enumerate(PROGRESSION + ["best", "cublas", "tensor_core_tf32", "mma_sync",
                                                       "tensor_core_f16", "wgmma_step11", "wgmma_step12",
                                                       "wgmma_step13", "wgmma_f16"])}
    precisions = {"fp32": 0, "tf32": 1, "fp16": 2, "bf16": 3}
    names.sort(key=lambda pr: (precisions.get(pr[0], 9), order.get(pr[1], 99)))
    out = ["TFLOP/s (% of cuBLAS of the same precision) at every shape:", "",
           "| row | " + " | ".join(shapes) + " |", "|---|" + "---|" * len(shapes)]
    for prec, row in names:
        cells = []
        for s in shapes:
            r = rows.get((prec, row, s))
            ref = rows.get((prec, "cublas", s))
            if not r:
                cells.append("-")
            elif ref and row != "cublas":
                cells.append(f"{r['TFLOP/s']:.1f} ({100 * r['TFLOP/s'] / ref['TFLOP/s']:.0f}%)")
            else:
                cells.append(f"{r['TFLOP/s']:.1f}")
        out.append(f"| {prec} {row} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def pair_table(rows, row_name, intro, labels, cell):
    """A precision x shape table of one kind of pair row; labels: (precision, label) pairs."""
    shapes = sorted({s for _, r, s in rows if r == row_name}, key=shape_key)
    if not shapes:
        return ""
    out = [intro, "", "| precision | " + " | ".join(shapes) + " |", "|---|" + "---|" * len(shapes)]
    for prec, label in labels:
        cells = [cell(rows[(prec, row_name, s)]) if (prec, row_name, s) in rows else "-" for s in shapes]
        if any(c != "-" for c in cells):
            out.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def paired_table(rows):
    return pair_table(rows, PAIRED, "What the library runs by shape against cuBLAS of the same precision, the two "
                      "timed in turn sample by sample (ours / cuBLAS; TFLOP/s of each in brackets):",
                      (("fp32", "fp32 (best)"), ("tf32", "TF32 (tensor_core_tf32)"),
                       ("fp32_emulated", "fp32 emulated (math_mode::fp32_emulated; vs SGEMM)"),
                       ("fp16", "fp16 (best)"), ("bf16", "bf16 (best)")),
                      paired_cell)


def paired_cell(r):
    """ratio (ours / cuBLAS TFLOP/s), and each side's spot-check error where the row has it."""
    text = f"{r['frac_cublas']:.3f} ({r['TFLOP/s']:.1f} / {r['cublas_TFLOP/s']:.1f})"
    if "max_error" in r and "baseline_max_error" in r:
        text += f"<br>err {r['max_error']:.1e} / {r['baseline_max_error']:.1e}"
    return text


def fp8_table(rows):
    return pair_table(rows, FP8_PAIRED, "FP8 (e4m3 x e4m3, bf16 out; kf::scaled_matmul, best) against cuBLASLt's FP8 "
                      "matmul with the same scales and output, promotion on (no fast accumulation), the two timed in "
                      "turn (ours / cuBLASLt; TFLOP/s of each in brackets):",
                      (("fp8_per_tensor", "per-tensor scales"), ("fp8_rowwise", "row-wise scales"),
                       ("fp8_blockwise", "block-wise (1x128 A, 128x128 B)")),
                      lambda r: f"{r['frac_cublas']:.3f} ({r['TFLOP/s']:.0f} / {r['cublas_TFLOP/s']:.0f})"
                      if r.get("cublas_TFLOP/s") else f"- ({r['TFLOP/s']:.0f} / -)")


def modes_table(rows):
    return pair_table(rows, MODES, "The wgmma clusters sharing A against sharing B (wgmma/policy.hpp: wgmma_cluster_shares_a), "
                      "timed in turn: B's time / A's (above 1: sharing A is faster):",
                      (("tf32", "tf32"), ("fp16", "fp16"), ("bf16", "bf16")), lambda r: f"{r['a_over_b']:.3f}")


def tuning_table(rows):
    tuning = sorted({(r, s) for p, r, s in rows if r.startswith("tuning/")}, key=lambda x: (x[0], shape_key(x[1])))
    if not tuning:
        return ""
    out = ["warp_tiled tile configurations (include/kernelforge/kernels/matmul/tuning.hpp; the library's own is the warp_tiled row):", "",
           "| configuration | shape | TFLOP/s | % of cuBLAS |", "|---|---|---|---|"]
    for r, s in tuning:
        b = rows[("fp32", r, s)]
        ref = rows.get(("fp32", "cublas", s))
        out.append(f"| {r[len('tuning/'):]} | {s} | {b['TFLOP/s']:.1f} | "
                   f"{fmt(100 * b['TFLOP/s'] / ref['TFLOP/s'] if ref else None)} |")
    for s in sorted({s for _, s in tuning}, key=shape_key):
        lib = rows.get(("fp32", "warp_tiled", s))
        ref = rows.get(("fp32", "cublas", s))
        if lib:
            out.append(f"| (library default) | {s} | {lib['TFLOP/s']:.1f} | "
                       f"{fmt(100 * lib['TFLOP/s'] / ref['TFLOP/s'] if ref else None)} |")
    return "\n".join(out)


def plot(rows, context, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"\n(matplotlib is not installed: {path} not written; `pip install matplotlib` to get the plot)",
              file=sys.stderr)
        return False
    shapes = sorted({s for _, _, s in rows}, key=shape_key)
    series = [("fp32", v) for v in PROGRESSION] + [("tf32", "tensor_core_tf32"), ("tf32", "mma_sync")]
    series = [pr for pr in series if any((pr[0], pr[1], s) in rows for s in shapes)]
    width = 0.8 / max(len(series), 1)
    fig, ax = plt.subplots(figsize=(max(9, 1.6 * len(shapes) + 2), 5))
    for i, (prec, row) in enumerate(series):
        xs = [x + (i - len(series) / 2 + 0.5) * width for x in range(len(shapes))]
        ys = [rows[(prec, row, s)]["TFLOP/s"] if (prec, row, s) in rows else 0 for s in shapes]
        ax.bar(xs, ys, width, label=row if prec == "fp32" else f"{row} (TF32)")
    for prec, marker, label in (("fp32", "k_", "cuBLAS fp32"), ("tf32", "r_", "cuBLAS TF32")):
        ys = [rows[(prec, "cublas", s)]["TFLOP/s"] if (prec, "cublas", s) in rows else None for s in shapes]
        pts = [(x, y) for x, y in enumerate(ys) if y is not None]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker, markersize=40, markeredgewidth=2, label=label,
                    linestyle="none")
    ax.set_xticks(range(len(shapes)))
    ax.set_xticklabels(shapes, rotation=20)
    ax.set_yscale("log")
    ax.set_ylabel("TFLOP/s (log scale)")
    gpu = context.get("gpu_name", "GPU")
    ax.set_title(f"kernelforge matmul on {gpu}: every step against cuBLAS")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"\nwrote {path}")
    return True


def add_missing_rows(rows, paths):
    """Adds to `rows` the rows of the other runs in `paths` that it lacks (its own rows stay: one run
    per cell either way)."""
    for path in paths:
        for key, row in load(path)[1].items():
            rows.setdefault(key, row)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", help="bench_matmul JSON (--benchmark_out)")
    ap.add_argument("--out", default="bench_matmul.png", help="PNG to write (default: bench_matmul.png)")
    ap.add_argument("--shape", default="4096x4096x4096", help="shape of the progression table")
    ap.add_argument("--fp8", help="bench_scaled_matmul JSON: the FP8 table (kf::scaled_matmul against cuBLASLt)")
    ap.add_argument("--extra", action="append", default=[],
                    help="another bench_matmul JSON whose rows the main one lacks join the tables (a run of its "
                         "own: its pairs are ratios from that run)")
    args = ap.parse_args()
    context, rows = load(args.json)
    add_missing_rows(rows, args.extra)
    if not rows:
        sys.exit(f"{args.json}: no matmul rows (did the benchmark run on a GPU?)")
    if context.get("gpu_name"):
        print(f"GPU: {context['gpu_name']} (compute capability {context.get('gpu_compute_capability', '?')}), "
              f"FP32 peak {float(context.get('gpu_peak_fp32_tflops', 0)):.1f} TFLOP/s\n")
    print(progression_table(rows, args.shape))
    print()
    p = paired_table(rows)
    if p:
        print(p)
        print()
    if args.fp8:
        f = fp8_table(load(args.fp8)[1])
        if f:
            print(f)
            print()
    print(all_shapes_table(rows))
    m = modes_table(rows)
    if m:
        print()
        print(m)
    t = tuning_table(rows)
    if t:
        print()
        print(t)
    plot(rows, context, args.out)


if __name__ == "__main__":
    main()
