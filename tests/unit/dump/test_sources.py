"""Where the Python files named in a dump are (hlo_lsp.dump.sources)."""

from __future__ import annotations

import sys

from hlo_lsp.dump.recipe import RECIPE_FILE, Recipe, save_recipe
from hlo_lsp.dump.sources import resolve_source_path, source_dirs, unresolved_hint
from hlo_lsp.features.definition import source_targets
from hlo_lsp.features.hover import hover
from hlo_lsp.syntax.parser import parse


def _parents(path, stop):
    out = []
    while True:
        out.append(str(path))
        if path == stop:
            return out
        path = path.parent


def test_source_dirs_order_root_recipe_dump_parents_workspace_cwd(tmp_path):
    project, ws, root, cwd = (tmp_path / n for n in ("project", "ws", "root", "cwd"))
    dump = project / "out" / "dump"
    for d in (dump, ws, root, cwd):
        d.mkdir(parents=True)
    doc = str(dump / "module_0001.jit_f.before_optimizations.txt")
    dirs = source_dirs(doc, cwd=str(cwd))
    assert dirs[:4] == [str(dump), str(project / "out"), str(project), str(tmp_path)]
    assert dirs[-1] == str(cwd) and "/" not in dirs
    save_recipe(Recipe([sys.executable, "src/prog.py"], str(project)), dump)
    dirs = source_dirs(doc, [str(ws), "", str(dump)], [str(root), ""], cwd=str(cwd))
    assert dirs[:4] == [str(root), str(project), str(project / "src"), str(dump)]
    assert dirs.index(str(ws)) > dirs.index(str(tmp_path)) and dirs[-1] == str(cwd)
    assert len(dirs) == len(set(dirs))
    (dump / RECIPE_FILE).write_text("{not json")      # a broken recipe is ignored
    assert source_dirs(doc, cwd=str(cwd))[0] == str(dump)
    assert source_dirs(None, [str(ws)], cwd=str(cwd))[:2] == [str(ws), str(tmp_path)]


def test_program_two_levels_above_a_dump_outside_any_repository(tmp_path):
    """The acceptance case: ``python prog.py`` in <p> wrote <p>/runs/dump."""
    dump = tmp_path / "runs" / "dump"
    dump.mkdir(parents=True)
    (tmp_path / "prog.py").write_text("x = 1\n")
    doc = str(dump / "module_0001.jit_f.before_optimizations.txt")
    dirs = source_dirs(doc, [], cwd="/nonexistent-cwd")
    assert resolve_source_path("prog.py", dirs) == str(tmp_path / "prog.py")


def test_resolve_source_path_only_returns_files_that_exist(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (b / "prog.py").write_text("")
    assert resolve_source_path("prog.py", [str(a), str(b)]) == str(b / "prog.py")
    assert resolve_source_path("x/gone.py", [str(a), str(b)]) is None
    assert resolve_source_path(str(b / "prog.py"), []) == str(b / "prog.py")
    assert resolve_source_path("/abs/gone.py", [str(a)]) is None
    assert resolve_source_path("rel.py", []) is None
    assert resolve_source_path("", [str(b)]) is None


META = ('HloModule m\n\nENTRY %e (p: f32[]) -> f32[] {\n  ROOT %p = f32[] '
        'parameter(0), metadata={op_name="a" source_file="prog.py" source_line=3}\n}\n')


def test_source_targets_resolve_against_one_or_several_directories(tmp_path):
    module = parse(META)
    ins = module.entry.instructions[0]
    [t] = source_targets(module, ins)                 # no directories: as written
    assert (t.path, t.line) == ("prog.py", 3)
    assert source_targets(module, ins, str(tmp_path)) == []     # no such file
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "prog.py").write_text("")
    [t] = source_targets(module, ins, [str(tmp_path / "a"), str(tmp_path / "b")])
    assert t.path == str(tmp_path / "b" / "prog.py")


def test_hover_says_which_path_was_looked_for_and_how_to_set_the_root(tmp_path):
    module = parse(META)
    offset = META.index("%p =") + 1
    dirs = [str(tmp_path / "a"), str(tmp_path)]
    text = hover(module, offset, source_dirs=dirs).markdown
    assert unresolved_hint("prog.py", dirs) in text
    assert "`prog.py` not found" in text and str(tmp_path / "a") in text
    assert "hlo.sourceRoot" in text and "source_root" in text
    assert "not found" not in hover(module, offset).markdown      # pure without dirs
    (tmp_path / "prog.py").write_text("")
    assert "not found" not in hover(module, offset, source_dirs=dirs).markdown
