"""Kernel configurations explained field by field (hlo_lsp.model.kernels.
explain_kernel) and the MLIR attribute dictionaries they are written in
(hlo_lsp.model.backend_config.parse_mlir_dict): real dumps for Mosaic GPU,
cuDNN convolution and Triton block-level GEMM; hand-written instructions where
no real dump has the config (Pallas Triton, triton_gemm_config)."""

from __future__ import annotations

import glob
import hashlib
import os

from tests.helpers import GPU, cpu_seconds
from hlo_lsp.features.hover import hover
from hlo_lsp.model.backend_config import (MlirRaw, decode_backend_config, explain_target,
                                          parse_mlir_dict)
from hlo_lsp.model.kernels import explain_kernel
from hlo_lsp.syntax.parser import parse

DEVICELESS = str(GPU / "deviceless")


def _dump(name: str) -> str:
    (path,) = glob.glob(os.path.join(DEVICELESS, name, "*sm_9.0a_gpu_after_optimizations.txt"))
    with open(path, encoding="utf-8") as f:
        return f.read()


def _ins(module, name):
    return next(i for c in module.computations for i in c.instructions if i.name.name == name)


def _facts(explanation) -> dict[str, str]:
    return {f.field: f.value for f in explanation.facts}


def _hover(text: str, needle: str) -> str:
    return hover(parse(text), text.index(needle) + 1).markdown


# --- the MLIR attribute dictionary reader -----------------------------------

def test_mlir_dict_values_and_escapes():
    data = parse_mlir_dict(r'{kernel_hash = "\DF\09\22a\\b\n", name = "add_one", '
                           r'grid_x = 4 : i32, neg = -2, f = 1.5e-3 : f32, hex = 0x1F, '
                           r'debug = false, on = true, l = [1, "x", [2]], unit, '
                           r'"quoted key" = 1, n = {a = 1}, '
                           r'raw = #gpu<address_space<workgroup>, x>, t = dense<[1, 2]>}')
    assert data == {
        "kernel_hash": b'\xdf\t"a\\b\n', "name": b"add_one", "grid_x": 4, "neg": -2,
        "f": 1.5e-3, "hex": 31, "debug": False, "on": True, "l": [1, b"x", [2]],
        "unit": True, "quoted key": 1, "n": {"a": 1},
        "raw": MlirRaw("#gpu<address_space<workgroup>, x>"), "t": MlirRaw("dense<[1, 2]>")}


def test_mlir_dict_never_raises_and_rejects_non_dictionaries():
    text = r'{a = "x\DF\", b = [1, {c = 2}], d = 3 : i32}'
    for cut in range(len(text) + 1):
        parse_mlir_dict(text[:cut])  # never raises
    for bad in ("", "x", "{a = 1", '{a = "open}', "{a = 1} trailing", "{= 1}", "[1]",
                '{"a":1}x', "{" * 10_000):
        assert parse_mlir_dict(bad) is None, bad
    assert parse_mlir_dict("{}") == {} and parse_mlir_dict(" { } ") == {}


def test_mlir_dict_is_linear_in_escapes():
    blob = "\\DF\\09" * 400_000 + "x"  # 2.4 M characters, 800 k escapes
    data, cpu_s = cpu_seconds(parse_mlir_dict, '{module = "' + blob + '", k = 1}')
    assert cpu_s < 5, cpu_s   # processor time
    assert len(data["module"]) == 800_001 and data["k"] == 1


def test_decode_backend_config_elides_binary_strings():
    explained = decode_backend_config(r'{module = "ML\EFR\00\01", name = "k"}')
    assert explained.mlir == {"module": b"ML\xefR\x00\x01", "name": b"k"}
    assert explained.data is None and explained.notes == []
    assert explained.pretty == '{\n  module = <6 bytes>,\n  name = "k"\n}'
    # plain text and JSON as before
    assert decode_backend_config("abc").pretty == "abc"
    assert decode_backend_config('{"a":1}').data == {"a": 1}


# --- 1. Pallas Mosaic GPU (real dump) ----------------------------------------

def test_mosaic_gpu_kernel_from_the_real_dump():
    text = _dump("pallas_mosaic_gpu")
    call = _ins(parse(text), "pallas_call.1")
    kernel = explain_kernel(call)
    assert kernel.title == "Pallas kernel compiled by Mosaic GPU"
    facts = _facts(kernel)
    assert facts["kernel"] == "add_one"  # op_name .../add_one/pallas_call
    assert facts["symbol"] == "add_one_mosaic_gpu"  # readable inside the module
    module = decode_backend_config(call.attribute("backend_config").value).mlir["module"]
    assert module.startswith(b"ML\xefR") and facts["module"] == f"{len(module):,} bytes"
    assert facts["module"] == "8,933 bytes"
    assert facts["kernel_hash"] == hashlib.sha256(module).digest()[:8].hex() + "…"
    assert facts["kernel_hash"] == "df09beabf353099e…"
    assert "matches the module" in next(f.meaning for f in kernel.facts
                                        if f.field == "kernel_hash")
    assert facts["use_custom_barrier"] == "false"
    assert all(f.source.startswith("jax/") for f in kernel.facts)
    md = _hover(text, "%pallas_call.1 =")
    assert "**Kernel**: Pallas kernel compiled by Mosaic GPU" in md
    assert "- `kernel_hash` = `df09beabf353099e…`" in md
    assert "module = <8,933 bytes>" in md
    assert "MLIR" in md and "\\EF" not in md and "ML\xefR" not in md  # no binary
    assert "`mosaic_gpu_v2`: Mosaic GPU: a Pallas kernel" in md
    assert explain_target("mosaic_gpu_v2").startswith("Mosaic GPU")


# --- 2. Pallas Triton (hand-written) ------------------------------------------

# Hand-written: the backend_config fields are those jax/_src/pallas/triton/
# pallas_call_registration.py writes (name, ir, num_stages, num_warps,
# grid_x/y/z as i32, debug), printed as MLIR prints an attribute dictionary.
TRITON_CALL = r'''HloModule m

ENTRY %e (p: f32[1024]) -> f32[1024] {
  %p = f32[1024]{0} parameter(0)
  ROOT %triton = f32[1024]{0} custom-call(%p), custom_call_target="__gpu$xla.gpu.triton", metadata={op_name="jit(f)/add_kernel/pallas_call"}, backend_config={debug = false, grid_x = 8 : i32, grid_y = 2 : i32, grid_z = 1 : i32, ir = "ML\EFR\01\02\03\04", name = "add_kernel", num_stages = 3 : i32, num_warps = 4 : i32}
}
'''


def test_pallas_triton_call_hand_written():
    kernel = explain_kernel(_ins(parse(TRITON_CALL), "triton"))
    assert kernel.title == "Pallas kernel compiled by Triton"
    facts = _facts(kernel)
    assert facts["name"] == "add_kernel"
    assert facts["grid"] == "8 × 2 × 1"
    assert facts["grid_x"] == "8" and facts["num_warps"] == "4" and facts["num_stages"] == "3"
    assert facts["ir"] == "8 bytes" and facts["debug"] == "false"
    assert {f.source for f in kernel.facts} == {
        "jax/_src/pallas/triton/pallas_call_registration.py"}
    md = _hover(TRITON_CALL, "%triton =")
    assert "**Kernel**: Pallas kernel compiled by Triton" in md
    assert "- `grid` = `8 × 2 × 1`: 16 program instances in all" in md
    assert "- `num_warps` = `4`: warps per program instance" in md
    assert "ir = <8 bytes>" in md and "\\EF" not in md


# --- 3. cuDNN convolution (real dump + algorithm hand-written) ------------------

def test_cudnn_conv_from_the_real_dump():
    text = _dump("conv_bias_relu")
    module = parse(text)
    conv = next(i for c in module.computations for i in c.instructions
                if i.opcode == "custom-call")
    kernel = explain_kernel(conv)
    assert kernel.title == "cuDNN convolution" and "+ bias" in kernel.summary
    facts = _facts(kernel)
    assert facts == {"activation_mode": "kRelu", "conv_result_scale": "1",
                     "side_input_scale": "0", "leakyrelu_alpha": "0"}
    meanings = {f.field: f.meaning for f in kernel.facts}
    assert "ReLU" in meanings["activation_mode"]
    assert "no side input is added" in meanings["side_input_scale"]
    assert "unused" in meanings["leakyrelu_alpha"]
    assert "default choice" in kernel.note  # deviceless: no autotuned algorithm
    md = _hover(text, f"%{conv.name.name} =")
    assert "**Kernel**: cuDNN convolution" in md
    assert "- `activation_mode` = `kRelu`: applied to the result: ReLU" in md
    assert "(*xla/stream_executor/dnn.proto*)" in md
    # the generic notes no longer repeat the covered fields
    assert "`cudnn_conv_backend_config.activation_mode` =" not in md


# Hand-written: an autotuned convolution's algorithm (stream_executor.dnn.AlgorithmProto).
CONV_ALGO = r'''HloModule m

ENTRY %e (x: f32[1,8,8,4], w: f32[3,3,4,4]) -> (f32[1,8,8,4], u8[0]) {
  %x = f32[1,8,8,4]{3,2,1,0} parameter(0)
  %w = f32[3,3,4,4]{3,2,1,0} parameter(1)
  ROOT %conv = (f32[1,8,8,4]{3,2,1,0}, u8[0]{0}) custom-call(%x, %w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, custom_call_target="__cudnn$convForward", backend_config={"cudnn_conv_backend_config":{"activation_mode":"kLeakyRelu","conv_result_scale":1,"side_input_scale":0.5,"leakyrelu_alpha":0.1,"algorithm":{"algo_id":"12","math_type":"TENSOR_OP_MATH","is_cudnn_frontend":true,"workspace_size":"4096"}}}
}
'''


def test_cudnn_conv_algorithm_hand_written():
    kernel = explain_kernel(_ins(parse(CONV_ALGO), "conv"))
    facts = _facts(kernel)
    assert facts["algorithm.algo_id"] == "12"
    assert facts["algorithm.math_type"] == "TENSOR_OP_MATH"
    assert facts["algorithm.is_cudnn_frontend"] == "true"
    assert facts["algorithm.workspace_size"] == "4096 B"
    meanings = {f.field: f.meaning for f in kernel.facts}
    assert "a side input is added" in meanings["side_input_scale"]
    assert "unused" not in meanings["leakyrelu_alpha"]
    assert "Tensor Core" in meanings["algorithm.math_type"]
    assert kernel.note == "" and "bias" not in kernel.summary


# --- 4. Triton GEMM (real block-level dump + hand-written triton_gemm_config) --

def test_triton_block_level_gemm_from_the_real_dump():
    text = _dump("fp8_triton_gemm")
    kernel = explain_kernel(_ins(parse(text), "gemm_fusion_dot_general.1"))
    assert kernel.title == "Triton block-level fusion"
    facts = _facts(kernel)
    assert facts["block_level_fusion_config.output_tiles"] == "[8, 16]"
    assert facts["block_level_fusion_config.num_warps"] == "2"
    assert facts["block_level_fusion_config.num_ctas"] == "1"
    assert facts["block_level_fusion_config.num_stages"] == "1"
    md = _hover(text, "%gemm_fusion_dot_general.1 =")
    assert "block_m × block_n" in md
    assert "- `block_level_fusion_config.num_ctas` = `1`: thread blocks (CTAs) per cluster" in md


# Hand-written: no dump in examples/ carries triton_gemm_config (the seed gemm_fusion
# dump was printed without backend_config); fields from xla/autotuning.proto
# TritonGemmKey as FusionBackendConfig.triton_gemm_config prints them.
GEMM = r'''HloModule m

%comp (a: f32[64,32], b: f32[32,16]) -> f32[64,16] {
  %a = f32[64,32]{1,0} parameter(0)
  %b = f32[32,16]{1,0} parameter(1)
  ROOT %d = f32[64,16]{1,0} dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

ENTRY %e (a: f32[64,32], b: f32[32,16]) -> f32[64,16] {
  %a = f32[64,32]{1,0} parameter(0)
  %b = f32[32,16]{1,0} parameter(1)
  ROOT %gemm_fusion = f32[64,16]{1,0} fusion(%a, %b), kind=kCustom, calls=%comp, backend_config={"fusion_backend_config":{"kind":"__triton_gemm","triton_gemm_config":{"block_m":"64","block_n":"32","block_k":"16","split_k":"2","num_stages":"3","num_warps":"4","num_ctas":"1"}}}
}
'''


def test_triton_gemm_config_hand_written():
    kernel = explain_kernel(_ins(parse(GEMM), "gemm_fusion"))
    assert kernel.title == "Triton GEMM"
    facts = _facts(kernel)
    assert [f.split(".")[-1] for f in facts] == ["block_m", "block_n", "block_k", "split_k",
                                                 "num_stages", "num_warps", "num_ctas"]
    assert facts["triton_gemm_config.split_k"] == "2"
    meanings = {f.field.split(".")[-1]: f.meaning for f in kernel.facts}
    assert "output" in meanings["block_m"] and "reduced afterwards" in meanings["split_k"]
    assert "cluster" in meanings["num_ctas"] and "pipeline" in meanings["num_stages"]
    md = _hover(GEMM, "%gemm_fusion =")
    assert "- `triton_gemm_config.block_k` = `16`" in md
    assert "*xla/autotuning.proto TritonGemmKey*" in md
    assert "`fusion_backend_config.triton_gemm_config.block_m` =" not in md  # not twice
    assert "`fusion_backend_config.kind` = \\_\\_triton_gemm" in md  # generic note kept


def test_other_instructions_have_no_kernel_explanation():
    module = parse(GEMM)
    assert explain_kernel(_ins(module, "d")) is None
    assert explain_kernel(_ins(parse(TRITON_CALL), "p")) is None
