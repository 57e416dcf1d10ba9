# SPDX-License-Identifier: Apache-2.0
"""The numbered step files of a progression (include/kernelforge/kernels/<family>/NN_name.cuh)
and their header comments, turned into Markdown.

A step file opens with an SPDX line and then a comment whose first line is
"Step N -- name: what it does" ("Gradient step N", "FP8 step N" in the branches);
the comment ends at the first line that is not a // comment (#pragma once)."""
import html
import re
from dataclasses import dataclass

from .site import ROOT

STEP_FILE = re.compile(r"^(\d\d)_(\w+)\.cuh$")
TITLE = re.compile(r"^(?:[\w-]+ )?[Ss]tep \d+\s*--\s*(.*)$")


@dataclass
class Step:
    path: str        # repository path, posix
    number: int
    name: str        # from the file name: warp_tiled
    title: str       # the header's first sentence, after "Step N --"
    comment: list    # the header comment's lines after the title line, "// " stripped
    code: str        # the whole file


def step_files(directory):
    """The numbered .cuh files directly in `directory` (a repository path), in order."""
    folder = ROOT / directory
    found = sorted(p for p in folder.iterdir() if p.is_file() and STEP_FILE.match(p.name))
    return [str(p.relative_to(ROOT)).replace("\\", "/") for p in found]


def read_step(path):
    text = (ROOT / path).read_text(encoding="utf-8")
    lines = []
    for line in text.splitlines():
        if not line.startswith("//"):
            break
        body = line[2:]
        lines.append(body[1:] if body.startswith(" ") else body)
    lines = [l for l in lines if not l.startswith("SPDX-License-Identifier")]
    if not lines:
        raise ValueError(f"{path}: no header comment (a step file starts with one that says what the step does)")
    m = TITLE.match(lines[0])
    title = m.group(1) if m else lines[0]
    number, name = STEP_FILE.match(path.rsplit("/", 1)[1]).groups()
    # The title sentence may continue on the next lines, up to the first blank one.
    rest = lines[1:]
    while rest and rest[0].strip() and not rest[0].startswith(" ") and not title.rstrip().endswith("."):
        title += " " + rest.pop(0).strip()
    return Step(path, int(number), name, title.strip(), rest, text)


# ---- the comment as Markdown ----------------------------------------------------------------------------
INLINE_CODE = re.compile(r"(`[^`]+`)")
ITEM = re.compile(r"^(\s*)([*-]|\d+\.|(?<=\s)\([A-Za-z0-9]\))\s+(.*)$")  # "(A)" only when indented
# Repository paths and file names a comment mentions, linked by the page builder's linker.
PATH_TOKEN = re.compile(r"(?<![\w/.])((?:[\w-]+/)*[\w-]+\.(?:cuh|hpp|cpp|cu|md|py|cmake)(?:#[\w-]+)?)")


def literal(text):
    """Text shown as it is: no Markdown or HTML meaning."""
    return re.sub(r"([\\*_\[\]|#`])", r"\\\1", html.escape(text, quote=False))


def escape(text, linker=None):
    """Prose from a C++ comment, safe as Markdown: code spans kept, file names linked
    where linker(name) gives a URL, everything else literal."""
    out = []
    for i, part in enumerate(INLINE_CODE.split(text)):
        if i % 2:
            out.append(part)
            continue
        for j, piece in enumerate(PATH_TOKEN.split(part)):
            url = linker(piece) if (j % 2 and linker) else None
            out.append(f"[{literal(piece)}]({url})" if url else literal(piece))
    return "".join(out)


def comment_markdown(lines, linker=None):
    """Paragraphs, bullet and numbered lists, and indented formulas as code blocks."""
    blocks = []          # (kind, [lines]) with kind in para, item, code
    indent_of_item = None
    for raw in lines:
        if not raw.strip():
            blocks.append(("blank", []))
            indent_of_item = None
            continue
        indent = len(raw) - len(raw.lstrip())
        item = ITEM.match(raw)
        if item:
            indent_of_item = len(item.group(1))
            blocks.append(("item", [indent_of_item, item.group(2), item.group(3)]))
        elif indent_of_item is not None and indent > indent_of_item:
            blocks[-1][1].append(raw.strip())          # continues the list item
        elif indent >= 2:
            if blocks and blocks[-1][0] == "code":
                blocks[-1][1].append(raw.rstrip())
            else:
                blocks.append(("code", [raw.rstrip()]))
            indent_of_item = None
        else:
            indent_of_item = None
            if blocks and blocks[-1][0] == "para":
                blocks[-1][1].append(raw.strip())
            else:
                blocks.append(("para", [raw.strip()]))
    out = []
    for kind, body in blocks:
        if kind == "blank":
            continue
        if kind == "para":
            out += ["", escape(" ".join(body), linker)]
        elif kind == "code":
            width = min(len(l) - len(l.lstrip()) for l in body)
            out += ["", "```text"] + [l[width:] for l in body] + ["```"]
        else:
            level, marker, first = body[0], body[1], body[2:]
            marker = marker if marker[0].isdigit() else ("- " + escape(marker) if marker.startswith("(") else "-")
            prefix = "    " * min(level // 2, 2) if level >= 2 else ""
            if out and out[-1].lstrip()[:1] not in ("-",) and not out[-1].lstrip()[:1].isdigit():
                out.append("")
            out.append(f"{prefix}{marker} {escape(' '.join(first), linker)}")
    return "\n".join(out).strip() + "\n"
