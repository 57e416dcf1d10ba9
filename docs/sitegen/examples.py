# SPDX-License-Identifier: Apache-2.0
"""The examples' pages (examples/<name>.md): each example folder's README as it is, its
relative links made to work on the site, and links to the folder's source files."""
from .links import rewrite_links
from .site import ROOT, read


def example_folders():
    return sorted(p.name for p in (ROOT / "examples").iterdir() if (p / "README.md").is_file())


def build(site):
    pages = []
    for name in example_folders():
        page = f"examples/{name}.md"
        text = rewrite_links(site, page, f"examples/{name}/README.md", read(f"examples/{name}/README.md"))
        files = sorted(p for p in (ROOT / "examples" / name).iterdir()
                       if p.is_file() and p.suffix in (".cu", ".cpp", ".hpp", ".txt", ".py"))
        links = ", ".join(f"[`{p.name}`]({site.source_link(page, f'examples/{name}/{p.name}')})" for p in files)
        pages.append(site.add_page(page, text.rstrip() + f"\n\nThe folder's files: {links}.\n"))
    return pages
