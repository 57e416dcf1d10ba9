# SPDX-License-Identifier: Apache-2.0
"""The hand-written pages (docs/pages/*.md, howto/*.md), with two additions resolved here:

    [text](repo:examples/06_custom_kernel/custom_kernel.cu)   a link to a repository file
                                                              (its site page or its copy)
    <!-- include: examples/consumer/main.cpp -->              the file itself, as a code block

so a page's code is the repository's code and its file links are checked at every build.
Links between site pages are ordinary relative Markdown links."""
import re

from .links import link_to
from .site import ROOT, read

PAGES = ROOT / "docs" / "pages"
REPO_LINK = re.compile(r"\]\(repo:([^)#\s]+)(#[^)\s]*)?\)")
INCLUDE = re.compile(r"^<!-- include: (\S+)(?: lines (\d+)-(\d+))? -->$", re.M)
LANGUAGE = {".cpp": "cpp", ".cu": "cuda", ".cuh": "cuda", ".hpp": "cpp", ".py": "python", ".txt": "cmake",
            ".cmake": "cmake", ".sh": "bash"}


def expand(site, page, text):
    def include(m):
        path, first, last = m.group(1), m.group(2), m.group(3)
        lines = read(path).splitlines()
        if first:
            lines = lines[int(first) - 1:int(last)]
        suffix = "." + path.rsplit(".", 1)[-1]
        language = LANGUAGE.get(suffix, "text")
        return f'```{language} title="{path}"\n' + "\n".join(lines) + "\n```"

    def link(m):
        if not (ROOT / m.group(1)).exists():
            raise FileNotFoundError(f"docs/pages/{page} links to repo:{m.group(1)}, which does not exist")
        return "](" + link_to(site, page, m.group(1), m.group(2) or "") + ")"

    return REPO_LINK.sub(link, INCLUDE.sub(include, text))


def build(site, names):
    """Adds docs/pages/<name> for each name (e.g. "howto/transform.md"); returns the page paths."""
    for name in names:
        site.add_page(name, expand(site, name, (PAGES / name).read_text(encoding="utf-8")))
    return list(names)
