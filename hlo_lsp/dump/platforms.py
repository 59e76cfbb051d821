"""Which platform a program runs on: what this machine has (an NVIDIA GPU when
``nvidia-smi`` succeeds or ``/dev/nvidia0`` exists, an AMD one when
``rocm-smi`` succeeds or ``/dev/kfd`` exists, a TPU VM with ``/dev/accel0`` or
``/dev/vfio/0``), the platform chosen for a recompile, and its name for
people (``GPU``, ``CPU``, ``TPU``). ``JAX_PLATFORMS`` takes these names.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from typing import Sequence

from hlo_lsp.dump.recipe import GPU_PLATFORMS, PLATFORMS, PlatformError


_PLATFORM_LABEL = {"cuda": "GPU", "rocm": "GPU", "cpu": "CPU", "tpu": "TPU"}


def _runs(argv: Sequence[str], timeout: float = 10.0) -> bool:
    exe = shutil.which(argv[0])
    if exe is None:
        return False
    try:
        return subprocess.run([exe, *argv[1:]], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=timeout).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@functools.lru_cache(maxsize=None)
def accelerator_visible(platform: str) -> bool:
    """Whether this machine shows an accelerator for ``platform`` ("cuda", "rocm",
    "tpu"; "cpu" is always True). Cached for the life of the process; see the
    module docstring for the tests used."""
    if platform == "cpu":
        return True
    if platform == "cuda":
        return os.path.exists("/dev/nvidia0") or _runs(["nvidia-smi", "-L"])
    if platform == "rocm":
        return os.path.exists("/dev/kfd") or _runs(["rocm-smi"])
    if platform == "tpu":
        return os.path.exists("/dev/accel0") or os.path.exists("/dev/vfio/0")
    return False


def default_platform() -> str | None:
    """The GPU platform this machine has ("cuda" first, then "rocm"), else None."""
    for p in GPU_PLATFORMS:
        if accelerator_visible(p):
            return p
    return None


def platform_label(platform: str) -> str:
    """"GPU", "CPU" or "TPU"."""
    return _PLATFORM_LABEL.get(platform, platform.upper())


def _missing(platform: str) -> str:
    if platform == "cuda":
        return ("no NVIDIA GPU is visible on this machine (nvidia-smi is not on PATH or "
                "fails, and /dev/nvidia0 does not exist)")
    if platform == "rocm":
        return ("no AMD GPU is visible on this machine (rocm-smi is not on PATH or fails, "
                "and /dev/kfd does not exist)")
    return "no TPU is visible on this machine (/dev/accel0 and /dev/vfio/0 do not exist)"


def choose_platform(requested: str | None, recipe_platform: str | None = None,
                    allow_cpu_fallback: bool = True, hint: str = "") -> tuple[str, str]:
    """The platform to run on and a note for the user ("" when nothing to say).

    ``requested`` is "cuda", "rocm", "cpu", "tpu", "gpu" (whichever GPU is
    visible), or None/"auto". An explicit accelerator that this machine lacks
    raises PlatformError. With "auto": the recipe's platform when this machine
    has it, else a visible GPU, else "cpu" with a note when
    ``allow_cpu_fallback``, else PlatformError. ``hint`` (what the user can do,
    e.g. "Use --platform cpu.") ends PlatformError messages.
    """
    req = (requested or "auto").lower()
    if req == "gpu":
        req = default_platform() or "cuda"
    if req not in (*PLATFORMS, "auto"):
        raise PlatformError(f"unknown platform {requested!r}: use one of auto, gpu, "
                            f"{', '.join(PLATFORMS)}")
    if req != "auto":
        if not accelerator_visible(req):
            raise PlatformError(f"platform {req} was requested, but {_missing(req)}. "
                                f"{hint}".strip())
        return req, ""
    if recipe_platform in PLATFORMS and accelerator_visible(recipe_platform):
        return recipe_platform, ""
    gpu = default_platform()
    if gpu is not None:
        return gpu, ""
    why = ("the recipe was made on " + platform_label(recipe_platform or "")
           if recipe_platform and recipe_platform != "cpu" else "")
    if not allow_cpu_fallback:
        missing = _missing("cuda")
        raise PlatformError(f"{missing[0].upper()}{missing[1:]}. {hint}".strip())
    note = "no GPU is visible on this machine; compiling on the CPU"
    if why:
        note += f" although {why}"
    return "cpu", note


def launch_platform(requested: str | None, recipe_platform: str | None) -> str:
    """The JAX platform of a run through a launcher (SLURM, ssh, a container).
    This machine's devices say nothing about the other one, so nothing is
    probed: an explicit platform is used as is (``gpu`` means ``cuda``),
    ``auto``/None is ``recipe_platform`` when it is one of :data:`PLATFORMS`,
    else ``cuda``. Raises PlatformError for an unknown name."""
    req = (requested or "auto").lower()
    if req == "gpu":
        return "cuda"
    if req == "auto":
        return recipe_platform if recipe_platform in PLATFORMS else "cuda"
    if req not in PLATFORMS:
        raise PlatformError(f"unknown platform {requested!r}: use one of auto, gpu, "
                            f"{', '.join(PLATFORMS)}")
    return req
