#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Turn kernelforge benchmark JSON (Google Benchmark 1.7/1.8, one or several GPUs)
into markdown tables.

    python3 benchmarks/report.py benchmarks/results/h200/*.json
    python3 benchmarks/report.py h200/*.json a100/*.json --markdown-out results.md
    python3 benchmarks/report.py h200/*.json a100/*.json --out report/   # report.md + one PNG per family

Python 3 standard library only for the tables; the plots (--out, --plots) need
matplotlib (benchmarks/report_plots.py) and are skipped with a message without it.

Naming convention the bench_* binaries follow, and this script expects
-----------------------------------------------------------------------
Benchmark names are slash-separated fields:

    <op>/<type>/<impl>/<size>[/<more size fields>...]

    op    what is computed: saxpy, vector_add, matmul, conv2d, copy, ...
    type  element type: fp32, bf16, tf32, fp16, ...
    impl  a step of our progression (naive, vectorized, smem_tiled, ...) or a
          vendor baseline: cub, cublas, cublaslt, cudnn, thrust, torch, cupy
          (see BASELINES), or a ceiling: memcpy or copy (see CEILINGS)
    size  the problem size: one or more fields, e.g. 268435456 or 4096x4096x4096

The family (one table each) is the executable that wrote the JSON, less its
"bench_" prefix (bench_elementwise -> elementwise). A leading field equal to the
family is dropped, so family/op/type/impl/size names work as well. The fields
Google Benchmark appends (iterations:N, repeats:N, min_time:X, threads:N,
manual_time, real_time, ...) are ignored. Names with fewer than four fields
(e.g. launch_overhead/kf_saxpy) go to a second table per family that lists
their time and every counter.

What a table shows
------------------
One row per op/type/size (and GPU, when the files come from several GPUs);
one column per impl, in the order the benchmarks ran (the progression order).
A cell is the rate, then the fraction of the device's datasheet peak and the
fraction of the in-run copy of same-size arrays, from the counters
"TFLOP/s" (preferred where present) or "GB/s", "frac_peak" and "frac_copy".
Rows with neither counter show the time. Ratio columns compare throughput:
the most advanced of our impls present in the row (the last in progression
order; --ours overrides) over each baseline, and each earlier step over it.
A ratio above 1 means the first named is faster.

With repetitions, the median aggregate is used (else the mean, else the median
of the repetitions). Benchmarks that were skipped or failed are listed with
their message below the table.
"""

import argparse
import json
import os
import re
import statistics
import sys
from collections import OrderedDict

BASELINES = ["cub", "cublas", "cublaslt", "cudnn", "cutlass", "thrust", "torch", "pytorch", "cupy"]
CEILINGS = ["memcpy", "copy"]
RATE_COUNTERS = [("TFLOP/s", "TFLOP/s"), ("GB/s", "GB/s")]
GB_SUFFIX_FIELD = re.compile(r"^(iterations|repeats|min_time|min_warmup_time|threads|time_unit):")
GB_SUFFIX_WORDS = {"manual_time", "real_time", "process_time"}
STANDARD_KEYS = {
    "name", "family_index", "per_family_instance_index", "run_name", "run_type", "repetitions",
    "repetition_index", "threads", "iterations", "real_time", "cpu_time", "time_unit",
    "aggregate_name", "aggregate_unit", "error_occurred", "error_message", "skipped", "skip_message",
    "big_o", "rms", "label",
}
HIDDEN_COUNTERS = {"gpu_s"}  # duplicates the time column


# ---- reading -----------------------------------------------------------------
def load_json(path):
    """Parses a Google Benchmark JSON file; repairs one cut off mid-run."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        # A run killed before the end leaves "...}," without the closing "]}".
        trimmed = text.rstrip().rstrip(",")
        for tail in ("\n  ]\n}", "}\n  ]\n}"):
            try:
                data = json.loads(trimmed + tail)
                print(f"warning: {path}: truncated JSON, read the benchmarks that finished", file=sys.stderr)
                return data
            except json.JSONDecodeError:
                continue
        raise SystemExit(f"error: {path} is not Google Benchmark JSON (run bench_* with "
                         f"--benchmark_out=FILE --benchmark_out_format=json)")


def family_of(context, path):
    exe = os.path.basename(str(context.get("executable", ""))) or os.path.splitext(os.path.basename(path))[0]
    exe = os.path.splitext(exe)[0]
    return exe[len("bench_"):] if exe.startswith("bench_") else exe


def base_name(entry):
    """The benchmark's name without the aggregate suffix."""
    if "run_name" in entry:
        return entry["run_name"]
    name = entry.get("name", "")
    agg = entry.get("aggregate_name")
    if entry.get("run_type") == "aggregate" and agg and name.endswith("_" + agg):
        name = name[: -len(agg) - 1]
    return name


def name_fields(name, family):
    fields = [f for f in name.split("/") if f and not GB_SUFFIX_FIELD.match(f) and f not in GB_SUFFIX_WORDS]
    if len(fields) >= 5 and fields[0] == family:
        fields = fields[1:]
    return fields


def failed(entry):
    return bool(entry.get("error_occurred")) or bool(entry.get("skipped"))


def failure_message(entry):
    return entry.get("error_message") or entry.get("skip_message") or "skipped"


def counters_of(entry):
    return {k: v for k, v in entry.items() if k not in STANDARD_KEYS and isinstance(v, (int, float))}


def pick_runs(entries):
    """One record per benchmark: the median aggregate, else the mean, else the
    median over the repetitions. Returns (ordered {name: record}, [failures])."""
    by_name = OrderedDict()
    failures = []
    for e in entries:
        if failed(e):
            failures.append((base_name(e), failure_message(e)))
            continue
        by_name.setdefault(base_name(e), []).append(e)
    picked = OrderedDict()
    for name, runs in by_name.items():
        aggs = {e.get("aggregate_name"): e for e in runs if e.get("run_type") == "aggregate"}
        chosen = aggs.get("median") or aggs.get("mean")
        if chosen is not None:
            record = {"time": chosen.get("real_time"), "unit": chosen.get("time_unit", ""),
                      "counters": counters_of(chosen), "repetitions": chosen.get("repetitions", 1)}
        else:
            its = [e for e in runs if e.get("run_type", "iteration") == "iteration"]
            if not its:
                continue
            keys = OrderedDict((k, None) for e in its for k in counters_of(e))
            record = {
                "time": statistics.median(e.get("real_time", 0.0) for e in its),
                "unit": its[0].get("time_unit", ""),
                "counters": {k: statistics.median(counters_of(e)[k] for e in its if k in counters_of(e)) for k in keys},
                "repetitions": len(its),
            }
        picked[name] = record
    return picked, failures


class Source:
    """One JSON file: its GPU, its family and its picked runs."""

    def __init__(self, path):
        data = load_json(path)
        self.path = path
        self.context = data.get("context", {})
        self.family = family_of(self.context, path)
        # add_device_context() writes gpu_name, or gpu = "none (why)" where there was no GPU.
        gpu = self.context.get("gpu_name") or self.context.get("gpu") or "unknown GPU"
        self.gpu = "no GPU" if gpu.startswith("none") else gpu
        self.runs, self.failures = pick_runs(data.get("benchmarks", []))


def label_gpus(sources):
    """GPU label per source; files with the same GPU and family get their folder added."""
    seen = {}
    for s in sources:
        seen.setdefault((s.family, s.gpu), []).append(s)
    for group in seen.values():
        for s in group:
            if len(group) == 1:
                s.label = s.gpu
            else:
                where = os.path.basename(os.path.dirname(os.path.abspath(s.path))) or s.path
                s.label = f"{s.gpu} ({where}/{os.path.basename(s.path)})"


# ---- formatting --------------------------------------------------------------
def fmt_rate(value):
    if value is None:
        return "–"
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def fmt_frac(value):
    return "–" if value is None else f"{100 * value:.0f}%"


def fmt_ratio(value):
    return "–" if value is None else f"{value:.2f}"


def fmt_size(field):
    if field.isdigit():
        v = int(field)
        if v >= 1024 and v & (v - 1) == 0:
            return f"2^{v.bit_length() - 1}"
    return field


def fmt_number(value):
    if isinstance(value, float):
        if value != 0 and (abs(value) >= 1e6 or abs(value) < 1e-3):
            return f"{value:.3g}"
        return f"{value:.4g}" if abs(value) < 100 else f"{value:.0f}"
    return str(value)


def markdown_table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


# ---- tables ------------------------------------------------------------------
def measure(record):
    """(value, unit, higher_is_better) for one run."""
    for key, unit in RATE_COUNTERS:
        if key in record["counters"]:
            return record["counters"][key], unit, True
    return record["time"], record["unit"], False


def devices_table(sources):
    header = ["GPU", "file", "compute capability", "SMs", "peak GB/s", "peak FP32 TFLOP/s", "driver", "runtime",
              "kernelforge", "date"]
    rows = []
    for s in sources:
        c = s.context

        def num(key, digits=0):
            try:
                return f"{float(c[key]):.{digits}f}"
            except (KeyError, ValueError):
                return "–"

        rows.append([s.label, os.path.basename(s.path), c.get("gpu_compute_capability", "–"),
                     c.get("gpu_sm_count", "–"), num("gpu_peak_bandwidth_gbs"), num("gpu_peak_fp32_tflops", 1),
                     c.get("cuda_driver_version", "–"), c.get("cuda_runtime_version", "–"),
                     c.get("kernelforge_version", "–"), str(c.get("date", "–"))[:10]])
    return markdown_table(header, rows)


class Family:
    """Every run of one family, from one or several files (GPUs)."""

    def __init__(self, name, sources, ours_override, baselines):
        self.name = name
        self.several_gpus = len({s.label for s in sources}) > 1
        self.rows = OrderedDict()    # (op, type, size) -> {gpu label: {impl: record}}, in run order
        self.others = OrderedDict()  # first name field -> [(gpu label, name, record)]
        self.failures = []           # (gpu label, name, message)
        impls = []                   # first appearance: the progression order
        for s in sources:
            for run_name, record in s.runs.items():
                fields = name_fields(run_name, name)
                if len(fields) < 4:
                    self.others.setdefault(fields[0] if fields else run_name, []).append(
                        (s.label, "/".join(fields), record))
                    continue
                op, typ, impl, size = fields[0], fields[1], fields[2], "/".join(fields[3:])
                if impl not in impls:
                    impls.append(impl)
                self.rows.setdefault((op, typ, size), OrderedDict()).setdefault(s.label, {})[impl] = record
            self.failures += [(s.label, "/".join(name_fields(n, name)), m) for n, m in s.failures]
        # Columns: our steps (progression order), then the baselines, then the ceilings.
        self.ours = [i for i in impls if i not in baselines and i not in CEILINGS]
        if ours_override:
            self.ours = [i for i in self.ours if i != ours_override] + [ours_override]
        self.baselines = [b for b in impls if b in baselines]
        self.impls = self.ours + self.baselines + [c for c in impls if c in CEILINGS]
        self.top = self.ours[-1] if self.ours else None
        records = [r for by_gpu in self.rows.values() for by_impl in by_gpu.values() for r in by_impl.values()]
        self.has_peak = any("frac_peak" in r["counters"] for r in records)
        self.has_copy = any("frac_copy" in r["counters"] for r in records)

    def cell(self, record):
        value, unit, higher = measure(record)
        text = fmt_rate(value) + ("" if higher else f" {unit}")
        c = record["counters"]
        fractions = ([fmt_frac(c.get("frac_peak"))] if self.has_peak else []) + \
                    ([fmt_frac(c.get("frac_copy"))] if self.has_copy else [])
        if fractions and higher:
            text += " (" + " / ".join(fractions) + ")"
        return text

    def ratio_cells(self, by_impl):
        """top/baseline for each baseline, then step/top for each earlier step."""
        measured = {impl: measure(r) for impl, r in by_impl.items()}
        # The most advanced of our steps that ran in this row.
        row_top = next((i for i in reversed(self.ours) if i in measured), None)

        def ratio(a, b):
            if a is None or a == b or a not in measured or b not in measured:
                return None
            (va, _, a_higher), (vb, _, b_higher) = measured[a], measured[b]
            if not va or not vb or a_higher != b_higher:
                return None
            return va / vb if a_higher else vb / va  # throughput ratio either way

        cells = []
        if self.top:
            note = "" if row_top == self.top else f" ({row_top})"
            for b in self.baselines:
                r = ratio(row_top, b)
                cells.append(fmt_ratio(r) + (note if r is not None else ""))
        cells += [fmt_ratio(ratio(step, row_top)) for step in self.ours[:-1]]
        return cells

    def legend(self):
        units = {measure(r)[1] for by_gpu in self.rows.values() for by_impl in by_gpu.values()
                 for r in by_impl.values()}
        rate_units = [u for _, u in RATE_COUNTERS if u in units]
        text = " or ".join(rate_units) if rate_units else "time per call"
        parts = (["% of the datasheet peak"] if self.has_peak else []) + \
                (["% of the device-to-device copy of same-size arrays in the same run"] if self.has_copy else [])
        if parts:
            text += " (" + " / ".join(parts) + ")"
        if rate_units and len(units) > len(rate_units):
            text += "; rows without a rate show the time per call"
        return (f"Cells: {text}. Ratios: throughput of the first named over the second (> 1: the first is "
                f"faster); a name in parentheses is the step used where {self.top} did not run.")

    def main_table(self):
        gpu_column = ["GPU"] if self.several_gpus else []
        header = ["op", "type", "size"] + gpu_column + self.impls
        header += [f"{self.top}/{b}" for b in self.baselines] if self.top else []
        header += [f"{step}/{self.top}" for step in self.ours[:-1]]
        # Rows grouped by op/type in order of first appearance, then size, then GPU.
        groups = OrderedDict()
        for key in self.rows:
            groups.setdefault(key[:2], []).append(key)
        body = []
        for keys in groups.values():
            for key in keys:
                for label, by_impl in self.rows[key].items():
                    cells = [self.cell(by_impl[i]) if i in by_impl else "" for i in self.impls]
                    body.append([key[0], key[1], fmt_size(key[2])] + ([label] if self.several_gpus else []) +
                                cells + self.ratio_cells(by_impl))
        return [self.legend(), ""] + markdown_table(header, body) + [""]

    def other_tables(self):
        """Benchmarks outside the op/type/impl/size convention: time and every counter."""
        out = []
        for group, entries in self.others.items():
            counters = list(OrderedDict((k, None) for _, _, r in entries for k in r["counters"]
                                        if k not in HIDDEN_COUNTERS))
            header = ["benchmark"] + (["GPU"] if self.several_gpus else []) + ["time per iteration"] + counters
            body = [[name] + ([label] if self.several_gpus else []) + [f"{fmt_number(r['time'])} {r['unit']}"] +
                    [fmt_number(r["counters"][k]) if k in r["counters"] else "" for k in counters]
                    for label, name, r in entries]
            out += [f"### {self.name}: {group}", ""] + markdown_table(header, body) + [""]
        return out

    def failure_list(self):
        if not self.failures:
            return []
        out = [f"### {self.name}: skipped or failed ({len(self.failures)})", ""]
        messages = OrderedDict()
        for label, name, message in self.failures:
            messages.setdefault((label, message), []).append(name)
        for (label, message), names in messages.items():
            who = names[0] if len(names) == 1 else f"{len(names)} benchmarks ({names[0]}, ...)"
            out.append(f"- {label}: {who}: {message}")
        return out + [""]

    def markdown(self):
        return [f"## {self.name}", ""] + (self.main_table() if self.rows else []) + self.other_tables() + \
            self.failure_list()


def render(paths, ours_override=None, baselines=None, plots_dir=None, link_base=None):
    """The markdown report; with plots_dir, also one PNG per family there, linked
    from the report (paths relative to link_base, the report's folder)."""
    sources = [Source(p) for p in paths]
    label_gpus(sources)
    baselines = baselines if baselines is not None else BASELINES
    out = ["# kernelforge benchmark results", "", "## Devices", ""]
    out += devices_table(sources)
    out.append("")
    grouped = OrderedDict()
    for s in sources:
        grouped.setdefault(s.family, []).append(s)
    families = [Family(family, members, ours_override, baselines) for family, members in grouped.items()]
    if plots_dir is not None:
        import report_plots  # sibling module; imports matplotlib only when called
        written, reason = report_plots.plots(families, plots_dir, RATE_COUNTERS, baselines)
        out += ["## Plots", ""]
        if reason:
            print(f"note: plots skipped: {reason}", file=sys.stderr)
            out += [f"(No plots: {reason}.)", ""]
        for path in written:
            rel = os.path.relpath(path, link_base) if link_base else path
            out += [f"![{os.path.splitext(os.path.basename(path))[0]}]({rel})", ""]
    for family in families:
        out += family.markdown()
    return "\n".join(out).rstrip() + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("json", nargs="+", help="Google Benchmark JSON files (bench_* --benchmark_out=FILE)")
    parser.add_argument("--markdown-out", metavar="FILE", help="also write the markdown to FILE")
    parser.add_argument("--out", metavar="DIR",
                        help="write DIR/report.md and one PNG plot per family into DIR (plots need matplotlib)")
    parser.add_argument("--plots", metavar="DIR", help="write one PNG plot per family into DIR (needs matplotlib)")
    parser.add_argument("--ours", metavar="IMPL",
                        help="our impl to compare with the baselines (default: the last of ours in each row)")
    parser.add_argument("--baselines", metavar="A,B", help=f"vendor baseline impl names (default: {','.join(BASELINES)})")
    args = parser.parse_args(argv)
    baselines = [b for b in args.baselines.split(",") if b] if args.baselines else None
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    markdown_out = args.markdown_out or (os.path.join(args.out, "report.md") if args.out else None)
    plots_dir = args.plots or args.out
    if args.out:
        os.makedirs(args.out, exist_ok=True)
    link_base = os.path.dirname(os.path.abspath(markdown_out)) if markdown_out else os.getcwd()
    text = render(args.json, args.ours, baselines, plots_dir, link_base)
    if not args.out:
        sys.stdout.write(text)
    else:
        print(f"wrote {markdown_out}", file=sys.stderr)
    if markdown_out:
        args.markdown_out = markdown_out
        with open(args.markdown_out, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
