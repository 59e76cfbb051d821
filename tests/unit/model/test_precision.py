"""Issue 40 item 3: what a matrix kernel computes in and its split-K
(hlo_lsp.model.precision). Hover and summary: tests/unit/features/
test_precision_hover.py; the backend_config fields of item 6:
tests/unit/model/test_backend_config_fields.py.

The real dumps are XLA's (jax 0.10.2, compiled for an H100 without a GPU by
examples/gpu/make_deviceless_dumps.py): ``fp8_splitk`` (a scaled FP8 matmul with
a bias, default flags: BF16 Triton GEMM with split-K 4), ``fp8_cublaslt`` (the
same pattern as one FP8 cuBLASLt call), ``fp8_triton_gemm``, ``spmd_mesh8`` and
seed 001's quoted regression. Snippets cut from them (and a few hand-written
variants, said so where they are) check the edges: where a trace stops, what is
not split-K, XLA's other split-K form (``triton_gemm_config.split_k``, for which
no real dump is at hand).
"""

from __future__ import annotations

import glob
import os

import pytest

from tests.helpers import FP8_REGRESSION, GPU, read
from hlo_lsp.model.precision import (kernel_notes, matmul_precision, split_k,
                                     split_k_sum)
from hlo_lsp.syntax.parser import parse

DEVICELESS = str(GPU / "deviceless")


def _dump(name: str) -> str:
    (path,) = glob.glob(os.path.join(DEVICELESS, name, "*sm_9.0a_gpu_after_optimizations.txt"))
    with open(path, encoding="utf-8") as f:
        return f.read()


def _ins(module, name):
    return next(i for c in module.computations for i in c.instructions if i.name.name == name)


# --- the real dump of issue 40: FP8 widened to BF16, split-K 4 ----------------

def test_fp8_splitk_dump_is_what_the_issue_describes():
    text = _dump("fp8_splitk")
    assert "__cublas$lt$matmul$f8" not in text
    assert "%gemm_fusion_dot = f32[4,256,384]" in text
    assert 'backend_config={"sizes":["16"]}' in text


def test_gemm_fusion_computes_in_bf16_from_fp8_inputs():
    module = parse(_dump("fp8_splitk"))
    p = matmul_precision(module, _ins(module, "gemm_fusion_dot"))
    assert p is not None and p.matrix.name.name == "dot.1"
    assert p.operand_types == ("bf16", "bf16") and p.result_type == "f32"
    assert p.compute_type == "bf16" and p.fp8_widened
    assert [(w.origin.name.name, w.convert.name.name, w.fusion.name.name, w.operand,
             w.source_type, w.target_type) for w in p.widenings] == [
        ("x.1", "convert_element_type.4.1", "loop_multiply_fusion.1", 0, "f8e4m3fn", "bf16"),
        ("w.1", "convert_element_type.6.1", "loop_multiply_fusion", 1, "f8e4m3fn", "bf16")]
    sentence = p.sentence()
    assert sentence.startswith("Computes in bf16: its f8e4m3fn operands are converted to "
                               "bf16 before the dot (%x.1 by %convert_element_type.4.1 in "
                               "%loop_multiply_fusion.1;")
    assert "not an FP8 GEMM" in sentence and "__cublas$lt$matmul$f8" in sentence
    assert "gemm_rewriter.cc" in sentence
    # The dot inside the fusion answers the same.
    inner = matmul_precision(module, _ins(module, "dot.1"))
    assert inner.widenings == p.widenings


def test_split_k_4_and_the_reduce_that_sums_it():
    module = parse(_dump("fp8_splitk"))
    gemm = _ins(module, "gemm_fusion_dot")
    s = split_k(module, gemm)
    assert s is not None
    assert (s.parts, s.dimension, s.k, s.partial_shape, s.source) == (
        4, 0, 512, "f32[4,256,384]", "dot")
    assert s.dot.name.name == "dot.1"
    assert s.reduce.name.name == "reduce.4" and s.reduce_kernel.name.name == "loop_add_fusion"
    assert s.sentence() == (
        "Split-K 4: the contracting dimension K (512) is split into 4 partial products of "
        "128 (f32[4,256,384], dimension 0) summed by %reduce.4 in %loop_add_fusion "
        "(xla/service/gpu/transforms/splitk_rewriter.cc)")
    # The dot of the fusion stands for it; the reduce and its fusion know the GEMM.
    assert split_k(module, _ins(module, "dot.1")).gemm is gemm
    assert split_k_sum(module, _ins(module, "loop_add_fusion")).gemm is gemm
    assert split_k_sum(module, _ins(module, "reduce.4")).gemm is gemm
    # Nothing else is split-K or widened.
    for name in ("loop_multiply_fusion", "loop_multiply_fusion.1", "loop_add_fusion"):
        assert split_k(module, _ins(module, name)) is None
        assert matmul_precision(module, _ins(module, name)) is None


def test_fp8_cublaslt_call_reads_fp8_and_says_nothing():
    module = parse(_dump("fp8_cublaslt"))
    call = next(i for c in module.computations for i in c.instructions
                if i.opcode == "custom-call")
    p = matmul_precision(module, call)
    assert p.operand_types == ("f8e4m3fn", "f8e4m3fn") and p.widenings == ()
    assert p.sentence() == "" and kernel_notes(module, call) == []
    assert split_k(module, call) is None


def test_fp8_triton_gemm_without_split_k():
    module = parse(_dump("fp8_triton_gemm"))
    gemm = next(i for c in module.computations for i in c.instructions
                if i.opcode == "fusion" and i.name.name.startswith("gemm_fusion"))
    p = matmul_precision(module, gemm)
    assert p.fp8_widened and p.result_type == "bf16"
    assert split_k(module, gemm) is None


def test_seed_001_quoted_regression_through_concatenate_and_slice():
    """Seed 001's dump converts both FP8 inputs in one input fusion that
    concatenates and slices them again: each dot operand is traced to its own
    part only."""
    module = parse(read(FP8_REGRESSION))
    p = matmul_precision(module, _ins(module, "gemm_fusion_dot.19.0"))
    assert [(w.operand, w.origin.name.name, w.convert.name.name, w.fusion.name.name)
            for w in p.widenings] == [(0, "Arg_0.1.0", "convert.7.2", "input_slice_fusion"),
                                      (1, "Arg_1.2.0", "convert.9.2", "input_slice_fusion")]


# --- snippets: where the trace stops, what is not split-K ---------------------

#: The ENTRY of the fp8_splitk dump with the fused computations it calls, cut
#: down to one operand; the dot sees bf16 that was f32 before (a narrowing
#: convert between), which is no widening relative to what the dot reads.
NARROWED = """HloModule m

%fused (p0: f32[4,8], p1: f32[8,2]) -> f32[4,2] {
  %p0 = f32[4,8]{1,0} parameter(0)
  %wide = f32[4,8]{1,0} convert(%p0)
  %c.0 = bf16[4,8]{1,0} convert(%wide)
  %p1 = f32[8,2]{1,0} parameter(1)
  %c.1 = bf16[8,2]{1,0} convert(%p1)
  %narrow = bf16[8,2]{1,0} parameter(2)
  ROOT %d = f32[4,2]{1,0} dot(%c.0, %c.1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

ENTRY %e (a: bf16[4,8], b: f32[8,2]) -> f32[4,2] {
  %a = bf16[4,8]{1,0} parameter(0)
  %up = f32[4,8]{1,0} convert(%a)
  %b = f32[8,2]{1,0} parameter(1)
  ROOT %f = f32[4,2]{1,0} fusion(%up, %b), kind=kOutput, calls=%fused
}
"""


def test_a_widening_narrowed_again_before_the_dot_is_not_reported():
    """Hand-written: bf16 -> f32 -> bf16 before a bf16 dot computes in bf16."""
    module = parse(NARROWED)
    p = matmul_precision(module, _ins(module, "f"))
    assert p.operand_types == ("bf16", "bf16") and p.widenings == ()


#: Hand-written: a user's batched matmul summed over its batch dimension. The
#: batch is dimension 0 of both operands, not right before the contracting
#: dimension as XLA's split puts it.
BATCH_SUM = """HloModule m

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}

ENTRY %e (a: f32[4,8,16], b: f32[4,16,2]) -> f32[8,2] {
  %a = f32[4,8,16]{2,1,0} parameter(0)
  %b = f32[4,16,2]{2,1,0} parameter(1)
  %d = f32[4,8,2]{2,1,0} dot(%a, %b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  %z = f32[] constant(0)
  ROOT %r = f32[8,2]{1,0} reduce(%d, %z), dimensions={0}, to_apply=%add
}
"""


def test_a_batch_summed_by_the_user_is_not_split_k():
    module = parse(BATCH_SUM)
    assert split_k(module, _ins(module, "d")) is None
    assert split_k_sum(module, _ins(module, "r")) is None
    # The same dot with the batch right before K (XLA's split), summed: split-K.
    split = BATCH_SUM.replace("f32[4,8,16]", "f32[8,4,16]").replace(
        "lhs_batch_dims={0}, lhs_contracting_dims={2}",
        "lhs_batch_dims={1}, lhs_contracting_dims={2}").replace(
        "(a: f32[8,4,16]", "(a: f32[8,4,16]")
    module = parse(split)
    s = split_k(module, _ins(module, "d"))
    assert (s.parts, s.dimension, s.k, s.reduce.name.name, s.reduce_kernel.name.name) == (
        4, 0, 64, "r", "r")
    # Summed over another dimension: not split-K.
    module = parse(split.replace("dimensions={0}, to_apply", "dimensions={1}, to_apply")
                   .replace("-> f32[8,2]", "-> f32[4,2]").replace("%r = f32[8,2]",
                                                                   "%r = f32[4,2]"))
    assert split_k(module, _ins(module, "d")) is None


#: Hand-written (no real dump at hand has it): XLA's other split-K, a Triton
#: GEMM fusion with triton_gemm_config.split_k (xla/service/gpu/
#: split_k_gemm_rewriter.cc), its result f32[2,...] reduced right after it.
TRITON_SPLIT = """HloModule m

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}

%gemm (p0: bf16[32,2,64], p1: bf16[2,64,16]) -> f32[2,32,16] {
  %p0 = bf16[32,2,64]{2,1,0} parameter(0)
  %p1 = bf16[2,64,16]{2,1,0} parameter(1)
  ROOT %d = f32[2,32,16]{2,1,0} dot(%p0, %p1), lhs_batch_dims={1}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
}

ENTRY %e (a: bf16[32,2,64], b: bf16[2,64,16]) -> f32[32,16] {
  %a = bf16[32,2,64]{2,1,0} parameter(0)
  %b = bf16[2,64,16]{2,1,0} parameter(1)
  %g = f32[2,32,16]{2,1,0} fusion(%a, %b), kind=kCustom, calls=%gemm, backend_config={"fusion_backend_config":{"kind":"__triton_gemm","triton_gemm_config":{"block_m":"32","block_n":"16","block_k":"32","split_k":"2","num_stages":"1","num_warps":"4","num_ctas":"1"}}}
  %z = f32[] constant(0)
  ROOT %r = f32[32,16]{1,0} reduce(%g, %z), dimensions={0}, to_apply=%add
}
"""


def test_triton_gemm_config_split_k():
    module = parse(TRITON_SPLIT)
    s = split_k(module, _ins(module, "g"))
    assert (s.parts, s.dimension, s.k, s.source) == (2, 0, 128, "triton_gemm_config.split_k")
    assert s.reduce.name.name == "r"
    assert "split_k_gemm_rewriter.cc" in s.sentence()
    # Without the reduce found, the config still says it.
    module = parse(TRITON_SPLIT.replace("ROOT %r = f32[32,16]{1,0} reduce(%g, %z), "
                                        "dimensions={0}, to_apply=%add",
                                        "ROOT %r = f32[2,32,16]{2,1,0} copy(%g)")
                   .replace("-> f32[32,16] {", "-> f32[2,32,16] {"))
    s = split_k(module, _ins(module, "g"))
    assert s.parts == 2 and s.reduce is None
    assert s.sentence().endswith("summed by a reduce after it "
                                 "(xla/service/gpu/split_k_gemm_rewriter.cc)")


@pytest.mark.parametrize("cut", [0.25, 0.5, 0.75, 0.9])
def test_never_raises_on_a_cut_dump(cut):
    text = _dump("fp8_splitk")
    module = parse(text[:int(len(text) * cut)])
    for c in module.computations:
        for ins in c.instructions:
            kernel_notes(module, ins)


def test_the_fp8_gemm_remark_is_for_gpu_modules_only():
    """Hand-written: the same widening in a module with no GPU trace (a CPU dump
    has no cuBLASLt FP8 GEMM to miss) says what it computes in, nothing more."""
    text = """HloModule m

ENTRY %e (a: f8e4m3fn[4,8], b: f8e4m3fn[8,2]) -> bf16[4,2] {
  %a = f8e4m3fn[4,8]{1,0} parameter(0)
  %ca = bf16[4,8]{1,0} convert(%a)
  %b = f8e4m3fn[8,2]{1,0} parameter(1)
  %cb = bf16[8,2]{1,0} convert(%b)
  ROOT %d = bf16[4,2]{1,0} dot(%ca, %cb), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""
    module = parse(text)
    p = matmul_precision(module, _ins(module, "d"))
    assert p.fp8_widened and not p.gpu
    assert p.sentence() == ("Computes in bf16: its f8e4m3fn operands are converted to bf16 "
                            "before the dot (%a by %ca; %b by %cb)")
    gpu = parse(_dump("fp8_splitk"))
    assert matmul_precision(gpu, _ins(gpu, "dot.1")).gpu
