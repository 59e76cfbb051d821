"""The instruction-level comparison (hlo_lsp.model.instruction_diff) on real dumps."""

from __future__ import annotations

from tests.helpers import CPU_DUMP, GPU, TRAIN_AFTER, read
from hlo_lsp.model.instruction_diff import NO_SOURCE, diff_modules
from hlo_lsp.syntax.parser import parse

GEMM = GPU / "jit_matmul_fn.fp8_cublaslt.sm90_gpu_after_optimizations.txt"


def test_a_dump_against_itself_changes_nothing():
    text = read(TRAIN_AFTER)
    d = diff_modules(parse(text), parse(text))
    assert d.changes == [] and d.warnings == []
    assert d.compared[0] == d.compared[1] > 100
    assert d.headline() == "no instruction changed"
    # the same module object: the same answer without pairing its instructions
    module = parse(text)
    same = diff_modules(module, module)
    assert (same.changes, same.warnings, same.compared) == (d.changes, d.warnings, d.compared)


def test_renumbered_names_are_not_changes_but_a_shape_is():
    """XLA renumbers every name on a recompile: matching is by op_name, Python
    line and opcode, so only the edited shape is reported, under its line."""
    text = read(TRAIN_AFTER)
    renamed = text.replace("%broadcast_multiply_fusion.3", "%broadcast_multiply_fusion.33")
    assert diff_modules(parse(text), parse(renamed)).changes == []
    wider = renamed.replace("%broadcast_multiply_fusion.33 = f32[128]{0}",
                            "%broadcast_multiply_fusion.33 = f32[256]{0}")
    d = diff_modules(parse(text), parse(wider))
    [change] = d.changes
    assert change.status == "changed" and change.new.name == "broadcast_multiply_fusion.33"
    assert change.fields == (("shape", "f32[128]", "f32[256]"),)
    assert change.source.startswith("make_dump.py:")
    assert d.by_source() == {change.source: [change]}
    assert "changed %broadcast_multiply_fusion.33 fusion: shape f32[128] -> f32[256]" in d.lines()[2]


def test_backend_config_fields_and_added_removed_instructions():
    text = read(GEMM)
    other = text.replace('"selected_algorithm":"4"', '"selected_algorithm":"7"') \
                .replace('"operation_queue_id":"0"', '"operation_queue_id":"3"')
    [c] = diff_modules(parse(text), parse(other)).changes
    assert c.fields == (("backend_config.gemm_backend_config.selected_algorithm", "4", "7"),)
    # Another op_name: the old gemm removed, a new one added.
    line = next(l for l in text.splitlines() if "%cublas-gemm.1.0 =" in l)
    gone = text.replace(line, line.replace("/dot_general[", "/dot_general_2["))
    changes = diff_modules(parse(text), parse(gone)).changes
    assert sorted(ch.status for ch in changes) == ["added", "removed"]
    assert all((ch.new or ch.old).name == "cublas-gemm.1.0" for ch in changes)


def test_two_different_programs_are_warned_about():
    a = parse(read(CPU_DUMP / "module_0000.jit_stage.cpu_after_optimizations.txt"))
    b = parse(read(TRAIN_AFTER))
    d = diff_modules(a, b)
    assert any("different names (jit_stage and jit_train_step)" in w for w in d.warnings)
    assert any(w.startswith("the entry signatures differ") for w in d.warnings)
    assert d.lines()[0].startswith("warning: the modules have different names")


def test_a_copy_of_the_program_elsewhere_and_shifted_lines_are_the_same_program():
    """The program's directory differs (two checkouts) and every line moved down
    (an edit above): matched by base name, then by op_name and opcode."""
    import re

    text = read(TRAIN_AFTER)
    moved = re.sub(r'^(\d+) "[^"\n]*/make_dump\.py"$', r'\1 "/elsewhere/make_dump.py"', text,
                   flags=re.M)
    assert moved != text
    assert diff_modules(parse(text), parse(moved)).changes == []
    head, tables = moved.split("FileLocations", 1)
    shifted = head + "FileLocations" + re.sub(r"line=(\d+)",
                                              lambda m: f"line={int(m.group(1)) + 3}", tables)
    assert shifted != moved
    assert diff_modules(parse(text), parse(shifted)).changes == []


def test_modules_without_op_names_pair_the_cublas_call_with_the_triton_gemm_fusion():
    """Seed 001's pair carries no op_name metadata: the matcher that survives
    renames (issue 44) pairs the cuBLASLt FP8 call of JAX 0.4.31 with the
    Triton GEMM fusion of 0.4.32 by structure, as the same dot; the kernels
    XLA added around it are listed (on main: "instructions not compared")."""
    from tests.helpers import FP8_FUSED, FP8_REGRESSION

    d = diff_modules(parse(read(FP8_FUSED)), parse(read(FP8_REGRESSION)))
    [dot] = [c for c in d.changes if c.status == "changed"]
    assert (dot.old.name, dot.new.name) == ("cublas-gemm.clone.1.0", "gemm_fusion_dot.19.0")
    assert dot.now_runs_as == ("the same dot, now a Triton GEMM fusion "
                               "(was a cuBLASLt FP8 call)")
    assert ("opcode", "custom-call", "fusion") in dot.fields
    assert ("custom-call target", "__cublas$lt$matmul$f8", None) in dot.fields
    assert sorted(c.new.name for c in d.changes if c.status == "added") == [
        "input_slice_fusion", "loop_convert_fusion"]
    assert d.counts() == {"added": 2, "removed": 0, "changed": 1}
    assert d.headline() == "1 instruction changed, 2 added, 0 removed"
    assert any("changed %gemm_fusion_dot.19.0 fusion (was %cublas-gemm.clone.1.0 custom-call): "
               "the same dot, now a Triton GEMM fusion" in line for line in d.lines())


def test_python_lines_come_first_and_many_sourceless_changes_are_one_line():
    """Issue 40: the recompile report listed the compiler's changes without a
    Python source before the line the user changed. The edited line comes
    first; three or more source-less changes of one opcode are one line."""
    text = read(TRAIN_AFTER)
    edited = text
    for name in ("bitcast.6", "bitcast.9", "bitcast.11"):  # op_name="labels": no frame
        edited = edited.replace(f"%{name} = s32[32,1]{{1,0}}", f"%{name} = s32[32,1]{{0,1}}")
    edited = edited.replace("ROOT %broadcast_in_dim.27 = f32[32,10]{1,0}",
                            "ROOT %broadcast_in_dim.27 = f32[32,20]{1,0}")
    d = diff_modules(parse(text), parse(edited))
    assert d.counts() == {"added": 0, "removed": 0, "changed": 4}
    sourceless = [c for c in d.changes if c.source == NO_SOURCE]
    assert [c.new.name for c in sourceless] == ["bitcast.6", "bitcast.9", "bitcast.11"]
    assert d.changes.index(sourceless[0]) == 0  # text order: the bitcasts come first
    [python_line] = [s for s in d.by_source() if s != NO_SOURCE]
    assert list(d.by_source()) == [python_line, NO_SOURCE]
    assert d.lines() == [
        "4 instructions changed, 0 added, 0 removed",
        f"  {python_line}",
        "    changed %broadcast_in_dim.27 broadcast: shape f32[32,10] -> f32[32,20]",
        f"  {NO_SOURCE}",
        "    changed 3 bitcast: layout"]
    # A cut counts what a collapsed line stands for.
    assert d.lines(max_lines=1)[-1] == "  ... 3 more instruction changes"
    # Two are still shown one by one.
    two = diff_modules(parse(text), parse(edited.replace("{0,1} bitcast(%param_0.65)",
                                                         "{1,0} bitcast(%param_0.65)")))
    assert [line.strip() for line in two.lines()[-2:]] == [
        "changed %bitcast.6 bitcast: layout {1,0} -> {0,1}",
        "changed %bitcast.9 bitcast: layout {1,0} -> {0,1}"]
