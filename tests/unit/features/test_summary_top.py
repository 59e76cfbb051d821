"""The slowest kernels of a module (hlo_lsp.model.summary.ranked_kernels) and
``hlo-lsp summary --top N`` / ``--json`` totals, on the real dumps in examples/."""

from __future__ import annotations

import json

from tests.helpers import CPU_DUMP, EXAMPLES, TRAIN_AFTER, read
from hlo_lsp.cli.main import main
from hlo_lsp.model.accelerators import accelerator
from hlo_lsp.model.cost import cost_model, module_cost
from hlo_lsp.model.roofline import roofline, kernel_precision
from hlo_lsp.model.summary import kernel_summary, ranked_kernels, structure_key
from hlo_lsp.syntax.parser import parse

CONV_DUMP = (EXAMPLES / "gpu" / "deviceless" / "conv_bias_relu" /
             "module_0001.jit_conv_bias_relu.sm_9.0a_gpu_after_optimizations.txt")


def test_kernels_of_one_structure_are_folded_and_ranked_by_time():
    module = parse(read(TRAIN_AFTER))
    summary = kernel_summary(module)
    h100 = accelerator("h100-sxm")
    groups = ranked_kernels(module, summary, h100)
    assert sum(len(g.kernels) for g in groups) == len(summary.kernels)
    assert [g.seconds for g in groups] == sorted((g.seconds for g in groups), reverse=True)
    assert abs(sum(g.share for g in groups) - 1) < 1e-9
    folded = [g for g in groups if len(g.kernels) > 1]
    assert folded, "the train step repeats kernels (one per layer)"
    model = cost_model(module)
    for g in folded:
        instructions = [module.by_name[k.computation].by_name[k.name] for k in g.kernels]
        assert len({structure_key(module, i) for i in instructions}) == 1
        assert len({i.name.name for i in instructions}) == len(instructions)
        seconds = sum(roofline(model.instruction(i), h100, kernel_precision(module, i)).seconds
                      for i in instructions)
        assert abs(g.seconds - seconds) <= 1e-12 * max(seconds, 1)
    # kernels of different result shapes are never folded together
    for g in groups:
        assert len({k.shape for k in g.kernels}) == 1



def test_structure_keys_remembered_by_the_module_equal_a_fresh_walk():
    # The module keeps each digest for the next request; threads share that
    # memo, so a digest never depends on who asked first.
    from concurrent.futures import ThreadPoolExecutor

    for path in (TRAIN_AFTER, CONV_DUMP):
        module = parse(read(path))
        kernels = [module.by_name[k.computation].by_name[k.name]
                   for k in kernel_summary(module).kernels]
        fresh = [structure_key(module, i, {}) for i in kernels]
        with ThreadPoolExecutor(4) as pool:
            shared = list(pool.map(lambda i: structure_key(module, i), kernels))
        assert shared == fresh
        assert [structure_key(module, i) for i in kernels] == fresh
    # a fusion calling a computation that calls it back is digested, not looped
    cyclic = parse("""HloModule m

%a (x: f32[2]) -> f32[2] {
  %x = f32[2]{0} parameter(0)
  ROOT %f = f32[2]{0} fusion(%x), kind=kLoop, calls=%b
}

%b (y: f32[2]) -> f32[2] {
  %y = f32[2]{0} parameter(0)
  ROOT %g = f32[2]{0} fusion(%y), kind=kLoop, calls=%a
}

ENTRY %main (p: f32[2]) -> f32[2] {
  %p = f32[2]{0} parameter(0)
  ROOT %h = f32[2]{0} fusion(%p), kind=kLoop, calls=%a
}
""")
    root = cyclic.entry.instructions[-1]
    assert structure_key(cyclic, root) == structure_key(cyclic, root, {})


def test_summary_top_and_json_totals(capsys):
    assert main(["summary", str(CONV_DUMP), "--all", "--top", "1"]) == 0
    out = capsys.readouterr().out
    assert "Top 1 of 2 kernel structures by estimated time on H100 SXM" in out
    assert "%cudnn-conv-bias-activation.3" in out.split("Top 1")[1]
    assert main(["summary", str(CPU_DUMP), "--module", "jit_train_step", "--json",
                 "--top", "3"]) == 0
    data = json.loads(capsys.readouterr().out)
    totals = module_cost(parse(read(TRAIN_AFTER)))
    assert data["totals"] == {"flops": totals.flops, "transcendentals": totals.transcendentals,
                              "bytes_accessed": totals.bytes_accessed}
    assert data["device"] == "cpu" and len(data["top"]) == 3
    assert data["top"][0]["seconds"] >= data["top"][1]["seconds"] >= data["top"][2]["seconds"]


def test_summary_ends_with_the_memory_peak_from_xlas_reports(capsys):
    """Beside an after-optimizations dump XLA writes a live-range report: the
    summary names the peak and what holds it (issue 15), the JSON too."""
    from hlo_lsp.dump.reports import load_live_range_for

    report = load_live_range_for(str(CONV_DUMP))
    assert main(["summary", str(CONV_DUMP)]) == 0
    out = capsys.readouterr().out
    tail = out[out.index("Memory at the peak"):]
    assert f"peak: {report.peak_bytes:,} B" in tail and f"at step {report.peak_step} of" in tail
    assert len(tail.splitlines()) <= 10
    assert main(["summary", str(CONV_DUMP), "--json"]) == 0
    memory = json.loads(capsys.readouterr().out)["memory"]
    assert memory["peak_bytes"] == memory["report_peak_bytes"] == report.peak_bytes
    assert memory["largest"][0]["bytes"] == max(p.size for p in report.peak_buffers)
    # a dump without reports beside it has no such section
    assert main(["summary", str(TRAIN_AFTER).replace("cpu_after", "before")]) == 0
    assert "Memory at the peak" not in capsys.readouterr().out


def test_op_name_patterns_of_hostile_length_are_not_remembered():
    # A dump's metadata may hold an op_name of megabytes (the fuzz harness writes
    # 200,000 characters): computed each time, never kept by the cache.
    from hlo_lsp.model import op_names as s

    long = "jit(f)/layer_3/" + "a" * 200_000
    before = s._op_name_pattern.cache_info().currsize
    assert s.op_name_pattern(long, "layer_") == "jit(f)/layer_{i}/" + "a" * 200_000
    assert s._op_name_pattern.cache_info().currsize == before
    unique = f"jit(f)/layer_3/dot_{id(long)}"   # asked for by no other test
    assert s.op_name_pattern(unique, "layer_") == unique.replace("layer_3", "layer_{i}")
    assert s._op_name_pattern.cache_info().currsize == before + 1


def test_a_comparison_counts_each_side_once_per_device_and_gives_the_same_answer():
    """compare_costs keeps each side's kernel groups in its summary, per device:
    a second comparison (another dump against the same new one, or a dump
    against itself) reads them back, and says what a fresh one says."""
    from hlo_lsp.model.accelerators import ACCELERATORS, DEFAULT
    from hlo_lsp.model.cost_change import compare_costs

    old_text, new_text = read(CPU_DUMP / "module_0028.jit_train_step.before_optimizations.txt"), \
        read(TRAIN_AFTER)
    old_module, new_module = parse(old_text), parse(new_text)
    old, new = kernel_summary(old_module), kernel_summary(new_module)
    h100, cpu = accelerator("h100-sxm"), ACCELERATORS[DEFAULT]
    first = compare_costs(old_module, old, new_module, new, h100)
    assert first.kernels, "the optimized train step differs in cost"
    kept = dict(new.memo)
    again = compare_costs(old_module, old, new_module, new, h100)
    assert new.memo == kept  # nothing counted again
    fresh_old, fresh_new = parse(old_text), parse(new_text)
    fresh = compare_costs(fresh_old, kernel_summary(fresh_old), fresh_new,
                          kernel_summary(fresh_new), h100)
    for result in (again, fresh):
        assert (result.old_seconds, result.new_seconds, result.old_total, result.new_total) == \
            (first.old_seconds, first.new_seconds, first.old_total, first.new_total)
        assert [(c.key, c.old_seconds, c.new_seconds) for c in result.kernels] == \
            [(c.key, c.old_seconds, c.new_seconds) for c in first.kernels]
    # another device: counted again, with its own times
    on_cpu = compare_costs(old_module, old, new_module, new, cpu)
    assert on_cpu.new_seconds != first.new_seconds
    itself = compare_costs(new_module, new, new_module, new, h100)
    assert itself.kernels == [] and itself.old_seconds == itself.new_seconds == first.new_seconds
