"""The folded summary (hlo_lsp.model.folding.fold_summary, reports in
hlo_lsp.features.summary) on the real dumps of examples/: loop bodies and
branches as groups, collectives with the bytes each device sends
(hlo_lsp.model.collectives.collective_bytes), sections that fold, and the flat
list kept under the folded report for the editor's view."""

from __future__ import annotations

from tests.helpers import EXAMPLES, TRAIN_AFTER, read
from hlo_lsp.cli.main import main
from hlo_lsp.model.units import format_count
from hlo_lsp.features.summary import format_folded, format_markdown, format_text
from hlo_lsp.model.accelerators import ACCELERATORS, DEFAULT
from hlo_lsp.model.collectives import collective_bytes
from hlo_lsp.model.folding import fold_summary
from hlo_lsp.model.op_names import index_ranges, op_name_pattern, repeat_scope
from hlo_lsp.model.summary import kernel_summary
from hlo_lsp.syntax.parser import parse

COLLECTIVES = EXAMPLES / "sharded" / "dump" / \
    "module_0008.jit_collectives_step.cpu_after_optimizations.txt"


def _fold(path):
    module = parse(read(path))
    summary = kernel_summary(module)
    return module, summary, fold_summary(module, summary, ACCELERATORS[DEFAULT])


def test_loop_bodies_and_branches_are_groups(capsys):
    module, summary, folded = _fold(TRAIN_AFTER)
    flow = {r.name: r for r in folded.repeats if r.kind == "control flow"}
    contexts = {k.context[0] for k in summary.kernels if k.context}
    assert set(flow) == contexts and any(c.startswith("while ") for c in contexts)
    for name, group in flow.items():
        assert len(group.kernels) == sum(1 for k in summary.kernels
                                         if k.context and k.context[0] == name)
    assert abs(sum(g.share for g in folded.groups) - 1) < 1e-9
    assert main(["summary", str(TRAIN_AFTER)]) == 0
    out = capsys.readouterr().out
    body = max(flow.values(), key=lambda r: r.seconds)
    assert f"{body.name}: {len(body.kernels)} kernels, {100 * body.share:.1f}% of the time" in out
    assert len(out.splitlines()) < 80


def test_collectives_with_bytes_sent_per_device(capsys):
    module, summary, folded = _fold(COLLECTIVES)
    collectives = summary.of("collective")
    assert len(collectives) == sum(len(c.group.kernels) for c in folded.collectives) > 0
    total = 0
    for row in folded.collectives:
        expected = sum(collective_bytes(module.by_name[k.computation].by_name[k.name],
                                        module).sent for k in row.group.kernels)
        assert row.sent == expected
        total += expected
    sent = [c.sent for c in folded.collectives]
    assert sent == sorted(sent, reverse=True)
    assert main(["summary", str(COLLECTIVES)]) == 0
    out = capsys.readouterr().out
    assert f"Collectives ({len(collectives)}; {format_count(total, 'B')} sent per device)" in out


def test_editor_reports_fold_and_keep_every_kernel():
    module, summary, folded = _fold(TRAIN_AFTER)
    text = format_text(summary, "", folded)
    assert text.startswith(format_folded(folded).split("\n\nThe full list")[0])
    full = text.split(f"\nAll kernels ({len(summary.kernels)})\n", 1)[1]
    assert all(line.startswith("  ") or not line for line in full.splitlines())
    for k in summary.kernels:
        assert f"%{k.name} " in full
    md = format_markdown(summary, "", folded)
    headings = [ln for ln in md.splitlines() if ln.startswith("#")]
    assert headings[0].startswith("### HloModule jit_train_step")
    assert "#### Kernels per kind" in headings and \
        f"#### All kernels ({len(summary.kernels)})" in headings
    assert "##### Fusions (43)" in headings
    # without folded, the reports are the flat ones (the code lens's view)
    assert format_text(summary).startswith("HloModule jit_train_step, ENTRY %main.29\n")


def test_repeat_scope_and_patterns():
    assert index_ranges([5, 0, 1, 2, 3, 7, 8]) == "0..3,5,7..8"
    assert op_name_pattern("jit(f)/transpose(jvp(layer_12))/dot_general", "layer_") == \
        "jit(f)/transpose(jvp(layer_{i}))/dot_general"
    assert op_name_pattern("jit(f)/layer_1/block_2/add", "block_", "*") == \
        "jit(f)/layer_1/block_*/add"
    # the example train step has no indexed scope: nothing is called a layer
    assert repeat_scope(kernel_summary(parse(read(TRAIN_AFTER)))) is None
