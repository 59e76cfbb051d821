"""The dump directory as a workspace (issue 5): the index, counterparts between
optimization stages, and the buffer-assignment / memory-usage reports, on the real
dump in examples/cpu_dump/."""

from __future__ import annotations

import asyncio
import os
import shutil
import time

import pytest

from tests.helpers import (CORPUS, CPU_DUMP, EXAMPLES, FP8_DUMP, TRAIN_AFTER, TRAIN_BEFORE,
                           corpus_file, read)
from hlo_lsp.dump.names import hlo_path_for_report, report_path, report_paths_for_hlo
from hlo_lsp.dump.reports import load_buffer_assignment, load_buffer_assignment_for, load_memory_report, parse_buffer_assignment, parse_bytes, parse_memory_report, report_links, report_names_at
from hlo_lsp.features.hover import buffer_lines, hover
from hlo_lsp.syntax.parser import parse
from hlo_lsp.dump.index import WorkspaceIndex, counterpart_files, discover, find_counterparts, source_key, summarize_file, summarize_text

TRAIN = "module_0028.jit_train_step.cpu_after_optimizations"
BA = CPU_DUMP / f"{TRAIN}-buffer-assignment.txt"
MEM = CPU_DUMP / f"{TRAIN}-memory-usage-report.txt"


def line_of(text: str, needle: str) -> int:
    return text[:text.index(needle)].count("\n")


def instruction(module, name: str):
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.name.name == name:
                return ins
    raise AssertionError(name)


@pytest.fixture(scope="module")
def index():
    idx = WorkspaceIndex(workers=1)
    yield idx
    idx.close()


# ----------------------------------------------------------------- summary ---

def test_summary_of_the_real_after_file():
    s = summarize_file(str(TRAIN_AFTER))
    text = read(TRAIN_AFTER)
    assert (s.module, s.number, s.stage, s.platform) == (
        "jit_train_step", 28, "after_optimizations", "cpu")
    assert not s.partial and not s.error
    entry = [c for c in s.computations if c.is_entry]
    assert [c.name for c in entry] == ["main.29"]
    assert entry[0].line == line_of(text, "ENTRY %main.29 (") and entry[0].column == 6
    assert len(s.computations) == sum(1 for ln in text.splitlines()
                                      if ln.endswith("{") and not ln.startswith(" "))
    ynn = {f.name: f for f in s.fusions if f.backend_kind == "__ynn_fusion"}
    assert set(ynn) == {"ynn_fusion", "ynn_fusion.1", "ynn_fusion.2", "ynn_fusion.3",
                        "ynn_fusion.4", "ynn_fusion.5"}
    f5 = ynn["ynn_fusion.5"]
    assert f5.kind == "kCustom" and f5.line == line_of(text, "%ynn_fusion.5 = ")
    assert text.splitlines()[f5.line][f5.column:f5.end_column] == "%ynn_fusion.5"
    assert s.instruction_count == parse(text).instruction_count()
    assert "jit_train_step · after_optimizations · cpu · module_0028" == s.container


def test_summary_of_custom_calls_and_inferred_gemm_fusions():
    s = summarize_file(str(FP8_DUMP))
    [call] = s.custom_calls
    assert (call.name, call.target) == ("cublas-gemm.1.0", "__cublas$lt$matmul$f8")
    assert s.stage == "" and s.module == "jit_matmul_fn"


def _same_symbols(path) -> None:
    full = summarize_file(str(path))
    fast = summarize_file(str(path), size_limit=10)
    assert fast.partial and not full.partial
    assert fast.computations == full.computations
    assert fast.fusions == full.fusions
    assert fast.custom_calls == full.custom_calls
    assert fast.instructions == full.instructions
    assert fast.module == full.module
    assert fast.instruction_count == full.instruction_count


# Every HLO file of examples/ (a superset of the files listed here before).
@pytest.mark.parametrize("path", [TRAIN_AFTER, TRAIN_BEFORE, FP8_DUMP,
                                  *sorted((CPU_DUMP.parent / "gpu").glob("*.txt")),
                                  *discover([str(EXAMPLES)])])
def test_large_file_regex_summary_agrees_with_the_parse(path):
    """Above the size limit the summary comes from regular expressions; on real
    dumps it finds the same symbols as the full parse (fusion kinds and
    custom-call targets by the model's rules, hlo_lsp.model.kernels)."""
    _same_symbols(path)


def test_regex_summary_agrees_with_the_parse_on_a_corpus_sample(corpus_dir):
    """The same on every fourth file of the corpus that is valid HLO by our own
    checks (no syntax or semantic problem): hand-written XLA test files too,
    with comments, instructions over several lines and indented headers."""
    from hlo_lsp.features.diagnostics import diagnostics

    files = sorted(p for p in corpus_dir.rglob("*") if p.is_file())[::4]
    checked = 0
    for path in files:
        if path.stat().st_size > 4 * 1024 * 1024 or diagnostics(parse(read(path))):
            continue
        _same_symbols(path)
        checked += 1
    assert checked >= 60


def test_summary_never_raises_on_garbage(tmp_path):
    p = tmp_path / "module_0001.jit_x.before_optimizations.txt"
    p.write_bytes(b"\xff\xfe garbage {{{ \n  %a = = =\n")
    s = summarize_file(str(p))
    assert s.stage == "before_optimizations" and s.error == ""
    assert summarize_text("x.hlo", "").computations == ()
    missing = summarize_file(str(tmp_path / "nope.hlo"))
    assert missing.error


def test_discover_skips_reports_and_non_hlo_text(tmp_path):
    shutil.copytree(CPU_DUMP, tmp_path / "dump")
    (tmp_path / "dump" / "notes.txt").write_text("just notes\n")
    (tmp_path / "dump" / "inline.txt").write_text("HloModule m\n\nENTRY e { ROOT c = f32[] "
                                                  "constant(1) }\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "x.hlo").write_text("HloModule hidden\n")
    found = [os.path.basename(p) for p in discover([str(tmp_path)])]
    assert "inline.txt" in found and "notes.txt" not in found and "x.hlo" not in found
    assert not [f for f in found if "buffer-assignment" in f or "memory-usage" in f]
    assert len(found) == 7
    assert len(discover([str(tmp_path)], max_files=3)) == 3


# ------------------------------------------------------------------- index ---

def test_index_caches_by_mtime_and_size_and_updates(tmp_path, index):
    shutil.copytree(CPU_DUMP, tmp_path / "dump")
    paths = index.scan([str(tmp_path)])
    assert len(index.index(paths)) == 6
    assert index.index(paths) == []          # cached: nothing re-summarised
    target = tmp_path / "dump" / "module_0000.jit_stage.before_optimizations.txt"
    target.write_text(read(target).replace("jit_stage", "jit_renamed"))
    os.utime(target, ns=(time.time_ns(), time.time_ns() + 10**9))
    [again] = index.index(paths)
    assert again.path == str(target) and again.module == "jit_renamed"
    assert index.remove([str(tmp_path / "dump")]) and len(index.modules("jit_train_step")) == 0


def test_index_async_reports_progress_and_symbols(tmp_path, index):
    shutil.copytree(CPU_DUMP, tmp_path / "dump")
    shutil.copy(FP8_DUMP, tmp_path / "dump" / "module_0040.jit_matmul_fn.sm_9.0_gpu_after_optimizations.txt")
    seen = []

    async def run():
        paths = await index.scan_async([str(tmp_path)])
        return await index.index_async(paths, lambda d, t: seen.append((d, t)))

    done = asyncio.run(run())
    assert len(done) == 7 and seen[-1] == (7, 7)
    # fusions by kind, backend kind; custom-calls by target; modules by name
    kinds = index.symbols("kLoop")
    assert kinds and all(h.kind == "fusion" and "kLoop" in h.label for h in kinds)
    ynn = index.symbols("__ynn_fusion")
    assert {h.name for h in ynn} >= {"ynn_fusion.5"}
    [gemm] = [h for h in index.symbols("__cublas$lt$matmul$f8") if h.kind == "custom-call"]
    assert gemm.name == "cublas-gemm.1.0" and gemm.summary.platform == "sm_9.0_gpu"
    assert gemm.label == "cublas-gemm.1.0 [__cublas$lt$matmul$f8]"
    exact = index.symbols("main.29")
    assert exact[0].name == "main.29" and exact[0].score == 0
    mods = [h for h in index.symbols("jit_train_step") if h.kind == "module"]
    assert {h.summary.stage for h in mods} == {"before_optimizations", "after_optimizations"}
    assert index.symbols("kLoop add_tanh") and all(
        "add_tanh" in h.name for h in index.symbols("kLoop add_tanh"))
    assert index.symbols("no-such-symbol-anywhere") == []


def test_update_picks_up_new_and_deleted_files(tmp_path, index):
    shutil.copytree(CPU_DUMP, tmp_path / "dump")
    asyncio.run(index.index_async(index.scan([str(tmp_path)])))
    new = tmp_path / "dump" / "module_0040.jit_matmul_fn.sm_9.0_gpu_after_optimizations.txt"
    shutil.copy(FP8_DUMP, new)
    report = tmp_path / "dump" / "module_0040.jit_matmul_fn.sm_9.0_gpu_after_optimizations-buffer-assignment.txt"
    report.write_text("BufferAssignment:\n")
    updated = asyncio.run(index.update([str(new), str(report)]))
    assert [s.path for s in updated] == [str(new)]
    assert index.symbols("__cublas$lt$matmul$f8")
    new.unlink()
    asyncio.run(index.update([str(new)]))
    assert index.get(str(new)) is None


# ------------------------------------------------------------ counterparts ---

def test_counterpart_files_match_by_module_name_not_number(tmp_path):
    shutil.copy(TRAIN_AFTER, tmp_path / TRAIN_AFTER.name)
    shutil.copy(TRAIN_BEFORE, tmp_path / "module_0031.jit_train_step.before_optimizations.txt")
    shutil.copy(CPU_DUMP / "module_0000.jit_stage.before_optimizations.txt",
                tmp_path / "module_0028.jit_stage.before_optimizations.txt")
    [before] = counterpart_files(str(tmp_path / TRAIN_AFTER.name))
    assert os.path.basename(before.path) == "module_0031.jit_train_step.before_optimizations.txt"
    [after] = counterpart_files(before.path)
    assert os.path.basename(after.path) == TRAIN_AFTER.name
    assert counterpart_files(str(CPU_DUMP / "module_0000.jit_stage.before_optimizations.txt"))


def test_counterparts_between_before_and_after():
    after, before = parse(read(TRAIN_AFTER)), parse(read(TRAIN_BEFORE))
    # a fusion of the after file came from the dot of the before file
    [m] = find_counterparts(after, instruction(after, "ynn_fusion.5"), before)
    assert (m.instruction.name.name, m.via) == ("dot_general.12", "source")
    # ... and back: the dot now lives in that fusion (through its fused dot)
    [back] = find_counterparts(before, instruction(before, "dot_general.12"), after)
    assert back.instruction.name.name == "ynn_fusion.5" and back.via == "source"
    assert back.fused is not None and back.fused.opcode == "dot"
    # same name: parameters, the while loop's get-tuple-elements
    [p] = find_counterparts(after, instruction(after, "params__w1__.1"), before)
    assert (p.instruction.name.name, p.via) == ("params__w1__.1", "name")
    # a loop fusion lists the ops fused into it, its root's op first
    fused = find_counterparts(after, instruction(after, "add_tanh_fusion.1"), before)
    assert [c.instruction.name.name for c in fused][:1] == ["tanh.3"]
    assert {"add.37", "tanh.3"} <= {c.instruction.name.name for c in fused}
    # copies inserted by XLA have no counterpart
    assert find_counterparts(after, instruction(after, "copy.31"), before) == []


def test_source_key_resolves_each_files_own_frames():
    after, before = parse(read(TRAIN_AFTER)), parse(read(TRAIN_BEFORE))
    k1 = source_key(after, instruction(after, "ynn_fusion.5"))
    k2 = source_key(before, instruction(before, "dot_general.12"))
    assert k1 == k2 and k1[0] == "jit(train_step)/dot_general" and k1[1].endswith("make_dump.py")


# ------------------------------------------------------------ buffer reports ---

def test_buffer_assignment_of_the_real_report():
    ba = parse_buffer_assignment(read(BA))
    assert len(ba.allocations) == 67 and [a.index for a in ba.allocations] == list(range(67))
    a0, a1 = ba.allocations[0], ba.allocations[1]
    assert (a0.size, a0.flags, len(a0.values)) == (32768, ["maybe-live-out"], 7)
    assert (a1.size, a1.parameter, a1.parameter_shape, a1.parameter_shape_index) == (
        32768, 2, "f32[64,128]", "{}")
    out = ba.allocation(9)
    assert out.size == 48 and out.flags == ["output", "maybe-live-out"]
    assert out.output_shape.startswith("(f32[128], f32[10], f32[64,128]")
    const = ba.allocation(17)
    assert (const.size, const.constant, const.values[0].instruction) == (4, True, "constant.50")
    tl = ba.allocation(8)
    assert (tl.size, tl.thread_local, tl.values[0].instruction) == (1, True, "or.3")
    temp = ba.allocation(66)
    assert (temp.size, temp.preallocated_temp, len(temp.values)) == (62120, True, 58)
    v = [v for v in temp.values if v.instruction == "ynn_fusion.2"][0]
    assert (v.id, v.size, v.offset, v.shape) == (321, 1280, 32768, "f32[32,10]{1,0}")
    tup = [v for v in temp.values if v.instruction == "iota_reduce_fusion"]
    assert [(v.shape_index, v.offset, v.size) for v in tup] == [
        ("{}", 61824, 16), ("{0}", 0, 128), ("{1}", 128, 128)]
    phi = [v for v in temp.values if v.phi]
    assert phi and phi[0].instruction == "wide.arg_tuple.0"
    # the sum of the allocations is the memory report's "Total bytes"
    assert ba.total_bytes == 147579 == parse_memory_report(read(MEM)).total_bytes
    # every value's offset + size fits its allocation
    assert all(v.offset + v.size <= a.size for a in ba.allocations for v in a.values)


def test_memory_report_tables_pair_with_allocations():
    report = load_memory_report(str(MEM))
    assert report.spaces[0].name == "default" and report.spaces[0].total_bytes == 147579
    assert len(report.tables) == 51
    assert [t.allocation for t in report.tables[:6]] == [66, 0, 1, 2, 3, 4]
    first = report.tables[0].rows[0]
    assert (first.offset, first.n_values, first.size) == (0, 8, 32768)
    assert first.shapes == "f32[32], 2×f32[32,128], 5×f32[64,128]"
    assert parse_bytes("1.2KiB") == 1229 and parse_bytes("512B") == 512


def test_report_file_names():
    assert hlo_path_for_report(str(BA)) == str(TRAIN_AFTER)
    assert hlo_path_for_report(str(MEM)) == str(TRAIN_AFTER)
    assert report_paths_for_hlo(str(TRAIN_AFTER)) == (str(BA), str(MEM))
    assert report_path(str(MEM), "buffer-assignment") == str(BA)
    assert report_path(str(TRAIN_AFTER), "memory-usage") == str(MEM)
    assert report_path(str(CPU_DUMP / "x.hlo"), "memory-usage") is None


def test_buffer_info_for_hover():
    # The hover's buffer section is made by features.hover from the assignment
    # dump.reports loads (it was dump.reports.buffer_info/buffer_hover).
    assignment = load_buffer_assignment_for(str(TRAIN_AFTER))
    lines = buffer_lines(assignment, "iota_reduce_fusion")
    assert lines[0] == f"**Buffer assignment** (`{BA.name}`)"
    assert lines[2] == ("- allocation 66 (62,120 B (60.7 KiB), preallocated-temp) `{0}`: "
                        "offset 0, 128 B `f32[32]{0}`")
    [_, param] = buffer_lines(assignment, "params__w1__.1")
    assert "allocation 1 (32,768 B (32.0 KiB), parameter 2)" in param
    assert buffer_lines(assignment, "param_0.1") == []
    assert load_buffer_assignment_for(str(TRAIN_BEFORE)) is None  # no report for before files
    assert load_buffer_assignment_for("") is None
    text = read(TRAIN_AFTER)
    module = parse(text)
    at = text.index("%x.1, %cond.14)") + 1
    plain, with_buffers = hover(module, at), hover(module, at, assignment)
    at_use = buffer_lines(assignment, "x.1")
    assert at_use and "parameter 4" in at_use[1]
    assert with_buffers.markdown == plain.markdown + "\n\n---\n\n" + "\n".join(at_use)
    assert (with_buffers.start, with_buffers.end) == (plain.start, plain.end)
    # not on an instruction name (an opcode): no buffer section
    at_op = text.index(" while(") + 2
    assert hover(module, at_op, assignment) == hover(module, at_op)


def test_report_links_land_on_the_instruction_lines():
    text = read(BA)
    hlo = read(TRAIN_AFTER)
    names = {ins.name.name: ins for c in parse(hlo).computations for ins in c.instructions}
    links = report_links(str(BA), text)
    assert len(links) == 152
    lines = text.splitlines()
    for link in links:
        assert lines[link.line][link.start:link.end] == link.instruction
        ins = names[link.instruction]
        hlo_line = hlo.splitlines()[hlo[:ins.name.start].count("\n")]
        assert f"%{link.instruction} = " in hlo_line
    mem_links = report_links(str(MEM), read(MEM))
    row = [m for m in mem_links if m.line == 5][0]     # offset 32768 of allocation 66
    target = read(BA).splitlines()[row.target_line]
    assert "offset=32768" in target and row.target_path == str(BA)
    assert "ynn_fusion.2" in row.tooltip


def test_report_names_for_definition():
    text = read(BA)
    line = line_of(text, "<321 ynn_fusion.2")
    col = text.splitlines()[line].index("ynn_fusion.2") + 3
    assert report_names_at(str(BA), text, line, col) == ["ynn_fusion.2"]
    header = line_of(text, "allocation 1: size")
    assert report_names_at(str(BA), text, header, 0) == ["params__w1__.1"]
    mem = read(MEM)
    assert report_names_at(str(MEM), mem, 5, 10) == ["ynn_fusion.2", "ynn_fusion.1",
                                                      "multiply_add_fusion"]
    assert report_names_at(str(MEM), mem, 0, 0) == []


def test_buffer_assignment_loader_caches_by_mtime(tmp_path):
    p = tmp_path / BA.name
    shutil.copy(BA, p)
    first = load_buffer_assignment(str(p))
    assert load_buffer_assignment(str(p)) is first
    p.write_text(read(BA).replace("allocation 0: size 32768", "allocation 0: size 32769"))
    os.utime(p, ns=(time.time_ns(), time.time_ns() + 10**9))
    assert load_buffer_assignment(str(p)).allocations[0].size == 32769


def test_close_terminates_exactly_the_workers_it_started(tmp_path):
    """The index remembers its worker processes itself (the pool's mp_context),
    not through ProcessPoolExecutor's private attributes."""
    idx = WorkspaceIndex(workers=2)
    shutil.copytree(CPU_DUMP, tmp_path / "dump")
    assert len(idx.index(idx.scan([str(tmp_path)]))) == 6
    workers = list(idx._context.processes)
    assert 1 <= len(workers) <= 2 and all(p.is_alive() for p in workers)
    idx.close()
    for p in workers:
        p.join(10)
    assert not any(p.is_alive() for p in workers)
    # usable again after close: a new pool
    assert idx.scan([str(tmp_path)])
    idx.close()


def test_a_dump_inside_a_large_repository_indexes_only_dump_directories(tmp_path):
    """Issue 13: 600 other files (sources, notes, stray HLO text and .hlo test
    files) beside one dump: only the dump directory's files are found."""
    repo = tmp_path / "repo"
    for i in range(120):
        d = repo / "src" / f"pkg{i % 12}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"mod{i}.py").write_text("x = 1\n")
        (d / f"notes{i}.txt").write_text("notes\n")
        (d / f"data{i}.json").write_text("{}\n")
        (d / f"stray{i}.txt").write_text("HloModule stray\n")
        (d / f"test{i}.hlo").write_text("HloModule test\n")
    shutil.copytree(CPU_DUMP, repo / "experiments" / "run1" / "dump")
    others = sum(1 for p in repo.rglob("*") if p.is_file() and "dump" not in p.parts)
    assert others == 600
    found = discover([str(repo)])
    assert found and all(os.path.dirname(p) == str(repo / "experiments" / "run1" / "dump")
                         for p in found)
    assert sorted(os.path.basename(p) for p in found) == sorted(
        p.name for p in CPU_DUMP.iterdir() if "optimizations.txt" in p.name)
    everything = discover([str(repo)], dump_dirs_only=False)
    assert len(everything) == len(found) + 240          # the stray HLO and .hlo files
    assert discover([str(repo)], max_scanned=5) == []      # the walk stops early


ALPA_AFTER = CORPUS / ("HeydrichBeillschmidt__alpa_trimming__tests__hlo__module_0096."
                       "func_shard_parallel__2.68.sm_7.0_gpu_after_optimizations.txt")


def test_workspace_symbols_find_collectives_loops_and_any_opcode(tmp_path, index):
    """Issue 13: `all-reduce`, `conditional`, `dot` found by opcode, with the kind
    of their family (a real alpa dump with all-reduces, the CPU example)."""
    corpus_file(ALPA_AFTER.name)
    shutil.copytree(CPU_DUMP, tmp_path / "dump")
    shutil.copy(ALPA_AFTER, tmp_path / "dump" / "module_0096.func_shard_parallel.sm_7.0_gpu_after_optimizations.txt")
    asyncio.run(index.index_async(index.scan([str(tmp_path)])))
    reduces = index.symbols("all-reduce")
    assert reduces and all(h.kind == "collective" for h in reduces)
    assert {h.summary.module for h in reduces} == {"func_shard_parallel__2.68"}
    text = read(ALPA_AFTER).splitlines()
    assert all(" all-reduce" in text[h.line] and text[h.line][h.column:h.end_column].lstrip("%") == h.name
               for h in reduces)
    conds = index.symbols("conditional")
    assert conds and all(h.kind == "control flow" and "[conditional]" in h.label for h in conds)
    dots = [h for h in index.symbols("dot") if h.label.endswith("[dot]")]
    assert dots and all(h.kind == "instruction" for h in dots)


def test_the_index_closes_from_a_signal_handler_that_interrupted_its_lock_holder():
    """SIGTERM's handler (hlo_lsp.lsp.server.serve_stdio) runs in the event loop's
    thread, which may be inside the index's critical section at that moment: the
    close must not wait for itself (a non-reentrant lock hung the server there)."""
    import threading

    idx = WorkspaceIndex()

    def interrupted_holder():
        with idx._lock:   # the event loop, mutating the index ...
            idx.close()   # ... when the handler runs in its thread

    t = threading.Thread(target=interrupted_holder, daemon=True)
    t.start()
    t.join(5)
    assert not t.is_alive(), "close() waited for a lock its own thread holds"
