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
"""

from __future__ import annotations

from dataclasses import dataclass

from hlo_lsp.model.backend_config import decode_backend_config
from hlo_lsp.model.hlo import Computation, Instruction, unquote

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


def short_shape(text: str) -> str:
    """A shape without its layouts: ``f32[32,64]{1,0}`` -> ``f32[32,64]``; tuples
    keep their structure: ``(f32[2]{0}, s8[4]{0})`` -> ``(f32[2], s8[4])``."""
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
