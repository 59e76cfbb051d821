"""No nested function of the package calls itself (checked on the source, stdlib
``ast``).

A nested function that calls itself holds itself through its closure cell: a
reference cycle, with everything else the closure captured (a document's line
index and text, a cost model and its computations). Reference counting never
frees it; the server freezes every object out of the cyclic collector's sight
after each analysis (``hlo_lsp.analysis.collector``), so such a cycle made while
answering a request stays until the next full collection. A fuzzed server held
600 MB of them after 5 minutes. Recursion goes through a function of the module
or a method, or becomes a loop over a stack.
"""

from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]


def self_calling_closures(source: str) -> list[tuple[int, str]]:
    """(line, "outer.inner") of every function nested in a function that names
    itself in its own body."""
    found = []
    for outer in ast.walk(ast.parse(source)):
        if not isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for inner in ast.walk(outer):
            if inner is outer or not isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            names = {n.id for stmt in inner.body for n in ast.walk(stmt)
                     if isinstance(n, ast.Name)}
            if inner.name in names:
                found.append((inner.lineno, f"{outer.name}.{inner.name}"))
    return found


def test_no_nested_function_calls_itself():
    found = [f"{path.relative_to(ROOT)}:{line}: {name}"
             for path in sorted((ROOT / "hlo_lsp").rglob("*.py"))
             for line, name in self_calling_closures(path.read_text(encoding="utf-8"))]
    assert found == []


def test_the_check_sees_a_self_calling_closure():
    source = '''
def outline(tree, lines):
    def entry(node):
        return [entry(c) for c in node.children]
    def leaf(node):
        return lines.position(node.start)
    return entry(tree)

class Model:
    def walk(self, node):
        return [self.walk(c) for c in node.children]
'''
    assert self_calling_closures(source) == [(3, "outline.entry")]
