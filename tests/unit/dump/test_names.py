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
