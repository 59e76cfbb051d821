"""The readable-HLO questions of the analysis host's snapshot
(hlo_lsp.analysis.readable through hlo_lsp.analysis.host), without a server or
pygls, in the style of tests/unit/analysis/test_host.py: each question asked
of a small real dump of examples/, the expectation what the editor would be
shown; whole-document answers encoded once per analysis; an edit while a
question waits in the work queue is ContentModified."""

from __future__ import annotations

import asyncio
import threading
import urllib.parse

import pytest

from hlo_lsp.analysis.host import AnalysisHost, ContentModified
from tests.helpers import EXAMPLES, FP8_DUMP, FP8_FUSED, FP8_REGRESSION, TRAIN_AFTER, read

CONV = EXAMPLES / "gpu" / "deviceless" / "conv_bias_relu"
#: compiled for an H100 without a GPU (hlo-lsp-deviceless.json beside it), with
#: XLA's buffer-assignment and memory-usage reports
CONV_AFTER = CONV / "module_0001.jit_conv_bias_relu.sm_9.0a_gpu_after_optimizations.txt"
CONV_BEFORE = CONV / "module_0001.jit_conv_bias_relu.before_optimizations.txt"

#: What the snapshot's encoders are handed, recorded by the tests' encoders.
Calls = list


def _to_path(uri: str) -> str | None:
    parsed = urllib.parse.urlparse(uri)
    return urllib.parse.unquote(parsed.path) if parsed.scheme == "file" else None


def ask(paths, question, opened=None):
    """``await question(snapshot, host)`` on a host with ``paths`` opened (each
    analysed) and their ``opened`` subset (default all) open; the answer."""
    opened = list(paths) if opened is None else opened

    async def run():
        host = AnalysisHost(_to_path)
        try:
            for p in opened:
                host.store.open(p.as_uri(), 1, read(p))
                await host.store.analysis(p.as_uri())
            return await question(host.snapshot(), host)
        finally:
            host.close()

    return asyncio.run(run())


def _hint_labels(calls: Calls):
    def encode(hints, lines):
        calls.append(len(hints))
        return [(*lines.position(h.offset), h.label) for h in hints]
    return encode


# -- inlay hints ---------------------------------------------------------------

def test_inlay_hints_of_the_whole_document_are_encoded_once_per_analysis():
    calls: Calls = []
    text = read(TRAIN_AFTER)
    end = text.count("\n") + 1
    cats = ("operandShape", "source", "tupleElement", "collective")

    async def q(s, host):
        uri = TRAIN_AFTER.as_uri()
        first = await s.inlay_hints(uri, 0, 0, end, 0, cats, _hint_labels(calls))
        again = await s.inlay_hints(uri, 0, 0, end, 0, cats, _hint_labels(calls))
        return first, again

    first, again = ask([TRAIN_AFTER], q)
    assert first is again and len(calls) == 1
    # `%wrapped_clamp` has stack_frame_id=26 -> make_dump.py line 112, at the line's end
    line = text.count("\n", 0, text.index("%wrapped_clamp = "))
    assert (line, len(text.split("\n")[line]), "make_dump.py:112") in first


def test_inlay_hints_of_a_range_are_those_inside_it_of_the_categories_asked():
    text = read(TRAIN_AFTER)
    line = text.count("\n", 0, text.index("%copy.31 = "))

    async def q(s, host):
        uri = TRAIN_AFTER.as_uri()
        return (await s.inlay_hints(uri, line, 0, line + 4, 0, ("operandShape",),
                                    _hint_labels([])),
                await s.inlay_hints(uri, line, 0, line + 4, 0, ("source",),
                                    _hint_labels([])))

    shapes, sources = ask([TRAIN_AFTER], q)
    assert [label for _, _, label in shapes] == [": f32[128]", ": f32[10]", ": f32[64,128]",
                                                 ": f32[128,10]"]  # %copy.31 ... %copy.34
    assert all(line <= at < line + 4 for at, _, _ in shapes)
    assert not any(label.startswith(": ") for _, _, label in sources)


# -- semantic tokens -------------------------------------------------------------

def test_semantic_tokens_of_the_whole_document_are_encoded_once_and_answer_its_range():
    calls: Calls = []
    text = read(FP8_DUMP)

    def encode(data):
        calls.append(len(data))
        return list(data)

    name = text.index("%cublas-gemm.1.0 =")
    line = text.count("\n", 0, name)
    col = name - (text.rfind("\n", 0, name) + 1)

    async def q(s, host):
        uri = FP8_DUMP.as_uri()
        full = await s.semantic_tokens(uri, None, encode)
        whole = await s.semantic_tokens(uri, ((0, 0), (text.count("\n") + 1, 0)), encode)
        part = await s.semantic_tokens(uri, ((line, col), (line, col + 2)), encode)
        return full, whole, part

    full, whole, part = ask([FP8_DUMP], q)
    assert whole is full and len(calls) == 2  # the whole document's, then the part's
    from hlo_lsp.features.semantic_tokens import TOKEN_MODIFIERS, TOKEN_TYPES
    # the tokens of the instruction that starts there, from its name on, on its line
    assert part[:5] == [line, col, 16, TOKEN_TYPES.index("variable"),
                        1 << TOKEN_MODIFIERS.index("declaration")]
    assert len(part) > 5 and not any(part[5::5])


# -- code lens ---------------------------------------------------------------------

def test_the_code_lens_is_on_the_entry_computation_with_the_summary_headline():
    text = read(FP8_REGRESSION)
    [lens] = ask([FP8_REGRESSION], lambda s, host: s.code_lens(FP8_REGRESSION.as_uri()))
    assert text[lens.place.start:lens.place.end] == "ENTRY %main.25"
    assert lens.title == "3 fusions (1 Triton GEMM) · 0 custom-calls · 0 collectives"


def test_the_code_lens_without_an_entry_keyword_is_on_the_last_computation():
    # XLA's rule: without ENTRY the last computation is the entry
    fixture = "HloModule m\n\nadd {\n  ROOT p = f32[] parameter(0)\n}\n"

    async def q(s, host):
        host.store.open("file:///nowhere/m.hlo", 1, fixture)
        await host.store.analysis("file:///nowhere/m.hlo")
        return (await s.code_lens("file:///nowhere/m.hlo"),
                await s.code_lens("file:///nowhere/closed.hlo"))

    [lens], none = ask([], q)
    assert fixture[lens.place.start:lens.place.end] == "add"
    assert lens.title == "0 fusions · 0 custom-calls · 0 collectives"
    assert none == []


# -- the kernel summary --------------------------------------------------------------

def test_the_summary_in_markdown_short_report_first():
    md = ask([FP8_REGRESSION],
             lambda s, host: s.summary(FP8_REGRESSION.as_uri(), None, True))
    assert "**3 fusions (1 Triton GEMM) · 0 custom-calls · 0 collectives**" in md
    top = md.index("#### Top 3 of 3 kernel groups by estimated time")
    assert top < md.index("#### All kernels (3)") < md.index("%gemm_fusion_dot.19.0` |")


def test_the_text_summary_of_a_deviceless_dump_says_so_on_its_device_with_its_memory():
    async def q(s, host):
        a = await host.store.analysis(CONV_AFTER.as_uri())
        text = await s.summary(CONV_AFTER.as_uri(), None, False)
        cpu = await s.summary(CONV_AFTER.as_uri(), "cpu", False)
        return text, cpu, sorted(a.derived)

    text, cpu, derived = ask([CONV_AFTER], q)
    assert "Compiled for H100 without a GPU" in text
    assert "H100" in text and "H100" not in cpu.replace("Compiled for H100", "")
    assert "\nMemory at the peak\n" in text
    # derived once per analysis: the summary, its costs, folded per device, the memory
    assert {"summary", "kernel costs", "folded:h100-sxm", "folded:cpu",
            "memory"} <= set(derived)


def test_the_text_summary_with_rows_links_each_kernel_row_to_its_instruction():
    source = read(FP8_REGRESSION)

    async def q(s, host):
        uri = FP8_REGRESSION.as_uri()
        return (await s.summary(uri, None, False),
                await s.summary(uri, None, False, lambda text, rows: (text, rows)),
                await s.summary(uri, None, True, lambda text, rows: (text, rows)))

    plain, (text, rows), md = ask([FP8_REGRESSION], q)
    assert text == plain and isinstance(md, str) and md.startswith("### ")
    lines = text.split("\n")
    names = {lines[r.line][r.start:r.end] for r in rows}
    from hlo_lsp.model.summary import kernel_summary
    from hlo_lsp.syntax.parser import parse
    assert names == {f"%{k.name}" for k in kernel_summary(parse(source)).kernels}
    assert len(rows) > len(names)  # the top table's rows link as well
    for r in rows:
        assert source[r.target.start:r.target.end] == lines[r.line][r.start:r.end]


# -- the readable view -------------------------------------------------------------------

def test_the_readable_view_is_rendered_once_per_analysis_and_options():
    calls: Calls = []
    text = read(FP8_DUMP)

    def encode(view, lines):
        calls.append(1)
        return view.text, [None if o is None else lines.line_of(o) for o in view.line_offsets]

    async def q(s, host):
        uri = FP8_DUMP.as_uri()
        inlined = await s.readable_view(uri, True, False, encode)
        again = await s.readable_view(uri, True, False, encode)
        plain = await s.readable_view(uri, False, True, encode)
        return inlined, again, plain

    (view, source_lines), again, (plain, _) = ask([FP8_DUMP], q)
    assert again[0] is view and len(calls) == 2
    lines = view.split("\n")
    i = next(i for i, s in enumerate(lines) if s.startswith("  %wrapped_transpose = "))
    assert lines[i + 1].startswith("      %wrapped_transpose_computation (param_0: ")
    assert source_lines[i + 1] == text.count(
        "\n", 0, text.index("%wrapped_transpose_computation ("))
    assert "metadata=" not in view and "metadata=" in plain


# -- the comparison ---------------------------------------------------------------------

def test_compare_an_opened_dump_with_one_read_from_disk():
    async def q(s, host):
        return (await s.compare(FP8_FUSED.as_uri(), FP8_REGRESSION.as_uri(), None, False,
                                ("old a", "new b")),
                await s.compare(FP8_FUSED.as_uri(), FP8_REGRESSION.as_uri(), None, True,
                                ("old a", "new b")))

    text, md = ask([FP8_FUSED, FP8_REGRESSION], q, opened=[FP8_FUSED])
    for out in (text, md):
        assert "cuBLASLt FP8 call `__cublas$lt$matmul$f8` disappeared (1 -> 0)" in out
        assert "Triton GEMM fusion appeared: %gemm_fusion_dot.19.0" in out
        assert "old a" in out and "new b" in out
    assert text != md


def test_compare_estimates_times_on_the_new_dumps_device():
    out = ask([CONV_AFTER], lambda s, host: s.compare(
        CONV_BEFORE.as_uri(), CONV_AFTER.as_uri(), None, False, ("old", "new")))
    assert "time: roofline on H100" in out, out[:600]


def test_questions_about_an_unknown_document_answer_nothing():
    async def q(s, host):
        uri = "file:///nowhere/closed.hlo"
        return [await s.inlay_hints(uri, 0, 0, 1, 0, ("source",), _hint_labels([])),
                await s.semantic_tokens(uri, None, list),
                await s.summary(uri, None, True),
                await s.readable_view(uri, False, False, lambda v, l: v),
                await s.compare(uri, FP8_DUMP.as_uri(), None, False, ("a", "b"))]

    assert ask([FP8_DUMP], q) == [None] * 5


# -- an edit while a question waits in the work queue ------------------------------------

QUESTIONS = {
    "inlay hints": lambda s, uri: s.inlay_hints(uri, 0, 0, 10_000, 0, ("source",),
                                                _hint_labels([])),
    "semantic tokens": lambda s, uri: s.semantic_tokens(uri, None, list),
    "code lens": lambda s, uri: s.code_lens(uri),
    "summary": lambda s, uri: s.summary(uri, None, True),
    "readable view": lambda s, uri: s.readable_view(uri, True, False, lambda v, l: v),
    "compare": lambda s, uri: s.compare(uri, FP8_REGRESSION.as_uri(), None, False,
                                        ("old", "new")),
}


@pytest.mark.parametrize("name", list(QUESTIONS))
def test_an_edit_while_a_question_waits_is_content_modified(name):
    uri = FP8_FUSED.as_uri()
    text = read(FP8_FUSED)

    async def q(s, host):
        started, gate = threading.Event(), threading.Event()

        def busy() -> None:   # the work queue busy meanwhile
            started.set()
            gate.wait(60)

        host.work_pool.submit(busy)
        try:
            assert await asyncio.to_thread(started.wait, 60)
            task = asyncio.ensure_future(QUESTIONS[name](s, uri))
            for _ in range(6000):   # until the question's work is queued
                if host.work_pool.queued():
                    break
                await asyncio.sleep(0.01)
            assert host.work_pool.queued(), "the question queued no work"
            host.store.replace(uri, 2, text + "\n")
        finally:
            gate.set()
        return await task

    with pytest.raises(ContentModified):
        ask([FP8_FUSED], q)
