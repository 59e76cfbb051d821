"""Common accelerators: peak throughput and memory bandwidth, for the roofline
estimate of a kernel (:func:`hlo_lsp.model.roofline.roofline`).

Each number comes from the vendor's datasheet or specification page named in
the accelerator's ``source``. Tensor-core figures are the dense ones: NVIDIA's
datasheets print them "with sparsity" (2:4 structured sparsity, marked with an
asterisk), twice the dense rate, so they are halved here. Memory bandwidths
agree with the ``memory_bandwidth`` of XLA's own GPU target configs
(hlo_lsp/dump/targets/*.txtpb: h100 3.35e12, a100 2.039e12, b200 8e12,
l4 3e11 bytes/s).

Precision keys of :attr:`Accelerator.peak` (FLOP/s): ``f64``, ``f32`` (vector
units: elementwise work, reductions, f32 matrix products at HIGHEST
precision), ``tf32`` (tensor cores on f32 matrix products at default
precision, what XLA:GPU uses on Ampere and later), ``bf16``, ``f16``, ``f8``,
``int8`` (tensor cores / matrix units). A precision a device has no figure for
falls back as :meth:`Accelerator.rate_key` says.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

T = 1e12


@dataclass(frozen=True, slots=True)
class Accelerator:
    """One device: ``name``, ``memory_bandwidth`` in bytes per second, ``peak``
    FLOP/s by precision (module docstring), and the ``source`` of the numbers
    (datasheet title and URL)."""

    key: str
    name: str
    memory_bandwidth: float
    peak: dict[str, float] = field(default_factory=dict)
    source: str = ""
    note: str = ""
    #: :meth:`flops_per_second` of each key of :data:`PRECISIONS`, worked out
    #: once when the device is made (the roofline of every kernel of a dump
    #: asks for two): FLOP/s by precision.
    rates: dict[str, float] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "rates", {p: self._flops_per_second(p) for p in PRECISIONS})

    def rate_key(self, precision: str) -> str:
        """The key of :attr:`peak` used for ``precision``: its own when the
        device has a figure for it; else ``tf32`` and ``f64`` fall back to
        ``f32``, ``f8`` and ``f16`` to ``bf16``, ``int8`` to ``bf16``, anything
        else to ``f32``, and then to the fastest figure the device has."""
        for key in _RATE_FALLBACKS.get(precision) or (precision, "f32"):
            if key in self.peak:
                return key
        return max(self.peak, key=self.peak.__getitem__) if self.peak else ""

    def flops_per_second(self, precision: str) -> float:
        """Peak FLOP/s for ``precision`` (through :meth:`rate_key`; kept in
        :attr:`rates` for the precisions of :data:`PRECISIONS`)."""
        rate = self.rates.get(precision)
        return rate if rate is not None else self._flops_per_second(precision)

    def _flops_per_second(self, precision: str) -> float:
        return self.peak.get(self.rate_key(precision), 1.0)


#: The precision keys of :attr:`Accelerator.peak` (module docstring).
PRECISIONS = ("f64", "f32", "tf32", "bf16", "f16", "f8", "int8")


#: precision -> the keys of :attr:`Accelerator.peak` tried in turn (then the
#: fastest figure); any other precision tries its own key, then ``f32``.
_RATE_FALLBACKS = {"tf32": ("tf32", "f32"), "f64": ("f64", "f32"),
                   "f8": ("f8", "bf16", "f16", "f32"), "f16": ("f16", "bf16", "f32"),
                   "int8": ("int8", "bf16", "f32")}


_NVIDIA_H100 = ("NVIDIA H100 Tensor Core GPU datasheet (H100 SXM and H100 PCIe columns), "
                "https://www.nvidia.com/en-us/data-center/h100/")

ACCELERATORS: dict[str, Accelerator] = {a.key: a for a in (
    Accelerator(
        "h100-sxm", "H100 SXM", 3.35 * T,
        {"f64": 34 * T, "f32": 67 * T, "tf32": 989 * T / 2, "bf16": 1979 * T / 2,
         "f16": 1979 * T / 2, "f8": 3958 * T / 2, "int8": 3958 * T / 2},
        _NVIDIA_H100),
    Accelerator(
        "h100-pcie", "H100 PCIe", 2.0 * T,
        {"f64": 26 * T, "f32": 51 * T, "tf32": 756 * T / 2, "bf16": 1513 * T / 2,
         "f16": 1513 * T / 2, "f8": 3026 * T / 2, "int8": 3026 * T / 2},
        _NVIDIA_H100),
    Accelerator(
        "a100-sxm-80gb", "A100 SXM 80GB", 2.039 * T,
        {"f64": 9.7 * T, "f32": 19.5 * T, "tf32": 312 * T / 2, "bf16": 624 * T / 2,
         "f16": 624 * T / 2, "int8": 1248 * T / 2},
        "NVIDIA A100 Tensor Core GPU datasheet (A100 80GB SXM column), "
        "https://www.nvidia.com/en-us/data-center/a100/",
        "no FP8 tensor cores: FP8 work runs at the BF16 rate"),
    Accelerator(
        "b200", "B200", 8.0 * T,
        {"f64": 37 * T, "f32": 75 * T, "tf32": 2.25e15 / 2, "bf16": 4.5e15 / 2,
         "f16": 4.5e15 / 2, "f8": 9e15 / 2, "int8": 9e15 / 2},
        "NVIDIA HGX B200 specifications (per GPU: the 8-GPU HGX B200 figures "
        "divided by 8), https://www.nvidia.com/en-us/data-center/hgx/"),
    Accelerator(
        "l4", "L4", 0.3 * T,
        {"f32": 30.3 * T, "tf32": 120 * T / 2, "bf16": 242 * T / 2, "f16": 242 * T / 2,
         "f8": 485 * T / 2, "int8": 485 * T / 2},
        "NVIDIA L4 Tensor Core GPU datasheet, https://www.nvidia.com/en-us/data-center/l4/"),
    Accelerator(
        "tpu-v5e", "TPU v5e", 819e9,
        {"bf16": 197 * T, "int8": 394 * T},
        "Google Cloud TPU v5e documentation (key chip specifications), "
        "https://cloud.google.com/tpu/docs/v5e",
        "Google publishes the bf16 and int8 matrix rates only: other work is "
        "estimated at the bf16 rate (optimistic for f32)"),
    Accelerator(
        "cpu", "CPU (AMD EPYC 9654)", 460.8e9,
        {"f32": 96 * 2.4e9 * 32, "f64": 96 * 2.4e9 * 16},
        "AMD EPYC 9654 product specifications (96 cores, 2.4 GHz base clock, 12 "
        "channels of DDR5-4800: 460.8 GB/s per socket), "
        "https://www.amd.com/en/products/processors/server/epyc/4th-generation-9004-and-8004-series/amd-epyc-9654.html",
        "peak derived from the datasheet as cores x base clock x 32 f32 FLOPs per "
        "cycle (two 256-bit FMA pipes per Zen 4 core); a stand-in for 'some "
        "server CPU socket': set the device to match yours"),
)}

#: Device when nothing else says: a CPU dump, or a dump that names no target.
DEFAULT = "cpu"

#: CUDA compute capability (major, minor) -> the device assumed for a dump
#: compiled for it (the file name says ``sm_9.0_gpu``, xla/service/dump.cc).
COMPUTE_CAPABILITIES = {(9, 0): "h100-sxm", (8, 0): "a100-sxm-80gb", (8, 9): "l4",
                        (10, 0): "b200"}

_SM = re.compile(r"sm_(\d+)\.(\d+)")
#: ``sm90``, ``sm_100a``: a compute capability written without its dot (names
#: users give their dumps).
_SM_UNDOTTED = re.compile(r"(?<![a-z0-9])sm_?(\d{1,2})(\d)a?(?![0-9])")


def accelerator(key: str | None) -> Accelerator | None:
    """The accelerator called ``key`` (a key of :data:`ACCELERATORS`, or its
    name, case and punctuation ignored); None when unknown."""
    if not key:
        return None
    if key in ACCELERATORS:
        return ACCELERATORS[key]
    want = re.sub(r"[^a-z0-9]", "", key.lower())
    for acc in ACCELERATORS.values():
        if want in (re.sub(r"[^a-z0-9]", "", acc.key), re.sub(r"[^a-z0-9]", "", acc.name.lower())):
            return acc
    return None


def accelerator_for_platform(platform: str) -> Accelerator | None:
    """The device a dump's platform (``sm_9.0_gpu``, ``sm_9.0a_gpu``, ``cpu``,
    from its file name) most likely ran on: an H100 SXM for compute capability
    9.0, an A100 for 8.0, an L4 for 8.9, a B200 for 10.0, the CPU default for
    ``cpu``; None when the platform says nothing known. Also reads a file
    name's ``sm90``/``sm_100a`` (a capability without its dot)."""
    if platform == "cpu" or platform.startswith("cpu"):
        return ACCELERATORS[DEFAULT]
    m = _SM.search(platform) or _SM_UNDOTTED.search(platform)
    if m:
        key = COMPUTE_CAPABILITIES.get((int(m.group(1)), int(m.group(2))))
        return ACCELERATORS.get(key) if key else None
    return None
