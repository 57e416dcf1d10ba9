#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Builds kernelforge's documentation site from the repository, so that it cannot drift
from the code and the results.

    python3 docs/build_site.py [--out build-docs] [--no-mkdocs] [--no-doxygen]

Writes into --out (a build tree; the source tree is never written):
  docs/        the site's Markdown: the learning path (from the step files' header comments,
               the committed H200 JSON and plots made from it), the start and how-to pages
               (docs/pages/), the examples' READMEs, Compare GPUs (every folder of
               benchmarks/results/), the tuning notes, and the reference (Doxygen of the public
               headers, the Python package's docstrings), and the project's pages (supported GPUs
               and systems, CONTRIBUTING.md, CHANGELOG.md)
  mkdocs.yml   the MkDocs configuration (Material theme), navigation included
  site/        the static HTML, built with `mkdocs build --strict` when mkdocs is installed
               (pip install -r docs/requirements.txt); open site/index.html
Needs Python 3's standard library; matplotlib for the plots and doxygen for the C++
reference are used when present (the pages say what is missing). No network access.
"""
import argparse
import importlib.util
import os
import pathlib
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from sitegen import compare, config, examples, handwritten, learn, project, reference_cpp, reference_python, tuning  # noqa
from sitegen.site import ROOT, Site  # noqa: E402

START = ["index.md", "start.md"]
HOWTO = ["howto/transform.md", "howto/epilogues.md", "howto/streams.md", "howto/python.md", "howto/errors.md",
         "howto/build.md"]


def titled(pairs):
    return [{title: path} for title, path in pairs]


def generate(out, use_doxygen=True):
    """Writes out/docs and out/mkdocs.yml; returns the Site."""
    site = Site(out / "work")
    start = handwritten.build(site, START)
    learn_pages = learn.build(site)
    howto = handwritten.build(site, HOWTO)
    example_pages = examples.build(site)
    compare_pages = compare.build(site)
    tuning_pages = tuning.build(site)
    cpp_pages = reference_cpp.build(site, out / "doxygen", use_doxygen)
    python_pages = reference_python.build(site)
    reference = handwritten.build(site, ["reference/overview.md"])
    project_pages = project.build(site)
    site.nav = [
        {"Home": start[0]},
        {"Start": start[1]},
        {"Learning path": learn_pages},
        {"How-to": howto},
        {"Examples": example_pages},
        {"Compare GPUs": compare_pages},
        {"Tuning": tuning_pages},
        {"Reference": [{"The API at a glance": reference[0]}, {"C++ API": cpp_pages}, {"Python API": python_pages}]},
        {"Project": titled(zip(("Supported GPUs and systems", "Contributing and bug reports", "Changelog"),
                               project_pages))},
    ]
    site.write(out / "docs")
    config.write(out / "mkdocs.yml", out / "docs", out / "site", site.nav)
    return site


def mkdocs_build(out, strict=True):
    command = [sys.executable, "-m", "mkdocs", "build", "-f", str(out / "mkdocs.yml")]
    if strict:
        command.append("--strict")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")  # Material's notice about its successor, not a build warning
    return subprocess.run(command, env=env).returncode


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=pathlib.Path, default=ROOT / "build-docs", help="build tree (default: build-docs)")
    ap.add_argument("--no-mkdocs", action="store_true", help="write the Markdown and mkdocs.yml only")
    ap.add_argument("--no-doxygen", action="store_true", help="leave out the Doxygen C++ reference")
    ap.add_argument("--no-strict", action="store_true", help="let mkdocs warnings pass")
    args = ap.parse_args(argv)
    out = args.out.resolve()
    if out == ROOT or ROOT / "docs" in [out, *out.parents]:
        sys.exit(f"--out {out}: the site is built into a build tree, not the source tree")
    begin = time.monotonic()
    site = generate(out, not args.no_doxygen)
    for warning in site.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(f"wrote {len(site.pages)} pages and {len(site.static)} files into {out / 'docs'} "
          f"({time.monotonic() - begin:.1f} s)")
    if args.no_mkdocs:
        return 0
    if importlib.util.find_spec("mkdocs") is None:
        print("mkdocs is not installed: `python3 -m pip install -r docs/requirements.txt` builds the HTML "
              "(the Markdown is written)", file=sys.stderr)
        return 1
    rc = mkdocs_build(out, strict=not args.no_strict)
    print(f"mkdocs build {'failed' if rc else 'wrote ' + str(out / 'site' / 'index.html')} "
          f"({time.monotonic() - begin:.1f} s in all)")
    return rc


if __name__ == "__main__":
    sys.exit(main())
