"""Target GPUs for compiling without a GPU, and what a deviceless dump says about itself.

A *target* is an XLA ``GpuTargetConfig`` text proto (xla/service/gpu/gpu_target_config.proto
... ``stream_executor::GpuTargetConfigProto``: ``gpu_device_info`` with the compute
capability, SM count, shared memory, L2, bandwidth; ``platform_name``;
``dnn_version_info``; ``runtime_version``; ``device_description_str``). Given one,
JAX compiles for that GPU on a machine without it (see :mod:`hlo_lsp.dump.deviceless`,
the runner, which is the only module that imports jax).

Built-in targets are package data in ``hlo_lsp/dump/targets/<name>.txtpb``, each
with its source in its header comment: ``h100`` (openxla/xla#25919), ``a100``,
``l4``, ``b200`` (NVIDIA whitepapers and datasheets). A user's own config — written
on the real machine by
``jax.lib.xla_client.get_topology_for_devices(jax.devices()).target_config`` — is
given as a path and reproduces that machine exactly.

A dump made this way holds ``hlo-lsp-deviceless.json`` (written by the runner;
:func:`read_deviceless`): the target, jax/jaxlib versions, XLA flags, modules. Its
kernels were chosen by XLA's heuristics, since autotuning needs the device
(``--xla_gpu_autotune_level=0``): :data:`NO_AUTOTUNING` is what the product says.

Nothing here imports jax; reading a config or a record never raises on bad
content (dump directories are untrusted input): :class:`TargetError` names the
problem for a config the user gave, and a bad record reads as None.
"""

from __future__ import annotations

import functools
import json
import os
import pathlib
import re
from dataclasses import dataclass, field

from hlo_lsp.dump.untrusted import UntrustedFileError, read_text

TARGETS_DIR = pathlib.Path(__file__).with_name("targets")
RUNNER = pathlib.Path(__file__).with_name("deviceless.py")
RECORD_FILE = "hlo-lsp-deviceless.json"  # the runner's deviceless.RECORD_FILE
RECORD_FORMAT = "hlo-lsp-deviceless/1"
MAX_CONFIG_BYTES = 1024 * 1024
MAX_RECORD_BYTES = 4 * 1024 * 1024
NO_AUTOTUNING = "chosen without autotuning (no device)"
ALIASES = {"h100_sxm": "h100", "h100-sxm": "h100", "a100_sxm": "a100", "a100-sxm": "a100"}


class TargetError(Exception):
    """A target that cannot be used; ``str()`` is a sentence for the user."""


@dataclass(frozen=True)
class Target:
    """A target GPU: ``name`` (built-in name, or the file's stem), ``path`` (the
    config file, absolute), ``description`` (``device_description_str``),
    ``compute_capability`` ((major, minor) of ``cuda_compute_capability``),
    ``core_count`` (SMs), ``source`` (the header comment lines, which cite where
    the numbers come from) and ``builtin``."""

    name: str
    path: str
    description: str
    compute_capability: tuple[int, int]
    core_count: int
    source: str = ""
    builtin: bool = False

    @property
    def label(self) -> str:
        """What the product calls it, e.g. ``H100 (NVIDIA H100 80GB HBM3, sm_9.0)``."""
        major, minor = self.compute_capability
        what = self.description or "GPU"
        return f"{self.name.upper() if self.builtin else self.name} ({what}, sm_{major}.{minor})"


def _field(text: str, name: str) -> str | None:
    m = re.search(rf"(?:^|[\s{{]){name}\s*:\s*(\"(?:[^\"\\]|\\.)*\"|[^\s}}]+)", text)
    if not m:
        return None
    value = m.group(1)
    return value[1:-1] if value.startswith('"') else value


def _block(text: str, name: str) -> str:
    m = re.search(rf"\b{name}\s*\{{([^{{}}]*)\}}", text)
    return m.group(1) if m else ""


def parse_config(text: str, path: str = "", name: str = "", builtin: bool = False) -> Target:
    """A :class:`Target` from the text of a ``GpuTargetConfig`` proto.

    Only what the product shows is read (``gpu_device_info``'s
    ``cuda_compute_capability`` and ``core_count``, ``platform_name``,
    ``device_description_str``); XLA reads the rest. Raises :class:`TargetError`
    when it is not a CUDA GPU target config (no ``gpu_device_info`` block with a
    ``cuda_compute_capability``, or ``platform_name`` other than CUDA)."""
    body = re.sub(r"(?m)#.*$", "", text)
    if "gpu_device_info" not in body:
        raise TargetError(f"{path or 'the target config'} is not an XLA GpuTargetConfig "
                          "(no gpu_device_info)")
    platform = _field(body, "platform_name")
    if platform is not None and platform.upper() != "CUDA":
        raise TargetError(f"{path or 'the target config'} is for platform {platform!r}; "
                          "only CUDA targets can be compiled for without the GPU")
    cc = _block(body, "cuda_compute_capability")
    if not cc and "cuda_compute_capability" not in body:
        raise TargetError(f"{path or 'the target config'} has no cuda_compute_capability")

    def num(src: str, key: str) -> int:
        v = _field(src, key)
        return int(v) if v and v.isdigit() else 0

    source = "\n".join(line.lstrip("# ").rstrip() for line in text.splitlines()
                       if line.startswith("#")).strip()
    return Target(name or pathlib.Path(path).stem, os.path.abspath(path) if path else "",
                  _field(body, "device_description_str") or "",
                  (num(cc, "major"), num(cc, "minor")), num(body, "core_count"),
                  source, builtin)


def builtin_targets() -> dict[str, pathlib.Path]:
    """Built-in target name -> its config file (``hlo_lsp/dump/targets/*.txtpb``)."""
    return {p.stem: p for p in sorted(TARGETS_DIR.glob("*.txtpb"))}


@functools.lru_cache(maxsize=32)
def _load(path: str, mtime: float, name: str, builtin: bool) -> Target:
    try:
        text = read_text(path, MAX_CONFIG_BYTES)
    except UntrustedFileError as exc:
        if exc.too_large:
            raise TargetError(f"{path} is larger than {MAX_CONFIG_BYTES} bytes: not a "
                              "GpuTargetConfig") from None
        raise TargetError(f"cannot read the target config {path}: {exc.reason}") from None
    return parse_config(text, path, name, builtin)


def resolve_target(spec: str, cwd: str | None = None) -> Target:
    """The target named by ``spec``: a built-in name (case-insensitive: ``h100``,
    ``a100``, ``l4``, ``b200``; ``h100_sxm`` is ``h100``) or a path to a
    ``GpuTargetConfig`` text file (relative to ``cwd``; ``~`` expanded). Raises
    :class:`TargetError` for an unknown name or an unusable file."""
    spec = (spec or "").strip()
    if not spec:
        raise TargetError("no target given")
    key = ALIASES.get(spec.lower(), spec.lower())
    builtins = builtin_targets()
    if key in builtins and os.sep not in spec:
        path = str(builtins[key])
        return _load(path, os.path.getmtime(path), key, True)
    path = os.path.abspath(os.path.join(cwd or os.getcwd(), os.path.expanduser(spec)))
    if not os.path.isfile(path):
        raise TargetError(f"unknown target {spec!r}: use one of {', '.join(builtins)} or "
                          "the path of a GpuTargetConfig text file (write yours on the GPU "
                          "machine with jax.lib.xla_client.get_topology_for_devices("
                          "jax.devices()).target_config)")
    return _load(path, os.path.getmtime(path), "", False)


# ------------------------------------------------------------------ record ---

@dataclass
class DevicelessRecord:
    """What ``hlo-lsp-deviceless.json`` says: the ``target`` name, its config file,
    ``jax_version``/``jaxlib_version``, the ``xla_flags`` the target compiles saw
    (dump flags removed), ``autotuning`` (always False), the modules ``compiled``
    (name, device count) and ``failed`` (name, error)."""

    target: str
    target_config: str = ""
    jax_version: str = ""
    jaxlib_version: str = ""
    xla_flags: str = ""
    autotuning: bool = False
    compiled: list[dict] = field(default_factory=list)
    failed: list[dict] = field(default_factory=list)

    def statement(self) -> str:
        """One sentence for hover, summary and report, e.g. ``Compiled for H100
        without a GPU (jax 0.10.2): kernels chosen without autotuning (no device).``"""
        versions = f" (jax {self.jax_version})" if self.jax_version else ""
        return (f"Compiled for {self.target.upper()} without a GPU{versions}: kernels "
                f"{NO_AUTOTUNING}.")


def read_deviceless(dump_dir: str | os.PathLike) -> DevicelessRecord | None:
    """The record of a dump directory made without a GPU, or None (no record, or
    one that is not a valid ``hlo-lsp-deviceless/1`` JSON object)."""
    path = os.path.join(dump_dir, RECORD_FILE)
    try:
        data = json.loads(read_text(path, MAX_RECORD_BYTES))
    except (OSError, ValueError):  # OSError: UntrustedFileError
        return None
    if not isinstance(data, dict) or data.get("format") != RECORD_FORMAT:
        return None

    def text(k: str) -> str:
        v = data.get(k)
        return v if isinstance(v, str) else ""

    def rows(k: str) -> list[dict]:
        v = data.get(k)
        return [r for r in v if isinstance(r, dict)] if isinstance(v, list) else []

    return DevicelessRecord(text("target") or "the target GPU", text("target_config"),
                            text("jax_version"), text("jaxlib_version"), text("xla_flags"),
                            bool(data.get("autotuning", False)), rows("compiled"),
                            rows("failed"))


def deviceless_statement(dump_file: str | os.PathLike) -> str | None:
    """:meth:`DevicelessRecord.statement` for the dump directory holding
    ``dump_file`` (a file of it), None when that dump was made on a device."""
    record = read_deviceless(os.path.dirname(os.path.abspath(dump_file)))
    return record.statement() if record is not None else None
