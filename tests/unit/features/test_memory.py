"""Memory over the schedule (hlo_lsp.features.memory, the live-range report in
hlo_lsp.dump.reports, ``hlo-lsp memory``) on the real dumps of examples/."""

from __future__ import annotations

import re

import pytest

from hlo_lsp.cli.main import main
from hlo_lsp.dump.reports import (load_buffer_assignment_for, load_live_range_for,
                                  parse_live_range)
from hlo_lsp.features.memory import estimated_timeline, memory_timeline
from hlo_lsp.syntax.parser import parse
from tests.helpers import GPU, TRAIN_AFTER, read

DEVICELESS = sorted(GPU.glob("deviceless/*/*_gpu_after_optimizations.txt"))


@pytest.mark.parametrize("path", DEVICELESS, ids=lambda p: p.parent.name)
def test_peak_equals_the_reports_own_peak(path):
    text = read(path.with_name(path.name[:-4] + "-live-range.txt"))
    report = parse_live_range(text)
    # the report's figures, read off the text itself
    stated = int(re.search(r"peak usage: ([\d ]+) bytes", text).group(1).replace(" ", ""))
    step = int(re.search(r"Live ranges at (\d+) \(peak\)", text).group(1))
    t = memory_timeline(load_live_range_for(str(path)), load_buffer_assignment_for(str(path)),
                        parse(read(path)))
    assert (t.peak_step, t.peak_bytes, t.report_peak_bytes) == (step, stated, stated)
    assert {(b.key, b.size) for b in t.peak_buffers} == \
        {(p.instruction + p.shape_index, p.size) for p in report.peak_buffers}
    # every step's total is the sum of the values live then (ends included)
    assert len(t.live) == report.end + 1 == len(report.sequence) + 1
    for step_ in range(len(t.live)):
        assert t.live[step_] == sum(b.size for b in t.buffers if b.start <= step_ <= b.end)
    assert t.steps == report.sequence


def test_sizes_come_from_the_buffer_assignment():
    path = next(p for p in DEVICELESS if p.parent.name == "fp8_cublaslt")
    t = memory_timeline(load_live_range_for(str(path)), load_buffer_assignment_for(str(path)))
    workspace = next(b for b in t.buffers if b.key == "cublas-gemm.clone.1{1}")
    assert (workspace.size, workspace.shape) == (33554432, "s8[33554432]{0}")
    assert workspace.size_source == "buffer-assignment" and workspace.allocation is not None


def test_cpu_dump_without_live_ranges_is_an_estimate_over_the_entry_schedule():
    module = parse(read(TRAIN_AFTER))
    assert load_live_range_for(str(TRAIN_AFTER)) is None
    assignment = load_buffer_assignment_for(str(TRAIN_AFTER))
    t = estimated_timeline(module, assignment)
    assert t.source == "estimate" and t.steps == [i.name.name for i in module.entry.instructions]
    params = sum(a.size for a in assignment.allocations if a.parameter is not None)
    assert min(t.live[:-1]) >= params  # parameters live throughout
    assert t.peak_bytes == max(t.live) and "estimated" in t.notes[0]


def test_cli_memory_prints_the_peak_and_writes_a_page(tmp_path, capsys):
    path = next(p for p in DEVICELESS if p.parent.name == "conv_bias_relu")
    assert main(["memory", str(path.parent), "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("peak: 2,244,752 B") and "cudnn-conv-bias-activation.3{0}" in out
    page = tmp_path / "m.html"
    assert main(["memory", str(path), "-o", str(page)]) == 0
    html = page.read_text()
    assert re.search(r'id="peak" data-bytes="2244752" data-step="4"', html)
    assert html.count('<tr class="buffer"') == 7
    assert main(["memory", str(GPU / "jit_matmul_fn_with_scale.fp8_gemm_fusion.gpu_after_optimizations.txt")]) == 2
