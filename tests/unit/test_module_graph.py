"""The package's modules as a maintainer reads them (issue 42): no module over
:data:`MAX_LINES` lines, and no import circle between modules (every import
counts, as in ``test_layers.py``: inside functions and under ``TYPE_CHECKING``
too). Checked on the source with the standard library's ``ast``; nothing is
imported.
"""

from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = "hlo_lsp"
MAX_LINES = 900

# Circles in code this test does not own, accepted for now: each entry (the
# circle's files, sorted) must still occur, so a fixed one fails the test until
# it is removed from here.
KNOWN_CIRCLES: dict[tuple[str, ...], str] = {}


def _files() -> dict[str, pathlib.Path]:
    """Dotted module name -> file, for every module of the package."""
    out: dict[str, pathlib.Path] = {}
    for file in sorted((ROOT / PACKAGE).rglob("*.py")):
        parts = file.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = file
    return out


def _imported(tree: ast.AST, module: str, is_package: bool, known: set[str]) -> set[str]:
    """The modules of the package that ``module`` imports (``from X import y``
    names ``X.y`` when that is a module, else ``X``)."""
    package = module if is_package else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                if f"{target}.{alias.name}" in known:
                    out.add(f"{target}.{alias.name}")
                elif target in known:
                    out.add(target)
    out.discard(module)
    return out


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports."""
    files = _files()
    known = set(files)
    return {name: _imported(ast.parse(file.read_text(encoding="utf-8")), name,
                            file.name == "__init__.py", known)
            for name, file in files.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan),
    each sorted: every import circle, the modules it ties together."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def _paths(component: list[str]) -> tuple[str, ...]:
    files = _files()
    return tuple(sorted(files[m].relative_to(ROOT).as_posix() for m in component))


def test_no_module_is_over_900_lines():
    long = {file.relative_to(ROOT).as_posix(): n for file in _files().values()
            if (n := len(file.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"split these along their concerns: {long}"


def test_the_import_graph_has_no_circle():
    found = [_paths(c) for c in circles(import_graph())]
    unexpected = [c for c in found if c not in KNOWN_CIRCLES]
    assert not unexpected, f"import circles: {unexpected}"
    gone = [c for c in KNOWN_CIRCLES if c not in found]
    assert not gone, f"fixed, remove from KNOWN_CIRCLES: {gone}"


def test_circles_are_found_through_from_imports_and_packages():
    graph = {"p.a": {"p.b"}, "p.b": {"p.c"}, "p.c": {"p.a"}, "p.d": {"p.a"}, "p": set()}
    assert circles(graph) == [["p.a", "p.b", "p.c"]]
    tree = ast.parse("from . import b\nfrom .c import x\nfrom p import d\n"
                     "def f():\n    import p.e\n")
    assert _imported(tree, "p.a", False, {"p", "p.a", "p.b", "p.c", "p.d", "p.e"}) == \
        {"p.b", "p.c", "p.d", "p.e"}
