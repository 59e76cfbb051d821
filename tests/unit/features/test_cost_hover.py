"""The Cost section of a kernel's hover (hlo_lsp.features.cost): FLOPs, bytes
and the roofline estimate on the device the settings or the dump's file name
name, on real dumps; computed lazily, one fused computation per fusion."""

from __future__ import annotations

import itertools

from tests.helpers import EXAMPLES, FP8_DUMP, TRAIN_AFTER, offset_of, read
from hlo_lsp.dump.names import device_for
from hlo_lsp.model.units import format_count
from hlo_lsp.features.hover import hover
from hlo_lsp.model.accelerators import ACCELERATORS, accelerator
from hlo_lsp.model.cost import Cost, cost_model
from hlo_lsp.model.roofline import roofline
from hlo_lsp.syntax.parser import parse

CONV_DUMP = (EXAMPLES / "gpu" / "deviceless" / "conv_bias_relu" /
             "module_0001.jit_conv_bias_relu.sm_9.0a_gpu_after_optimizations.txt")


def test_the_device_comes_from_the_setting_then_the_file_name():
    assert device_for(str(CONV_DUMP)).name == "H100 SXM"  # sm_9.0a
    assert device_for(str(FP8_DUMP)).name == "H100 SXM"  # "...sm90_gpu..."
    assert device_for(str(TRAIN_AFTER)).key == "cpu"
    assert device_for(str(CONV_DUMP), "a100-sxm-80gb").name == "A100 SXM 80GB"
    assert device_for(str(CONV_DUMP), "B200").key == "b200"  # a name works too
    assert device_for(str(CONV_DUMP), "no-such-gpu").name == "H100 SXM"
    assert device_for(None).key == "cpu"


def test_roofline_is_the_slower_of_compute_and_memory():
    h100 = accelerator("h100-sxm")
    # 1 GFLOP of bf16 matrix work over 1 MB: compute-bound on the tensor cores
    est = roofline(Cost(1e9, 0, 1e6), h100, "bf16")
    assert est.bound == "compute"
    assert est.seconds == est.compute_seconds == 1e9 / h100.peak["bf16"]
    # the same bytes and FLOPs of elementwise f32 work: still the vector rate
    assert roofline(Cost(1e9, 0, 1e6), h100, "f32").compute_seconds == 1e9 / h100.peak["f32"]
    est = roofline(Cost(1e6, 0, 1e9), h100, "f32")
    assert est.bound == "memory" and est.seconds == 1e9 / h100.memory_bandwidth
    # XLA's -1 of an unknown custom-call is no work
    assert roofline(Cost(-1, 0, -1, 1), h100).seconds == 0
    # every device has a rate for every precision it may be asked
    for device in ACCELERATORS.values():
        for p in ("f32", "tf32", "bf16", "f16", "f8", "int8", "f64"):
            assert device.flops_per_second(p) > 0 and device.rate_key(p) in device.peak


def _positions(inputs, kernel, output, pad):
    return sum(1 for o, k in itertools.product(range(output), range(kernel))
               if 0 <= o - pad + k < inputs)


def test_hover_on_a_cudnn_convolution_estimates_it_on_the_dumps_gpu():
    text = read(CONV_DUMP)
    module = parse(text)
    result = hover(module, offset_of(text, "%cudnn-conv-bias-activation.3 =", 1),
                   device=device_for(str(CONV_DUMP)))
    md = result.markdown
    # f16[8,32,32,64] input, 64 -> 64 features, 3x3 window with padding 1
    flops = 2 * 64 * 64 * 8 * _positions(32, 3, 32, 1) ** 2
    assert "**Cost** (estimated as XLA:GPU's cost analysis" in md
    assert format_count(flops, "FLOP") in md
    assert "**Roofline**: ~" in md and "on H100 SXM" in md and "f16" in md
    assert md.index("**Cost**") < md.index("**Roofline**")


def test_hover_on_a_fusion_and_a_dot_of_a_cpu_dump():
    text = read(TRAIN_AFTER)
    module = parse(text)
    model = cost_model(module)
    fusion = next(i for i in module.entry.instructions if i.opcode == "fusion")
    md = hover(module, fusion.name.start + 1).markdown
    cost = model.instruction(fusion)
    assert "bytes at the fusion's boundary" in md
    assert f"{format_count(cost.bytes_accessed, 'B')} accessed" in md
    assert "on CPU (AMD EPYC 9654)" in md and "-bound" in md
    # lazily: only this fusion's fused computation was costed
    called = {c.ref.name for c in fusion.called}
    assert set(model._computations) == called
    dot = next(i for c in module.computations for i in c.instructions if i.opcode == "dot")
    md = hover(module, dot.name.start + 1).markdown
    assert "**Cost** (XLA's HloCostAnalysis rules)" in md and "FLOP" in md
    # a parameter is no kernel: no Cost section
    param = module.entry.parameters()[0]
    assert "**Cost**" not in hover(module, param.name.start + 1).markdown


def test_hover_on_an_unknown_custom_call_says_so():
    text = read(EXAMPLES / "gpu" / "deviceless" / "pallas_mosaic_gpu" /
                next(p.name for p in (EXAMPLES / "gpu" / "deviceless" /
                                      "pallas_mosaic_gpu").glob("*sm_9.0a_gpu_after_optimizations.txt")))
    module = parse(text)
    call = next(i for c in module.computations for i in c.instructions
                if i.opcode == "custom-call")
    md = hover(module, call.name.start + 1).markdown
    assert "**Cost**: unknown" in md and "**Roofline**" not in md


def test_an_instruction_inside_a_fusion_points_at_the_fusion():
    text = read(TRAIN_AFTER)
    module = parse(text)
    fusion, inner = next((f, i) for f in module.entry.instructions if f.opcode == "fusion"
                         for c in f.called for i in module.by_name[c.ref.name].instructions
                         if i.opcode in ("reduce", "dot"))
    md = hover(module, inner.name.start + 1).markdown
    assert "**Cost**" in md and f"Part of the fusion `%{fusion.name.name}`" in md
    assert "**Roofline**" not in md
