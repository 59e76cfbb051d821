"""The matcher that survives renames (hlo_lsp.model.matching, issue 44) on real
dumps: XLA's renaming passes, seed 001's two versions, corpus modules."""

from __future__ import annotations

import pathlib
import re

import pytest

from tests.helpers import EXAMPLES, FP8_FUSED, FP8_REGRESSION, corpus_file, read
from hlo_lsp.model.hlo import HloModule
from hlo_lsp.model.matching import (instruction_role, kernel_label, match_modules,
                                    match_structure)
from hlo_lsp.syntax.parser import parse

SNAPSHOTS = pathlib.Path(__file__).resolve().parents[2] / "data" / "matching"
DEVICELESS = EXAMPLES / "gpu" / "deviceless"
AFTER = "module_0001.jit_matmul_fn_with_scale.sm_9.0a_gpu_after_optimizations.txt"


def _snapshot(number: str) -> HloModule:
    [path] = SNAPSHOTS.glob(f"module_0001.jit_matmul_fn_with_scale.{number}.*.txt")
    return parse(read(path))


def _names(module: HloModule) -> list[str]:
    return [ins.name.name for comp in module.computations for ins in comp.instructions]


def test_rename_fusions_is_followed_through():
    """`rename_fusions` renamed %fusion.2 to %loop_multiply_fusion.1 and the fused
    computations with them: every instruction is paired, the fusions with their
    new names (by name alone the two fusions were removed and two added)."""
    before, after = _snapshot("0032"), _snapshot("0033")
    assert "fusion.2" in _names(before) and "fusion.2" not in _names(after)
    found = match_modules(before, after)
    assert len(found) == len(_names(before)) == len(_names(after))
    assert found["fusion.2"] == "loop_multiply_fusion.1"
    assert found["fusion.1"] == "loop_multiply_fusion"
    assert found["gemm_fusion_dot_general.1"] == "gemm_fusion_dot_general.1"
    assert {o: n for o, n in found.items() if o != n} == {
        "fusion.2": "loop_multiply_fusion.1", "fusion.1": "loop_multiply_fusion"}


def test_rename_instructions_is_followed_through():
    """`rename-instructions` renamed instructions (%mul.6 -> %mul.6.0): each is
    paired with its new name, nothing added or removed."""
    before, after = _snapshot("0028"), _snapshot("0029")
    m = match_structure(before, after)
    assert not m.removed and not m.added
    renamed = {o.name.name: n.name.name for o, n in m.pairs if o.name.name != n.name.name}
    assert renamed and all(n == f"{o}.0" for o, n in renamed.items())


def test_seed_001_the_cublas_call_and_the_triton_gemm_fusion_are_the_same_dot():
    """Seed 001 (no metadata at all): JAX 0.4.31's cuBLASLt FP8 call and 0.4.32's
    Triton GEMM fusion are paired as the same dot, the parameters by name."""
    old, new = parse(read(FP8_FUSED)), parse(read(FP8_REGRESSION))
    found = match_modules(old, new)
    assert found["cublas-gemm.clone.1.0"] == "gemm_fusion_dot.19.0"
    assert all(found[f"Arg_{i}.{i + 1}.0"] == f"Arg_{i}.{i + 1}.0" for i in range(5))
    gemm = {ins.name.name: ins for c in new.computations for ins in c.instructions}
    assert instruction_role(new, gemm["gemm_fusion_dot.19.0"]) == "dot"
    assert kernel_label(gemm["gemm_fusion_dot.19.0"]) == "Triton GEMM fusion"
    call = {ins.name.name: ins for c in old.computations for ins in c.instructions}
    assert kernel_label(call["cublas-gemm.clone.1.0"]) == "cuBLASLt FP8 call"
    # The tuple element of the call is not the bf16 slice of another fusion.
    assert "get-tuple-element.1" not in found


def test_deviceless_h100_cublaslt_against_triton_gemm():
    """The same program compiled here for an H100 with Triton GEMM off and on
    (examples/gpu/deviceless): the cuBLASLt FP8 call pairs with the GEMM fusion."""
    old = parse(read(DEVICELESS / "fp8_cublaslt" / AFTER))
    new = parse(read(DEVICELESS / "fp8_triton_gemm" / AFTER))
    assert match_modules(old, new)["cublas-gemm.clone.1"] == "gemm_fusion_dot_general.1"


@pytest.mark.parametrize("name, size", [
    ("morenfang__xla_hlo_dump_parse__data__module_0226.after_optimizations.txt", 3000),
    # Reducer computations no instruction calls: paired by structure.
    ("openxla__xla__xla__tools__benchmarks__hlo__hlo_llama31_70b_fp8_32x8.hlo", 4000)])
def test_a_corpus_module_against_itself_renamed_and_deterministic(name, size):
    """The largest after-optimizations module of the corpus, and a benchmark
    module of XLA's, with every name changed: each instruction pairs with its
    renamed self, the same way twice."""
    text = read(corpus_file(name))
    renamed = re.sub(r"%([A-Za-z_][\w.\-]*)", r"%\1_r", text)
    old = parse(text)
    found = match_modules(old, parse(renamed))
    assert len(found) == len(_names(old)) > size
    assert all(n == f"{o}_r" for o, n in found.items())
    assert match_modules(parse(text), parse(renamed)) == found


def test_a_module_against_itself_pairs_every_instruction():
    module = parse(read(FP8_REGRESSION))
    m = match_structure(module, module)
    assert len(m.pairs) == len(_names(module)) and not m.removed and not m.added
