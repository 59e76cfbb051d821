"""The cost model against XLA itself (jaxlib's ``hlo_module_cost_analysis``,
through :meth:`hlo_lsp.syntax.xla.XlaOracle.cost`): module totals of FLOPs,
transcendentals and bytes accessed within 1% on a sample of real modules, and
every fusion of a real dump checked alone (its own module). The whole corpus:
benchmarks/bench_cost.py."""

from __future__ import annotations

import pytest

from tests.helpers import CORPUS, EXAMPLES, TRAIN_AFTER, read
from hlo_lsp.model.cost import cost_model, isolated_module_text, module_cost
from hlo_lsp.syntax.parser import parse

xla = pytest.importorskip("hlo_lsp.syntax.xla")
if not xla.available():
    pytest.skip("jaxlib (XLA's cost analysis) is not installed", allow_module_level=True)

#: Corpus files with the opcodes whose rules differ most: convolutions and
#: reduce-window (ResNet/MobileNet), variadic reduce and sort, scatter/gather,
#: while loops, dynamic-update-slice fusions, send/recv, TPU copy-start.
CORPUS_SAMPLE = [
    "openxla__xla__xla__tools__data__benchmarking__mobilenet_v2.hlo",
    "openxla__xla__xla__backends__cpu__benchmarks__hlo__argsort_axis_1024x512_bf16.hlo",
    "openxla__xla__xla__codegen__emitters__tests__loop__variadic_reduce.hlo",
    "openxla__xla__xla__codegen__emitters__tests__dynamic_update_slice__mof.hlo",
    "openxla__xla__xla__translate__hlo_to_mhlo__tests__send_recv.hlotxt",
    "Junyi-99__hlo-visualizer__examples__v6e-2x2__scan_rnn.after.hlo",
    "openxla__xla__xla__backends__gpu__codegen__triton__tests__scaled_dot__scaled_dot_online_quantization.hlo",
    "JueonPark__HLO_breakdown__original_results__bert_baseline_bw_hlo.txt",
]


def _close(ours: float, theirs: float) -> bool:
    return abs(ours - theirs) <= 0.01 * max(abs(theirs), 1.0)


@pytest.fixture(scope="module")
def oracle():
    o = xla.XlaOracle()
    yield o
    o.close()


def _sample():
    files = [CORPUS / name for name in CORPUS_SAMPLE if (CORPUS / name).is_file()]
    files += sorted(EXAMPLES.rglob("*after_optimizations.txt"))
    return files


def test_module_totals_agree_with_xla(oracle):
    files = _sample()
    assert len(files) >= 5
    failures = []
    for path in files:
        text = read(path) if path.suffix != ".hlotxt" else path.read_text()
        theirs = oracle.cost(text)
        assert theirs is not None and theirs.ok, f"{path.name}: {theirs}"
        ours = module_cost(parse(text))
        for what, a, b in (("FLOPs", ours.flops, theirs.flops),
                           ("transcendentals", ours.transcendentals, theirs.transcendentals),
                           ("bytes", ours.bytes_accessed, theirs.bytes_accessed)):
            if not _close(a, b):
                failures.append(f"{path.name}: {what} ours {a:g}, XLA {b:g}")
    assert not failures, "\n".join(failures)


def test_each_fusion_alone_agrees_with_xla(oracle):
    module = parse(read(TRAIN_AFTER))
    model = cost_model(module)
    fusions = [i for c in module.computations for i in c.instructions if i.opcode == "fusion"]
    assert len(fusions) > 10
    failures = []
    for fusion in fusions:
        theirs = oracle.cost(isolated_module_text(module, fusion))
        assert theirs is not None and theirs.ok, theirs
        ours = model.instruction(fusion)
        if not (_close(ours.flops, theirs.flops) and _close(ours.bytes_accessed,
                                                             theirs.bytes_accessed)
                and _close(ours.transcendentals, theirs.transcendentals)):
            failures.append(f"{fusion.name.name}: ours {ours}, XLA {theirs}")
    assert not failures, "\n".join(failures)
