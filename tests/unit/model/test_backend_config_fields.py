"""Issue 40 item 6: the backend_config fields hover left unexplained, on real
XLA output: ``scale_mode`` and ``autotune_workspace_size`` of a cuBLASLt call
(examples/gpu/deviceless/fp8_cublaslt), ``kernel_strategy``, ``backend`` and
``collectives_mode`` of a GPU all-reduce (examples/gpu/deviceless/spmd_mesh8),
``reification_cost`` and ``device_type`` (every GPU instruction's
GpuBackendConfig; a file of the corpus), ``sizes`` of a nested GEMM's dot
(examples/gpu/deviceless/fp8_splitk). Meanings from
xla/service/gpu/backend_configs.proto as jaxlib 0.10.2's XLA registers it."""

from __future__ import annotations

import glob
import os

from tests.helpers import GPU, SPMD_MESH8_GPU, read
from hlo_lsp.features.hover import hover
from hlo_lsp.model.backend_config import decode_backend_config
from hlo_lsp.syntax.parser import parse

DEVICELESS = str(GPU / "deviceless")


def _dump(name: str) -> str:
    (path,) = glob.glob(os.path.join(DEVICELESS, name, "*sm_9.0a_gpu_after_optimizations.txt"))
    with open(path, encoding="utf-8") as f:
        return f.read()


def _hover(text: str, needle: str) -> str:
    return hover(parse(text), text.index(needle) + 1).markdown


def _notes(text: str, instruction: str) -> dict[str, str]:
    line = next(ln for ln in text.splitlines()
                if ln.split(" = ")[0].split()[-1:] in ([instruction], [f"%{instruction}"]))
    return dict(decode_backend_config(line.split("backend_config=", 1)[1]).notes)


def test_cublaslt_fields_scale_mode_and_autotune_workspace_size():
    notes = _notes(_dump("fp8_cublaslt"), "cublas-gemm.clone.1")
    assert notes["gemm_backend_config.scale_mode"].startswith(
        "1: per-tensor scaling: one f32 scale per FP8 operand")
    assert notes["gemm_backend_config.autotune_workspace_size"].startswith(
        "0: bytes of cuBLAS workspace the autotuner gave the call")


def test_gpu_all_reduce_fields_kernel_strategy_and_backend():
    text = read(SPMD_MESH8_GPU)
    name = next(ln.split(" = ")[0].strip().lstrip("%") for ln in text.splitlines()
                if "all-reduce-start(" in ln and " = " in ln)
    notes = _notes(text, name)
    assert notes["collective_backend_config.kernel_strategy"].startswith(
        "KERNEL_STRATEGY_TRITON_ONE_SHOT: the scheduler's cost model times it as XLA's "
        "one-shot collective kernel")
    assert notes["collective_backend_config.backend"] == (
        "DEFAULT: the collective runs on NCCL (CollectiveBackendConfig, "
        "backend_configs.proto; collective_backend_assigner.cc)")
    assert notes["collective_backend_config.collectives_mode"].startswith(
        "COLLECTIVES_MODE_INVALID: not set")
    md = _hover(text, f"%{name} = ")
    assert "`collective_backend_config.kernel_strategy` = KERNEL_STRATEGY_TRITON_ONE_SHOT" in md


def test_reification_cost_and_device_type_in_the_corpus(corpus_dir):
    path = corpus_dir / ("openxla__xla__xla__backends__gpu__codegen__triton__tests__bitcast__"
                         "bitcast_unsupported_expand.hlo")
    notes = _notes(path.read_text(encoding="utf-8"), "gemm_fusion_tmp_11")
    assert notes["reification_cost"].startswith("[]: none recorded; the GPU cost model's "
                                                "estimates for this instruction")
    assert notes["device_type"].startswith("DEVICE_TYPE_INVALID: not set")


def test_value_notes_only_where_the_proto_has_the_field():
    """A ``backend`` or ``scale_mode`` key outside its message is not explained
    by the meaning of another proto's field."""
    notes = dict(decode_backend_config('{"custom":{"backend":"DEFAULT","scale_mode":1},'
                                       '"device_type":"DEVICE_TYPE_HOST"}').notes)
    assert "custom.backend" not in notes and "custom.scale_mode" not in notes
    assert notes["device_type"] == ("DEVICE_TYPE_HOST: the instruction runs on the host CPU "
                                    "(host offloading) (GpuBackendConfig, "
                                    "backend_configs.proto)")


def test_sizes_of_the_nested_gemm_dot():
    text = _dump("fp8_splitk")
    notes = _notes(text, "dot.1")
    assert notes["sizes"].startswith("[16]: tile of the contracting dimension K (block_k)")
    assert "`sizes` = \\[16\\]: tile of the contracting dimension K" in _hover(text, "%dot.1 = ")


def test_a_false_flag_is_not_explained_as_true():
    """A flag's note says what ``true`` means: ``"is_pipelined":false`` on the real
    all-reduce-start of spmd_mesh8 said "the collective was pipelined across loop
    iterations" (and ``"is_sync":false`` "runs synchronously")."""
    notes = _notes(_dump("spmd_mesh8"), "all-reduce-start")
    assert notes["collective_backend_config.is_sync"].startswith("true: the collective runs")
    assert notes["collective_backend_config.is_pipelined"] == (
        "false: no; true would mean the collective was pipelined across loop iterations")
    assert notes["force_earliest_schedule"].startswith("false: no; true would mean")
