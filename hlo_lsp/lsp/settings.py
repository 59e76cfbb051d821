"""The server's settings, typed: one definition for parsing, defaults and docs.

Editors send settings as the ``initializationOptions`` of ``initialize`` and, for
``hlo.recompile``, as the answer to ``workspace/configuration``. Every accepted
spelling is normalised by :func:`normalise` first:

- nested: ``{"hlo": {"recompile": {"command": ...}}}``,
- top level: ``{"recompile": {...}, "xlaDiagnostics": false}``,
- flat, as VS Code names them: ``{"hlo.recompile.command": ...}``.

Settings come from the user's editor configuration: a value of the wrong type
never fails the server. It is logged and replaced by the default, and the other
settings still apply (:func:`structure`). JSON keys are the camelCase of the
Python field names. ``docs/protocol.md`` holds the tables that
:func:`markdown_table` renders from these classes (a test keeps them equal).
"""

from __future__ import annotations

import logging
import os
import typing
from typing import Any, TypeVar

import attrs
import cattrs

from hlo_lsp.dump.index import DEFAULT_MAX_FILES, DEFAULT_MAX_SCANNED, DEFAULT_SIZE_LIMIT
from hlo_lsp.dump.launchers import PRESETS, Launcher, launcher_from_options
from hlo_lsp.features.inlay_hints import CATEGORIES
from hlo_lsp.model.accelerators import ACCELERATORS

log = logging.getLogger("hlo_lsp")

T = TypeVar("T")

PLATFORMS = ("auto", "gpu", "cuda", "rocm", "cpu", "tpu")


def _doc(text: str, default_text: str | None = None) -> dict[str, str]:
    meta = {"doc": text}
    if default_text is not None:
        meta["default"] = default_text
    return meta


def _positive(_instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if value is not None and value <= 0:
        raise ValueError(f"{attribute.name} must be positive, not {value!r}")


def _one_of(*choices: str):
    def check(_instance: Any, attribute: attrs.Attribute, value: Any) -> None:
        if value is not None and value not in choices:
            raise ValueError(f"{attribute.name} must be one of {', '.join(choices)}")
    return check


def _default_workers() -> int:
    return 2 if (os.cpu_count() or 1) > 2 else 1


@attrs.frozen
class InlayHintSettings:
    """``inlayHints``: which inlay hint categories are shown."""

    operand_shapes: bool = attrs.field(default=True, metadata=_doc(
        "after an operand printed as a bare name, its definition's shape"))
    python_source: bool = attrs.field(default=True, metadata=_doc(
        "at the end of an instruction, the innermost Python frame of its metadata"))
    tuple_elements: bool = attrs.field(default=True, metadata=_doc(
        "after `index=N` of a `get-tuple-element` of a cuBLAS call, what element N is"))
    collectives: bool = attrs.field(default=True, metadata=_doc(
        "after the replica groups of a collective, devices, groups and bytes per device"))

    def categories(self) -> tuple[str, ...]:
        """The categories of :func:`hlo_lsp.features.inlay_hints.inlay_hints` that are on."""
        on = {"operandShape": self.operand_shapes, "source": self.python_source,
              "tupleElement": self.tuple_elements, "collective": self.collectives}
        return tuple(c for c in CATEGORIES if on.get(c, True))


@attrs.frozen
class LauncherSettings:
    """``hlo.recompile.launcher``: where the recompile runs the program (SLURM, ssh,
    a container); see docs/recompile.md, "Launchers"."""

    preset: str | None = attrs.field(default=None, validator=_one_of(*PRESETS), metadata=_doc(
        "`local`, `slurm`, `ssh`, `docker`, `podman` or `apptainer`", "`local` (no launcher)"))
    argv: str | list[str] | None = attrs.field(default=None, metadata=_doc(
        "the launcher as an argument list (or shell words) with the placeholders "
        "`{command}`, `{env}`, `{cwd}`, `{dump}`, `{jobname}`; wins over `preset`", "none"))
    args: tuple[str, ...] | None = attrs.field(default=None, metadata=_doc(
        "the preset's own arguments (srun options, `docker run` options...)",
        "`--gpus=1` (slurm), `--gpus=all` (docker), `--device=nvidia.com/gpu=all` (podman), "
        "`--nv` (apptainer)"))
    host: str | None = attrs.field(default=None, metadata=_doc(
        "ssh: the machine (`user@host` or a Host of ~/.ssh/config)", "none"))
    ssh_options: tuple[str, ...] = attrs.field(default=(), metadata=_doc(
        "ssh: options before the host (`-p`, `-i`, `-o Key=value`), also used to copy "
        "the dump back"))
    image: str | None = attrs.field(default=None, metadata=_doc(
        "docker, podman, apptainer: the image holding CUDA and JAX", "none"))
    shared: bool | None = attrs.field(default=None, metadata=_doc(
        "whether the program's machine sees this machine's files at the same paths; "
        "false: the dump is written in a remote temporary directory and copied back "
        "(ssh only)", "true, but false for `ssh`"))

    def launcher(self) -> Launcher | None:
        """The launcher these settings describe (None: run here).
        Raises :class:`hlo_lsp.dump.launchers.LauncherError`."""
        return launcher_from_options(self.preset, self.argv, args=self.args, host=self.host,
                                     ssh_options=self.ssh_options, image=self.image,
                                     shared=self.shared)


@attrs.frozen
class RecompileSettings:
    """``hlo.recompile``: how the recompile action runs a dump's JAX program."""

    command: str | list[str] | None = attrs.field(default=None, metadata=_doc(
        "program to run when the dump has no recipe file (shell words or an argument "
        "list); run without confirmation: it is the user's own setting", "none"))
    cwd: str | None = attrs.field(default=None, metadata=_doc(
        "working directory for `command`", "first workspace folder, else the dump directory"))
    platform: str | None = attrs.field(default=None, validator=_one_of(*PLATFORMS),
                                       metadata=_doc(
        "`auto`, `gpu`, `cuda`, `rocm`, `cpu` or `tpu`: where XLA compiles", "`auto`"))
    timeout: float | None = attrs.field(default=None, validator=_positive, metadata=_doc(
        "stop the program after this many seconds", "none"))
    target: str | None = attrs.field(default=None, metadata=_doc(
        "GPU to compile for without having it: `h100`, `a100`, `l4`, `b200` or the path "
        "of an XLA GpuTargetConfig text file; the program runs on the CPU and what it "
        "jits is also compiled for that GPU (needs `jax[cuda12]`; no autotuning). Used "
        "unless `platform` is set to a device", "the recipe's target, else none; the "
        "code action offers `h100`"))
    launcher: LauncherSettings = attrs.field(factory=LauncherSettings)

    def overridden_by(self, answer: Any) -> "RecompileSettings":
        """These settings with the non-empty values of a ``workspace/configuration``
        answer for section ``hlo.recompile`` (which wins over initialization options;
        a non-empty ``launcher`` object replaces the whole launcher)."""
        if not isinstance(answer, dict):
            return self
        given = {k: v for k, v in answer.items() if v not in (None, "", [])}
        launcher = given.pop("launcher", None)
        out = structure(RecompileSettings, given, base=self)
        if isinstance(launcher, dict) and any(v not in (None, "", []) for v in launcher.values()):
            # A launcher is one thing: the answer's replaces the initialization options'.
            out = attrs.evolve(out, launcher=structure(LauncherSettings, launcher))
        return out


@attrs.frozen
class WorkspaceSettings:
    """``hlo.workspace``: indexing the HLO files of the workspace folders."""

    index: bool = attrs.field(default=True, metadata=_doc("index the workspace folders at all"))
    max_files: int = attrs.field(default=DEFAULT_MAX_FILES, validator=_positive,
                                 metadata=_doc("stop discovering after this many HLO files"))
    max_file_size_mb: float = attrs.field(
        default=DEFAULT_SIZE_LIMIT / (1 << 20), validator=_positive, metadata=_doc(
            "larger files are summarised by a line scan (computation headers, fusion and "
            "custom-call lines) instead of a full parse"))
    workers: int = attrs.field(factory=_default_workers,
                               converter=lambda n: max(1, min(2, n)) if isinstance(n, int) else n,
                               metadata=_doc("index worker processes (1 or 2)",
                                             "2 with more than 2 CPUs, else 1"))
    exclude: tuple[str, ...] = attrs.field(default=(), metadata=_doc(
        "more directory names not to enter"))
    dump_directories_only: bool = attrs.field(default=True, metadata=_doc(
        "index only dump directories (folders holding a file named like an XLA dump, "
        "`module_0001.jit_f.before_optimizations.txt`); false: every HLO file"))
    max_scanned_files: int = attrs.field(default=DEFAULT_MAX_SCANNED, validator=_positive,
                                         metadata=_doc(
        "stop discovering after looking at this many files of any kind"))


@attrs.frozen
class Settings:
    """All settings of the server (the initialization options)."""

    xla_diagnostics: bool = attrs.field(default=True, metadata=_doc(
        "also check each document with XLA's own parser (needs jaxlib)"))
    source_root: str | list[str] | None = attrs.field(default=None, metadata=_doc(
        "directory (or list of directories) that relative Python paths in `metadata` "
        "are relative to, tried first; then the recipe's directories, the dump "
        "directory and its parents, each workspace folder and its parents, the "
        "server's working directory", "none"))
    device: str | None = attrs.field(default=None, validator=_one_of(*ACCELERATORS),
                                     metadata=_doc(
        "accelerator of the roofline estimate in a kernel's hover: "
        f"{', '.join(f'`{k}`' for k in ACCELERATORS)}; by default the one the dump's "
        "file name implies (`sm_9.0` -> `h100-sxm`), else `cpu`", "from the file name"))
    profile: str = attrs.field(default="", metadata=_doc(
        "directory of `jax.profiler` captures whose measured times hover and the code "
        "lens show: a dump directory, a folder holding `plugins/profile/<run>/`, or one "
        "run; its newest run is used. Empty: the newest run beside each dump (in its "
        "directory or its parent's)", "beside each dump"))
    inlay_hints: InlayHintSettings = attrs.field(factory=InlayHintSettings)
    recompile: RecompileSettings = attrs.field(factory=RecompileSettings)
    workspace: WorkspaceSettings = attrs.field(factory=WorkspaceSettings)


def camel(name: str) -> str:
    """``max_file_size_mb`` -> ``maxFileSizeMb``... except the spelled-out
    exceptions of :data:`_KEYS` (``maxFileSizeMB``)."""
    if name in _KEYS:
        return _KEYS[name]
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


_KEYS = {"max_file_size_mb": "maxFileSizeMB"}

_converter = cattrs.Converter()


def _strict(kind: type):
    """A structure hook that takes JSON values of ``kind`` as they are (an int
    for a float) and refuses every other type: no ``bool("no")``."""
    def hook(value: Any, _cls: Any) -> Any:
        if isinstance(value, bool) and kind is not bool:
            raise TypeError(f"expected {kind.__name__}, got a boolean")
        if isinstance(value, kind):
            return value
        if kind is float and isinstance(value, int):
            return float(value)
        raise TypeError(f"expected {kind.__name__}, got {type(value).__name__}")
    return hook


for _kind in (bool, int, float, str):
    _converter.register_structure_hook(_kind, _strict(_kind))


def _command(value: Any, _cls: Any) -> str | list[str] | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        return [_converter.structure(v, str) for v in value]
    raise TypeError(f"expected a string or a list of strings, got {type(value).__name__}")


_converter.register_structure_hook(str | list[str] | None, _command)


def normalise(options: Any) -> dict[str, Any]:
    """The initialization options as one nested dict: ``hlo.x.y`` flat keys and
    the ``hlo`` object merged into the top level (later spellings win:
    top level, then ``hlo``, then flat keys)."""
    if not isinstance(options, dict):
        return {}
    out: dict[str, Any] = {}
    _merge(out, {k: v for k, v in options.items() if not (isinstance(k, str) and "." in k)
                 and k != "hlo"})
    if isinstance(options.get("hlo"), dict):
        _merge(out, options["hlo"])
    for key, value in options.items():
        if isinstance(key, str) and key.startswith("hlo.") and key.count(".") >= 2:
            _, section, name = key.split(".", 2)
            _merge(out, {section: {name: value}})
    return out


def _merge(into: dict[str, Any], src: dict[str, Any]) -> None:
    """``src`` into ``into``, nested objects merged key by key (copies of ``src``'s)."""
    for key, value in src.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = dict(value) if isinstance(value, dict) else value


def structure(cls: type[T], data: Any, base: T | None = None) -> T:
    """``cls`` from the JSON object ``data``, field by field: a missing key keeps
    the value of ``base`` (or the default), a malformed value is logged and
    skipped. Never raises."""
    values: dict[str, Any] = {}
    data = data if isinstance(data, dict) else {}
    hints = typing.get_type_hints(cls)
    for field in attrs.fields(cls):
        key = camel(field.name)
        current = getattr(base, field.name) if base is not None else None
        if key not in data:
            if base is not None:
                values[field.name] = current
            continue
        raw = data[key]
        kind = hints[field.name]
        try:
            if attrs.has(kind):
                if not isinstance(raw, dict):
                    raise TypeError(f"expected an object, got {type(raw).__name__}")
                value = structure(kind, raw, current)
            else:
                value = _converter.structure(raw, kind)
            attrs.evolve(base if base is not None else cls(), **{field.name: value})
        except Exception as exc:  # noqa: BLE001 - a bad setting is reported, never fatal
            log.warning("setting %s ignored: %r is not valid (%s)", key, raw, exc)
            if base is not None:
                values[field.name] = current
            continue
        values[field.name] = value
    return cls(**values)


def parse_settings(options: Any) -> Settings:
    """:class:`Settings` from the ``initializationOptions`` (any of the spellings of
    :func:`normalise`); defaults for what is missing or malformed."""
    return structure(Settings, normalise(options))


def markdown_table(cls: type) -> str:
    """The settings of ``cls`` as the markdown table of docs/protocol.md."""
    rows = ["| key | type | default | meaning |", "|---|---|---|---|"]
    hints = typing.get_type_hints(cls)
    for field in attrs.fields(cls):
        if attrs.has(hints[field.name]):
            continue
        default = field.metadata.get("default")
        if default is None:
            value = field.default
            if isinstance(value, attrs.Factory):  # type: ignore[arg-type]
                value = value.factory()
            default = "`" + _json(value) + "`"
        rows.append(f"| `{camel(field.name)}` | {_type_name(hints[field.name])} | {default} | "
                    f"{field.metadata.get('doc', '')} |")
    return "\n".join(rows)


def _json(value: Any) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, tuple):
        return "[" + ", ".join(_json(v) for v in value) + "]"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _type_name(kind: Any) -> str:
    names = {bool: "bool", int: "int", float: "number", str: "string", type(None): "null"}
    if kind in names:
        return names[kind]
    args = typing.get_args(kind)
    origin = typing.get_origin(kind)
    if origin in (list, tuple):
        return f"{_type_name(args[0])}[]"
    if args:
        return " \\| ".join(_type_name(a) for a in args if a is not type(None))
    return str(kind)
