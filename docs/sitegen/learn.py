# SPDX-License-Identifier: Apache-2.0
"""The learning-path pages (learn/<family>.md): the hand-written introduction
(docs/pages/learn/<family>.md), an overview table and plot of the progression at one
size, then one section per numbered step file: its header comment, a link to the file,
its measured H200 figures, and its code folded under the text."""
from . import figures, plots, steps
from .families import FAMILIES
from .links import file_linker
from .site import ROOT

PAGES = ROOT / "docs" / "pages"


def anchor(step, folder_index):
    return f"step-{folder_index + 1}-{step.number:02d}" if folder_index else f"step-{step.number:02d}"


def figure_table(step_path, page):
    """The step's measured rows, one table per benchmark row prefix."""
    out = []
    for json_name, prefix, cells in figures.step_rows(step_path):
        if not cells:
            continue
        fp32_or_bandwidth = "/fp32/" in f"/{prefix}/" or cells[0][2] == "GB/s"
        out += ["", f"`{prefix}` ({json_name}):", "",
                "| problem | rate | compared in the same run |" + (" % of FP32/bandwidth peak |" if fp32_or_bandwidth
                                                                   else ""),
                "|---|---|---|" + ("---|" if fp32_or_bandwidth else "")]
        for size, value, unit, comparison, peak in cells:
            row = f"| {size} | {value:.4g} {unit} | {comparison or '-'} |"
            if fp32_or_bandwidth:
                row += f" {peak * 100:.0f}% |" if peak is not None else " - |"
            out.append(row)
    if not out:
        return ["", "*Not measured on the H200* (no benchmark row in benchmarks/results/h200/ times this step "
                "alone; see the section's text)."]
    device = figures.device_line(figures.STEP_ROWS[step_path][0][0])
    return ["", f'??? info "Measured on the H200 ({device})"'] + ["    " + l if l else "" for l in out]


def headline(step_path, size):
    """(value, unit, comparison, row prefix) of the step's first row at the family's headline size, or None."""
    for _, prefix, cells in figures.step_rows(step_path):
        for cell_size, value, unit, comparison, _ in cells:
            if cell_size == size:
                return value, unit, comparison, prefix
    return None


def step_section(site, page, step, folder_index, folder, size):
    link = site.source_link(page, step.path)
    linker = file_linker(site, page, (folder, folder.rsplit("/", 1)[0], "include/kernelforge", "include",
                                      "src/" + folder.split("/kernels/")[1].split("/")[0]))
    top = headline(step.path, size)
    title = step.title[len(step.name) + 1:].strip() if step.title.startswith(step.name + ":") else step.title
    lines = [f"### Step {step.number}: {step.name} {{#{anchor(step, folder_index)}}}", "",
             f"*{steps.escape(title[:1].upper() + title[1:], None)}*", "",
             f"Source: [`{step.path}`]({link}) ({len(step.code.splitlines())} lines)."]
    if top:
        value, unit, comparison, prefix = top
        lines += ["", f"**On the H200 at {size}: {value:.4g} {unit}**" + (f" ({comparison})" if comparison else "")
                  + f", row `{prefix}`."]
    lines += ["", steps.comment_markdown(step.comment, linker).rstrip()]
    lines += figure_table(step.path, page)
    code = step.code.rstrip("\n")
    lines += ["", f'??? example "The code: {step.path.rsplit("/", 1)[1]}"', "", "    ```cuda"]
    lines += ["    " + l if l else "" for l in code.splitlines()] + ["    ```"]
    return lines


def overview(site, page, family, all_steps):
    """The progression at the headline size: a table and a plot."""
    rows, bars = [], []
    for folder_index, step in all_steps:
        top = headline(step.path, family.headline)
        label = f"{step.number}. {step.name}" if not folder_index else f"grad {step.number}. {step.name}"
        cell = f"{top[0]:.4g} {top[1]}" if top else "not measured on the H200"
        rows.append(f"| [{label}](#{anchor(step, folder_index)}) | {cell} | {(top[2] if top else '') or '-'} | "
                    f"{f'`{top[3]}`' if top else '-'} |")
        if top and (not bars or bars[0][3] == top[1]):
            bars.append((label, top[0], top[2].split(",")[0] if top[2] else "", top[1]))
    out = [f"## The progression at {family.headline}", "",
           "| step | H200 | compared in the same run | benchmark row |", "|---|---|---|---|"] + rows
    if bars:
        png = f"learn/{family.slug}-progression.png"
        reason = plots.progression(site.made_file(png), f"kernelforge {family.slug} steps on the H200 at "
                                   f"{family.headline}", [b[:3] for b in bars], bars[0][3])
        out += ["", f"![The {family.slug} progression on the H200]({family.slug}-progression.png)" if reason is None
                else f"(No plot: {reason}.)"]
    return out


def family_page(site, family):
    page = f"learn/{family.slug}.md"
    intro = (PAGES / "learn" / f"{family.slug}.md").read_text(encoding="utf-8").rstrip()
    all_steps = [(i, steps.read_step(path)) for i, (folder, _) in enumerate(family.folders)
                 for path in steps.step_files(folder)]
    lines = [intro, ""] + overview(site, page, family, all_steps)
    for i, (folder, section) in enumerate(family.folders):
        lines += ["", f"## {section}", "", f"The numbered files of `{folder}/`, in reading order."]
        for index, step in all_steps:
            if index == i:
                lines += [""] + step_section(site, page, step, i, folder, family.headline)
    return site.add_page(page, "\n".join(lines))


def build(site):
    pages = [family_page(site, family) for family in FAMILIES]
    index = (PAGES / "learn" / "index.md").read_text(encoding="utf-8")
    site.add_page("learn/index.md", index)
    return ["learn/index.md"] + pages
