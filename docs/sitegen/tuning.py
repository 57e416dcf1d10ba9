# SPDX-License-Identifier: Apache-2.0
"""The tuning section (tuning/*.md): benchmarks/tuning/*.md and its dated log, as they are,
their relative links made to work on the site. Code comments point at these sections
(benchmarks/tuning/matmul.md#choose_wgmma_block_n); the site keeps the same anchors."""
from .links import page_of_markdown, rewrite_links
from .site import ROOT, read

ORDER = ["README.md", "elementwise.md", "matmul.md", "filter2d.md", "conv2d.md"]


def tuning_files():
    folder = ROOT / "benchmarks" / "tuning"
    top = sorted(p.name for p in folder.glob("*.md"))
    top = [n for n in ORDER if n in top] + [n for n in top if n not in ORDER]
    log = sorted(p.name for p in (folder / "log").glob("*.md"))
    log = [n for n in log if n == "README.md"] + [n for n in log if n != "README.md"]
    return [f"benchmarks/tuning/{n}" for n in top], [f"benchmarks/tuning/log/{n}" for n in log]


def build(site):
    top, log = tuning_files()
    pages, log_pages = [], []
    for group, names in ((pages, top), (log_pages, log)):
        for repo_path in names:
            page = page_of_markdown(repo_path)
            group.append(site.add_page(page, rewrite_links(site, page, repo_path, read(repo_path))))
    return pages + [{"Dated log": log_pages}]
