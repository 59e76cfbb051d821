"""Issue 14, "diff in cost terms": ``hlo-lsp diff`` (hlo_lsp.features.compare,
hlo_lsp.model.cost_change.compare_costs) states the change in estimated time,
FLOPs and bytes in total and per changed kernel, on two real dumps of a JAX
program whose hidden layer doubles (JAX on the CPU). Expected numbers come
from the cost model of each side."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("jax")
pytestmark = pytest.mark.slow

from hlo_lsp.cli.main import main  # noqa: E402
from hlo_lsp.features.compare import compare  # noqa: E402
from hlo_lsp.model.units import format_count, format_seconds  # noqa: E402
from hlo_lsp.model.accelerators import ACCELERATORS, DEFAULT  # noqa: E402
from hlo_lsp.model.cost import cost_model, module_cost  # noqa: E402
from hlo_lsp.model.roofline import kernel_precision, roofline  # noqa: E402
from hlo_lsp.model.cost_change import change_text as _change  # noqa: E402
from hlo_lsp.model.summary import kernel_summary  # noqa: E402
from hlo_lsp.syntax.parser import parse  # noqa: E402

PROGRAM = """\
import jax
import jax.numpy as jnp

HIDDEN = {hidden}


@jax.jit
def mlp(w1, w2, x):
    h = jnp.tanh(x @ w1)
    return (h @ w2).sum()


print(mlp(jnp.ones((64, HIDDEN)), jnp.ones((HIDDEN, 10)), jnp.ones((32, 64))))
"""


def _dump(tmp: pathlib.Path, hidden: int) -> pathlib.Path:
    work = tmp / f"h{hidden}"
    work.mkdir()
    (work / "prog.py").write_text(PROGRAM.format(hidden=hidden))
    env = dict(os.environ, JAX_PLATFORMS="cpu",
               XLA_FLAGS=f"--xla_dump_to={work / 'dump'} --xla_dump_hlo_as_text")
    subprocess.run([sys.executable, "prog.py"], cwd=work, env=env, check=True,
                   capture_output=True, timeout=300)
    [after] = (work / "dump").glob("*jit_mlp.cpu_after_optimizations.txt")
    return after


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("costdiff")
    return _dump(tmp, 128), _dump(tmp, 256)


def _kernel_costs(module):
    """op_name -> (FLOPs, bytes, seconds) summed over the module's kernels."""
    model, cpu = cost_model(module), ACCELERATORS[DEFAULT]
    out: dict[str, list[float]] = {}
    for k in kernel_summary(module).kernels:
        ins = module.by_name[k.computation].by_name[k.name]
        cost = model.instruction(ins)
        seconds = roofline(cost, cpu, kernel_precision(module, ins)).seconds
        row = out.setdefault(k.op_name, [0.0, 0.0, 0.0])
        row[0] += cost.known_flops
        row[1] += cost.known_bytes
        row[2] += seconds
    return out


def test_diff_states_the_change_in_time_flops_and_bytes(dumps, capsys):
    old_path, new_path = dumps
    old, new = parse(old_path.read_text()), parse(new_path.read_text())
    before, after = module_cost(old), module_cost(new)
    assert after.flops > before.flops and after.bytes_accessed > before.bytes_accessed
    ko, kn = _kernel_costs(old), _kernel_costs(new)
    changed = {op for op in ko.keys() | kn.keys() if ko.get(op) != kn.get(op)}
    assert changed

    diff = compare(kernel_summary(old), kernel_summary(new), old, new)
    costs = diff.costs
    assert costs is not None
    assert (costs.old_total, costs.new_total) == (before, after)
    assert costs.old_seconds == pytest.approx(sum(v[2] for v in ko.values()))
    assert costs.new_seconds == pytest.approx(sum(v[2] for v in kn.values()))
    assert {c.key.split(" ", 1)[1] for c in costs.kernels} == changed
    for c in costs.kernels:
        op = c.key.split(" ", 1)[1]
        assert c.old_cost.known_flops == ko[op][0] and c.new_cost.known_flops == kn[op][0]
        assert c.old_cost.known_bytes == ko[op][1] and c.new_cost.known_bytes == kn[op][1]
        assert c.old_seconds == pytest.approx(ko[op][2])
    deltas = [abs(c.delta_seconds) for c in costs.kernels]
    assert deltas == sorted(deltas, reverse=True)

    assert main(["diff", str(old_path), str(new_path)]) == 0
    out = capsys.readouterr().out
    flop = lambda n: format_count(n, "FLOP")  # noqa: E731
    byte = lambda n: format_count(n, "B")  # noqa: E731
    assert before.unknown == after.unknown == 0  # no custom-call: XLA's numbers as they are
    assert f"  FLOPs            {_change(before.flops, after.flops, flop)}\n" in out
    assert f"  bytes accessed   {_change(before.bytes_accessed, after.bytes_accessed, byte)}\n" \
        in out
    assert (f"  time             "
            f"{_change(costs.old_seconds, costs.new_seconds, format_seconds)}\n") in out
    # doubling the hidden layer doubles the matmul FLOPs: the line says +100.0%
    dot = next(c for c in costs.kernels if c.key.endswith("/dot_general"))
    assert dot.new_cost.known_flops == pytest.approx(2 * dot.old_cost.known_flops, rel=0.01)
    assert f"FLOPs {_change(dot.old_cost.known_flops, dot.new_cost.known_flops, flop)}" in out

    assert main(["diff", str(old_path), str(new_path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["cost"]["flops"] == [before.flops, after.flops]
    assert data["cost"]["bytes_accessed"] == [before.bytes_accessed, after.bytes_accessed]
    assert len(data["cost"]["kernels"]) == len(changed)


def test_same_dump_has_no_cost_change(dumps):
    module = parse(dumps[0].read_text())
    summary = kernel_summary(module)
    costs = compare(summary, summary, module, module).costs
    assert costs.kernels == [] and costs.old_seconds == costs.new_seconds
