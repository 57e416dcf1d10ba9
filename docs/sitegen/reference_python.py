# SPDX-License-Identifier: Apache-2.0
"""The Python API reference (reference/python/*.md), read from the package's source with
the standard library's ast: no build of the compiled module and no import of torch. Each
public name of `kernelforge` (its __all__) and of `kernelforge.torch` gets its signature
and docstring, taken from the module that defines it. The compiled module kernelforge._C
is read from its type stub, python/kernelforge/_C.pyi (nanobind's stubgen writes it when
the package is built; the committed copy is checked against it by
python/tests/test_stub.py): its functions get a page of their own, and each Python-defined
name says which of them it calls."""
import ast
import functools
import re

from .site import ROOT

PACKAGE = ROOT / "python" / "kernelforge"
BINDINGS = ROOT / "python" / "src"
STUB = "_C.pyi"
COMPILED_PAGE = "reference/python/compiled.md"
MODULES = (("kernelforge", "__init__.py", "reference/python/kernelforge.md"),
           ("kernelforge.torch", "torch.py", "reference/python/torch.md"))


@functools.lru_cache(maxsize=None)
def parse(file_name):
    return ast.parse((PACKAGE / file_name).read_text(encoding="utf-8"), filename=file_name)


def public_names(tree):
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return [ast.literal_eval(e) for e in node.value.elts]
    return [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and not n.name.startswith("_")]


def compiled_definitions():
    """{name: node} of the compiled module's public functions and classes, from its stub."""
    return {n.name: n for n in parse(STUB).body
            if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and not n.name.startswith("_")}


def compiled_values():
    """[(name, annotation)] of the compiled module's public values (`dtype_codes: dict`), from its stub."""
    return [(n.target.id, ast.unparse(n.annotation)) for n in parse(STUB).body
            if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and not n.target.id.startswith("_")]


@functools.lru_cache(maxsize=None)
def binding_files():
    """{name: python/src/<file>.cpp} of what the bindings define (m.def("name", ...), m.attr("name"))."""
    found = {}
    for path in sorted(BINDINGS.glob("*.cpp")):
        for name in re.findall(r'\bm\.(?:def|attr)\(\s*"(\w+)"', path.read_text(encoding="utf-8")):
            found.setdefault(name, str(path.relative_to(ROOT)).replace("\\", "/"))
    return found


def definitions(tree, file_name, seen=None):
    """{name: (node, file)} of the module's own definitions and those it imports from the package;
    names taken from the compiled module (`from ._C import f`, `f = _C.f`) have file _C.pyi."""
    seen = seen if seen is not None else set()
    seen.add(file_name)
    found = {}
    compiled = compiled_definitions()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            found[node.name] = (node, file_name)
        elif isinstance(node, ast.ImportFrom) and node.level == 1 and node.module == "_C":
            for alias in node.names:
                if alias.name in compiled:
                    found[alias.asname or alias.name] = (compiled[alias.name], STUB)
        elif isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            source = node.module.replace(".", "/") + ".py"
            if (PACKAGE / source).is_file() and source not in seen:
                imported = definitions(parse(source), source, seen)
                for alias in node.names:
                    if alias.name in imported:
                        found[alias.asname or alias.name] = imported[alias.name]
        elif (isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute)
              and isinstance(node.value.value, ast.Name) and node.value.value.id == "_C"
              and node.value.attr in compiled):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found[target.id] = (compiled[node.value.attr], STUB)
    return found


@functools.lru_cache(maxsize=None)
def scope(file_name):
    """The module-level functions and classes a package file can call by name, and its
    package modules by local name (`from . import _torch_conv as _conv`)."""
    tree = parse(file_name)
    return {k: v for k, v in definitions(tree, file_name).items() if v[1] != STUB}, package_modules(tree)


def package_modules(tree):
    """{local name: file} of the package modules `tree` imports (`from . import _torch_conv as _conv`)."""
    modules = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1 and not node.module:
            for alias in node.names:
                if (PACKAGE / f"{alias.name}.py").is_file():
                    modules[alias.asname or alias.name] = f"{alias.name}.py"
    return modules


def compiled_calls(node, file_name, seen=None):
    """The public compiled functions a Python-defined function or class calls, as `_C.name`,
    directly or through the package's own functions, in the order first met."""
    seen = seen if seen is not None else set()
    if (file_name, node.name) in seen:
        return []
    seen.add((file_name, node.name))
    compiled = compiled_definitions()
    names, modules = scope(file_name)
    modules = dict(modules, **package_modules(node))  # and those imported in the function
    local = {a.arg for f in ast.walk(node) if isinstance(f, (ast.FunctionDef, ast.Lambda))
             for a in f.args.posonlyargs + f.args.args + f.args.kwonlyargs}
    local |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    found = []
    for sub in ast.walk(node):
        callee = None
        if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id not in local:
            if sub.value.id == "_C" and sub.attr in compiled:
                found.append(sub.attr)
            elif sub.value.id in modules:
                callee = scope(modules[sub.value.id])[0].get(sub.attr)
        elif (isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and sub.id in names
              and sub.id not in local and names[sub.id][0] is not node):
            callee = names[sub.id]
        if callee is not None:
            found += compiled_calls(*callee, seen)
    return list(dict.fromkeys(found))


def signature(node):
    args = ast.unparse(node.args)
    returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
    return f"{node.name}({args}){returns}"


def anchor(name):
    return f"_C-{name}"


def defined_in(site, page, file_name, name):
    if file_name != STUB:
        path = f"python/kernelforge/{file_name}"
        return f"Defined in [`{path}`]({site.source_link(page, path)})."
    stub = f"python/kernelforge/{STUB}"
    source = binding_files().get(name)
    where = f" ([`{source}`]({site.source_link(page, source)}))" if source else ""
    return (f"Defined in the compiled module{where}; signature from the stub "
            f"[`{stub}`]({site.source_link(page, stub)}).")


def describe(site, page, name, node, file_name, module):
    doc = ast.get_docstring(node) or "(no docstring)"
    kind = "class" if isinstance(node, ast.ClassDef) else "def"
    head = f"{name}" if isinstance(node, ast.ClassDef) else signature(node).replace(node.name, name, 1)
    if isinstance(node, ast.ClassDef) and node.bases:
        head += "(" + ", ".join(ast.unparse(b) for b in node.bases) + ")"
    heading = f"## `{module}.{name}`" + (f" {{ #{anchor(name)} }}" if module == "kernelforge._C" else "")
    lines = [heading, "", f"```python\n{kind} {head}\n```", "", "```text", doc, "```", "",
             defined_in(site, page, file_name, name)]
    if file_name != STUB:
        calls = compiled_calls(node, file_name)
        if calls:
            lines[-1] += " Calls the compiled " + ", ".join(
                f"[`_C.{c}`]({'' if page == COMPILED_PAGE else 'compiled.md'}#{anchor(c)})" for c in calls) + "."
    if isinstance(node, ast.ClassDef):
        for item in node.body:
            if isinstance(item, ast.FunctionDef) and (not item.name.startswith("_") or item.name == "__init__"):
                lines += ["", f"### `{name}.{item.name}`", "", f"```python\ndef {signature(item)}\n```"]
                if ast.get_docstring(item):
                    lines += ["", "```text", ast.get_docstring(item), "```"]
    return lines


def module_page(site, page, module, file_name):
    tree = parse(file_name)
    defs = definitions(tree, file_name)
    lines = [f"# `{module}`", "", "```text", ast.get_docstring(tree) or "", "```"]
    values = []
    for name in public_names(tree):
        if name in defs:
            lines += [""] + describe(site, page, name, *defs[name], module)
        elif not name.startswith("__"):
            values.append(name)
    if values:
        lines += ["", "## Other names", "", "Values: " + ", ".join(f"`{n}`" for n in values) + "."]
    return "\n".join(lines)


def compiled_page(site, page):
    """kernelforge._C: every public function of the stub, then its values."""
    tree = parse(STUB)
    stub = f"python/kernelforge/{STUB}"
    lines = ["# `kernelforge._C`", "", "```text", ast.get_docstring(tree) or "", "```", "",
             "The compiled module (nanobind, `python/src/`) that the functions of `kernelforge` and "
             "`kernelforge.torch` call once they have resolved the stream and allocated the outputs. Its "
             "signatures and docstrings are those of its type stub "
             f"[`{stub}`]({site.source_link(page, stub)}), which nanobind's stubgen writes when the "
             "package is built. Arrays are DLPack producers (`NDArray` in the stub: torch tensors, CuPy "
             "arrays); `stream` is a `cudaStream_t` as an int; pointers are device addresses as ints."]
    for name, node in compiled_definitions().items():
        lines += [""] + describe(site, page, name, node, STUB, "kernelforge._C")
    values = compiled_values()
    if values:
        lines += ["", "## Values", ""]
        for name, annotation in values:
            source = binding_files().get(name)
            where = f", set in [`{source}`]({site.source_link(page, source)})" if source else ""
            lines.append(f"- `{name}: {annotation}`{where}")
    return "\n".join(lines)


def build(site):
    pages = []
    for module, file_name, page in MODULES:
        pages.append(site.add_page(page, module_page(site, page, module, file_name)))
    pages.append(site.add_page(COMPILED_PAGE, compiled_page(site, COMPILED_PAGE)))
    return pages
