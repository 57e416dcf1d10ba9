#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Regenerates the README's "Results on the H200" section from the committed JSON.

    python3 benchmarks/update_readme.py [--results benchmarks/results/h200] [--readme README.md]

Runs report.py (elementwise), plot_matmul.py and plot_conv.py on the JSON in
--results (they also rewrite matmul.png and conv.png there) and replaces the
text between the README markers <!-- results:begin --> and <!-- results:end -->.
Python 3 standard library only (matplotlib, if present, draws the plots).
"""
import argparse
import pathlib
import re
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent


def run(*args):
    out = subprocess.run([sys.executable, *map(str, args)], check=True, capture_output=True, text=True)
    return out.stdout


def section_text(text):
    """A script's markdown, headings demoted under the README's ### level,
    without its chatter (top title, "wrote FILE", the devices table)."""
    keep = []
    for line in text.splitlines():
        if line.startswith("# ") or line.startswith("wrote ") or "did not draw" in line:
            continue
        if line.startswith("#"):
            line = "####" + line.lstrip("#")
        keep.append(line)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(keep)).strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default=HERE / "results" / "h200", type=pathlib.Path)
    ap.add_argument("--readme", default=HERE.parent / "README.md", type=pathlib.Path)
    args = ap.parse_args()
    res = args.results
    rel = res.relative_to(args.readme.parent) if res.is_absolute() else res

    elementwise = section_text(run(HERE / "report.py", res / "bench_elementwise.json"))
    fp8 = ["--fp8", res / "bench_scaled_matmul.json"] if (res / "bench_scaled_matmul.json").exists() else []
    extra = [a for f in sorted(res.glob("bench_matmul_*.json")) for a in ("--extra", f)]
    matmul = section_text(run(HERE / "plot_matmul.py", res / "bench_matmul.json", "--out", res / "matmul.png", *fp8,
                              *extra))
    backward = ["--backward", res / "bench_conv_backward.json"] if (res / "bench_conv_backward.json").exists() else []
    emulated = (["--emulated", res / "bench_conv_fp32_emulated.json"]
                if (res / "bench_conv_fp32_emulated.json").exists() else [])
    conv = section_text(run(HERE / "plot_conv.py", res / "bench_conv.json", "--png", res / "conv.png", *backward,
                            *emulated))

    section = f"""<!-- results:begin -->
Measured with the benchmark binaries on one NVIDIA H200 (CUDA events around the
GPU work only, L2 flushed before every sample, every ratio from one run);
regenerate this section with `python3 benchmarks/update_readme.py` after
copying new JSON into `{rel}/`.

### Elementwise

{elementwise}

### Matrix product

![matmul]({rel}/matmul.png)

The tensor-core products run at the H200's 700 W power cap, where a row's
clock follows the energy of the seconds before it: one bf16 kernel measured
1.015 of cuBLAS first and 0.920 last in one run. The paired table (the library's
pick and cuBLAS timed in turn, sample by sample) is the comparison to read;
the per-row tables beside it show every step, each timed on its own.

{matmul}

### Convolution

![conv]({rel}/conv.png)

cuDNN picks its algorithm per run (cudnnFindConvolutionForwardAlgorithm), and
its conv2d speed moved by up to 1.6x between two runs of this binary on the
same machine; `bench_conv_previous_run.json` holds the other run. Compare
ratios within one run only.

{conv}
<!-- results:end -->"""
    text = args.readme.read_text()
    pattern = re.compile(r"<!-- results:begin -->.*?<!-- results:end -->", re.S)
    if not pattern.search(text):
        sys.exit(f"{args.readme}: markers <!-- results:begin --> / <!-- results:end --> not found")
    args.readme.write_text(pattern.sub(lambda _: section, text))
    print(f"updated {args.readme}")


if __name__ == "__main__":
    main()
