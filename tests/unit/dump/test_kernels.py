"""The generated kernels of a dump (hlo_lsp/dump/kernels.py), on the PTX and
LLVM IR XLA:GPU wrote for examples/gpu/deviceless/fp8_fusion_log."""

from __future__ import annotations

import os
import shutil

import pytest

from hlo_lsp.dump.kernels import LLVM_IR, PTX, kernel_files, kernel_name, read_kernels

from tests.helpers import EXAMPLES

DUMP = EXAMPLES / "gpu" / "deviceless" / "fp8_fusion_log"
AFTER = DUMP / "module_0001.jit_fp8_block.sm_9.0a_gpu_after_optimizations.txt"
PTX_FILE = DUMP / "module_0001.jit_fp8_block.7.ptx"
LL_FILE = DUMP / "module_0001.jit_fp8_block.7.ir-with-opt.ll"


@pytest.mark.parametrize("hlo,kernel", [
    ("gemm_fusion_dot", "gemm_fusion_dot"),
    ("loop_multiply_fusion.1", "loop_multiply_fusion_1"),
    ("cublas-gemm.clone.1.0", "cublas_gemm_clone_1_0"),
    ("1fusion", "_1fusion"), ("", "__unnamed"), ("_", "__"), ("$", "$_"), ("é.x", "__x"),
])
def test_kernel_names_as_sanitize_function_name(hlo, kernel):
    assert kernel_name(hlo) == kernel


def test_the_gemm_fusion_kernel_in_ptx_then_llvm_ir():
    index = read_kernels(str(AFTER))
    assert index.problems == ()
    ptx, ll = index.for_instruction("gemm_fusion_dot")
    assert (ptx.path, ptx.kind, ll.path, ll.kind) == (str(PTX_FILE), PTX, str(LL_FILE), LLVM_IR)
    line = PTX_FILE.read_text().splitlines()[ptx.line]
    assert line.startswith(".visible .entry gemm_fusion_dot(")
    assert line[ptx.start:ptx.end] == "gemm_fusion_dot"
    line = LL_FILE.read_text().splitlines()[ll.line]
    assert line.startswith("define ") and line[ll.start:ll.end] == "gemm_fusion_dot"
    assert index.instruction_of("gemm_fusion_dot", ["x.1", "gemm_fusion_dot"]) == \
        "gemm_fusion_dot"


def test_only_the_module_s_files_of_an_after_optimizations_file(tmp_path):
    for f in DUMP.iterdir():
        shutil.copy(f, tmp_path / f.name)
    other = tmp_path / "module_0002.jit_g.7.ptx"
    other.write_text(".visible .entry gemm_fusion_dot(\n")
    names = [os.path.basename(p) for p in kernel_files(str(tmp_path / AFTER.name))]
    assert names == [PTX_FILE.name, LL_FILE.name]
    before = tmp_path / "module_0001.jit_fp8_block.before_optimizations.txt"
    assert read_kernels(str(before)).sites == {}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_an_unreadable_kernel_file_is_named_and_skipped(tmp_path):
    shutil.copy(AFTER, tmp_path / AFTER.name)
    shutil.copy(PTX_FILE, tmp_path / PTX_FILE.name)
    os.mkfifo(tmp_path / "module_0001.jit_fp8_block.9.ptx")
    index = read_kernels(str(tmp_path / AFTER.name))
    assert [s.kind for s in index.for_instruction("gemm_fusion_dot")] == [PTX]
    [problem] = index.problems
    assert problem.endswith("9.ptx: not a regular file (a FIFO)")


def test_from_a_kernel_back_to_its_instruction():
    from hlo_lsp.dump.kernels import (after_optimizations_for, is_kernel_file, kernel_instruction,
                                      kernel_origin)

    assert after_optimizations_for(str(PTX_FILE)) == str(AFTER)
    assert is_kernel_file(str(PTX_FILE)) and is_kernel_file(str(LL_FILE))
    assert is_kernel_file("module_0001.jit_f.constants.ir-no-opt.ll")
    assert not is_kernel_file(str(AFTER)) and not is_kernel_file("notes.ptx")
    index = read_kernels(str(AFTER))
    text = AFTER.read_text().splitlines()
    for site in index.for_instruction("gemm_fusion_dot"):
        hlo, row, start, end = kernel_origin(site.path, site.line)
        assert hlo == str(AFTER) and text[row][start:end] == "%gemm_fusion_dot"
        assert text[row][end:].startswith(" = f32[4,256,384]")
        got = kernel_instruction(site.path, site.line)
        assert (got.instruction, got.kernel, got.line) == ("gemm_fusion_dot", "gemm_fusion_dot", row)
    assert kernel_origin(str(PTX_FILE), 0) is None  # not a kernel's line
    assert kernel_origin(str(PTX_FILE), 10**6) is None


def test_no_way_back_without_the_after_optimizations_file(tmp_path):
    from hlo_lsp.dump.kernels import kernel_origin

    shutil.copy(PTX_FILE, tmp_path / PTX_FILE.name)
    line = PTX_FILE.read_text().splitlines().index(".visible .entry gemm_fusion_dot(")
    assert kernel_origin(str(tmp_path / PTX_FILE.name), line) is None
