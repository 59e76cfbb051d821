"""The pictures and XLA's reports through the analysis host's snapshot
(hlo_lsp.analysis.pictures, hlo_lsp.analysis.reports), without a server or
pygls, in the style of rust-analyzer's ``check(fixture, expect)``: real dumps of
examples/ (an H100 deviceless compile with XLA's live-range report, a CPU dump
with its buffer-assignment and memory-usage reports), each question asked as
the protocol adapter asks it, the expectation what the editor would be shown
(names, lines of text, the text a place covers)."""

from __future__ import annotations

import asyncio
import pathlib
import threading
import urllib.parse

import pytest

from hlo_lsp.analysis.host import AnalysisHost, ContentModified
from hlo_lsp.dump.reports import load_live_range_for
from tests.helpers import CPU_DUMP, EXAMPLES, FP8_DUMP, read

CONV = EXAMPLES / "gpu" / "deviceless" / "conv_bias_relu" / \
    "module_0001.jit_conv_bias_relu.sm_9.0a_gpu_after_optimizations.txt"
TRAIN = "module_0028.jit_train_step.cpu_after_optimizations"
BA = CPU_DUMP / f"{TRAIN}-buffer-assignment.txt"
MEMORY_REPORT = CPU_DUMP / f"{TRAIN}-memory-usage-report.txt"


def to_path(uri: str) -> str | None:
    parsed = urllib.parse.urlparse(uri)
    return urllib.parse.unquote(parsed.path) if parsed.scheme == "file" else None


def to_uri(path: str) -> str:
    return pathlib.Path(path).as_uri()


def ask(question, opened: tuple[pathlib.Path, str] | None = None):
    """``await question(snapshot)`` on a fresh host (with ``opened``: that file
    opened in the editor with that text, analysed)."""

    async def run():
        host = AnalysisHost(to_path)
        try:
            if opened is not None:
                host.store.open(opened[0].as_uri(), 1, opened[1])
                await host.store.analysis(opened[0].as_uri())
            return await question(host.snapshot())
        finally:
            host.close()

    return asyncio.run(run())


def _line_of(text: str, needle: str) -> int:
    return text[:text.index(needle)].count("\n")


def _names(g, lines, page):
    """A graph encoder: (the text each node's name range covers, the page)."""
    return [lines.text[n.name_start:n.name_end] for n in g.nodes], page


def _picture(pic, lines):
    """A text-picture encoder: its lines, and line -> the text its target covers."""
    return [line.text for line in pic.lines], \
        {i: lines.text[line.start:line.end] for i, line in enumerate(pic.lines)
         if line.start is not None}


# -- the graph -------------------------------------------------------------------

GEMM_1_HOP = ["%constant_1", "%Arg_0.1.0", "%wrapped_transpose", "%cublas-gemm.1.0",
              "%get-tuple-element.1", "%param_0", "%transpose.1.1"]


def test_graph_around_an_instruction_of_a_real_dump():
    text = read(FP8_DUMP)
    at = (_line_of(text, "%cublas-gemm.1.0 ="), 3)
    names, page = ask(lambda s: s.graph(FP8_DUMP.as_uri(), None, at, 1, None, False, _names))
    assert (names, page) == (GEMM_1_HOP, "")


def test_graph_page_when_asked_titled_by_what_it_shows():
    text = read(FP8_DUMP)
    at = (_line_of(text, "%cublas-gemm.1.0 ="), 3)
    names, page = ask(lambda s: s.graph(FP8_DUMP.as_uri(), None, at, 1, None, True, _names))
    assert names == GEMM_1_HOP
    assert page.startswith("<!DOCTYPE html>") and "around cublas-gemm.1.0" in page
    assert f'"uri":"{FP8_DUMP.as_uri()}"' in page


def test_graph_of_a_computation_by_name_and_an_unknown_one():
    got = ask(lambda s: asyncio.gather(
        s.graph(FP8_DUMP.as_uri(), "main.4", None, None, 3, False, _names),
        s.graph(FP8_DUMP.as_uri(), "nope", None, None, None, False, _names),
        s.graph("file:///nowhere/absent.hlo", None, None, None, None, False, _names)))
    (names, _), unknown, absent = got
    assert len(names) == 3 and unknown is None and absent is None


def test_graph_as_text_around_the_cursor():
    text = read(FP8_DUMP)
    at = (_line_of(text, "%cublas-gemm.1.0 ="), 3)
    lines, targets = ask(lambda s: s.graph_text(FP8_DUMP.as_uri(), None, at, 1, _picture))
    assert lines == [
        "dataflow around %cublas-gemm.1.0 in %main.4, 1 hop",
        "in %main.4",
        "%cublas-gemm.1.0  cuBLASLt FP8 call __cublas$lt$matmul$f8  "
        "(f8e5m2[128,128], s8[33554432])",
        "operands, up to 1 hop:",
        "├─ 0: %Arg_0.1.0  parameter 0  f8e4m3fn[128,128]",
        "├─ 1: %wrapped_transpose  input fusion  f8e5m2[128,128]  (+1 operand)",
        "├─ 2: %constant_1  constant  f32[]",
        "├─ 3: %constant_1  constant  f32[]  (above)",
        "├─ 4: %constant_1  constant  f32[]  (above)",
        "└─ 5: %constant_1  constant  f32[]  (above)",
        "users, down to 1 hop:",
        "└─ ROOT %get-tuple-element.1  get-tuple-element  f8e5m2[128,128]"]
    assert targets[2] == "%cublas-gemm.1.0" and targets[4] == "%Arg_0.1.0"
    assert targets[11] == "%get-tuple-element.1"


# -- memory over the schedule ----------------------------------------------------

def test_memory_from_xlas_live_range_report_once_per_analysis():
    """The timeline of a URI and of its analysis (hover's way) is one value,
    read once; its peak is the report's."""
    report = load_live_range_for(str(CONV))

    async def question(s):
        by_uri = await s.memory(CONV.as_uri())
        async with s.store.lease(CONV.as_uri()) as a:
            by_analysis = await s.memory(a)
        return by_uri, by_analysis

    by_uri, by_analysis = ask(question)
    assert by_uri is by_analysis
    assert (by_uri.peak_bytes, by_uri.peak_step, by_uri.source) == \
        (report.peak_bytes, report.peak_step, "live-range")
    assert by_uri.steps[by_uri.peak_step] == "cudnn-conv-bias-activation.3"


def test_memory_page_and_text_of_a_real_dump():
    report = load_live_range_for(str(CONV))
    page, (lines, targets) = ask(lambda s: asyncio.gather(
        s.memory_page(CONV.as_uri()), s.memory_text(CONV.as_uri(), _picture)))
    assert (page.peak_bytes, page.peak_step, page.source) == \
        (report.peak_bytes, report.peak_step, "live-range")
    assert f'id="peak" data-bytes="{report.peak_bytes}"' in page.html
    assert "data-range=" in page.html
    assert lines[0] == "memory over the schedule: peak 2.1 MiB at step 4 of 6, " \
                       "%cudnn-conv-bias-activation.3"
    peak = next(i for i, line in enumerate(lines) if line.endswith("◀ peak"))
    assert targets[peak] == "%cudnn-conv-bias-activation.3"
    assert any(line.strip().startswith("1,048,576 B (1.0 MiB)  %x.1{}") for line in lines)


def test_no_memory_without_reports_or_outside_the_file_system():
    text = read(FP8_DUMP)
    nowhere = pathlib.Path("/nowhere/module.hlo")

    async def question(s):
        return [await s.memory(FP8_DUMP.as_uri()), await s.memory_page(FP8_DUMP.as_uri()),
                await s.memory_text(FP8_DUMP.as_uri(), _picture),
                await s.memory("untitled:Untitled-1")]

    assert ask(question) == [None, None, None, None]
    assert ask(lambda s: s.memory(nowhere.as_uri()), opened=(nowhere, text)) is None


# -- XLA's reports -----------------------------------------------------------------

def _check_links_to_the_dump(report_text: str, links) -> None:
    hlo = read(CPU_DUMP / f"{TRAIN}.txt").splitlines()
    for link in links:
        name = report_text[link.place.start:link.place.end]
        assert link.uri == (CPU_DUMP / f"{TRAIN}.txt").as_uri()
        assert f"%{name} = " in hlo[link.line]
        assert link.tooltip == f"%{name} in {TRAIN}.txt"


def test_buffer_assignment_names_link_to_the_dump():
    links = ask(lambda s: s.report_links(BA.as_uri(), None, to_uri))
    assert len(links) == 152
    _check_links_to_the_dump(read(BA), links)


def test_links_of_a_report_open_in_the_editor_are_in_its_text():
    """The editor's copy, not the file: two lines typed at the top move every link."""
    text = "typed\nhere\n" + read(BA)
    links = ask(lambda s: s.report_links(BA.as_uri(), text, to_uri))
    assert len(links) == 152
    _check_links_to_the_dump(text, links)
    assert min(link.place.lines.position(link.place.start)[0] for link in links) >= 2


def test_memory_usage_rows_link_into_the_buffer_assignment():
    links = ask(lambda s: s.report_links(MEMORY_REPORT.as_uri(), None, to_uri))
    ba = read(BA).splitlines()
    assert links and all(link.uri == BA.as_uri() for link in links)
    assert all(ba[link.line].lstrip().startswith(("value:", "allocation ")) for link in links)


def test_definition_on_an_allocation_header_lists_its_instructions():
    text = read(BA)
    got = ask(lambda s: s.report_definition(BA.as_uri(), _line_of(text, "allocation 3: size"),
                                            3, None, to_uri))
    assert got.uri == (CPU_DUMP / f"{TRAIN}.txt").as_uri()
    assert [p.lines.text[p.start:p.end] for p in got.places] == \
        ["%copy.22", "%broadcast_multiply_fusion", "%broadcast_clamp_fusion", "%copy.11",
         "%wrapped_broadcast.1", "%cond.11"]


def test_definition_on_nothing_and_of_an_unreadable_report_is_none():
    got = ask(lambda s: asyncio.gather(
        s.report_definition(BA.as_uri(), 0, 0, "\n\n", to_uri),
        s.report_definition("file:///nowhere/x-buffer-assignment.txt", 0, 0, None, to_uri),
        s.report_links("file:///nowhere/x-buffer-assignment.txt", None, to_uri)))
    assert got == [None, None, []]


# -- an edit while a picture is computed ---------------------------------------------

def test_an_edit_while_the_graph_waits_in_the_work_queue_is_content_modified():
    """The graph of version 1 waits behind other work; the document is edited
    meanwhile: the question ends in ContentModified, never a picture of a text
    the editor no longer has."""
    text = read(FP8_DUMP)
    uri = FP8_DUMP.as_uri()
    at = (_line_of(text, "%cublas-gemm.1.0 ="), 3)

    async def question(s):
        started, release = threading.Event(), threading.Event()

        def ahead():  # the work ahead in the queue
            started.set()
            release.wait(30)

        s.work_pool.submit(ahead)
        while not started.is_set():
            await asyncio.sleep(0.01)
        token = s.store.track_reads(uri)
        try:
            asked = asyncio.ensure_future(s.graph(uri, None, at, 1, None, False, _names))
            while s.work_pool.queued() == 0:  # the graph is queued behind it
                await asyncio.sleep(0.01)
            s.store.replace(uri, 2, text + "\n")
            release.set()
            await asked
        finally:
            s.store.untrack(token)

    with pytest.raises(ContentModified):
        ask(question, opened=(FP8_DUMP, text))
