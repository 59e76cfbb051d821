"""The cost model (hlo_lsp.model.cost): XLA's HloCostAnalysis rules on small
modules, each expected value derived in the test from the shapes by the rule
of xla/service/hlo_cost_analysis.cc it checks (XLA's own numbers are compared
in tests/unit/syntax/test_cost_oracle.py)."""

from __future__ import annotations

import itertools
import random

from tests.helpers import TRAIN_AFTER, cpu_seconds, read
from hlo_lsp.model.cost import (Cost, cost_model, instruction_cost, isolated_module_text,
                                module_cost)
from hlo_lsp.model.shape_costs import (WindowDim, _valid_outputs, _valid_positions,
                                       parse_window, shape_size)
from hlo_lsp.model.shapes import parse_array_shape
from hlo_lsp.syntax.parser import parse


def _ins(module, name):
    return next(i for c in module.computations for i in c.instructions if i.name.name == name)


DOT = """HloModule m

ENTRY e {
  a = f32[8,16]{1,0} parameter(0)
  b = f32[16,32]{1,0} parameter(1)
  d = f32[8,32]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  e = f32[8,32]{1,0} exponential(d)
  t = f32[32,8]{0,1} transpose(e), dimensions={1,0}
  c = f32[32,8]{1,0} transpose(e), dimensions={1,0}
  ROOT r = (f32[8,32]{1,0}, f32[32,8]{0,1}, f32[32,8]{1,0}) tuple(d, t, c)
}
"""


def test_dot_elementwise_transpose_tuple():
    module = parse(DOT)
    m, k, n = 8, 16, 32
    dot = instruction_cost(module, _ins(module, "d"))
    assert dot.flops == 2 * m * n * k  # one multiply-add per output element and k
    assert dot.bytes_accessed == 4 * (m * k + k * n + m * n)
    exp = instruction_cost(module, _ins(module, "e"))
    assert (exp.flops, exp.transcendentals) == (0, m * n)
    # a transpose whose layout makes it a bitcast touches nothing; the other copies
    assert instruction_cost(module, _ins(module, "t")) == Cost()
    assert instruction_cost(module, _ins(module, "c")).bytes_accessed == 2 * 4 * m * n
    # a tuple writes its table of pointers only
    assert instruction_cost(module, _ins(module, "r")).bytes_accessed == 3 * 8
    total = module_cost(module)
    assert total.flops == dot.flops and total.transcendentals == m * n
    assert total.bytes_accessed == sum(
        instruction_cost(module, i).bytes_accessed for i in module.entry.instructions)


CONV = """HloModule m

ENTRY e {
  x = f32[2,9,9,3]{3,2,1,0} parameter(0)
  w = f32[3,3,3,4]{3,2,1,0} parameter(1)
  ROOT c = f32[2,5,5,4]{3,2,1,0} convolution(x, w), window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
}
"""


def _brute_force_positions(inputs, kernel, output, stride, pad_low, window_dilation=1,
                           base_dilation=1):
    """Pairs (output position, kernel position) reading a real input element:
    the loop of ``HloCostAnalysis::GetConvolutionFlops``, visiting every pair."""
    count = 0
    for o, k in itertools.product(range(output), range(kernel)):
        undilated = o * stride - pad_low + k * window_dilation
        if undilated % base_dilation == 0 and 0 <= undilated // base_dilation < inputs:
            count += 1
    return count


def test_convolution_counts_window_positions_inside_the_input():
    module = parse(CONV)
    per_dim = _brute_force_positions(9, 3, 5, 2, 1)
    assert per_dim < 3 * 5  # the padding is not counted
    expected = 2 * 3 * 4 * 2 * per_dim * per_dim  # FMA * in-features * out-features * batch
    assert instruction_cost(module, _ins(module, "c")).flops == expected
    window = parse_window("{size=3x3 stride=2x2 pad=1_1x1_1}")
    assert [(w.size, w.stride, w.pad_low, w.pad_high) for w in window] == [(3, 2, 1, 1)] * 2


def test_window_positions_in_closed_form_agree_with_visiting_every_pair():
    """Strides, both dilations and negative padding, 3,000 random windows."""
    rng = random.Random(12)
    for _ in range(3000):
        inputs, kernel, output = rng.randint(1, 12), rng.randint(1, 6), rng.randint(1, 12)
        w = WindowDim(size=kernel, stride=rng.randint(1, 5), pad_low=rng.randint(-3, 5),
                      pad_high=rng.randint(-3, 5), window_dilation=rng.randint(1, 4),
                      base_dilation=rng.randint(1, 4))
        expected = _brute_force_positions(inputs, kernel, output, w.stride, w.pad_low,
                                          w.window_dilation, w.base_dilation)
        shortcut = _valid_positions(w, kernel, output, inputs)
        if shortcut != expected:  # only XLA's two shortcuts may differ from the loop
            assert (inputs == output == kernel == w.base_dilation
                    or (inputs == 1 and kernel == output)), (w, kernel, output, inputs)


def test_a_strided_convolution_over_a_long_axis_is_counted_quickly():
    """A gradient convolution of 4,096 kernel by 4,096 output positions with
    stride 2 and base dilation 3: visiting every pair is 16M steps (the fuzz run
    found a dump whose cuDNN calls took 2 s that way). Sampled kernel positions
    agree with a visit of every output position."""
    w = WindowDim(size=4096, stride=2, pad_low=7, pad_high=7, base_dilation=3)
    for k in range(0, 4096, 511):
        assert _valid_outputs(k - 7, 2, 3, 4096, 5000) == sum(
            1 for o in range(4096)
            if (o * 2 - 7 + k) % 3 == 0 and 0 <= (o * 2 - 7 + k) // 3 < 5000)
    positions, cpu_s = cpu_seconds(_valid_positions, w, 4096, 4096, 5000)
    assert 0 < positions < 4096 * 4096
    assert cpu_s < 0.5, cpu_s   # processor time; a visit of every pair took 2 s


FUSION = """HloModule m

fused {
  p0 = f32[64,128]{1,0} parameter(0)
  p1 = f32[128]{0} parameter(1)
  s = f32[8,128]{1,0} slice(p0), slice={[0:8], [0:128]}
  b = f32[8,128]{1,0} broadcast(p1), dimensions={1}
  m = f32[8,128]{1,0} multiply(s, b)
  ROOT t = f32[8,128]{1,0} tanh(m)
}

ENTRY e {
  a = f32[64,128]{1,0} parameter(0)
  v = f32[128]{0} parameter(1)
  ROOT f = f32[8,128]{1,0} fusion(a, v), kind=kLoop, calls=fused
}
"""


def test_fusion_counts_the_fused_work_and_bytes_at_its_boundary():
    module = parse(FUSION)
    f = instruction_cost(module, _ins(module, "f"))
    out = 8 * 128
    assert f.flops == out and f.transcendentals == out
    # read: the slice of p0 (not all of it) and p1 once; written: the output;
    # the intermediates (s, b, m) never reach memory
    assert f.bytes_accessed == 4 * (out + 128 + out)
    assert module_cost(module) == f


def test_custom_calls_are_unknown_as_in_xla():
    module = parse("""HloModule m
ENTRY e {
  p = f32[4]{0} parameter(0)
  ROOT c = f32[4]{0} custom-call(p), custom_call_target="foo"
}
""")
    c = module_cost(module)
    assert (c.flops, c.bytes_accessed, c.unknown) == (-1, -1, 1)
    assert (c.known_flops, c.known_bytes) == (0, 0)


def test_shape_sizes_follow_the_cpu_backend():
    assert shape_size(parse_array_shape("bf16[3,5]{1,0}")) == 30
    assert shape_size(parse_array_shape("s4[10]{0:E(4)}")) == 5
    assert shape_size(parse_array_shape("s4[10]{0}")) == 10
    assert shape_size(parse_array_shape("f32[<=6]{0}")) == 24 + 4  # plus its size
    assert shape_size(parse_array_shape("token[]")) == 0


def test_a_real_dump_costs_every_fusion_once_and_caches_it():
    module = parse(read(TRAIN_AFTER))
    model = cost_model(module)
    assert cost_model(module) is model
    fusions = [i for i in module.entry.instructions if i.opcode == "fusion"]
    assert fusions
    for fusion in fusions:
        cost = model.instruction(fusion)
        assert cost is model.instruction(fusion)
        assert cost.bytes_accessed > 0
        text = isolated_module_text(module, fusion)
        isolated = parse(text)
        assert module_cost(isolated) == cost  # same rules on the module of its own
    total = model.total()
    assert total.flops > sum(model.instruction(f).flops for f in fusions) > 0


def test_a_wide_tuple_is_decoded_once_for_the_whole_module(monkeypatch):
    """A while loop carrying a 300-element tuple: the cost model reads its shape
    at every use of every element (gemma4's 1.7 MB dump decoded 645,612 array
    shapes for one hlo.compareDumps, 3.6 s); each shape as written is decoded
    once."""
    from hlo_lsp.model import shapes

    n = 300
    elems = ", ".join(["f32[8,128]{1,0}"] * n)
    gtes = "\n".join(f"  %g{i} = f32[8,128]{{1,0}} get-tuple-element(({elems}) %p), index={i}"
                     for i in range(n))
    adds = "\n".join(f"  %a{i} = f32[8,128]{{1,0}} add(f32[8,128]{{1,0}} %g{i}, "
                     f"f32[8,128]{{1,0}} %g{i})" for i in range(n))
    text = (f"HloModule m\n\nENTRY %e (p: ({elems})) -> f32[8,128] {{\n"
            f"  %p = ({elems}) parameter(0)\n{gtes}\n{adds}\n"
            f"  ROOT %r = f32[8,128]{{1,0}} add(f32[8,128]{{1,0}} %a0, f32[8,128]{{1,0}} %a1)\n}}\n")
    module = parse(text)
    assert not module.problems
    calls = []
    real = shapes.parse_array_shape.__wrapped__
    monkeypatch.setattr(shapes, "parse_array_shape", lambda t: calls.append(t) or real(t))
    total = cost_model(module).total()
    assert total.flops == (n + 1) * 8 * 128
    assert len(calls) < 5 * n, len(calls)    # each tuple read: quadratic, over n * n


def test_a_module_with_a_cost_model_is_freed_without_the_collector():
    # The storm of issue 12: every edited version's module (text included) stayed
    # alive after a hover had built its cost model, until a full collection.
    import gc
    import weakref

    from hlo_lsp.dump.index import instruction_names

    module = parse(DOT)
    assert module_cost(module).flops > 0
    assert cost_model(module) is cost_model(module)  # one model per module
    assert "d" in instruction_names(module)
    gone = weakref.ref(module)
    gc.disable()
    try:
        del module
        assert gone() is None, "the cost model or the name index keeps its module alive"
    finally:
        gc.enable()


def test_a_total_adds_in_order_what_plus_adds():
    """``Cost.total`` (a computation's sum in one pass) gives the floats a chain
    of ``+`` gives, XLA's -1s of unknown custom-calls included."""
    rng = random.Random(3)
    costs = [Cost(rng.uniform(0, 1e12), rng.choice([0.0, rng.uniform(0, 1e6)]),
                  rng.uniform(0, 1e9), rng.choice([0, 0, 1])) for _ in range(1000)]
    chained = Cost()
    for c in costs:
        chained = chained + c
    assert Cost.total(costs) == chained
    assert Cost.total(iter(costs[:3])) == costs[0] + costs[1] + costs[2]
    assert Cost.total([]) == Cost()


def test_a_fused_computation_that_calls_itself_is_costed_at_once():
    """Duplicated lines of a fused computation (a fuzzed GPU dump) made two
    nested fusions call the computation they are in: the walk of how a fused
    parameter is read (``FusionParameterReadBytes``) branched twice per level,
    64 levels deep, and ``hlo.showSummary`` never answered. XLA's verifier
    rejects such a cycle; the cost model reads it as 0 bytes and finishes."""
    import threading

    text = """HloModule m

%f (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  %a = f32[8]{0} fusion(%p), kind=kLoop, calls=%f
  %b = f32[8]{0} fusion(%p), kind=kLoop, calls=%f
  ROOT %r = f32[8]{0} add(%a, %b)
}

ENTRY %main (x: f32[8]) -> f32[8] {
  %x = f32[8]{0} parameter(0)
  ROOT %y = f32[8]{0} fusion(%x), kind=kLoop, calls=%f
}
"""
    module = parse(text)
    costs = []
    worker = threading.Thread(target=lambda: costs.append(
        cost_model(module).instruction(module.entry.root)), daemon=True)
    worker.start()
    worker.join(10)
    assert costs, "the cost of a self-calling fusion did not finish in 10 s"
    assert costs[0].bytes_accessed >= 32  # its result, at least


def test_convolution_labels_naming_missing_dimensions_count_no_flops():
    from hlo_lsp.model.shape_costs import convolution_flops

    lhs, rhs, out = (parse_array_shape(s) for s in ("f32[1,8,8,4]", "f32[3]",
                                                    "f32[1,8,8,16]"))
    window = [WindowDim(size=3), WindowDim(size=3)]
    assert convolution_flops(lhs, rhs, out, "b01f_01io->b01f", window) == 0
    rhs = parse_array_shape("f32[3,3,4,16]")
    assert convolution_flops(lhs, rhs, out, "b01f_01io->b01f", window) > 0
