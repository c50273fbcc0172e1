"""The compiler's module structure, checked from the import graph.

Imports go one way: each stage imports only the stages below it, the op set (`runtime`)
imports nothing of the compiler, and no private name (`_x`) of one module is used by
another. Both are read from the source with `ast`, including imports inside functions."""
from __future__ import annotations

import ast
import pathlib

import pytest

from paths import ROOT as _ROOT  # noqa: E402
ROOT = pathlib.Path(_ROOT)

#: srcgrad's modules, bottom to top; a module may import only from layers before its own
LAYERS = [
    {"errors", "scopes", "pytree", "specialize", "jit_math"},
    {"frontend"},
    {"cache"},
    {"ir"},
    {"guards"},
    {"staging"},
    {"verbatim", "fresh", "fusion", "scalars", "protocols"},
    {"lower", "reverse", "forward", "optimize"},
    {"codegen"},
    {"jit"},
    {"api"},
    {"__init__", "__main__"},
]
RANK = {m: i for i, layer in enumerate(LAYERS) for m in layer}


def _modules(package):
    for path in sorted((ROOT / package).rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        yield ".".join(rel.parts), path


def _imports(modname, path):
    """(line, imported module, names) for every import in the file, relative ones made
    absolute; `names` is the list of names a `from` import takes (empty for `import`)."""
    tree = ast.parse(path.read_text(), str(path))
    package = modname.rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name, [], {a.asname or a.name.split(".")[0]: a.name}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            names = [a.name for a in node.names]
            # `from . import x` imports the module x
            mods = {a.asname or a.name: f"{base}.{a.name}" for a in node.names}
            yield node.lineno, base, names, mods


def _project(name):
    return name.split(".")[0] in ("srcgrad", "runtime")


def _is_module(name):
    parts = name.split(".")
    return (ROOT.joinpath(*parts).with_suffix(".py")).exists() or \
        (ROOT.joinpath(*parts) / "__init__.py").exists()


def test_layers_cover_every_module():
    mods = {m.split(".")[1] for m, _ in _modules("srcgrad")}
    assert mods == set(RANK), f"modules without a layer: {mods - set(RANK)}; " \
                              f"layers naming no module: {set(RANK) - mods}"


@pytest.mark.parametrize("modname,path", list(_modules("srcgrad")),
                         ids=lambda v: v if isinstance(v, str) else "")
def test_imports_go_down(modname, path):
    me = modname.split(".")[1]
    bad = []
    for line, base, names, mods in _imports(modname, path):
        targets = [t for t in mods.values() if _is_module(t)] or [base]
        for t in targets:
            if t.startswith("srcgrad.") and t.split(".")[1] in RANK:
                other = t.split(".")[1]
                if RANK[other] >= RANK[me]:
                    bad.append(f"line {line}: {me} (layer {RANK[me]}) imports {other} "
                               f"(layer {RANK[other]})")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("modname,path", list(_modules("runtime")),
                         ids=lambda v: v if isinstance(v, str) else "")
def test_runtime_does_not_import_the_compiler(modname, path):
    bad = [f"line {line}: imports {base}" for line, base, _, _ in _imports(modname, path)
           if base == "srcgrad" or base.startswith("srcgrad.")]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("modname,path",
                         list(_modules("srcgrad")) + list(_modules("runtime")),
                         ids=lambda v: v if isinstance(v, str) else "")
def test_no_private_name_crosses_a_module(modname, path):
    bad = []
    aliases = {}  # local name -> project module it is bound to
    for line, base, names, mods in _imports(modname, path):
        if not _project(base):
            continue
        for local, target in mods.items():
            if _is_module(target):
                aliases[local] = target
            else:
                name = target.rsplit(".", 1)[1]
                if name.startswith("_") and not name.startswith("__"):
                    bad.append(f"line {line}: from {base} import {name}")
        if not names:  # `import runtime.ops as ...`
            aliases.update(mods)
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                node.value.id in aliases and node.attr.startswith("_") and \
                not node.attr.startswith("__"):
            bad.append(f"line {node.lineno}: {node.value.id}.{node.attr} "
                       f"({aliases[node.value.id]})")
    assert not bad, "\n".join(bad)
