"""Collectives in hover, inlay hints and references (hlo_lsp.features.collectives
and its callers), on asynchronous forms XLA prints (see
tests/unit/model/test_collectives.py ASYNC)."""

from __future__ import annotations

from hlo_lsp.features.hover import hover
from hlo_lsp.features.inlay_hints import inlay_hints
from hlo_lsp.features.references import references
from hlo_lsp.syntax.parser import parse
from tests.helpers import cpu_seconds, offset_of
from tests.unit.model.test_collectives import ASYNC


def test_async_start_and_done_hover_and_references():
    module = parse(ASYNC)
    md = hover(module, offset_of(ASYNC, "%start =", 1)).markdown
    assert "runs `%rs` (`reduce-scatter`) asynchronously" in md
    assert "**Collective** `reduce-scatter` — 4 devices" in md and "completed by `%done`" in md
    md = hover(module, offset_of(ASYNC, "%done =", 1)).markdown
    assert "completes `%start` (`async-start`)" in md and "`kFlattenedID`" in md
    refs = references(module, offset_of(ASYNC, "%start =", 1))
    done = offset_of(ASYNC, "%done =")
    operand = offset_of(ASYNC, "%start)")
    assert {(s.start, s.end) for s in refs} >= {(done, done + len("%done")),
                                                (operand, operand + len("%start"))}
    md = hover(module, offset_of(ASYNC, "%a2a-done =", 1)).markdown
    assert "completes `%a2a-start` (`all-to-all-start`)" in md and "`kCrossPartition`" in md


def test_inlay_hint_for_each_collective_and_none_for_done():
    module = parse(ASYNC)
    hints = inlay_hints(module, categories=("collective",))
    assert [h.label for h in hints] == [
        "4 devices · 1 group of 4 · 3.0 KiB/dev",   # %rs in the wrapped computation
        "4 devices · 1 group of 4 · 3.0 KiB/dev",   # %start, after its opcode
        "4 devices · 1 group of 4 · 3.0 KiB/dev",   # %a2a-start: partition ids, 1 replica
    ]
    assert hints[1].offset == offset_of(ASYNC, "async-start(", len("async-start"))


def test_inlay_hints_count_without_expanding():
    """Hints for a whole document only count: 2000 collectives whose iota form
    stands for 65536 ids each stay fast."""
    
    body = "\n".join(f"  %r{i} = f32[8]{{0}} all-reduce(%p), channel_id=1, "
                     f"replica_groups=[1,65536]<=[65536], use_global_device_ids=true, "
                     f"to_apply=%add" for i in range(2000))
    text = ASYNC.split("ENTRY")[0] + ("ENTRY %e (p: f32[8]) -> f32[8] {\n"
                                      "  %p = f32[8]{0} parameter(0)\n" + body +
                                      "\n  ROOT %t = f32[8]{0} copy(%p)\n}\n")
    text = text.replace("num_partitions=4", "num_partitions=65536")
    module = parse(text)
    hints, cpu_s = cpu_seconds(inlay_hints, module, categories=("collective",))
    assert cpu_s < 5, cpu_s   # processor time
    assert len(hints) == 2000 + 1  # and %rs of the wrapped computation
    n, buffer = 65536, 8 * 4
    assert hints[-1].label == (
        f"65536 devices · 1 group of {n} · {2 * (n - 1) * buffer // n} B/dev")
