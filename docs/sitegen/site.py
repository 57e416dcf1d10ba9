# SPDX-License-Identifier: Apache-2.0
"""The site being generated: its Markdown pages and static files, held in memory
until write() puts them under the build tree's docs/ folder (never the source tree).

Pages link to repository files through source_link(): the file is copied into the
site under source/<its repository path>, so every link resolves offline and a link
to a file that does not exist fails at once instead of in a reader's browser."""
import os
import pathlib
import posixpath
import shutil

ROOT = pathlib.Path(__file__).resolve().parents[2]  # the repository root
SOURCE_PREFIX = "source"  # repository files copied into the site live under source/


class Site:
    def __init__(self, work_dir):
        self.work_dir = pathlib.Path(work_dir)  # files made for the site (plots, Doxygen) before they are copied
        self.pages = {}    # page path (posix, relative to docs/) -> Markdown text
        self.static = {}   # site path -> source file (pathlib.Path) to copy
        self.nav = []      # MkDocs nav (build_site.py)
        self.warnings = []  # what the sources get wrong that the site works around (a stale anchor)

    def add_page(self, path, text):
        if path in self.pages:
            raise ValueError(f"page {path} generated twice")
        if not text.strip():
            raise ValueError(f"page {path} is empty")
        self.pages[path] = text.rstrip() + "\n"
        return path

    def add_static(self, site_path, source):
        self.static[site_path] = pathlib.Path(source)
        return site_path

    def made_file(self, site_path):
        """A path in the work folder for a file to be made (a plot); it is copied to site_path."""
        out = self.work_dir / "made" / site_path
        out.parent.mkdir(parents=True, exist_ok=True)
        self.add_static(site_path, out)
        return out

    def source_link(self, page, repo_path):
        """Relative URL from `page` to the site's copy of repository file `repo_path`."""
        repo_path = str(repo_path).replace(os.sep, "/").lstrip("./")
        src = ROOT / repo_path
        if not src.is_file():
            raise FileNotFoundError(f"{page} links to {repo_path}, which is not a file of the repository")
        target = f"{SOURCE_PREFIX}/{repo_path}"
        self.add_static(target, src)
        return relative_url(page, target)

    def write(self, docs_dir):
        docs_dir = pathlib.Path(docs_dir)
        if docs_dir.exists():
            shutil.rmtree(docs_dir)
        for path, text in self.pages.items():
            out = docs_dir / path
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(text, encoding="utf-8")
        for path, src in self.static.items():
            if not src.exists():  # a plot that could not be drawn: its page says why
                continue
            out = docs_dir / path
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, out)


def relative_url(from_page, to_path):
    """The relative link from page `from_page` to site path `to_path` (both posix, docs/-relative)."""
    return posixpath.relpath(to_path, posixpath.dirname(from_page) or ".")


def read(repo_path):
    return (ROOT / repo_path).read_text(encoding="utf-8")
