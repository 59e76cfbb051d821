"""Issue 14, "a summary that scales": the default ``hlo-lsp summary`` of an
unrolled transformer training step (benchmarks/gen_transformer.py, JAX on the
CPU) fits a screen and names the repeated layers with their count. Made with
12 layers here (the 48-layer dump takes minutes to compile on the CPU)."""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("jax")
pytestmark = pytest.mark.slow

from benchmarks.gen_transformer import generate  # noqa: E402
from hlo_lsp.cli.main import main  # noqa: E402
from hlo_lsp.model.accelerators import ACCELERATORS, DEFAULT  # noqa: E402
from hlo_lsp.model.cost import module_cost  # noqa: E402
from hlo_lsp.model.folding import fold_summary  # noqa: E402
from hlo_lsp.model.op_names import op_name_pattern, repeat_scope, scope_index  # noqa: E402
from hlo_lsp.model.summary import kernel_summary  # noqa: E402
from hlo_lsp.syntax.parser import parse  # noqa: E402

LAYERS = 12


@pytest.fixture(scope="module")
def dump(tmp_path_factory):
    return generate(tmp_path_factory.mktemp("tf") / "dump", layers=LAYERS)


def test_default_summary_is_short_and_names_the_repeated_layers(dump, capsys):
    module = parse(dump.read_text())
    summary = kernel_summary(module)
    assert len(summary.kernels) > 500  # the flat list would be as long
    assert main(["summary", str(dump)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert len(lines) < 80, out
    assert f"Repeated: layer_{{0..{LAYERS - 1}}} x{LAYERS}: " in out
    # every kernel of a layer is in the group, and the group's count is the layers'
    scope = repeat_scope(summary)
    assert scope == "layer_"
    in_layers = [k for k in summary.kernels if scope_index(k.op_name, scope) is not None]
    assert {scope_index(k.op_name, scope) for k in in_layers} == set(range(LAYERS))
    assert f": {len(in_layers)} kernels, " in out
    # the flat list is still there
    assert main(["summary", str(dump), "--all"]) == 0
    assert len(capsys.readouterr().out.splitlines()) > len(summary.kernels)


def test_folded_groups_add_up_and_keep_forward_and_backward_apart(dump):
    module = parse(dump.read_text())
    summary = kernel_summary(module)
    folded = fold_summary(module, summary, ACCELERATORS[DEFAULT])
    assert sum(len(g.kernels) for g in folded.groups) == len(summary.kernels)
    assert abs(sum(g.seconds for g in folded.groups) - folded.seconds) < 1e-12
    for g in folded.groups:
        assert len({op_name_pattern(k.op_name, folded.scope) for k in g.kernels}) == 1
    [layers] = [r for r in folded.repeats if r.kind == "scope"]
    assert layers.count == LAYERS and layers.regular >= LAYERS - 2
    assert sum(len(r.kernels) for r in layers.rows) == len(layers.kernels)
    assert 0.5 < layers.share <= 1
    # forward (jvp) and backward (transpose) of a layer are different rows
    patterns = {op_name_pattern(r.kernels[0].op_name, folded.scope) for r in layers.rows}
    assert any("transpose(jvp(layer_{i}))" in p for p in patterns)
    assert any(re.search(r"/jvp\(layer_\{i\}\)/", p) for p in patterns)


def test_json_keeps_totals_top_and_adds_repeats(dump, capsys):
    assert main(["summary", str(dump), "--json", "--top", "3"]) == 0
    data = json.loads(capsys.readouterr().out)
    totals = module_cost(parse(dump.read_text()))
    assert data["totals"] == {"flops": totals.flops, "transcendentals": totals.transcendentals,
                              "bytes_accessed": totals.bytes_accessed}
    assert len(data["top"]) == 3
    [layers] = [r for r in data["repeats"] if r["kind"] == "scope"]
    assert layers["name"] == f"layer_{{0..{LAYERS - 1}}}" and layers["count"] == LAYERS
    assert len(layers["rows"]) == 3
