"""XLA dump file names (hlo_lsp.dump.names, after xla/service/dump.cc)."""

from __future__ import annotations

from hlo_lsp.dump.names import (AFTER_OPTIMIZATIONS, BEFORE_OPTIMIZATIONS, DumpName,
                                counterpart_stage, hlo_path_for_report, is_dump_entry,
                                is_hlo_path, is_non_hlo_dump_file, looks_like_hlo,
                                module_id, module_label, parse_dump_name, report_kind)


def test_dump_names_decode():
    assert parse_dump_name("module_0012.jit_step.sm_9.0_gpu_after_optimizations.txt") == \
        DumpName(12, "jit_step", AFTER_OPTIMIZATIONS, "sm_9.0_gpu")
    assert parse_dump_name("1700000000.module_0003.jit_f.before_optimizations.txt") == \
        DumpName(3, "jit_f", BEFORE_OPTIMIZATIONS, "", "1700000000")
    assert parse_dump_name("module_0004.jit_f.0007.gpu-opt.after_a.before_b.txt").stage == \
        "pass:0007.gpu-opt.after_a.before_b"
    assert parse_dump_name(
        "module_0004.jit_f.cpu_after_optimizations-buffer-assignment.txt") is None
    assert parse_dump_name("notes.txt") is None


def test_entries_labels_and_stages():
    assert is_dump_entry("module_0001.a") and is_dump_entry("12.module_0001.a.txt")
    assert not is_dump_entry("hlo-lsp-recipe.json") and not is_dump_entry(".x.hlo-lsp-new-1")
    assert module_label("17.module_0004.jit_step.cpu_after_optimizations.txt") == "module_0004"
    assert module_label(None) == "?" and module_label("notes.md") == "?"
    assert module_id(28) == "module_0028" and module_id(12345) == "module_12345"
    assert counterpart_stage(BEFORE_OPTIMIZATIONS) == AFTER_OPTIMIZATIONS
    assert counterpart_stage(AFTER_OPTIMIZATIONS) == BEFORE_OPTIMIZATIONS
    assert counterpart_stage("pass:0001.x") == BEFORE_OPTIMIZATIONS
    assert counterpart_stage("") is None


def test_reports_and_hlo_files(tmp_path):
    ba = "/d/module_0001.f.cpu_after_optimizations-buffer-assignment.txt"
    assert report_kind(ba) == "buffer-assignment" and is_non_hlo_dump_file(ba)
    assert report_kind(ba.replace("buffer-assignment", "memory-usage-report")) == \
        "memory-usage"
    assert report_kind("/d/module_0001.f.cpu_after_optimizations.txt") is None
    assert hlo_path_for_report(ba) == "/d/module_0001.f.cpu_after_optimizations.txt"
    assert looks_like_hlo("x.txt", "HloModule m") and not looks_like_hlo("x.txt", "notes")
    (tmp_path / "inline.txt").write_text("HloModule m\n")
    (tmp_path / "notes.txt").write_text("notes\n")
    assert is_hlo_path(str(tmp_path / "inline.txt"))
    assert not is_hlo_path(str(tmp_path / "notes.txt"))
    assert is_hlo_path(str(tmp_path / "module_0001.f.before_optimizations.txt"))  # by name
    assert not is_hlo_path(str(tmp_path / "gone.txt"))


#: Files of a real dump directory (`hlo-lsp dump --target h100` of
#: examples/gpu/programs/spmd_mesh8.py with --xla_dump_hlo_pass_re=.*, jaxlib
#: 0.10.2; three of its 69 pass snapshots), and the thunk sequence newer XLA
#: writes when thunk passes changed it (issue 40's listing).
REAL_LISTING = """\
module_0001.jit_sharded_matmul.0.ir-no-opt.ll
module_0001.jit_sharded_matmul.1.ir-with-opt.ll
module_0001.jit_sharded_matmul.1.ptx
module_0001.jit_sharded_matmul.constants.ir-no-opt.ll
module_0001.jit_sharded_matmul.0000.annotate-host-compute.after_pipeline-start.before_hlo_host_device_type_call_wrapper.txt
module_0001.jit_sharded_matmul.0033.fusion.after_priority-fusion.before_cse.txt
module_0001.jit_sharded_matmul.0051.copy-insertion.after_adding_copies_to_resolve_interference.txt
module_0001.jit_sharded_matmul.after_spmd_partitioner.txt
module_0001.jit_sharded_matmul.autotune_results.pbtxt
module_0001.jit_sharded_matmul.before_optimizations.txt
module_0001.jit_sharded_matmul.config.pbtxt
module_0001.jit_sharded_matmul.debug_options
module_0001.jit_sharded_matmul.gpu_target_config.pbtxt
module_0001.jit_sharded_matmul.priority_fusion_dump.txt
module_0001.jit_sharded_matmul.sm_9.0a_gpu_after_optimizations-buffer-assignment-values.txt
module_0001.jit_sharded_matmul.sm_9.0a_gpu_after_optimizations-buffer-assignment.txt
module_0001.jit_sharded_matmul.sm_9.0a_gpu_after_optimizations-live-range.txt
module_0001.jit_sharded_matmul.sm_9.0a_gpu_after_optimizations-memory-usage-report.txt
module_0001.jit_sharded_matmul.sm_9.0a_gpu_after_optimizations.txt
module_0001.jit_sharded_matmul.thunk_metadata.txt
module_0001.jit_sharded_matmul.thunk_sequence.txt
module_0001.jit_sharded_matmul.thunk_sequence_after_thunk_passes.txt
""".splitlines()


def test_only_hlo_text_files_of_a_real_listing_are_modules():
    """Issue 40: the thunk sequences and the priority-fusion log were read as a
    second module ("2 modules" for a one-module program)."""
    from hlo_lsp.cli.commands.dump import module_lines
    from hlo_lsp.dump.names import is_pass_snapshot, stage_label

    decoded = {n: parse_dump_name(n) for n in REAL_LISTING}
    hlo = {n: d for n, d in decoded.items() if d is not None}
    assert sorted(stage_label(d) for d in hlo.values()) == [
        "0000.annotate-host-compute.after_pipeline-start.before_hlo_host_device_type_call_wrapper",
        "0033.fusion.after_priority-fusion.before_cse",
        "0051.copy-insertion.after_adding_copies_to_resolve_interference",
        "after_spmd_partitioner", "before_optimizations", "sm_9.0a_gpu_after_optimizations"]
    assert {d.module_name for d in hlo.values()} == {"jit_sharded_matmul"}
    assert sum(is_pass_snapshot(d) for d in hlo.values()) == 3
    for name in ("module_0001.jit_loss.thunk_sequence_after_thunk_passes.txt",
                 "module_0001.jit_loss.priority_fusion_dump.txt",
                 "module_0001.jit_loss.debug_options", "module_0001.jit_loss.1.ptx"):
        assert is_non_hlo_dump_file(name) and parse_dump_name(name) is None, name
    assert module_lines(hlo) == [
        "module_0001.jit_sharded_matmul: before_optimizations, after_spmd_partitioner, "
        "sm_9.0a_gpu_after_optimizations, 3 pass snapshots"]


def test_module_lines_sort_by_number_and_escape_names():
    from hlo_lsp.cli.commands.dump import module_lines

    names = ["module_0010.jit_b.before_optimizations.txt",
             "module_0002.jit_a.cpu_after_optimizations.txt",
             "module_0002.jit_a.before_optimizations.txt",
             "module_0003.jit_\x1b[31mred.0001.p.after_x.before_y.txt",
             "module_0004.notes.txt"]
    assert module_lines({n: parse_dump_name(n) for n in names}) == [
        "module_0002.jit_a: before_optimizations, cpu_after_optimizations",
        "module_0003.jit_\\x1b[31mred: 1 pass snapshot",
        "module_0004.notes: (no stage in the name)",
        "module_0010.jit_b: before_optimizations"]


def test_holds_hlo_text(tmp_path):
    from hlo_lsp.dump.names import holds_hlo_text

    (tmp_path / "a.txt").write_text("\nHloModule m, entry_computation_layout={()->f32[]}\n")
    (tmp_path / "b.txt").write_text("001: kCustomCall\n")
    assert holds_hlo_text(str(tmp_path / "a.txt"))
    assert not holds_hlo_text(str(tmp_path / "b.txt"))
    assert not holds_hlo_text(str(tmp_path / "gone.txt"))
