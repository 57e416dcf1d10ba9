# SPDX-License-Identifier: Apache-2.0
"""Links from site pages to repository files: a Markdown file the site shows as a page
(tuning notes, example READMEs) links to that page; any other file to its copy under
source/ (site.source_link). Used for file names in step comments and for the relative
links of Markdown files copied into the site."""
import posixpath
import re

from .site import ROOT, relative_url

MARKDOWN_LINK = re.compile(r"(!?\[[^\]]*\]\()([^)\s]+)(\))")
PROJECT_FILES = {"CONTRIBUTING.md": "project/contributing.md", "CHANGELOG.md": "project/changelog.md"}


def page_of_markdown(repo_path):
    """The site page that shows a repository Markdown file, or None."""
    if repo_path.startswith("benchmarks/tuning/") and repo_path.endswith(".md"):
        rest = repo_path[len("benchmarks/tuning/"):]
        return "tuning/index.md" if rest == "README.md" else "tuning/" + rest.replace("README.md", "index.md")
    m = re.match(r"^examples/([\w-]+)/README\.md$", repo_path)
    if m:
        return f"examples/{m.group(1)}.md"
    if repo_path == "benchmarks/results/README.md":
        return "compare/results-folder.md"
    if repo_path in PROJECT_FILES:
        return PROJECT_FILES[repo_path]
    if repo_path.startswith("docs/pages/") and repo_path.endswith(".md"):
        return repo_path[len("docs/pages/"):]  # a hand-written page, linked from a repository file
    return None


def slug(heading):
    """The anchor MkDocs (and GitHub) gives a heading: lowercase, punctuation dropped, spaces to hyphens."""
    value = re.sub(r"[^\w\s-]", "", heading).strip().lower()
    return re.sub(r"[-\s]+", "-", value)


def anchors_of(repo_md_path):
    text = (ROOT / repo_md_path).read_text(encoding="utf-8")
    return {slug(m.group(1)) for m in re.finditer(r"^#+\s+(.*?)\s*#*$", text, re.M)}


def link_to(site, page, repo_path, anchor=""):
    """URL from `page` to repository file `repo_path` (its page, or its copy). An anchor the
    Markdown file has no heading for is dropped, and reported (site.warnings)."""
    target = page_of_markdown(repo_path)
    if target:
        if anchor and anchor[1:] not in anchors_of(repo_path):
            site.warnings.append(f"{page}: {repo_path}{anchor}: no such heading; linked to the page's top")
            anchor = ""
        return relative_url(page, target) + anchor
    return site.source_link(page, repo_path) + anchor


def file_linker(site, page, search_dirs):
    """linker(token) for steps.escape: a file name or path found in the repository, tried as
    written and then under each of search_dirs (repository folders); None where none exists."""
    def linker(token):
        name, _, anchor = token.partition("#")
        for base in ("",) + tuple(search_dirs):
            candidate = posixpath.normpath(posixpath.join(base, name))
            if (ROOT / candidate).is_file():
                return link_to(site, page, candidate, "#" + anchor if anchor else "")
        return None
    return linker


def rewrite_links(site, page, repo_md_path, text):
    """The relative links of a repository Markdown file, made to work from its site page."""
    base = posixpath.dirname(repo_md_path)

    def fix(m):
        target = m.group(2)
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            return m.group(0)
        path, _, anchor = target.partition("#")
        repo_path = posixpath.normpath(posixpath.join(base, path))
        if (ROOT / repo_path).is_dir() and (ROOT / repo_path / "README.md").is_file():
            repo_path += "/README.md"
        if not (ROOT / repo_path).is_file():
            raise FileNotFoundError(f"{repo_md_path} links to {target}, which does not exist")
        return m.group(1) + link_to(site, page, repo_path, "#" + anchor if anchor else "") + m.group(3)
    return MARKDOWN_LINK.sub(fix, text)
