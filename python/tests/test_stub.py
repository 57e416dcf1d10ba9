# SPDX-License-Identifier: Apache-2.0
"""The committed type stub python/kernelforge/_C.pyi against the one the build generated.

The build writes _C.pyi with nanobind's stubgen (python/CMakeLists.txt, nanobind_add_stub)
and installs it next to _C; the documentation site (docs/build_site.py, which does not
build the package) reads the committed copy. A binding whose signature or docstring
changed in python/src/*.cpp without the copy being refreshed fails here. The comparison
is of the parsed stubs (ast), so layout alone (line breaks, blank lines, the quotes
stubgen puts around a docstring) does not fail it; names, parameters, annotations,
defaults, values and docstrings do. Needs no GPU."""
import ast
import difflib
import inspect
import pathlib

import pytest

import kernelforge._C

COMMITTED = pathlib.Path(__file__).resolve().parents[1] / "kernelforge" / "_C.pyi"
GENERATED = pathlib.Path(kernelforge._C.__file__).resolve().with_name("_C.pyi")


def normalized(text):
    """The stub's syntax tree, docstrings cleaned as inspect.getdoc does."""
    tree = ast.parse(text)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(body, list) and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)):
            body[0].value.value = inspect.cleandoc(body[0].value.value)
    return ast.dump(tree)


def test_committed_stub_matches_the_generated_one():
    if not GENERATED.is_file():
        pytest.skip(f"no generated stub next to {kernelforge._C.__file__} (a build with "
                    "-DKERNELFORGE_PYTHON_STUB=OFF, or _C not from an installed package)")
    if GENERATED == COMMITTED:
        pytest.skip("kernelforge is imported from the source tree: the stub compares with itself")
    generated, committed = (p.read_text(encoding="utf-8") for p in (GENERATED, COMMITTED))
    if normalized(generated) != normalized(committed):
        diff = "".join(difflib.unified_diff(committed.splitlines(True), generated.splitlines(True),
                                            "python/kernelforge/_C.pyi (committed)", f"{GENERATED} (generated)"))
        pytest.fail("python/kernelforge/_C.pyi differs from the stub this build generated (a binding's "
                    "signature or docstring changed in python/src/, or nanobind's stubgen writes it differently "
                    f"now). Refresh the committed copy and commit it:\n    cp {GENERATED} {COMMITTED}\n\n{diff}")


def test_stub_names_the_module_functions():
    # Every public function of the module has a signature in the stub (the one installed with it).
    stub = ast.parse((GENERATED if GENERATED.is_file() else COMMITTED).read_text(encoding="utf-8"))
    defined = {n.name for n in stub.body if isinstance(n, ast.FunctionDef)}
    functions = {name for name in dir(kernelforge._C)
                 if not name.startswith("_") and callable(getattr(kernelforge._C, name))}
    assert functions <= defined, f"functions of _C missing from the stub: {sorted(functions - defined)}"
