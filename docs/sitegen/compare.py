# SPDX-License-Identifier: Apache-2.0
"""Compare GPUs: the hand-written how-to (docs/pages/compare/index.md), then one page per
folder of benchmarks/results/ (compare/<folder>.md: report.py's tables and plots of every
Google Benchmark JSON in it, and update_readme.py's full tables where the folder has those
files), and, with two folders or more, every GPU side by side (compare/all.md). A folder a
user adds with their own JSON gets its page at the next build."""
import contextlib
import io
import json
import re
import sys

from . import handwritten
from .links import rewrite_links
from .site import ROOT, read

sys.path.insert(0, str(ROOT / "benchmarks"))
import report  # noqa: E402
import update_readme  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"


def benchmark_files(folder):
    """The folder's Google Benchmark JSON files (others, such as bench_python.json, have no rows)."""
    out = []
    for path in sorted(folder.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            data = {"benchmarks": [1]}  # a run cut short: report.py reads what finished
        if isinstance(data, dict) and data.get("benchmarks"):
            out.append(path)
    return out


def result_folders():
    return sorted(p for p in RESULTS.iterdir() if p.is_dir() and benchmark_files(p))


def report_markdown(site, page, files, plots_name):
    """report.py's markdown for `files`, its plots copied into the site beside the page."""
    plots_dir = site.work_dir / "made" / "compare" / plots_name
    with contextlib.redirect_stderr(io.StringIO()):
        text = report.render([str(p) for p in files], plots_dir=str(plots_dir),
                             link_base=str(site.work_dir / "made" / "compare"))
    for png in sorted(plots_dir.glob("*.png")):
        site.add_static(f"compare/{plots_name}/{png.name}", png)
    return "\n".join(l for l in text.splitlines() if not l.startswith("# "))


def folder_page(site, folder):
    page = f"compare/{folder.name}.md"
    files = benchmark_files(folder)
    listing = ", ".join(f"[`{p.name}`]({site.source_link(page, p.relative_to(ROOT))})" for p in files)
    lines = [f"# Results: {folder.name}", "",
             f"Every Google Benchmark JSON file in `benchmarks/results/{folder.name}/`: {listing}.", "",
             "## report.py: one table per family", "",
             report_markdown(site, page, files, folder.name + "-report")]
    if (folder / "bench_matmul.json").exists() or (folder / "bench_conv.json").exists():
        plots = site.work_dir / "made" / "compare" / (folder.name + "-tables")
        with contextlib.redirect_stderr(io.StringIO()):
            tables = update_readme.full_tables(folder, plots, folder.name + "-tables")
        for png in sorted(plots.glob("*.png")):
            site.add_static(f"compare/{folder.name}-tables/{png.name}", png)
        tables = re.sub(r"^(#+) ", r"#\1 ", tables, flags=re.M)  # under this page's "## The detailed tables"
        lines += ["", "## The detailed tables", "",
                  "Made by `benchmarks/update_readme.py` (plot_matmul.py, plot_conv.py): the matmul progression, "
                  "the paired cuBLAS and cuBLASLt tables, every shape, and the convolution tables.", "", tables]
    return site.add_page(page, "\n".join(lines))


def build(site):
    folders = result_folders()
    index = handwritten.expand(site, "compare/index.md", (handwritten.PAGES / "compare/index.md").read_text())
    index += "\n\n" + "\n".join(f"- [{f.name}]({f.name}.md): {len(benchmark_files(f))} JSON files" for f in folders)
    if len(folders) > 1:
        index += "\n- [every GPU side by side](all.md)"
    pages = [site.add_page("compare/index.md", index)]
    if len(folders) > 1:
        files = [p for f in folders for p in benchmark_files(f)]
        pages.append(site.add_page("compare/all.md", "# Every GPU side by side\n\n" +
                                   report_markdown(site, "compare/all.md", files, "all")))
    pages += [folder_page(site, f) for f in folders]
    readme = "benchmarks/results/README.md"
    pages.append(site.add_page("compare/results-folder.md",
                               rewrite_links(site, "compare/results-folder.md", readme, read(readme))))
    return pages
