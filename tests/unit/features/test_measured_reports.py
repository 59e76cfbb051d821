"""The reports of measured time, as pure functions: the summary's kernels by
measured time (features/summary.measured_summary, format_measured), the
measured change per kernel group (model/comparison.measured_changes), the
graph's shading (features/graph) and Model Explorer's node data
(cli/commands/profile.model_explorer_node_data). The module is a real dump of
examples/; the events are unit inputs built here (OpEvent values), not a
profile presented as jax.profiler's: the real traces are tests/e2e/test_profile_cli.py's."""

from __future__ import annotations

import pytest

from hlo_lsp.cli.commands.profile import model_explorer_node_data
from hlo_lsp.features.graph import HEAT_HIGH, graph, heat_color, to_dot
from hlo_lsp.features.summary import format_measured, measured_dict, measured_summary
from hlo_lsp.model.accelerators import ACCELERATORS, DEFAULT
from hlo_lsp.model.comparison import measured_changes
from hlo_lsp.model.profile import OpEvent, measure
from hlo_lsp.model.summary import kernel_summary
from hlo_lsp.syntax.parser import parse
from tests.helpers import TRAIN_AFTER, read


@pytest.fixture(scope="module")
def train():
    module = parse(read(TRAIN_AFTER))
    return module, kernel_summary(module)


def events(durations: dict[str, list[float]], runs: int = 2) -> list[OpEvent]:
    """Each op's events, one after another on one track, ``runs`` executions."""
    out, t = [], 0.0
    for run in range(runs):
        for op, ds in durations.items():
            for d in ds:
                out.append(OpEvent("jit_train_step", op, t, d, "t", str(run), device="/host:CPU"))
                t += d + 1
    return out


def loop_name(module) -> str:
    return next(i.name.name for c in module.computations for i in c.instructions
                if i.opcode == "while")


def test_measured_summary_sorts_kernels_by_total_and_keeps_control_flow_apart(train):
    module, summary = train
    a, b, c = (k.name for k in summary.kernels[:3])
    loop = loop_name(module)
    profile = measure(events({a: [1.0], b: [5.0, 5.0], c: [2.0], loop: [0.5]}), "jit_train_step")
    ms = measured_summary(module, summary, profile, ACCELERATORS[DEFAULT])
    assert [r.name for r in ms.kernels] == [b, c, a]
    assert ms.kernels[0].measured.count == 4 and ms.kernels[0].measured.total_us == 20.0
    assert [r.name for r in ms.control_flow] == [loop] and ms.control_flow[0].opcode == "while"
    assert len(ms.unmeasured) == len(summary.kernels) - 3
    assert measured_dict(ms.kernels[0].measured) == {"count": 4, "total_us": 20.0,
                                                     "self_us": 20.0}
    text = format_measured(ms, "run1")
    assert f"%{b}" in text and "measured in profile run1 (/host:CPU)" in text
    rated = [r for r in ms.kernels if r.ratio is not None]
    for r in rated:   # mean self time over the roofline estimate, as hover says it
        assert r.ratio == pytest.approx(r.measured.mean_self_us * 1e-6 / r.estimate_s)
    no_device = measured_summary(module, summary, profile, None)
    assert all(r.ratio is None for r in no_device.kernels)


def test_measured_changes_per_group_per_execution(train):
    module, summary = train
    a, b = (k.name for k in summary.kernels[:2])
    old = measure(events({a: [4.0], b: [1.0]}, runs=2), "jit_train_step")
    new = measure(events({a: [1.0], b: [1.0]}, runs=4), "jit_train_step")
    changes = measured_changes(module, summary, old, module, summary, new)
    first = changes[0]
    assert [k.name for k in first.old] == [a] and [k.name for k in first.new] == [a]
    assert (first.old_total_us, first.new_total_us) == (8.0, 4.0)
    assert (first.old_us, first.new_us, first.delta_us) == (4.0, 1.0, -3.0)
    assert len(changes) == 2   # the groups neither profile measured are left out
    assert changes[1].delta_us == 0.0


def test_graph_shades_measured_nodes_and_leaves_it_off_without_a_profile(train):
    module, summary = train
    a, b = (k.name for k in summary.kernels[:2])
    profile = measure(events({a: [10.0], b: [2.0]}), "jit_train_step")
    g = graph(module, limit=5000, profile=profile)
    node_a = next(n for n in g.nodes if n.name == a)
    assert node_a.measured.count == 2 and g.measured_max_us == 20.0
    dot = to_dot(g)
    line = next(ln for ln in dot.splitlines() if f'label="{a}\\n' in ln)
    assert f'fillcolor="{heat_color(20.0, 20.0)}"' in line and "self 20 µs, 2x" in line
    assert heat_color(20.0, 20.0) == "#" + "".join(f"{x:02x}" for x in HEAT_HIGH)
    plain = graph(module, limit=5000)
    assert plain.measured_max_us is None and all(n.measured is None for n in plain.nodes)
    assert "self " not in to_dot(plain)


def test_model_explorer_node_data_is_keyed_by_instruction_name(train):
    module, summary = train
    a, b = (k.name for k in summary.kernels[:2])
    profile = measure(events({a: [3.0], b: [1.0], "not_in_the_file": [1.0]}), "jit_train_step")
    data = model_explorer_node_data(profile, "self", {a, b})
    assert data["results"] == {a: {"value": 6.0}, b: {"value": 2.0}}
    assert data["gradient"][0]["stop"] == 0 and data["gradient"][-1]["stop"] == 1
    assert "not_in_the_file" in model_explorer_node_data(profile, "total")["results"]
