# SPDX-License-Identifier: Apache-2.0
"""The C++ API reference: one page per public header (include/kernelforge/*.hpp, *.cuh) at
reference/cpp/<header>.md, with the header's own top comment and, from Doxygen's XML, every
type and function it declares with its /// comment; Doxygen's HTML is copied beside them
(reference/cpp/doxygen/). Without doxygen the pages keep the top comments and say so."""
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET

from . import steps
from .site import ROOT

DOXYFILE = ROOT / "docs" / "Doxyfile.in"


def public_headers():
    folder = ROOT / "include" / "kernelforge"
    return sorted(f"include/kernelforge/{p.name}" for p in folder.iterdir() if p.suffix in (".hpp", ".cuh"))


def run_doxygen(out_dir, headers):
    """Runs doxygen into out_dir; returns None, or why there is no Doxygen output."""
    if shutil.which("doxygen") is None:
        return "doxygen is not installed (Debian/Ubuntu: apt-get install doxygen)"
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    config = DOXYFILE.read_text(encoding="utf-8").replace("@OUTPUT@", str(out_dir)).replace("@ROOT@", str(ROOT))
    config = config.replace("@INPUT@", " ".join(str(ROOT / h) for h in headers))
    (out_dir / "Doxyfile").write_text(config, encoding="utf-8")
    done = subprocess.run(["doxygen", str(out_dir / "Doxyfile")], cwd=out_dir, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"doxygen failed:\n{done.stdout}\n{done.stderr}")
    return None


def text_of(element):
    if element is None:
        return ""
    return re.sub(r"\s+", " ", "".join(element.itertext())).strip()


def description(element):
    return " ".join(t for t in (text_of(element.find("briefdescription")),
                                text_of(element.find("detaileddescription"))) if t)


def declarations(xml_dir):
    """{header path: {"types": [...], "functions": [...], "html": file page}} from Doxygen's XML."""
    found = {}
    index = ET.parse(xml_dir / "index.xml").getroot()
    for compound in index.findall("compound"):
        root = ET.parse(xml_dir / f"{compound.get('refid')}.xml").getroot()
        for cdef in root.findall("compounddef"):
            kind = cdef.get("kind")
            location = cdef.find("location")
            if kind == "file":
                found.setdefault(location.get("file"), {"types": [], "functions": []})["html"] = \
                    cdef.get("id") + ".html"
                continue
            if kind in ("struct", "class") and location is not None:
                fields = [(text_of(m.find("definition")), description(m))
                          for m in cdef.iter("memberdef") if m.get("prot") == "public"]
                entry = found.setdefault(location.get("file"), {"types": [], "functions": []})
                entry["types"].append((f"{kind} {text_of(cdef.find('compoundname'))}", description(cdef), fields))
            if kind not in ("namespace", "file"):
                continue
            for m in cdef.iter("memberdef"):
                where = m.find("location").get("file")
                entry = found.setdefault(where, {"types": [], "functions": []})
                if m.get("kind") == "enum":
                    values = [(text_of(v.find("name")), description(v)) for v in m.findall("enumvalue")]
                    entry["types"].append((f"enum {text_of(m.find('qualifiedname')) or text_of(m.find('name'))}",
                                           description(m), values))
                elif m.get("kind") in ("function", "typedef", "variable"):
                    signature = text_of(m.find("definition")) + text_of(m.find("argsstring"))
                    entry["functions"].append((signature, description(m)))
    return found


def top_comment(header):
    lines = []
    for line in (ROOT / header).read_text(encoding="utf-8").splitlines():
        if not line.startswith("//"):
            break
        if "SPDX-License-Identifier" not in line:
            lines.append(line[3:] if line.startswith("// ") else line[2:])
    return steps.comment_markdown(lines) if lines else "(no top comment)"


def header_page(site, header, decl, missing_reason):
    name = header.rsplit("/", 1)[1]
    page = f"reference/cpp/{name}.md"
    lines = [f"# `<kernelforge/{name}>`", "", top_comment(header).rstrip(), "",
             f"Source: [`{header}`]({site.source_link(page, header)})."]
    if decl is None:
        lines += ["", f"*No Doxygen reference here: {missing_reason}.*"]
        return site.add_page(page, "\n".join(lines))
    if decl.get("html"):
        lines[-1] += f" Doxygen's page: [{name}](doxygen/{decl['html']})."
    for kind, what, fields in decl["types"]:
        lines += ["", f"## `{kind}`", "", steps.literal(what) or "(undocumented)"]
        if fields:
            lines += ["", "| member | description |", "|---|---|"]
            lines += [f"| `{f}` | {steps.literal(d) or ' '} |" for f, d in fields]
    if decl["functions"]:
        lines += ["", "## Functions and names", ""]
        for signature, what in decl["functions"]:
            lines += [f"```cpp\n{signature}\n```", "", steps.literal(what) or "(undocumented)", ""]
    return site.add_page(page, "\n".join(lines))


def build(site, doxygen_dir, use_doxygen=True):
    headers = public_headers()
    reason = run_doxygen(doxygen_dir, headers) if use_doxygen else "built with --no-doxygen"
    decls = declarations(doxygen_dir / "xml") if reason is None else {}
    if reason is None:
        for html in (doxygen_dir / "html").rglob("*"):
            if html.is_file():
                site.add_static(f"reference/cpp/doxygen/{html.relative_to(doxygen_dir / 'html').as_posix()}", html)
    pages = [header_page(site, h, decls.get(h, {"types": [], "functions": []}) if reason is None else None, reason)
             for h in headers]
    index = ["# The C++ API", "",
             "Everything is in namespace `kf`; `<kernelforge/kernelforge.hpp>` includes every host-only header. "
             "The `.hpp` headers compile without nvcc; the `.cuh` headers hold the device templates a CUDA user "
             "instantiates in their own `.cu` (kf::transform, the epilogue functors).", "",
             "| header | what it declares |", "|---|---|"]
    for header, page in zip(headers, pages):
        first = top_comment(header).strip().split("\n")[0]
        index.append(f"| [`{header.rsplit('/', 1)[1]}`]({page.rsplit('/', 1)[1]}) | {first.replace('|', '/')} |")
    if reason is None:
        index += ["", "Doxygen's own pages: [index](doxygen/index.html)."]
    else:
        index += ["", f"*No Doxygen reference in this build: {reason}.*"]
    return [site.add_page("reference/cpp/index.md", "\n".join(index))] + pages
