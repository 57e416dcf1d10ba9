#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Tables and a plot from bench_conv's JSON.

    python3 benchmarks/plot_conv.py build/results/bench_conv.json [--png conv.png] [--markdown-out conv.md]

Prints two markdown tables -- conv2d (TFLOP/s and the fraction of cuDNN per
layer and math mode) and filter2d (GB/s, fraction of the in-run copy and of
cuDNN per image) -- ready for the README, and writes a PNG with one panel each
when matplotlib is available (without it, the tables are still printed and the
script says why there is no plot). Python 3 standard library otherwise.

With --backward JSON (a bench_conv run of the conv2d_backward rows), a third
table: conv2d_backward/<fp16|bf16|tf32>/<data|filter|step>/<layer>. With
--emulated JSON (a run of the fp32_emulated rows: conv2d/fp32_emulated/
best_vs_cudnn/<layer> and conv2d_nhwc/...), a table of math_mode::fp32_emulated
against cuDNN's fastest exact fp32, each speed beside both errors.

Names follow bench_conv: conv2d/<fp32|tf32>/<impl>/<layer> and
filter2d/fp32/<impl>/<image>; the fields Google Benchmark appends
(min_time:X, iterations:N, manual_time, ...) are ignored, and so are the
tuning rows (filter2d/fp32/register_window_cfg/<config>/<image>: candidate
configurations of one kernel, compared in benchmarks/tuning/filter2d.md, not the README).
"""

import argparse
import json
import re
import sys
from collections import OrderedDict

SUFFIX_FIELD = re.compile(r"^(iterations|repeats|min_time|min_warmup_time|threads|time_unit):")
SUFFIX_WORDS = {"manual_time", "real_time", "process_time"}
CONV_ORDER = ["cudnn", "naive", "smem_tiled", "implicit_gemm", "implicit_gemm_pipelined", "winograd",
              "winograd_fused",
              "implicit_gemm_tf32", "implicit_gemm_wgmma", "best"]
FUSED_ORDER = ["cudnn_fused", "unfused", "fused"]
NHWC_ORDER = ["cudnn", "best", "cudnn_fused", "best_fused", "cudnn_nchw", "best_vs_cudnn"]
BACKWARD_ORDER = ["data", "filter", "step"]
# Impl fields of tuning rows: candidate configurations, left out of the tables and the plot.
TUNING_IMPLS = {"register_window_cfg"}
FILTER_ORDER = ["copy", "cudnn", "naive", "constant_memory", "smem_tiled", "register_window", "rolling_window",
                "tma_pipeline", "best"]


def clean_name(name):
    return [f for f in name.split("/") if not SUFFIX_FIELD.match(f) and f not in SUFFIX_WORDS]


def load(path):
    with open(path) as f:
        data = json.load(f)
    rows = []
    for b in data.get("benchmarks", []):
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        fields = clean_name(b["name"])
        if len(fields) < 4 or fields[2] in TUNING_IMPLS:
            continue
        rows.append({
            "family": fields[0], "type": fields[1], "impl": fields[2], "size": "/".join(fields[3:]),
            "error": b.get("error_message") if b.get("error_occurred") else None,
            "time_ms": b.get("real_time"), "unit": b.get("time_unit", "ms"),
            "TFLOP/s": b.get("TFLOP/s"), "GB/s": b.get("GB/s"),
            "frac_cudnn": b.get("frac_cudnn"), "frac_copy": b.get("frac_copy"), "label": b.get("label", ""),
            "speedup_vs_unfused": b.get("speedup_vs_unfused"),
            "max_error": b.get("max_error"), "baseline_max_error": b.get("baseline_max_error"),
            "cudnn_TFLOP/s": b.get("cudnn_TFLOP/s"),
        })
    return data.get("context", {}), rows


def fmt(v, digits=2):
    return "" if v is None else f"{v:.{digits}f}"


def ordered_impls(rows, order):
    present = []
    for r in rows:
        if r["impl"] not in present:
            present.append(r["impl"])
    return sorted(present, key=lambda i: order.index(i) if i in order else len(order))


def table(rows, family, rate, extra, order):
    sel = [r for r in rows if r["family"] == family]
    if not sel:
        return ""
    impls = ordered_impls(sel, order)
    groups = OrderedDict()
    for r in sel:
        groups.setdefault((r["size"], r["type"]), {})[r["impl"]] = r
    head = ["problem", "type"] + impls
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (size, typ), cells in groups.items():
        out = [size, typ]
        for impl in impls:
            r = cells.get(impl)
            if r is None:
                out.append("")
            elif r["error"]:
                out.append("error")
            else:
                parts = [f"{fmt(r[rate], 1)} {rate}"]
                for key, label in extra:
                    if r.get(key) is not None and not (impl == "cudnn" and key == "frac_cudnn"):
                        parts.append(f"{fmt(r[key])}x {label}")
                out.append("<br>".join(parts))
        lines.append("| " + " | ".join(out) + " |")
    errors = [r for r in sel if r["error"]]
    for r in errors:
        lines.append(f"\n- {family}/{r['type']}/{r['impl']}/{r['size']}: {r['error']}")
    return "\n".join(lines)


def emulated_table(rows):
    """fp32_emulated rows: ours and cuDNN's rate, the ratio, and both maximum errors
    (relative to sum |x| |w| over the receptive field, on sampled outputs)."""
    sel = [r for r in rows if r["type"] == "fp32_emulated" and r["family"] in ("conv2d", "conv2d_nhwc")]
    if not sel:
        return ""
    lines = ["| layer | layout | ours TFLOP/s | cuDNN TFLOP/s | ours / cuDNN | max error ours | max error cuDNN |",
             "|---|---|---|---|---|---|---|"]
    for r in sel:
        layout = "NHWC" if r["family"] == "conv2d_nhwc" else "NCHW"
        if r["error"]:
            lines.append(f"| {r['size']} | {layout} | {r['error']} | | | | |")
            continue
        err = lambda v: "" if v is None else f"{v:.2e}"
        lines.append(f"| {r['size']} | {layout} | {fmt(r['TFLOP/s'], 1)} | {fmt(r['cudnn_TFLOP/s'], 1)} | "
                     f"{fmt(r['frac_cudnn'])} | {err(r['max_error'])} | {err(r['baseline_max_error'])} |")
    return "\n".join(lines)


def plot(rows, path, context):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:  # degrade gracefully: the tables are the main output
        print(f"\n(no plot: matplotlib is not available here: {e})")
        return
    fig, axes = plt.subplots(1, 2, figsize=(15, 5.5))
    for ax, family, rate, order in ((axes[0], "conv2d", "TFLOP/s", CONV_ORDER),
                                    (axes[1], "filter2d", "GB/s", FILTER_ORDER)):
        sel = [r for r in rows if r["family"] == family and not r["error"] and r[rate] is not None]
        groups = list(OrderedDict.fromkeys(f"{r['size']}\n{r['type']}" for r in sel))
        impls = ordered_impls(sel, order)
        width = 0.8 / max(1, len(impls))
        for k, impl in enumerate(impls):
            xs, ys = [], []
            for g, name in enumerate(groups):
                for r in sel:
                    if r["impl"] == impl and f"{r['size']}\n{r['type']}" == name:
                        xs.append(g + k * width)
                        ys.append(r[rate])
            ax.bar(xs, ys, width, label=impl)
        ax.set_xticks([g + 0.4 - width / 2 for g in range(len(groups))])
        ax.set_xticklabels([g.replace("_", " ") for g in groups], fontsize=7)
        ax.set_ylabel(rate)
        ax.set_title(family)
        ax.legend(fontsize=8)
    fig.suptitle(f"kernelforge convolution on {context.get('gpu_name', 'unknown GPU')}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"\nwrote {path}")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", help="bench_conv JSON (--benchmark_out)")
    ap.add_argument("--png", default="conv.png", help="plot to write (default conv.png)")
    ap.add_argument("--markdown-out", help="also write the tables to this file")
    ap.add_argument("--backward", help="bench_conv JSON with the conv2d_backward rows (a run of its own)")
    ap.add_argument("--emulated", help="bench_conv JSON with the fp32_emulated rows (a run of its own)")
    args = ap.parse_args(argv)
    context, rows = load(args.json)
    if args.backward:
        rows += [r for r in load(args.backward)[1] if r["family"] == "conv2d_backward"]
    emulated = emulated_table(load(args.emulated)[1] if args.emulated else rows)
    # fp32_emulated rows have their own table (emulated_table), with both errors.
    exact = [r for r in rows if r["type"] != "fp32_emulated"]
    text = "\n\n".join(t for t in (
        "### conv2d (NCHW fp32; frac = cuDNN time / our time, > 1 is faster than cuDNN)",
        table(exact, "conv2d", "TFLOP/s", [("frac_cudnn", "cuDNN")], CONV_ORDER),
        "### conv2d channels_last (NHWC activations, KRSC filters; fp16 / bf16 in fp32 accumulation, TF32, "
        "exact fp32); frac = cuDNN's time / ours, paired in one run (best_fused against cudnn_fused: bias + "
        "ReLU in both)",
        table(exact, "conv2d_nhwc", "TFLOP/s", [("frac_cudnn", "cuDNN")], NHWC_ORDER),
        "### conv2d + bias + ReLU (threshold 0): fused into the store, unfused (conv2d then "
        "relu_threshold_forward), and cuDNN's cudnnConvolutionBiasActivationForward",
        table(rows, "conv2d_bias_relu", "TFLOP/s", [("speedup_vs_unfused", "unfused"), ("frac_cudnn", "cuDNN fused")],
              FUSED_ORDER),
        "### conv2d gradients (NHWC; data = dx, filter = dw, step = forward + both; TFLOP/s of the forward's "
        "FLOPs per pass; frac = cuDNN's backend graphs' time / ours, paired in one run)",
        table(rows, "conv2d_backward", "TFLOP/s", [("frac_cudnn", "cuDNN")], BACKWARD_ORDER),
        "### conv2d, math_mode::fp32_emulated (three TF32 wgmma products per split pair) against "
        "cuDNN's fastest exact fp32 algorithm, paired in one run; errors: the maximum over 2048 sampled "
        "outputs of |y - ref| / sum |x| |w| (double reference)" if emulated else "",
        emulated,
        "### filter2d (8192 x 8192 single-channel fp32, zero border; copy = the memory floor)",
        table(rows, "filter2d", "GB/s", [("frac_copy", "copy"), ("frac_cudnn", "cuDNN")], FILTER_ORDER),
    ) if t)
    gpu = context.get("gpu_name")
    if gpu:
        text = f"GPU: {gpu} (compute capability {context.get('gpu_compute_capability', '?')})\n\n" + text
    print(text)
    if args.markdown_out:
        with open(args.markdown_out, "w") as f:
            f.write(text + "\n")
    plot(rows, args.png, context)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
