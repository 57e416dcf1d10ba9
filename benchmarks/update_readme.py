#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Regenerates the results shown from the committed JSON: the README's headline table and
the full tables of the documentation site.

    python3 benchmarks/update_readme.py [--results benchmarks/results/h200] [--readme README.md]
                                        [--tables-out FILE --plots-dir DIR]

Replaces the text between the README markers <!-- results:begin --> and <!-- results:end -->
with the matmul progression at 4096^3 (plot_matmul.py), a pointer to the full tables, and
where they come from. The full tables (report.py for elementwise, plot_matmul.py and
plot_conv.py, with their plots) are what full_tables() returns: docs/build_site.py puts them
on the site's "Compare GPUs" pages, and --tables-out writes them to a file (plots into
--plots-dir) for a reader without the site. Python 3 standard library only (matplotlib, if
present, draws the plots).
"""
import argparse
import os
import pathlib
import re
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import plot_matmul  # noqa: E402

MATMUL_NOTE = """The tensor-core products run at the H200's 700 W power cap, where a row's
clock follows the energy of the seconds before it: one bf16 kernel measured
1.015 of cuBLAS first and 0.920 last in one run. The paired table (the library's
pick and cuBLAS timed in turn, sample by sample) is the comparison to read;
the per-row tables beside it show every step, each timed on its own."""
CONV_NOTE = """cuDNN picks its algorithm per run (cudnnFindConvolutionForwardAlgorithm), and
its conv2d speed moved by up to 1.6x between two runs of this binary on the
same machine; `bench_conv_previous_run.json` holds the other run. Compare
ratios within one run only."""
SITE_PAGE = "the documentation site's Compare GPUs pages (`python3 docs/build_site.py`, page compare/h200)"


def run(*args):
    out = subprocess.run([sys.executable, *map(str, args)], check=True, capture_output=True, text=True)
    return out.stdout


def section_text(text, level="###"):
    """A script's markdown, headings demoted under `level`, without its chatter
    (top title, "wrote FILE", the devices table)."""
    keep = []
    for line in text.splitlines():
        if line.startswith("# ") or line.startswith("wrote ") or "did not draw" in line:
            continue
        if line.startswith("#"):
            line = level + line.lstrip("#")
        keep.append(line)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(keep)).strip()


def full_tables(res, plots_dir, plot_link):
    """Markdown (## per family) of every table made from the JSON in `res`; the plots are
    written into plots_dir and linked as plot_link/<name>.png."""
    res, plots_dir = pathlib.Path(res), pathlib.Path(plots_dir)
    plots_dir.mkdir(parents=True, exist_ok=True)
    parts = [f"Measured with the benchmark binaries on one GPU (CUDA events around the GPU work only, L2\n"
             f"flushed before every sample, every ratio from one run), from the JSON in `{res.name}/`."]
    if (res / "bench_elementwise.json").exists():
        parts += ["## Elementwise", section_text(run(HERE / "report.py", res / "bench_elementwise.json"))]
    if (res / "bench_matmul.json").exists():
        fp8 = ["--fp8", res / "bench_scaled_matmul.json"] if (res / "bench_scaled_matmul.json").exists() else []
        extra = [a for f in sorted(res.glob("bench_matmul_*.json")) for a in ("--extra", f)]
        tables = section_text(run(HERE / "plot_matmul.py", res / "bench_matmul.json", "--out",
                                  plots_dir / "matmul.png", *fp8, *extra))
        parts += ["## Matrix product", plot(plots_dir, plot_link, "matmul"), MATMUL_NOTE, tables]
    if (res / "bench_conv.json").exists():
        # A run of the gradient or fp32_emulated rows of its own, where there is one (else bench_conv.json's).
        backward = (["--backward", res / "bench_conv_backward.json"]
                    if (res / "bench_conv_backward.json").exists() else [])
        emulated = (["--emulated", res / "bench_conv_fp32_emulated.json"]
                    if (res / "bench_conv_fp32_emulated.json").exists() else [])
        tables = section_text(run(HERE / "plot_conv.py", res / "bench_conv.json", "--png", plots_dir / "conv.png",
                                  *backward, *emulated))
        parts += ["## Convolution", plot(plots_dir, plot_link, "conv"), CONV_NOTE, tables]
    return "\n\n".join(p for p in parts if p) + "\n"


def plot(plots_dir, plot_link, name):
    return f"![{name}]({plot_link}/{name}.png)" if (plots_dir / f"{name}.png").exists() else ""


def readme_section(res, rel):
    """The README's short results section: the matmul progression, and where the rest is."""
    context, rows = plot_matmul.load(res / "bench_matmul.json")
    gpu = context.get("gpu_name", "one GPU")
    return f"""<!-- results:begin -->
The matrix product's progression on one {gpu}, every ratio from one run (TFLOP/s at
4096 x 4096 x 4096). Every other table (elementwise, FP8, convolution, the per-shape and
paired cuBLAS tables) and the plots are on {SITE_PAGE}. Both are made from the JSON in
`{rel}/` by `python3 benchmarks/update_readme.py`.

{plot_matmul.progression_table(rows, "4096x4096x4096")}
<!-- results:end -->"""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default=HERE / "results" / "h200", type=pathlib.Path)
    ap.add_argument("--readme", default=HERE.parent / "README.md", type=pathlib.Path)
    ap.add_argument("--tables-out", type=pathlib.Path, help="also write the full tables to this Markdown file")
    ap.add_argument("--plots-dir", type=pathlib.Path, help="where --tables-out's plots go (default: beside it)")
    args = ap.parse_args()
    res = args.results
    rel = os.path.relpath(res.resolve(), args.readme.resolve().parent)
    text = args.readme.read_text()
    pattern = re.compile(r"<!-- results:begin -->.*?<!-- results:end -->", re.S)
    if not pattern.search(text):
        sys.exit(f"{args.readme}: markers <!-- results:begin --> / <!-- results:end --> not found")
    section = readme_section(res, rel)
    args.readme.write_text(pattern.sub(lambda _: section, text))
    print(f"updated {args.readme}")
    if args.tables_out:
        plots = args.plots_dir or args.tables_out.parent
        link = os.path.relpath(plots, args.tables_out.parent)
        args.tables_out.write_text(f"# Results: {res.name}\n\n" + full_tables(res, plots, link))
        print(f"wrote {args.tables_out}")


if __name__ == "__main__":
    main()
