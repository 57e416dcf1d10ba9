# SPDX-License-Identifier: Apache-2.0
"""The Python API reference (reference/python/*.md), read from the package's source with
the standard library's ast: no build of the compiled module and no import of torch. Each
public name of `kernelforge` (its __all__) and of `kernelforge.torch` gets its signature
and docstring, taken from the module that defines it."""
import ast

from .site import ROOT

PACKAGE = ROOT / "python" / "kernelforge"
MODULES = (("kernelforge", "__init__.py", "reference/python/kernelforge.md"),
           ("kernelforge.torch", "torch.py", "reference/python/torch.md"))


def parse(file_name):
    return ast.parse((PACKAGE / file_name).read_text(encoding="utf-8"), filename=file_name)


def public_names(tree):
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return [ast.literal_eval(e) for e in node.value.elts]
    return [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and not n.name.startswith("_")]


def definitions(tree, file_name, seen=None):
    """{name: (node, file)} of the module's own definitions and those it imports from the package."""
    seen = seen if seen is not None else set()
    seen.add(file_name)
    found = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            found[node.name] = (node, file_name)
        elif isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            source = node.module.replace(".", "/") + ".py"
            if (PACKAGE / source).is_file() and source not in seen:
                imported = definitions(parse(source), source, seen)
                for alias in node.names:
                    if alias.name in imported:
                        found[alias.asname or alias.name] = imported[alias.name]
    return found


def signature(node):
    args = ast.unparse(node.args)
    return f"{node.name}({args})"


def describe(name, node, file_name, module):
    doc = ast.get_docstring(node) or "(no docstring)"
    kind = "class" if isinstance(node, ast.ClassDef) else "def"
    head = f"{name}" if isinstance(node, ast.ClassDef) else signature(node).replace(node.name, name, 1)
    if isinstance(node, ast.ClassDef) and node.bases:
        head += "(" + ", ".join(ast.unparse(b) for b in node.bases) + ")"
    lines = [f"## `{module}.{name}`", "", f"```python\n{kind} {head}\n```", "", "```text", doc, "```", "",
             f"Defined in `python/kernelforge/{file_name}`."]
    if isinstance(node, ast.ClassDef):
        for item in node.body:
            if isinstance(item, ast.FunctionDef) and (not item.name.startswith("_") or item.name == "__init__"):
                lines += ["", f"### `{name}.{item.name}`", "", f"```python\ndef {signature(item)}\n```"]
                if ast.get_docstring(item):
                    lines += ["", "```text", ast.get_docstring(item), "```"]
    return lines


def module_page(module, file_name):
    tree = parse(file_name)
    defs = definitions(tree, file_name)
    lines = [f"# `{module}`", "", "```text", ast.get_docstring(tree) or "", "```"]
    missing = []
    for name in public_names(tree):
        if name in defs:
            lines += [""] + describe(name, *defs[name], module)
        elif not name.startswith("__"):
            missing.append(name)
    if missing:
        lines += ["", "## Other names", "", "Defined outside the package's Python source (the compiled module) "
                  "or as values: " + ", ".join(f"`{n}`" for n in missing) + "."]
    return "\n".join(lines)


def build(site):
    pages = []
    for module, file_name, page in MODULES:
        pages.append(site.add_page(page, module_page(module, file_name)))
    return pages
