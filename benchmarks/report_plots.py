# SPDX-License-Identifier: Apache-2.0
"""PNG plots for benchmarks/report.py (--out DIR or --plots DIR): one figure per
family, one panel per problem (op/type/size), one bar group per GPU or run, one
bar per implementation: its GB/s or TFLOP/s, annotated with its fraction of the
same run's device-to-device copy ("0.97x copy", from the frac_copy counter) or
else of the vendor library in the same row and run ("0.83x cudnn").

Needs matplotlib (pip install matplotlib); without it, plots() says so and
returns no files, and the report keeps its tables.
"""
import math
import os

MAX_PANELS = 16


def matplotlib_or_reason():
    try:
        import matplotlib
        matplotlib.use("Agg")  # no display needed
        import matplotlib.pyplot as plt
        return plt, None
    except ImportError as e:
        return None, f"matplotlib is not installed ({e}); tables only. Install it with: python3 -m pip install matplotlib"


def rate_of(record, rate_counters):
    for key, unit in rate_counters:
        if key in record["counters"]:
            return record["counters"][key], unit
    return None, None


def fraction_note(impl, record, by_impl, baselines, rate_counters):
    """'0.97x copy' from frac_copy, else 'x.xx <baseline>' against the row's vendor library."""
    if impl in ("copy", "memcpy"):
        return ""  # the ceiling itself
    c = record["counters"]
    if "frac_copy" in c:
        return f"{c['frac_copy']:.2f}x copy"
    value, _ = rate_of(record, rate_counters)
    for b in baselines:
        if b in by_impl and b != impl and value:
            base, _ = rate_of(by_impl[b], rate_counters)
            if base:
                return f"{value / base:.2f}x {b}"
    return ""


def panels_of(family):
    """Problems to plot: every op/type/size, or the largest size per op/type when there are too many."""
    keys = [k for k in family.rows]
    if len(keys) <= MAX_PANELS:
        return keys
    last = {}
    for k in keys:
        last[k[:2]] = k  # rows arrive in size order: keep the last (largest) per op/type
    return list(last.values())[:MAX_PANELS]


def plot_family(plt, family, path, rate_counters, baselines):
    keys = [k for k in panels_of(family)
            if any(rate_of(r, rate_counters)[0] for by in family.rows[k].values() for r in by.values())]
    if not keys:
        return None
    cols = min(3, len(keys))
    rows = math.ceil(len(keys) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(6.2 * cols, 3.9 * rows), squeeze=False)
    colors = {impl: plt.cm.tab20(i % 20) for i, impl in enumerate(family.impls)}
    for ax, key in zip(axes.flat, keys):
        by_gpu = family.rows[key]
        labels = list(by_gpu)
        impls = [i for i in family.impls if any(i in by_gpu[g] for g in labels)]
        width = 0.8 / max(1, len(impls))
        unit = ""
        for gi, g in enumerate(labels):
            for ii, impl in enumerate(impls):
                record = by_gpu[g].get(impl)
                if record is None:
                    continue
                value, unit_here = rate_of(record, rate_counters)
                if value is None:
                    continue
                unit = unit_here
                x = gi - 0.4 + width * (ii + 0.5)
                ax.bar(x, value, width, color=colors[impl], label=impl)
                note = fraction_note(impl, record, by_gpu[g], baselines, rate_counters)
                if note:
                    ax.text(x, value, " " + note, rotation=90, ha="center", va="bottom", fontsize=6)
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels([l.replace(" (", "\n(") for l in labels], fontsize=7)
        ax.set_title(f"{key[0]} {key[1]} {key[2]}", fontsize=9)
        ax.set_ylabel(unit)
        ax.margins(y=0.35)
    for ax in list(axes.flat)[len(keys):]:
        ax.axis("off")
    handles = {}
    for ax in axes.flat:
        for h, l in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(l, h)
    top = 1 - 0.75 / (3.9 * rows)  # room for the title and the legend, whatever the figure's height
    fig.suptitle(f"{family.name}: rate per implementation, one bar group per GPU/run", y=0.999, fontsize=11)
    fig.legend(handles.values(), handles.keys(), loc="upper center", bbox_to_anchor=(0.5, 1 - 0.3 / (3.9 * rows)),
               ncol=min(9, len(handles)), fontsize=8)
    fig.tight_layout(rect=(0, 0, 1, top))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plots(families, out_dir, rate_counters, baselines):
    """Writes <out_dir>/<family>.png for each family; returns (paths, reason or None)."""
    plt, reason = matplotlib_or_reason()
    if plt is None:
        return [], reason
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for family in families:
        path = plot_family(plt, family, os.path.join(out_dir, f"{family.name}.png"), rate_counters, baselines)
        if path:
            paths.append(path)
    return paths, None
