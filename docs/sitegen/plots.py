# SPDX-License-Identifier: Apache-2.0
"""The progression plot of a learning-path page: one bar per step at the family's headline
size, from the committed JSON. Needs matplotlib; without it the page says so and keeps its tables."""


def matplotlib_or_reason():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt, None
    except ImportError as e:
        return None, f"matplotlib is not installed ({e}); `python3 -m pip install matplotlib` draws it"


def progression(path, title, bars, unit):
    """bars: [(label, value, note)]. Writes a PNG; returns None or the reason it could not."""
    plt, reason = matplotlib_or_reason()
    if plt is None:
        return reason
    values = [v for _, v, _ in bars]
    fig, ax = plt.subplots(figsize=(max(7, 0.75 * len(bars) + 3), 4.6))
    xs = range(len(bars))
    ax.bar(xs, values, color="#3f6fb5")
    for x, (_, value, note) in zip(xs, bars):
        ax.annotate(f"{value:.4g}" + (f"\n{note}" if note else ""), (x, value), ha="center", va="bottom",
                    fontsize=7, xytext=(0, 2), textcoords="offset points")
    ax.set_xticks(list(xs))
    ax.set_xticklabels([label for label, _, _ in bars], rotation=35, ha="right", fontsize=8)
    if max(values) / max(min(values), 1e-9) > 30:
        ax.set_yscale("log")
        unit += " (log scale)"
    ax.set_ylabel(unit)
    ax.set_title(title, fontsize=10)
    ax.margins(y=0.2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None
