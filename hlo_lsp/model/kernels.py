"""What one instruction runs as: custom-call target and library, fusion kinds,
the meaning of a custom-call's tuple results.

The one answer to these questions for hover, inlay hints, the readable view,
the kernel summary (:mod:`hlo_lsp.model.summary`) and the workspace index.
Facts:

- ``custom_call_target`` values and their libraries: :data:`hlo_lsp.model.backend_config.
  CUSTOM_CALL_TARGETS` (xla/service/gpu/cublas_cudnn.cc and other registrations).
- Fusion kinds: the HLO ``kind=`` attribute (kLoop/kInput/kOutput/kCustom,
  xla/hlo/ir/hlo_instruction.h FusionKind) and the backend kind in
  ``backend_config``: GPU ``fusion_backend_config.kind``
  (xla/service/gpu/backend_configs.proto), CPU ``fusion_config.kind``
  (e.g. ``__ynn_fusion``).
- XLA's GemmFusion pass (xla/service/gpu/transforms/gemm_fusion.cc) names the
  kCustom fusions it creates ``gemm_fusion_<dot>`` (computation
  ``gemm_fusion_<dot>_computation``) and sets their backend kind to
  ``__triton_gemm``; dumps quoted without backend_config (seed 001) only keep
  the name, so :func:`fusion_backend_kind` infers the kind from it.
- What a kernel's configuration means, field by field with the source of each
  fact (:func:`explain_kernel`): Pallas Mosaic GPU calls
  (jax/experimental/mosaic/gpu/core.py), Pallas Triton calls
  (jax/_src/pallas/triton/pallas_call_registration.py), cuDNN convolutions
  (CudnnConvBackendConfig in xla/service/gpu/backend_configs.proto,
  xla/stream_executor/dnn.proto), Triton GEMMs (TritonGemmKey in
  xla/autotuning.proto) and Triton block-level fusions (BlockLevelFusionConfig).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from hlo_lsp.model.backend_config import decode_backend_config
from hlo_lsp.model.hlo import Computation, Instruction, decode_metadata, unquote
from hlo_lsp.model.memo import short_text_cache
from hlo_lsp.model.shapes import format_integer

#: Backend fusion kind -> short label used in summaries and code lenses.
BACKEND_KIND_LABELS = {
    "__triton_gemm": "Triton GEMM",
    "__triton_nested_gemm_fusion": "Triton GEMM",
    "__triton": "Triton",
    "__triton_softmax": "Triton",
    "__cudnn$fusion": "cuDNN",
    "__custom_fusion": "custom fusion",
    "__dynamic_memcpy": "dynamic memcpy",
    "__ynn_fusion": "YNNPACK",
}

#: HLO fusion kind -> short label.
HLO_KIND_LABELS = {"kLoop": "loop", "kInput": "input", "kOutput": "output",
                   "kCustom": "custom"}


def custom_call_target(ins: Instruction) -> str | None:
    """The ``custom_call_target`` of ``ins`` as XLA means it (quotes and escapes
    removed, :func:`hlo_lsp.model.hlo.unquote`), or None without one."""
    attr = ins.attribute("custom_call_target")
    return None if attr is None else unquote(attr.value)


def backend_config_data(ins: Instruction) -> dict | None:
    """The decoded JSON ``backend_config`` of ``ins`` when it is a JSON object."""
    attr = ins.attribute("backend_config")
    if attr is None:
        return None
    data = decode_backend_config(attr.value).data
    return data if isinstance(data, dict) else None


def hlo_fusion_kind(ins: Instruction) -> str:
    """The ``kind=`` of a fusion (``kLoop``...), "" when absent."""
    attr = ins.attribute("kind")
    return attr.value if attr is not None else ""


def fusion_backend_kind(ins: Instruction) -> tuple[str, bool]:
    """``(backend kind, inferred)`` of a fusion instruction.

    The kind comes from ``fusion_backend_config.kind`` (GPU) or
    ``fusion_config.kind`` (CPU) of its JSON ``backend_config``; without one,
    from the name (:func:`inferred_backend_kind`, ``inferred`` True).
    ``("", False)`` when unknown.
    """
    data = backend_config_data(ins)
    if data is not None:
        for key in ("fusion_backend_config", "fusion_config"):
            sub = data.get(key)
            if isinstance(sub, dict) and isinstance(sub.get("kind"), str):
                return sub["kind"], False
    kind = inferred_backend_kind(hlo_fusion_kind(ins), ins.name.name)
    return kind, bool(kind)


def inferred_backend_kind(hlo_kind: str, name: str) -> str:
    """The backend kind a fusion without backend_config has by XLA's naming: a
    ``kCustom`` fusion named ``gemm_fusion_*`` (no ``%``) is GemmFusion's output,
    ``__triton_gemm`` (xla/service/gpu/transforms/gemm_fusion.cc); "" otherwise."""
    return "__triton_gemm" if hlo_kind == "kCustom" and name.startswith("gemm_fusion_") else ""


def gemm_damax(ins: Instruction) -> bool:
    """Whether a cuBLAS(Lt) call's ``gemm_backend_config.damax_output`` is true."""
    data = backend_config_data(ins)
    gemm = data.get("gemm_backend_config") if data is not None else None
    return bool(isinstance(gemm, dict) and gemm.get("damax_output"))


def result_names(ins: Instruction) -> list[str]:
    """What each element of the tuple a cuBLAS / cuBLASLt custom-call returns is,
    by index; [] for other instructions and for non-tuple results.

    Facts (xla/service/gpu/cublas_cudnn.cc, GemmRewriter): a ``__cublas$*`` call
    returns ``(output, [extras], workspace)`` with the s8 workspace last; an FP8
    call with ``gemm_backend_config.damax_output`` returns ``d_amax`` second, an
    epilogue with an auxiliary output (``GELU_AUX``) its pre-activation second.
    """
    target = custom_call_target(ins)
    if target is None or not target.startswith("__cublas$") or ins.shape is None \
            or ins.shape.elements is None or not ins.shape.elements:
        return []
    count = len(ins.shape.elements)
    if count == 1:
        return ["output"]
    names = ["output"] + ["extra"] * (count - 2) + ["workspace (s8 scratch)"]
    if count >= 3:
        names[1] = ("d_amax (max |output|, for FP8 rescaling)" if gemm_damax(ins)
                    else "auxiliary output (e.g. GELU_AUX pre-activation)")
    return names


@dataclass(frozen=True, slots=True)
class TupleElement:
    """What a ``get-tuple-element`` reads: element ``index`` of ``producer``, a
    cuBLAS / cuBLASLt custom-call, whose meaning is ``meaning`` (an entry of
    :func:`result_names`, e.g. ``"output"``, ``"workspace (s8 scratch)"``)."""

    producer: Instruction
    index: int
    meaning: str


def tuple_element(ins: Instruction, computation: Computation | None = None
                  ) -> TupleElement | None:
    """The meaning of ``ins`` when it is ``get-tuple-element(%call), index=N`` of a
    cuBLAS(Lt) call defined in ``computation`` (default: the one holding ``ins``);
    None for anything else. The one answer for hover, inlay hints and the
    readable view."""
    if ins.opcode != "get-tuple-element" or not ins.operands:
        return None
    index = ins.attribute("index")
    if index is None or not index.value.isdigit():
        return None
    comp = computation if computation is not None else ins.computation
    producer = comp.by_name.get(ins.operands[0].ref.name) if comp is not None else None
    if producer is None:
        return None
    names = result_names(producer)
    n = int(index.value)
    return TupleElement(producer, n, names[n]) if n < len(names) else None


@short_text_cache(maxsize=4096, max_chars=4000)
def short_shape(text: str) -> str:
    """A shape without its layouts: ``f32[32,64]{1,0}`` -> ``f32[32,64]``; tuples
    keep their structure: ``(f32[2]{0}, s8[4]{0})`` -> ``(f32[2], s8[4])``.
    Remembered for the most recent shapes of at most 4,000 characters: a dump
    repeats a few thousand shapes in tens of thousands of operands (a whole
    file's inlay hints)."""
    if "{" not in text:
        return text
    out: list[str] = []
    depth = 0
    prev = ""
    for ch in text:
        if ch == "{" and (depth or prev == "]"):
            depth += 1
            continue
        if depth:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            continue
        out.append(ch)
        prev = ch
    return "".join(out)


# ---------------------------------------------------------------------------
# What a kernel's configuration means, field by field, with the source of each
# fact: the Pallas lowerings in JAX and the GPU protos in XLA.

#: Sources cited by :func:`explain_kernel`.
SRC_BACKEND_CONFIGS = "xla/service/gpu/backend_configs.proto"
SRC_AUTOTUNING = "xla/autotuning.proto"
SRC_DNN = "xla/stream_executor/dnn.proto"
SRC_MOSAIC_GPU = "jax/experimental/mosaic/gpu/core.py"
SRC_PALLAS_MOSAIC = "jax/_src/pallas/mosaic_gpu/pallas_call_registration.py"
SRC_PALLAS_TRITON = "jax/_src/pallas/triton/pallas_call_registration.py"

#: stream_executor.dnn.ActivationMode names (xla/stream_executor/dnn.proto).
ACTIVATION_MODES = {
    "kNone": "no activation",
    "kSigmoid": "sigmoid",
    "kRelu": "ReLU: max(x, 0)",
    "kRelu6": "ReLU6: min(max(x, 0), 6)",
    "kReluX": "ReLU clipped at a bound X",
    "kTanh": "tanh",
    "kBandPass": "band-pass",
    "kElu": "ELU",
    "kLeakyRelu": "leaky ReLU with slope leakyrelu_alpha below 0",
    "kGeluExact": "exact GELU",
}

#: stream_executor.dnn.AlgorithmProto.MathType (xla/stream_executor/dnn.proto).
MATH_TYPES = {
    "DEFAULT_MATH": "no Tensor Cores (plain FMA)",
    "TENSOR_OP_MATH": "Tensor Core math allowed",
}


@dataclass(frozen=True, slots=True)
class KernelFact:
    """One explained field of a kernel's configuration: ``field`` its name or
    path in ``backend_config`` (e.g. ``"triton_gemm_config.block_m"``),
    ``value`` as shown (bytes as hex or ``<N bytes>``), ``meaning`` one
    sentence, ``source`` the XLA/JAX file that defines it."""

    field: str
    value: str
    meaning: str
    source: str


@dataclass(frozen=True, slots=True)
class KernelExplanation:
    """What a custom-call or fusion runs, explained: ``title`` (e.g. "Pallas
    kernel compiled by Mosaic GPU"), ``summary`` one sentence, ``facts`` field
    by field, ``note`` an optional closing remark, ``paths`` the JSON paths of
    ``backend_config`` the facts cover (the generic notes on those are
    redundant)."""

    title: str
    summary: str
    facts: list[KernelFact]
    note: str = ""
    paths: frozenset[str] = frozenset()


def explain_kernel(ins: Instruction) -> KernelExplanation | None:
    """Explain the kernel ``ins`` runs when XLA or JAX documents its
    configuration: a Pallas Mosaic GPU call (``mosaic_gpu_v2``), a Pallas
    Triton call (``__gpu$xla.gpu.triton``), a cuDNN convolution
    (``cudnn_conv_backend_config``), a Triton GEMM fusion
    (``triton_gemm_config``) or a Triton block-level fusion
    (``block_level_fusion_config``). None for anything else. Pure; never
    raises on malformed configs (missing fields are left out)."""
    attr = ins.attribute("backend_config")
    if attr is None:
        return None
    explained = decode_backend_config(attr.value)
    target = custom_call_target(ins)
    if explained.mlir is not None:
        if target == "mosaic_gpu_v2" or (target or "").startswith("mosaic_gpu"):
            return _mosaic_gpu(ins, explained.mlir)
        if target == "__gpu$xla.gpu.triton":
            return _pallas_triton(explained.mlir)
        return None
    data = explained.data
    if not isinstance(data, dict):
        return None
    conv = data.get("cudnn_conv_backend_config")
    if isinstance(conv, dict):
        return _cudnn_conv(conv, target or "")
    fusion = data.get("fusion_backend_config")
    if isinstance(fusion, dict):
        gemm = fusion.get("triton_gemm_config")
        if isinstance(gemm, dict):
            return _triton_gemm(gemm)
        block = fusion.get("block_level_fusion_config")
        if isinstance(block, dict):
            return _block_level(block, str(fusion.get("kind", "")))
    return None


def _shown(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes):
        return f"<{len(value):,} bytes>"
    if isinstance(value, list):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    return str(value)


def _name_text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return _shown(value)


_MOSAIC_SYMBOL = re.compile(
    rb"(?<![A-Za-z0-9_/.\\-])([A-Za-z_][A-Za-z0-9_]*)_mosaic_gpu(?![A-Za-z0-9_.])")

#: Options of a ``mosaic_gpu_v2`` call besides the module and its hash
#: (jax/experimental/mosaic/gpu/core.py, _mosaic_gpu_lowering_rule).
_MOSAIC_OPTIONS = {
    "use_custom_barrier": "the kernel synchronizes with a custom cross-device barrier",
    "uses_xla_collective_metadata": "the kernel reads XLA's collective metadata "
                                    "(multi-device kernels)",
    "xla_replica_ids": "replica ids of a multi-device kernel",
}


def pallas_kernel_name(ins: Instruction) -> str:
    """The Python name of the function a ``pallas_call`` lowered, from the
    ``op_name`` metadata (``jit(f)/.../add_one/pallas_call`` -> ``add_one``:
    JAX names the scope after the kernel function); "" when unknown."""
    meta = ins.attribute("metadata")
    if meta is None:
        return ""
    op_name = decode_metadata(meta.value).get("op_name", "")
    parts = op_name.split("/")
    if len(parts) >= 2 and parts[-1].startswith("pallas_call"):
        return parts[-2]
    return ""


def _mosaic_gpu(ins: Instruction, cfg: dict) -> KernelExplanation:
    facts: list[KernelFact] = []
    name = pallas_kernel_name(ins)
    if name:
        facts.append(KernelFact("kernel", name, "the Python function given to "
                                "pallas_call (from the op_name metadata)", SRC_PALLAS_MOSAIC))
    module = cfg.get("module")
    if isinstance(module, bytes):
        symbols = []
        for match in _MOSAIC_SYMBOL.finditer(module):
            sym = match.group(0).decode("ascii")
            if match.group(1) != b"stable" and sym not in symbols:
                symbols.append(sym)
        if symbols:
            facts.append(KernelFact("symbol", ", ".join(symbols[:3]),
                                    "the kernel's function in the embedded module",
                                    SRC_MOSAIC_GPU))
        magic = "MLIR bytecode" if module.startswith(b"ML\xefR") else "MLIR module"
        facts.append(KernelFact("module", f"{len(module):,} bytes",
                                f"the kernel as {magic} (Mosaic GPU dialects, lowered to "
                                "PTX when XLA compiles the module)", SRC_MOSAIC_GPU))
    khash = cfg.get("kernel_hash")
    if isinstance(khash, bytes):
        check = ""
        if isinstance(module, bytes) and len(khash) == 32:
            check = (", matches the module" if hashlib.sha256(module).digest() == khash
                     else ", does not match the module")
        facts.append(KernelFact("kernel_hash", khash[:8].hex() + ("…" if len(khash) > 8
                                                                   else ""),
                                f"SHA-256 of the module bytecode ({len(khash)} bytes"
                                f"{check}): the kernel's identity in JAX's and XLA's "
                                "kernel caches", SRC_MOSAIC_GPU))
    for key, value in cfg.items():
        if key in ("module", "kernel_hash") or isinstance(value, dict):
            continue
        shown = _name_text(value) if isinstance(value, bytes) and len(value) < 200 \
            else _shown(value)
        facts.append(KernelFact(key, shown, _MOSAIC_OPTIONS.get(key, "a Mosaic GPU call "
                                                                     "option"),
                                SRC_MOSAIC_GPU))
    return KernelExplanation(
        "Pallas kernel compiled by Mosaic GPU",
        "a `pallas_call` lowered by JAX's Mosaic GPU backend; XLA runs the embedded "
        "module as one kernel (custom-call target `mosaic_gpu_v2`)", facts)


_TRITON_CALL_FIELDS = {
    "name": "the kernel's name (the function given to pallas_call)",
    "grid_x": "number of program instances (thread blocks) along x",
    "grid_y": "number of program instances along y",
    "grid_z": "number of program instances along z",
    "num_warps": "warps per program instance (32 threads each)",
    "num_stages": "software pipelining stages of the kernel's loops",
    "debug": "the kernel was lowered with debug output",
}


def _pallas_triton(cfg: dict) -> KernelExplanation:
    facts: list[KernelFact] = []
    for key, meaning in _TRITON_CALL_FIELDS.items():
        if key in cfg:
            value = _name_text(cfg[key]) if key == "name" else _shown(cfg[key])
            facts.append(KernelFact(key, value, meaning, SRC_PALLAS_TRITON))
    grid = [cfg.get(k) for k in ("grid_x", "grid_y", "grid_z")]
    if all(isinstance(g, int) for g in grid):
        facts.insert(1 if "name" in cfg else 0, KernelFact(
            "grid", " × ".join(str(g) for g in grid),
            f"{format_integer(grid[0] * grid[1] * grid[2])} program instances in all",
            SRC_PALLAS_TRITON))
    ir = cfg.get("ir")
    if isinstance(ir, bytes):
        facts.append(KernelFact("ir", f"{len(ir):,} bytes", "the kernel as Triton MLIR "
                                "bytecode, compiled by XLA's Triton pipeline",
                                SRC_PALLAS_TRITON))
    return KernelExplanation(
        "Pallas kernel compiled by Triton",
        "a `pallas_call` lowered by JAX's Triton backend; XLA compiles the embedded "
        "Triton module (custom-call target `__gpu$xla.gpu.triton`)", facts)


def _cudnn_conv(conv: dict, target: str) -> KernelExplanation:
    facts: list[KernelFact] = []
    prefix = "cudnn_conv_backend_config"
    paths = set()
    mode = conv.get("activation_mode")
    if isinstance(mode, str):
        facts.append(KernelFact("activation_mode", mode, "applied to the result: " +
                                ACTIVATION_MODES.get(mode, "unknown activation"), SRC_DNN))
        paths.add(f"{prefix}.activation_mode")
    if "conv_result_scale" in conv:
        facts.append(KernelFact("conv_result_scale", _shown(conv["conv_result_scale"]),
                                "the convolution result is multiplied by this",
                                SRC_BACKEND_CONFIGS))
    if "side_input_scale" in conv:
        scale = conv["side_input_scale"]
        added = "a side input is added" if scale not in (0, "0", 0.0) else \
            "0: no side input is added"
        facts.append(KernelFact("side_input_scale", _shown(scale),
                                f"result += side_input_scale * side input; {added}",
                                SRC_BACKEND_CONFIGS))
    if "leakyrelu_alpha" in conv:
        used = "" if mode == "kLeakyRelu" else " (unused: the activation is not kLeakyRelu)"
        facts.append(KernelFact("leakyrelu_alpha", _shown(conv["leakyrelu_alpha"]),
                                "slope of leaky ReLU below 0" + used, SRC_BACKEND_CONFIGS))
    algo = conv.get("algorithm")
    note = ""
    if isinstance(algo, dict):
        if "algo_id" in algo:
            facts.append(KernelFact("algorithm.algo_id", _shown(algo["algo_id"]),
                                    "the cuDNN algorithm (engine) picked", SRC_DNN))
        if "math_type" in algo:
            math = str(algo["math_type"])
            facts.append(KernelFact("algorithm.math_type", math,
                                    MATH_TYPES.get(math, "math mode"), SRC_DNN))
        if "is_cudnn_frontend" in algo:
            facts.append(KernelFact("algorithm.is_cudnn_frontend",
                                    _shown(algo["is_cudnn_frontend"]),
                                    "the algorithm is a cuDNN frontend (graph API) engine",
                                    SRC_DNN))
        if "workspace_size" in algo:
            size = algo["workspace_size"]
            if isinstance(size, dict):
                size = size.get("value", size)
            facts.append(KernelFact("algorithm.workspace_size", f"{_shown(size)} B",
                                    "scratch memory the algorithm needs", SRC_DNN))
        if "tuning_knobs" in algo:
            facts.append(KernelFact("algorithm.tuning_knobs",
                                    _shown(algo["tuning_knobs"]),
                                    "engine knob settings", SRC_DNN))
    else:
        note = ("no algorithm recorded: without autotuning (e.g. a deviceless dump) "
                "the convolution runs XLA's default choice")
    if "BiasActivation" in target:
        formula = ("result = activation(conv_result_scale * conv(input, filter) + "
                   "side_input_scale * side_input + bias) ")
    else:
        formula = "result = conv_result_scale * conv(input, filter) "
    return KernelExplanation(
        "cuDNN convolution", formula +
        f"({SRC_BACKEND_CONFIGS} CudnnConvBackendConfig)", facts, note, frozenset(paths))


_GEMM_FIELDS = {
    "block_m": "tile of the output along M (rows) computed by one thread block",
    "block_n": "tile of the output along N (columns) computed by one thread block",
    "block_k": "step along the contracting dimension K per loop iteration",
    "split_k": "the K dimension is split across this many blocks whose partial "
               "products are reduced afterwards (1: no split)",
    "num_stages": "software pipeline stages (loads in flight ahead of the math)",
    "num_warps": "warps per thread block (32 threads each)",
    "num_ctas": "thread blocks (CTAs) per cluster (Hopper and later)",
    "is_tma_allowed": "the Tensor Memory Accelerator may be used for loads",
    "is_warp_specialization_allowed": "warps may be specialized (producer/consumer)",
}


def _triton_gemm(gemm: dict) -> KernelExplanation:
    prefix = "fusion_backend_config.triton_gemm_config"
    facts = [KernelFact(f"triton_gemm_config.{key}", _shown(gemm[key]), meaning,
                        SRC_AUTOTUNING + " TritonGemmKey")
             for key, meaning in _GEMM_FIELDS.items() if key in gemm]
    paths = frozenset(f"{prefix}.{key}" for key in _GEMM_FIELDS if key in gemm)
    return KernelExplanation(
        "Triton GEMM", "a matmul emitted by XLA as a Triton kernel with these tile "
        f"sizes ({SRC_BACKEND_CONFIGS} FusionBackendConfig.triton_gemm_config)",
        facts, "", paths)


_BLOCK_FIELDS = {
    "output_tiles": "tile of each output computed by one program instance "
                    "(sizes per dimension)",
    "num_warps": "warps per thread block (32 threads each)",
    "num_ctas": "thread blocks (CTAs) per cluster",
    "num_stages": "software pipeline stages",
    "is_tma_allowed": "the Tensor Memory Accelerator may be used",
    "is_warp_specialization_allowed": "warps may be specialized (producer/consumer)",
    "waves_per_eu": "AMD only: occupancy hint (0: default)",
}


def _block_level(block: dict, kind: str) -> KernelExplanation:
    prefix = "fusion_backend_config.block_level_fusion_config"
    facts = []
    for key, meaning in _BLOCK_FIELDS.items():
        if key not in block:
            continue
        value = block[key]
        if key == "output_tiles" and isinstance(value, list):
            value = ", ".join("[" + ", ".join(str(s) for s in t.get("sizes", [])) + "]"
                              for t in value if isinstance(t, dict))
        if key == "output_tiles" and "gemm" in kind:
            meaning += "; for a GEMM: 1 for each batch (or split-K) dimension, then " \
                       "block_m × block_n; block_k is the `sizes` of the dot's own " \
                       "backend_config (xla/backends/gpu/transforms/" \
                       "convert_triton_gemm_config.cc)"
        facts.append(KernelFact(f"block_level_fusion_config.{key}", _shown(value),
                                meaning, SRC_BACKEND_CONFIGS + " BlockLevelFusionConfig"))
    paths = frozenset(f"{prefix}.{key}" for key in _BLOCK_FIELDS if key in block)
    what = "a Triton GEMM with nested operand fusions" if "gemm" in kind else \
        "a fusion emitted by XLA's Triton block-level emitter"
    return KernelExplanation("Triton block-level fusion", f"{what}, tiled as below",
                             facts, "", paths)
