# SPDX-License-Identifier: Apache-2.0
"""The Project pages: supported GPUs and systems (docs/pages/project/support.md), and the
repository's own CONTRIBUTING.md and CHANGELOG.md as they are (one text, two places to read it),
their relative links made to work on the site."""
import re

from . import handwritten
from .links import PROJECT_FILES, rewrite_links
from .site import read

LEADING_COMMENT = re.compile(r"\A<!--.*?-->\s*", re.S)  # the file's own note on what it is, not for readers


def build(site):
    pages = handwritten.build(site, ["project/support.md"])
    for repo_path, page in PROJECT_FILES.items():
        text = LEADING_COMMENT.sub("", read(repo_path))
        pages.append(site.add_page(page, rewrite_links(site, page, repo_path, text)))
    return pages
