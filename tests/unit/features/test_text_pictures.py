"""The pictures as text (hlo_lsp.features.text_pictures): the dataflow tree and
the memory chart on the real dumps of examples/, each line's target checked
against the text it comes from."""

from __future__ import annotations

import re

import pytest

from hlo_lsp.features.memory import MemoryBuffer, MemoryTimeline, timeline_for
from hlo_lsp.features.text_pictures import BLOCKS, CHART_ROWS, bar, graph_text, memory_text
from hlo_lsp.syntax.parser import parse
from tests.helpers import CPU_DUMP, FP8_DUMP, GPU, TRAIN_AFTER, offset_of, read

CONV = GPU / "deviceless" / "conv_bias_relu" / \
    "module_0001.jit_conv_bias_relu.sm_9.0a_gpu_after_optimizations.txt"


def _named(text, line):
    """The name a line targets, read off the text at its range (``%`` stripped)."""
    assert line.start is not None and text[line.start] == "%" or text[line.start - 1] == "%"
    return text[line.start:line.end].lstrip("%")


def _check_targets(text, pic):
    for line in pic.lines:
        assert "\n" not in line.text and "\r" not in line.text
        if line.start is not None:  # the line shows the name it jumps to
            name = _named(text, line)
            assert name in line.text, (name, line.text)


def _tree_names(pic, header):
    """Names on the tree lines after ``header`` up to the next header, with the
    depth of each (from its indentation) and whether it is a repeat."""
    i = next(k for k, l in enumerate(pic.lines) if l.text.startswith(header))
    out = []
    for line in pic.lines[i + 1:]:
        m = re.match(r"^((?:│  |   )*)[├└]─ (?:\d+: )?(?:ROOT )?%(\S+)", line.text)
        if m is None:
            break
        out.append((m.group(2), len(m.group(1)) // 3 + 1,
                    line.text.endswith(("(above)", "(below)", "(again)"))))
    return out


def _within(comp, center, hops, up):
    """Instructions at most ``hops`` operand (``up``) or user steps from ``center``."""
    seen, frontier = {center.name.name: 0}, [center]
    for d in range(1, hops + 1):
        nxt = []
        for ins in frontier:
            nbs = [comp.by_name[o.ref.name] for o in ins.operands if o.ref.name in comp.by_name] \
                if up else comp.users_by_name.get(ins.name.name, [])
            for nb in nbs:
                if nb.name.name not in seen:
                    seen[nb.name.name] = d
                    nxt.append(nb)
        frontier = nxt
    del seen[center.name.name]
    return seen


def test_dataflow_around_the_custom_call():
    text = read(FP8_DUMP)
    module = parse(text)
    pic = graph_text(module, around=offset_of(text, "%cublas-gemm.1.0 =", 3), hops=2)
    _check_targets(text, pic)
    cursor = pic.lines[pic.cursor]
    assert _named(text, cursor) == "cublas-gemm.1.0"
    assert cursor.start == offset_of(text, "%cublas-gemm.1.0 =")
    assert "cuBLASLt FP8 call __cublas$lt$matmul$f8" in cursor.text
    gemm = module.entry.by_name["cublas-gemm.1.0"]
    operands = [(n, d) for n, d, _ in _tree_names(pic, "operands") if d == 1]
    assert operands == [(op.ref.name, 1) for op in gemm.operands]
    users = _tree_names(pic, "users")
    assert [n for n, _, _ in users] == ["get-tuple-element.1"]
    assert "input fusion" in next(l.text for l in pic.lines if "%wrapped_transpose " in l.text)
    assert pic.message == ""


@pytest.mark.parametrize("hops", [1, 2, 3])
def test_each_instruction_within_the_hops_is_expanded_once_at_its_distance(hops):
    text = read(TRAIN_AFTER)
    module = parse(text)
    comp = module.entry
    for name in ("while.1", "cond.11", "copy.33"):
        center = comp.by_name[name]
        pic = graph_text(module, around=name, hops=hops)
        _check_targets(text, pic)
        assert _named(text, pic.lines[pic.cursor]) == name
        for header, up in (("operands", True), ("users", False)):
            want = _within(comp, center, hops, up)
            if not want:
                assert any(l.text == f"{header}: none" for l in pic.lines)
                continue
            fresh = [(n, d) for n, d, again in _tree_names(pic, header) if not again]
            assert sorted(fresh) == sorted(want.items())


def test_a_computation_header_shows_its_parameters_and_root():
    text = read(TRAIN_AFTER)
    module = parse(text)
    comp = module.entry
    pic = graph_text(module, around=comp.start + 2)
    _check_targets(text, pic)
    assert pic.cursor == 0 and _named(text, pic.lines[0]) == comp.name.name
    # the name as written (with the % of older printers)
    assert pic.lines[0].text.startswith(f"ENTRY computation %{comp.name.name}, ")
    bare = parse("HloModule m\n\nENTRY main {\n  ROOT p = f32[] parameter(0)\n}\n")
    assert graph_text(bare).lines[0].text.startswith("ENTRY computation main, 1 instruction")
    params = [l for l in pic.lines if l.text.startswith("  %") and "parameter" in l.text]
    assert [_named(text, l) for l in params] == \
        [p.name.name for _, p in sorted(comp.parameters().items())]
    root = next(l for l in pic.lines if l.text.startswith("ROOT %"))
    assert _named(text, root) == comp.root.name.name
    assert graph_text(module) is not None and graph_text(module).lines[0].text == pic.lines[0].text


def test_an_instruction_of_a_fused_computation_names_its_caller():
    text = read(FP8_DUMP)
    module = parse(text)
    fused = next(c for c in module.computations if not c.is_entry and c.instructions)
    ins = fused.instructions[-1]
    pic = graph_text(module, around=ins.name.start)
    _check_targets(text, pic)
    caller = next(l for l in pic.lines if l.text.startswith("called by %"))
    [(by, _)] = module.callers_of(fused.name.name, fused.start)
    assert _named(text, caller) == by.name.name
    assert graph_text(module, around="no-such-instruction") is None
    assert graph_text(module, computation="no_such_computation") is None


def test_hostile_names_are_escaped():
    # names read from a report beside the dump are data, never terminal control
    t = MemoryTimeline(["p\x1b]0;x\x07", "q\nr"], [8, 8, 0],
                       [MemoryBuffer("p\x1b]0;x\x07", "{}", 8, 0, 1)], 1, 8,
                       [MemoryBuffer("p\x1b]0;x\x07", "{}", 8, 0, 1, shape="f32[2]\r")], 0,
                       "live-range", notes=["n\x1bote"])
    pic = memory_text(t)
    for line in pic.lines:
        assert line.text.isprintable(), line.text
    assert any("%p\\x1b]0;x\\x07" in l.text for l in pic.lines)
    assert any("%q\\nr" in l.text for l in pic.lines)


def test_bars_in_eighths():
    assert bar(0, 100) == "" and bar(1, 10**9) == BLOCKS[0]
    assert bar(100, 100, 4) == "████" and bar(50, 100, 4) == "██"
    assert bar(9, 64, 8) == "█" + BLOCKS[0]  # 9 eighths
    assert bar(200, 100, 4) == "████"


def test_memory_chart_of_a_live_range_report():
    text = read(CONV)
    module = parse(text)
    t = timeline_for(str(CONV), module)
    pic = memory_text(t, module)
    _check_targets(text, pic)
    rows = [l for l in pic.lines if re.match(r"^\s*\d+(-\d+)?  ", l.text)]
    assert len(rows) == len(t.live)  # one row per step, the end included
    peak = pic.lines[pic.cursor]
    assert peak.text.endswith("◀ peak") and peak.text.lstrip().startswith(f"{t.peak_step} ")
    assert _named(text, peak) == t.steps[t.peak_step] == "cudnn-conv-bias-activation.3"
    # the longest bar is the most bytes live; each bar is in proportion
    full = max(t.live)
    for row, live in zip(rows, t.live):
        cells = "".join(c for c in row.text if c in BLOCKS)
        assert abs(sum(1 if c == "█" else (BLOCKS.index(c) + 1) / 8 for c in cells)
                   - 40 * live / full) <= 1 / 8
    assert rows[-1].start is None and rows[-1].text.rstrip().endswith("end")
    buffers = pic.lines[pic.lines.index(next(l for l in pic.lines if l.text.startswith(
        "largest buffers"))) + 1:][:len(t.peak_buffers)]
    for line, b in zip(buffers, t.peak_buffers):
        assert _named(text, line) == b.instruction and f"{b.size:,} B" in line.text
    assert "1,048,576 B (1.0 MiB)" in buffers[0].text


def test_memory_chart_buckets_long_schedules_and_keeps_the_peak():
    module = parse(read(TRAIN_AFTER))
    t = timeline_for(str(TRAIN_AFTER), module)
    assert len(t.live) > 10
    pic = memory_text(t, module, rows=10, top=3)
    rows = [l for l in pic.lines if re.match(r"^\s*\d+-\d+  ", l.text)]
    assert len(rows) == 10
    covered = []
    for row in rows:
        lo, hi = map(int, row.text.split()[0].split("-"))
        covered.extend(range(lo, hi + 1))
    assert covered == list(range(len(t.live)))
    peak = pic.lines[pic.cursor]
    lo, hi = map(int, peak.text.split()[0].split("-"))
    assert lo <= t.peak_step <= hi and peak.text.endswith("◀ peak")
    assert "(estimate)" in pic.title and pic.message.endswith("more buffers live at the peak")
    assert len([l for l in memory_text(t, module).lines if re.match(r"^\s*\d+  ", l.text)]) \
        <= CHART_ROWS


def test_cli_prints_the_pictures_as_text(capsys):
    from hlo_lsp.cli.main import main

    assert main(["graph", str(TRAIN_AFTER), "--text", "--around", "while.1", "--hops", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("dataflow around %while.1 in %main.29, 1 hop\n")
    assert "\n└─ 0: %tuple.15  tuple  " in out and "\n├─ %while.15  get-tuple-element  f32[]" in out
    assert main(["graph", str(TRAIN_AFTER), "--text", "--around", "nope"]) == 2
    assert main(["memory", str(CONV.parent), "--text", "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert "  %cudnn-conv-bias-activation.3  ◀ peak\n" in out
    assert "1,048,576 B (1.0 MiB)  %x.1{}" in out and "... 5 more" in out


def test_cli_escapes_names_for_the_terminal(tmp_path, capsys):
    """A dump whose custom-call target carries an escape sequence (a string
    attribute may hold any character): printed escaped, never sent raw."""
    from hlo_lsp.cli.main import main

    path = tmp_path / "m.txt"
    path.write_text('HloModule m\n\nENTRY main {\n  p = f32[2]{0} parameter(0)\n'
                    '  ROOT c = f32[2]{0} custom-call(p), custom_call_target="x\x1b]0;pwned\x07"\n'
                    '}\n')
    assert main(["graph", str(path), "--text", "--around", "c"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "ROOT %c  custom call x\\x1b]0;pwned\\x07  f32[2]" in out


def test_a_tree_past_the_line_budget_counts_what_it_leaves_out(monkeypatch):
    """``p`` has 600 users, each also a user of the one before it: the user tree
    is cut at MAX_LINES lines and the message counts every line left out."""
    from hlo_lsp.features import text_pictures
    from tests.helpers import chain_module

    module = parse(chain_module(600))
    cut = graph_text(module, around="p", hops=2)
    monkeypatch.setattr(text_pictures, "MAX_LINES", 10**6)
    whole = graph_text(module, around="p", hops=2)
    assert whole.message == "" and len(whole.lines) > 400 == len(cut.lines)
    left = int(cut.message.split()[0])
    assert cut.message.endswith("more lines not shown (at most 400): ask for fewer hops")
    assert len(cut.lines) + left == len(whole.lines)
    assert [l.text for l in cut.lines] == [l.text for l in whole.lines[:400]]
