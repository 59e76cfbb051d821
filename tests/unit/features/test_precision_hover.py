"""Issue 40 item 3 as hover and the kernel summary say it, on the real H100 dump
examples/gpu/deviceless/fp8_splitk (a scaled FP8 matmul with a bias, jax 0.10.2,
default flags, compiled without a GPU by examples/gpu/make_deviceless_dumps.py):
the Triton GEMM fusion computes in bf16 from FP8 inputs converted before it, with
split-K 4 (``f32[4,256,384]``) summed by a loop fusion. The model's answers are
tested in tests/unit/model/test_precision.py."""

from __future__ import annotations

import glob
import os

from tests.helpers import GPU
from hlo_lsp.features.hover import hover
from hlo_lsp.features.summary import format_folded, format_markdown, format_text
from hlo_lsp.model.accelerators import accelerator
from hlo_lsp.model.folding import fold_summary
from hlo_lsp.model.summary import kernel_summary
from hlo_lsp.syntax.parser import parse

DEVICELESS = str(GPU / "deviceless")


def _dump(name: str) -> str:
    (path,) = glob.glob(os.path.join(DEVICELESS, name, "*sm_9.0a_gpu_after_optimizations.txt"))
    with open(path, encoding="utf-8") as f:
        return f.read()


def _hover(text: str, needle: str) -> str:
    return hover(parse(text), text.index(needle) + 1).markdown


def test_hover_on_the_gemm_fusion_says_fp8_to_bf16_and_split_k():
    text = _dump("fp8_splitk")
    md = _hover(text, "%gemm_fusion_dot = ")
    assert ("**Computes in bf16**: its f8e4m3fn operands are converted to bf16 before the "
            "dot (`%x.1` by `%convert_element_type.4.1` in `%loop_multiply_fusion.1`") in md
    assert "**Split-K 4**: the contracting dimension K (512) is split into 4" in md
    assert "summed by `%reduce.4` in `%loop_add_fusion`" in md
    # At a use too (the operand of the fusion that sums it).
    use = text.index("fusion(%gemm_fusion_dot") + len("fusion(") + 1
    assert "**Split-K 4**" in hover(parse(text), use).markdown
    # The summing fusion names the GEMM.
    md = _hover(text, "%loop_add_fusion = ")
    assert ("**Split-K sum**: sums the 4 partial products of `%gemm_fusion_dot` "
            "(`f32[4,256,384]`, dimension 0) over K") in md


def test_hover_on_the_nested_gemm_dot_explains_sizes():
    md = _hover(_dump("fp8_splitk"), "%dot.1 = ")
    # The note holds the dump's value: Markdown text, its brackets escaped.
    assert "`sizes` = \\[16\\]: tile of the contracting dimension K (block_k)" in md
    assert "**Split-K 4**" in md and "**Computes in bf16**" in md


def test_summary_says_it_in_every_form():
    module = parse(_dump("fp8_splitk"))
    summary = kernel_summary(module)
    [gemm] = [k for k in summary.kernels if k.name == "gemm_fusion_dot"]
    assert len(gemm.notes) == 2
    assert gemm.notes[0].startswith("Computes in bf16: its f8e4m3fn operands are converted")
    assert gemm.notes[1].startswith("Split-K 4: ")
    [add] = [k for k in summary.kernels if k.name == "loop_add_fusion"]
    assert add.notes == ["Split-K sum: sums the 4 partial products of %gemm_fusion_dot "
                         "(f32[4,256,384], dimension 0) over K"]
    assert gemm.to_dict()["notes"] == gemm.notes
    assert summary.to_dict()["kernels"][0]["notes"] == []
    text = format_text(summary)
    assert "  Notes:\n    %gemm_fusion_dot: Computes in bf16: its f8e4m3fn operands" in text
    assert "    %gemm_fusion_dot: Split-K 4: the contracting dimension K (512)" in text
    md = format_markdown(summary)
    assert "```\n  %gemm_fusion_dot: Computes in bf16" in md
    folded = format_folded(fold_summary(module, summary, accelerator("h100-sxm")))
    assert "Precision and split-K (2 kernels)\n  %gemm_fusion_dot: Computes in bf16" in folded
