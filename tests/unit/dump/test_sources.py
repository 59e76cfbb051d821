"""Where the Python files named in a dump are (hlo_lsp.dump.sources)."""

from __future__ import annotations

import os
import sys

from hlo_lsp.dump.recipe import RECIPE_FILE, Recipe, save_recipe
from hlo_lsp.dump.sources import resolve_source_path, source_dirs
from hlo_lsp.features.definition import source_targets
from hlo_lsp.syntax.parser import parse


def test_source_dirs_order_root_recipe_workspace_dump(tmp_path):
    dump, project, ws, root = (tmp_path / n for n in ("dump", "project", "ws", "root"))
    for d in (dump, project, ws, root):
        d.mkdir()
    doc = str(dump / "module_0001.jit_f.before_optimizations.txt")
    assert source_dirs(doc) == [str(dump)]
    save_recipe(Recipe([sys.executable, "prog.py"], str(project)), dump)
    assert source_dirs(doc, [str(ws), "", str(dump)], str(root)) == [
        str(root), str(project), str(ws), str(dump)]
    (dump / RECIPE_FILE).write_text("{not json")      # a broken recipe is ignored
    assert source_dirs(doc, [str(ws)]) == [str(ws), str(dump)]
    assert source_dirs(None, [str(ws)]) == [str(ws)]


def test_resolve_source_path_prefers_a_directory_holding_the_file(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (b / "prog.py").write_text("")
    assert resolve_source_path("prog.py", [str(a), str(b)]) == str(b / "prog.py")
    assert resolve_source_path("x/gone.py", [str(a), str(b)]) == str(a / "x" / "gone.py")
    assert resolve_source_path("/abs/p.py", [str(a)]) == "/abs/p.py"
    assert resolve_source_path("rel.py", []) == "rel.py"


def test_source_targets_resolve_against_one_or_several_directories(tmp_path):
    module = parse('HloModule m\n\nENTRY %e (p: f32[]) -> f32[] {\n  ROOT %p = f32[] '
                   'parameter(0), metadata={op_name="a" source_file="prog.py" '
                   'source_line=3}\n}\n')
    ins = module.entry.instructions[0]
    [t] = source_targets(module, ins)
    assert (t.path, t.line) == ("prog.py", 3)
    [t] = source_targets(module, ins, str(tmp_path))
    assert t.path == os.path.join(str(tmp_path), "prog.py")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "prog.py").write_text("")
    [t] = source_targets(module, ins, [str(tmp_path / "a"), str(tmp_path / "b")])
    assert t.path == str(tmp_path / "b" / "prog.py")
