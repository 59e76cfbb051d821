"""Issue 44: the pass history of a module (hlo_lsp/dump/passes.py) and its
commands `hlo-lsp passes` and `hlo-lsp blame`, on examples/cpu_passes/ (a real
XLA CPU compile dumped with --xla_dump_hlo_pass_re=.*, examples/make_cpu_passes.py)."""

from __future__ import annotations

import json
import os
import pathlib
import shutil

import pytest

from hlo_lsp.cli.main import main
from hlo_lsp.dump import passes
from hlo_lsp.dump.names import parse_dump_name
from hlo_lsp.features.pass_history import created_line, timeline_rows

from tests.helpers import EXAMPLES

DUMP = EXAMPLES / "cpu_passes"
PREFIX = "module_0008.jit_layer."
AFTER = DUMP / f"{PREFIX}cpu_after_optimizations.txt"
SNAPSHOT_KEYS = ["index", "pipeline", "pass", "file", "added", "removed", "changed"]
STAGE_KEYS = ["pass", "pipeline", "index", "file"]


def _line_of(path: pathlib.Path, text: str) -> int:
    """The 1-based line of ``path`` holding ``text``."""
    [line] = [i for i, s in enumerate(path.read_text().splitlines(), 1) if text in s]
    return line


def test_snapshot_names_are_decoded_both_forms():
    between = parse_dump_name(
        f"{PREFIX}0014.dot-library-passes.after_dot-library-rewriter.before_pipeline-end.txt")
    assert passes.snapshot_stage(between) == (14, "dot-library-passes", "dot-library-rewriter",
                                              "pipeline-end", "")
    # A pass dumping itself mid-way (DumpHloModuleDuringPassIfEnabled): no before_
    during = parse_dump_name(f"{PREFIX}0019.copy-insertion.after_adding_copies_to_resolve_"
                             "interference.txt")
    assert passes.snapshot_stage(during) == (19, "", "copy-insertion", "",
                                             "after_adding_copies_to_resolve_interference")
    assert passes.snapshot_stage(parse_dump_name(AFTER.name)) is None


def test_history_is_in_step_order_between_the_two_ends():
    history = passes.module_history(str(DUMP))
    assert (history.module, history.number) == ("jit_layer", 8)
    stages = history.stages
    assert stages[0].pass_name == passes.BEFORE and stages[0].index == -1
    assert stages[-1].pass_name == passes.AFTER and stages[-1].file == AFTER.name
    middle = [s.index for s in stages[1:-1]]
    assert middle == list(range(24)) and stages[-1].index == 24
    # the mid-pass dumps of copy insertion take the pipeline that ran the pass
    copies = [s for s in stages if s.step]
    assert [s.index for s in copies] == [19, 20, 21]
    assert {s.pipeline for s in copies} == {"HLO_passes_after_layout_assignment"}
    assert passes.module_history(str(DUMP), "module_0008") == history
    with pytest.raises(passes.HistoryError, match="no pass snapshots of module 'jit_other'"):
        passes.module_history(str(DUMP), "jit_other")


def test_steps_say_what_each_pass_changed():
    done = list(passes.steps(passes.module_history(str(DUMP))))
    changed = {s.stage.pass_name: s for s in done if s.changes}
    assert set(changed) == {"algsimp", "dot-library-rewriter", "fusion"}
    library = changed["dot-library-rewriter"]
    assert set(library.added) == {"ynn_fusion", "param_0", "param_1"}
    assert "dot_general.0" in library.changed  # moved into the fusion, operands now params
    assert "fusion __ynn_fusion" in library.appeared and "fusion kCustom" in library.appeared
    fusion = changed["fusion"]
    assert "tanh_reduce_fusion" in fusion.added and "fusion kLoop" in fusion.appeared
    # pipeline starts that changed nothing: no counts
    assert all(not s.changes for s in done if s.stage.pass_name == "pipeline-start")


def test_following_survives_a_rename():
    """A rename (rename-instructions, rename_fusions) is followed by structure:
    the instruction is the same, changed (its name), not removed and added."""
    text = AFTER.read_text()
    old = passes.summarize_text(text)
    renamed = text.replace("%tanh_reduce_fusion", "%loop_reduce_fusion").replace(
        "%ynn_fusion", "%ynn_fusion.1").replace("%b.1", "%b.1.0")
    new = passes.summarize_text(renamed)
    pairs = passes.follow(old, new)
    assert pairs["tanh_reduce_fusion"] == "loop_reduce_fusion"
    assert pairs["ynn_fusion"] == "ynn_fusion.1" and pairs["b.1"] == "b.1.0"
    step = passes.compare(passes.module_history(str(DUMP)).stages[-1], old, new)
    assert step.added == step.removed == ()
    assert set(step.changed) == {"loop_reduce_fusion", "ynn_fusion.1", "b.1.0"}
    # a name kept by an instruction of another opcode is not the same instruction
    other = passes.summarize_text(text.replace("tanh(%add.0)", "exponential(%add.0)"))
    assert "tanh.0" not in passes.follow(old, other)


def test_blame_names_the_pass_that_created_the_fusions():
    ynn = passes.blame(str(AFTER), _line_of(AFTER, "%ynn_fusion = ") - 1)
    assert ynn.instruction == "ynn_fusion"
    assert (ynn.created_by.pass_name, ynn.created_by.pipeline, ynn.created_by.index) == \
        ("dot-library-rewriter", "dot-library-passes", 14)
    loop = passes.blame(str(AFTER), _line_of(AFTER, "%tanh_reduce_fusion = ") - 1)
    assert (loop.created_by.pass_name, loop.created_by.index) == ("fusion", 17)
    assert created_line(loop) == ("created by `fusion` in `HLO_passes_after_layout_assignment`"
                                  ", snapshot 0017")
    assert passes.blame_name(str(AFTER), "tanh_reduce_fusion") == loop
    with pytest.raises(passes.HistoryError, match="no instruction %nothing"):
        passes.blame_name(str(AFTER), "nothing")
    param = passes.blame(str(AFTER), _line_of(AFTER, "%x.1 = ") - 1)
    assert param.created_by.pass_name == passes.BEFORE and created_line(param) is None


def test_blame_json_contract(capsys):
    assert main(["blame", f"{AFTER}:{_line_of(AFTER, '%ynn_fusion = ')}", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert list(data) == ["instruction", "created_by", "changed_by"]
    assert data["instruction"] == "ynn_fusion"
    assert data["created_by"] == {
        "pass": "dot-library-rewriter", "pipeline": "dot-library-passes", "index": 14,
        "file": f"{PREFIX}0014.dot-library-passes.after_dot-library-rewriter.before_pipeline-"
                "end.txt"}
    assert all(list(c) == STAGE_KEYS for c in data["changed_by"])
    assert main(["blame", f"{AFTER}:1"]) == 2
    assert "no instruction on this line" in capsys.readouterr().err


def test_passes_json_contract_and_timeline(capsys):
    assert main(["passes", str(DUMP), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert list(data) == ["module", "snapshots"] and data["module"] == "jit_layer"
    assert len(data["snapshots"]) == 26
    assert all(list(s) == SNAPSHOT_KEYS for s in data["snapshots"])
    assert [s["index"] for s in data["snapshots"]] == list(range(-1, 25))
    library = next(s for s in data["snapshots"] if s["pass"] == "dot-library-rewriter")
    assert (library["added"], library["removed"]) == (3, 0)
    assert all(isinstance(s[k], int) for s in data["snapshots"] for k in SNAPSHOT_KEYS[4:])
    assert main(["passes", str(DUMP)]) == 0
    out = capsys.readouterr().out
    assert "dot-library-passes: dot-library-rewriter" in out and "+fusion __ynn_fusion" in out
    assert "21 snapshots changed nothing" in out and "pipeline-start" not in out
    assert len(out.splitlines()) <= 10
    # a file of the dump stands for its module
    assert main(["passes", str(AFTER)]) == 0
    assert capsys.readouterr().out == out


def test_repeated_passes_fold_to_fit_a_screen():
    done = list(passes.steps(passes.module_history(str(DUMP))))
    rows = timeline_rows(done, everything=True)
    # copy insertion's three mid-pass dumps and the snapshot after it: one row
    assert "HLO_passes_after_layout_assignment: copy-insertion ×4" in [r.label for r in rows]
    folded = timeline_rows(done, everything=True, max_rows=10)
    assert len(folded) < len(rows)
    labels = [r.label for r in folded]
    # a folded pipeline row names each pass once, with its count
    assert "simplification: pipeline-start ×2, algsimp" in labels
    assert sum(len(r.steps) for r in folded) == len(done)


@pytest.fixture
def hostile(tmp_path) -> pathlib.Path:
    """A copy of the example with a snapshot swapped for a FIFO, one for text
    that is not HLO, one too large for the limit given."""
    for p in DUMP.iterdir():
        shutil.copy(p, tmp_path / p.name)
    names = sorted(p.name for p in tmp_path.iterdir())
    fifo = next(n for n in names if ".0003." in n)
    os.unlink(tmp_path / fifo)
    os.mkfifo(tmp_path / fifo)
    (tmp_path / next(n for n in names if ".0009." in n)).write_text("not HLO at all\n")
    big = tmp_path / next(n for n in names if ".0012." in n)
    big.write_text(big.read_text() + "\n" * 300_000)
    return tmp_path


def test_hostile_snapshots_one_message_each_the_rest_listed(hostile, capsys, monkeypatch):
    monkeypatch.setattr(passes, "MAX_SNAPSHOT_BYTES", 200_000)
    monkeypatch.setattr(passes.steps, "__defaults__", (200_000,))
    assert main(["passes", str(hostile), "--json"]) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert len(data["snapshots"]) == 26
    bad = {s["index"]: s for s in data["snapshots"] if s["added"] is None}
    assert sorted(bad) == [3, 9, 12]
    errors = captured.err.splitlines()
    assert len(errors) == 3
    assert "not a regular file (a FIFO)" in errors[0]
    assert "not HLO text" in errors[1] and "larger than" in errors[2]
    # the passes after them are still compared (with the last file read)
    library = next(s for s in data["snapshots"] if s["pass"] == "dot-library-rewriter")
    assert library["added"] == 3
    # blame walks past them, naming them
    monkeypatch.setattr(passes.blame, "__defaults__", (200_000,))
    line = _line_of(hostile / AFTER.name, "%ynn_fusion = ")
    assert main(["blame", f"{hostile / AFTER.name}:{line}"]) == 0
    captured = capsys.readouterr()
    assert "created by dot-library-rewriter in dot-library-passes, snapshot 0014" in captured.out
    assert captured.err == ""  # nothing unreadable after snapshot 0013


def test_a_directory_without_snapshots_is_one_line(tmp_path, capsys):
    shutil.copy(AFTER, tmp_path / AFTER.name)
    assert main(["passes", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "no pass snapshots" in err and len(err.splitlines()) == 1
    assert main(["blame", f"{tmp_path / AFTER.name}:40"]) == 2
    assert "no pass snapshots of module_0008" in capsys.readouterr().err


_ALIKE = """HloModule m

ENTRY %e (p: f32[12]) -> (f32[4], f32[4], f32[], f32[]) {
  %p = f32[12]{0} parameter(0)
  %slice = f32[4]{0} slice(%p), slice={[0:4]}
  %slice.1 = f32[4]{0} slice(%p), slice={[4:8]}
  %constant = f32[] constant(0)
  %constant.1 = f32[] constant(0)
  ROOT %tuple = (f32[4]{0}, f32[4]{0}, f32[], f32[]) tuple(%slice, %slice.1, %constant, %constant.1)
}
"""


def test_following_tells_alike_instructions_apart():
    """Renamed instructions alike but for their attributes (the slices of one
    merged dot) pair by their attributes; alike constants in text order."""
    old = passes.summarize_text(_ALIKE)
    new = passes.summarize_text(_ALIKE.replace("%slice.1", "%slice.9").replace(
        "%slice", "%slice.8").replace("%slice.8.9", "%slice.9").replace(
        "%constant.1", "%constant.3").replace("%constant", "%constant.2").replace(
        "%constant.2.3", "%constant.3"))
    assert passes.follow(old, new) == {"p": "p", "tuple": "tuple", "slice": "slice.8",
                                       "slice.1": "slice.9", "constant": "constant.2",
                                       "constant.1": "constant.3"}


def test_a_file_outside_the_history_is_said_so(tmp_path, capsys):
    for p in DUMP.iterdir():
        shutil.copy(p, tmp_path / p.name)
    other = tmp_path / f"{PREFIX}after_spmd_partitioner.txt"  # a stage XLA:GPU writes
    shutil.copy(AFTER, other)
    assert main(["blame", f"{other}:50"]) == 2
    assert "not in the pass history of module_0008.jit_layer" in capsys.readouterr().err


def test_several_modules_need_module(tmp_path, capsys):
    for p in DUMP.iterdir():  # the same history again as module 10 (a second compile)
        shutil.copy(p, tmp_path / p.name)
        shutil.copy(p, tmp_path / p.name.replace("module_0008.", "module_0010."))
    assert main(["passes", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "pass snapshots of 2 modules; pick one with --module: module_0008.jit_layer, " \
           "module_0010.jit_layer" in err
    assert main(["passes", str(tmp_path), "--module", "module_0010", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["module"] == "jit_layer"
    assert all(s["file"].startswith("module_0010.") for s in data["snapshots"])


def test_a_change_at_a_pipeline_start_is_worded_as_such():
    from hlo_lsp.features.pass_history import stage_words

    stage = passes.module_history(str(DUMP)).stages[6]
    assert (stage.index, stage.pass_name) == (5, "pipeline-start")
    assert stage_words(stage) == ("the start of pipeline simplification, snapshot 0005 (a change "
                                  "made outside the passes XLA dumped)")


def test_file_history_notes_where_each_instruction_appeared_in_one_walk():
    found = passes.file_history(str(AFTER))
    assert found.position == len(found.history.stages) - 1
    assert [s.stage for s in found.steps] == list(found.history.stages)
    # every instruction of the file has its blame, the one `hlo-lsp blame` prints
    for key, line in found.lines.items():
        assert found.blame(key) == passes.blame(str(AFTER), line)
    # by name, in its computation when one is given (fused parameters' names repeat)
    assert found.key_of("param_0", "fused_computation") == "param_0" == found.key_of("param_0")
    assert found.key_of("param_0", "main.2") is None and found.key_of("nothing") is None
    fusion = found.blame("ynn_fusion")
    [place] = fusion.places  # created, never changed since
    text = (DUMP / fusion.created_by.file).read_text().splitlines()[place.line]
    assert text[place.column - 1:].startswith("%ynn_fusion = ")
    # renamed by the fusion pass: a place in each file that changed it, under its name there
    renamed = found.blame("add.1")
    assert [p.name for p in renamed.places] == ["add.6", "add.6", "add.1"]
    for stage, p in zip((renamed.created_by, *renamed.changed_by), renamed.places):
        line = (DUMP / stage.file).read_text().splitlines()[p.line]
        assert line[p.column:].startswith(f"{p.name} = ")
    # a snapshot's history stops at it
    snapshot = passes.file_history(str(DUMP / fusion.created_by.file))
    assert len(snapshot.steps) == snapshot.position + 1 < len(found.steps)
    assert snapshot.blame("ynn_fusion").created_by == fusion.created_by


def test_blame_says_why_priority_fusion_fused_it(capsys):
    # Issue 44: "the pass history [says] why it was or was not fused", from XLA:GPU's
    # priority-fusion log beside the snapshots, under the name the instruction had
    # when priority fusion ran (fusion.1; renamed loop_exponential_multiply_fusion).
    after = EXAMPLES / "gpu" / "deviceless" / "multi_output_fusion_log" / \
        "module_0001.jit_stats.sm_9.0a_gpu_after_optimizations.txt"
    line = next(i for i, t in enumerate(after.read_text().splitlines(), 1)
                if t.startswith("  %loop_exponential_multiply_fusion = "))
    assert main(["blame", f"{after}:{line}"]) == 0
    out = capsys.readouterr().out
    assert ("  priority fusion (module_0001.jit_stats.priority_fusion_dump.txt), where it is "
            "%fusion.1:\n    fused into %reduce_sum.14.0, %fusion: estimated ") in out, out
    assert "    took in %tanh.1.0\n" in out, out
    assert main(["blame", f"{after}:{line}", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["priority_fusion"]["name"] == "fusion.1"
    assert data["priority_fusion"]["decisions"][-1] == "took in tanh.1.0"
    assert data["created_by"]["pass"] == "priority-fusion"


def test_one_quiet_snapshot_is_one_snapshot(capsys):
    """examples/gpu/deviceless/multi_output_fusion_log keeps one pass snapshot of
    its compile, which changed nothing the timeline shows: said in the singular."""
    dump = EXAMPLES / "gpu" / "deviceless" / "multi_output_fusion_log"
    assert main(["passes", str(dump)]) == 0
    out = capsys.readouterr().out
    assert "module_0001.jit_stats: 1 pass snapshot in " in out
    assert "(1 snapshot changed nothing:" in out
