#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Tests of the documentation site's generator (docs/build_site.py), on the repository as it is:
the site shows every numbered step file on its family's page (with the step's H200 figure
where one is committed) and in the repository's layout (howto/build.md), every public header in the C++ reference, every function of the compiled
module (its type stub) with its signature in the Python reference, every results folder on
Compare GPUs; its pages link only to files that exist; no page is empty; and, when mkdocs is
installed, `mkdocs build --strict` passes (broken links, missing anchors, pages left out of
the navigation all fail it).

    python3 -m pytest docs          # or: python3 docs/test_build_site.py
"""
import importlib.util
import pathlib
import re
import subprocess
import sys
import tempfile
import unittest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import build_site  # noqa: E402
from sitegen import compare, families, figures, reference_cpp, reference_python  # noqa: E402
from sitegen.site import ROOT  # noqa: E402

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCED = re.compile(r"^\s*```.*?^\s*```", re.M | re.S)  # code blocks: their brackets are not links
OUT = None  # the build tree every test reads: made once, by setUpModule
SITE = None


def setUpModule():
    global OUT, SITE
    OUT = pathlib.Path(tempfile.mkdtemp(prefix="kf-docs-test-"))
    SITE = build_site.generate(OUT)


def tearDownModule():
    import shutil
    shutil.rmtree(OUT, ignore_errors=True)


def page_text(page):
    return (OUT / "docs" / page).read_text(encoding="utf-8")


def all_step_files():
    return sorted(str(p.relative_to(ROOT)).replace("\\", "/")
                  for p in (ROOT / "include" / "kernelforge" / "kernels").rglob("*.cuh")
                  if re.match(r"^\d\d_\w+\.cuh$", p.name))


class LearningPath(unittest.TestCase):
    def test_every_step_file_has_a_family(self):
        folders = set(families.every_step_folder())
        for path in all_step_files():
            self.assertIn(path.rsplit("/", 1)[0], folders, f"{path}: its folder is on no learning-path page "
                                                           f"(docs/sitegen/families.py)")

    def test_every_step_file_is_on_its_family_page(self):
        for family in families.FAMILIES:
            text = page_text(f"learn/{family.slug}.md")
            for folder, _ in family.folders:
                for path in (p for p in all_step_files() if p.rsplit("/", 1)[0] == folder):
                    number = int(path.rsplit("/", 1)[1][:2])
                    self.assertIn(f"source/{path}", text, f"{path} is not linked from learn/{family.slug}.md")
                    self.assertRegex(text, rf"### Step {number}: ", f"{path}: no section on learn/{family.slug}.md")

    def test_steps_with_committed_rows_show_their_figure(self):
        for family in families.FAMILIES:
            text = page_text(f"learn/{family.slug}.md")
            for folder, _ in family.folders:
                for path in (p for p in all_step_files() if p.rsplit("/", 1)[0] == folder):
                    rows = [r for r in figures.step_rows(path) if r[2]]
                    for json_name, prefix, _ in rows:
                        self.assertIn(f"`{prefix}` ({json_name})", text, f"{path}: its figure is missing")
                    if figures.STEP_ROWS[path]:
                        self.assertTrue(rows, f"{path}: STEP_ROWS names rows that the committed JSON lacks")

    def test_the_layout_lists_every_step(self):
        # docs/pages/howto/build.md's Layout names each step as <folder>/ ... NN_name, within its folder's block
        layout = page_text("howto/build.md").split("## Layout", 1)[1].split("```", 2)[1]
        blocks = dict(re.findall(r"^    (\S+/)\s+(.*?)(?=^    \S+/\s|^  \S|\Z)", layout, re.M | re.S))
        for path in all_step_files():
            folder = path.split("/kernels/", 1)[1].rsplit("/", 1)[0] + "/"
            stem = path.rsplit("/", 1)[1][:-len(".cuh")]
            self.assertIn(folder, blocks, f"{path}: the layout (docs/pages/howto/build.md) has no {folder} line")
            self.assertRegex(blocks[folder], rf"\b{stem}\b", f"{path}: not in the layout's {folder} line "
                                                               "(docs/pages/howto/build.md)")

    def test_header_comment_is_shown(self):
        text = page_text("learn/matmul.md")
        self.assertIn("What it leaves on the table", text)  # 01_naive.cuh's own words


class Reference(unittest.TestCase):
    def test_every_public_header_has_a_page(self):
        nav = str(SITE.nav)
        for header in reference_cpp.public_headers():
            name = header.rsplit("/", 1)[1]
            self.assertIn(f"reference/cpp/{name}.md", SITE.pages, header)
            self.assertIn(f"reference/cpp/{name}.md", nav, header)

    def test_python_api_has_the_public_functions(self):
        text = page_text("reference/python/kernelforge.md")
        for name in ("matmul", "conv2d", "relu_threshold", "device_info", "scaled_matmul"):
            self.assertIn(f"## `kernelforge.{name}`", text)

    def test_every_compiled_function_has_its_signature(self):
        # kernelforge._C's public functions, read from the committed stub python/kernelforge/_C.pyi
        import ast
        text = page_text(reference_python.COMPILED_PAGE)
        stub = ast.parse((ROOT / "python" / "kernelforge" / "_C.pyi").read_text(encoding="utf-8"))
        functions = [n for n in stub.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")]
        self.assertTrue(functions, "python/kernelforge/_C.pyi defines no public function")
        for node in functions:
            section = text.split(f"## `kernelforge._C.{node.name}`", 1)
            self.assertEqual(len(section), 2, f"_C.{node.name} has no section on {reference_python.COMPILED_PAGE}")
            section = section[1].split("\n## ", 1)[0]
            self.assertIn(f"def {reference_python.signature(node)}", section, f"_C.{node.name}: no signature")
            self.assertIn("Defined in the compiled module", section)
            if ast.get_docstring(node):
                self.assertIn(ast.get_docstring(node), section, f"_C.{node.name}: its docstring is not shown")

    def test_python_functions_link_the_compiled_ones_they_call(self):
        text = page_text("reference/python/kernelforge.md")
        matmul = text.split("## `kernelforge.matmul`", 1)[1].split("\n## ", 1)[0]
        self.assertIn("[`_C.matmul`](compiled.md#_C-matmul)", matmul)
        torch_text = page_text("reference/python/torch.md")
        conv = torch_text.split("## `kernelforge.torch.conv2d`", 1)[1].split("\n## ", 1)[0]
        self.assertIn("[`_C.conv2d`](compiled.md#_C-conv2d)", conv)  # through _torch_conv's helpers


class Results(unittest.TestCase):
    def test_every_results_folder_and_file_is_shown(self):
        index = page_text("compare/index.md")
        for folder in compare.result_folders():
            self.assertIn(f"({folder.name}.md)", index)
            text = page_text(f"compare/{folder.name}.md")
            for json_file in compare.benchmark_files(folder):
                self.assertIn(json_file.name, text)


    def test_the_results_readme_lists_every_file(self):
        readme = (ROOT / "benchmarks" / "results" / "README.md").read_text(encoding="utf-8")
        for folder in compare.result_folders():
            for path in sorted(folder.iterdir()):
                self.assertIn(f"{folder.name}/{path.name}", readme, f"benchmarks/results/README.md does not list "
                                                                     f"{folder.name}/{path.name}")


class Pages(unittest.TestCase):
    def test_no_page_is_empty(self):
        for page in SITE.pages:
            body = [l for l in page_text(page).splitlines() if l.strip() and not l.startswith("#")]
            self.assertTrue(body, f"{page} has no text beyond its headings")

    def test_links_point_to_files_that_exist(self):
        docs = OUT / "docs"
        for page in SITE.pages:
            for target in LINK.findall(FENCED.sub("", page_text(page))):
                if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                    continue
                path = (docs / page).parent / target.split("#", 1)[0]
                self.assertTrue(path.exists(), f"{page} links to {target}, which does not exist")

    def test_source_copies_are_the_repository_files(self):
        for site_path, source in SITE.static.items():
            if site_path.startswith("source/"):
                repo = ROOT / site_path[len("source/"):]
                self.assertEqual(repo.read_bytes(), (OUT / "docs" / site_path).read_bytes(), site_path)

    def test_every_page_is_in_the_navigation(self):
        nav = str(SITE.nav)
        for page in SITE.pages:
            self.assertIn(f"'{page}'", nav, f"{page} is not in the navigation")

    def test_the_source_tree_is_not_written(self):
        self.assertFalse((ROOT / "docs" / "docs").exists())
        self.assertNotEqual(OUT.resolve(), ROOT)


@unittest.skipIf(importlib.util.find_spec("mkdocs") is None, "mkdocs is not installed (docs/requirements.txt)")
class MkDocs(unittest.TestCase):
    def test_strict_build(self):
        rc = build_site.mkdocs_build(OUT, strict=True)
        self.assertEqual(rc, 0, "mkdocs build --strict failed: see its warnings above")
        self.assertTrue((OUT / "site" / "learn" / "matmul.html").is_file())
        self.assertTrue((OUT / "site" / "index.html").is_file())


if __name__ == "__main__":
    unittest.main(verbosity=2)
