"""Recipes: how an XLA dump directory was made, so that it can be made again.

A *recipe* is the command line of the JAX program, its working directory, the
few environment variables that decide what XLA does (``XLA_FLAGS``,
``JAX_PLATFORMS``, ``CUDA_VISIBLE_DEVICES``), the platform and the jax/jaxlib
versions, and the target GPU when it was compiled for one without it
(``target``: a built-in name such as ``h100`` or a GpuTargetConfig file, see
:mod:`hlo_lsp.dump.targets`). ``hlo-lsp dump`` writes one as ``hlo-lsp-recipe.json`` into the dump
directory (format in docs/protocol.md, "Recipe file"). For a dump made without
it, :func:`hlo_lsp.dump.inference.infer_recipe` *proposes* one from the Python
stack frames in the dump; a proposal is only ever run after the user confirmed it.

Here: the recipe's data and its file (read as untrusted input, written
atomically). The rest, by concern: ``XLA_FLAGS`` :mod:`hlo_lsp.dump.xla_flags`,
the platforms this machine has :mod:`hlo_lsp.dump.platforms`, the program and
its environment (the interpreter, the plan the user confirms, the version probe,
a new recipe) :mod:`hlo_lsp.dump.environment`, recipes proposed for a dump or
made from the settings :mod:`hlo_lsp.dump.inference`.

Facts used here (xla/service/dump.cc, xla/debug_options_flags.cc, JAX docs):

- ``--xla_dump_to=DIR`` makes XLA write every module it compiles into DIR;
  ``--xla_dump_hlo_as_text`` selects the text form. In ``XLA_FLAGS`` a flag
  given twice takes its last value, so the dump flags are replaced, not added.
- ``JAX_PLATFORMS`` (``cuda``, ``rocm``, ``cpu``, ``tpu``) restricts the
  backends JAX initialises.
- An NVIDIA GPU is visible when ``nvidia-smi`` is on PATH and succeeds, or
  ``/dev/nvidia0`` exists; an AMD one when ``rocm-smi`` succeeds or ``/dev/kfd``
  exists; a TPU VM has ``/dev/accel0`` or ``/dev/vfio/0``.

Everything here is synchronous and cheap; the jax/jaxlib version probe
(:data:`hlo_lsp.dump.environment.PROBE_CODE`, run by
:func:`hlo_lsp.dump.processes.probe_versions_async`) starts the program's Python
interpreter once.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import pathlib
import re
import shlex
from dataclasses import dataclass, field

from hlo_lsp.dump.launchers import Launcher, LauncherError
from hlo_lsp.dump.untrusted import UntrustedFileError, read_text

RECIPE_FILE = "hlo-lsp-recipe.json"
FORMAT = "hlo-lsp-recipe/1"
PLATFORMS = ("cuda", "rocm", "cpu", "tpu")
GPU_PLATFORMS = ("cuda", "rocm")
RECORDED_ENV = ("XLA_FLAGS", "JAX_PLATFORMS", "CUDA_VISIBLE_DEVICES")
#: Also recorded: every ``JAX_*`` variable (JAX's configuration from the
#: environment: ``JAX_ENABLE_X64``, ``JAX_DEFAULT_MATMUL_PRECISION``,
#: ``JAX_NUM_CPU_DEVICES``...; jax/_src/config.py reads ``JAX_<OPTION>``).
RECORDED_PREFIX = "JAX_"
#: XLA's flag making the CPU client expose N devices (xla/debug_options_flags.cc,
#: read by the host platform; used on other platforms' runs harmlessly).
HOST_DEVICE_COUNT_FLAG = "--xla_force_host_platform_device_count"
PROBE_TIMEOUT_S = 120.0
#: The largest recipe file read (bytes); ``hlo-lsp dump`` writes well under 4 KiB.
MAX_RECIPE_BYTES = 1 << 20
#: The deepest nesting of arrays and objects read in a recipe (``hlo-lsp dump``
#: writes 2 levels).
MAX_JSON_DEPTH = 32
#: The most calls a recipe may ask the profiling hook to trace
#: (``hlo-lsp dump --profile N``; :mod:`hlo_lsp.dump.capture`): a trace grows with
#: every call, and a recipe is untrusted input.
MAX_PROFILE_CALLS = 10000
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class RecipeError(Exception):
    """A problem the user can fix (bad recipe file, nothing to infer...). ``str()``
    is a complete sentence meant to be shown as is, without a traceback."""


class PlatformError(RecipeError):
    """The requested platform is not available on this machine."""


@dataclass
class Recipe:
    """How to re-run the JAX program that wrote a dump.

    ``command`` is an argv list run in ``cwd`` (absolute). ``env`` holds only the
    variables of :data:`RECORDED_ENV` and the ``JAX_*`` ones that were set
    (:func:`hlo_lsp.dump.environment.recorded_env`), as the program saw them
    (``XLA_FLAGS`` includes ``--xla_dump_to=<the dump dir>``). ``platform`` is one
    of :data:`PLATFORMS`. ``created`` is an ISO-8601 UTC time, ``host`` the
    machine's host name. ``target`` is None for a run on ``platform``'s device,
    else the target GPU compiled for without it (a built-in name of
    :func:`hlo_lsp.dump.targets.builtin_targets` or a GpuTargetConfig path;
    ``platform`` is then "cpu", where the program itself ran). ``origin``
    ("recipe", "setting", "inferred" or "cli") and ``note`` (why an inferred
    recipe was proposed) are not saved. ``launcher``: how the program is run
    elsewhere (:class:`hlo_lsp.dump.launchers.Launcher`: SLURM, ssh, a
    container), recorded by ``hlo-lsp dump --launcher``; None to run it here.
    ``profile``: the calls of jitted functions traced with ``jax.profiler``
    after each function's first (``hlo-lsp dump --profile N``,
    :mod:`hlo_lsp.dump.capture`; 1 to :data:`MAX_PROFILE_CALLS`), None when the
    run is not profiled; with ``target`` the profile is of the program's run on
    the CPU, not of the target.
    """

    command: list[str]
    cwd: str
    env: dict[str, str] = field(default_factory=dict)
    platform: str = "cpu"
    jax_version: str | None = None
    jaxlib_version: str | None = None
    python: str | None = None
    created: str = ""
    host: str = ""
    origin: str = "recipe"
    note: str = ""
    target: str | None = None
    launcher: Launcher | None = None
    profile: int | None = None

    def to_json(self) -> dict:
        """The JSON object stored in ``hlo-lsp-recipe.json`` (``launcher`` and
        ``profile`` only when there is one)."""
        out = {"format": FORMAT, "command": list(self.command), "cwd": self.cwd,
               "env": dict(self.env), "platform": self.platform,
               "jax_version": self.jax_version, "jaxlib_version": self.jaxlib_version,
               "python": self.python, "created": self.created, "host": self.host,
               "target": self.target}
        if self.launcher is not None:
            out["launcher"] = self.launcher.to_json()
        if self.profile:
            out["profile"] = self.profile
        return out

    @classmethod
    def from_json(cls, data: object, origin: str = "recipe") -> "Recipe":
        """Decode :meth:`to_json` output. Raises RecipeError when a field has the
        wrong type: ``command`` (non-empty list of strings), ``cwd`` (non-empty
        string), ``env`` (object of strings named like environment variables),
        ``platform`` (one of :data:`PLATFORMS`), the optional strings,
        ``launcher`` (:meth:`hlo_lsp.dump.launchers.Launcher.from_json`),
        ``profile`` (an integer from 1 to :data:`MAX_PROFILE_CALLS`, or null); or when a
        string that becomes part of a command line holds a NUL character."""
        if not isinstance(data, dict):
            raise RecipeError("the recipe is not a JSON object")
        command = data.get("command")
        if (not isinstance(command, list) or not command
                or not all(isinstance(a, str) for a in command)):
            raise RecipeError("the recipe has no 'command' (a list of strings)")
        cwd = data.get("cwd")
        if not isinstance(cwd, str) or not cwd:
            raise RecipeError("the recipe has no 'cwd'")
        env = data.get("env") or {}
        if not isinstance(env, dict) or not all(
                isinstance(v, str) and _ENV_NAME.match(k) for k, v in env.items()):
            raise RecipeError("the recipe's 'env' is not an object of strings named like "
                              "environment variables")
        platform = data.get("platform") or "cpu"
        if not isinstance(platform, str) or platform not in PLATFORMS:
            raise RecipeError(f"the recipe's platform {platform!r} is not one of "
                              f"{', '.join(PLATFORMS)}")
        for name in ("jax_version", "jaxlib_version", "python", "created", "host", "target"):
            if data.get(name) is not None and not isinstance(data[name], str):
                raise RecipeError(f"the recipe's {name!r} is not a string")
        if any("\0" in a for a in (*command, cwd, *env.values(), data.get("python") or "",
                                    data.get("target") or "")):
            raise RecipeError("the recipe holds a NUL character")

        profile = data.get("profile")
        if profile is not None and (not isinstance(profile, int) or isinstance(profile, bool)
                                    or not 1 <= profile <= MAX_PROFILE_CALLS):
            raise RecipeError(f"the recipe's 'profile' is not a number of calls from 1 to "
                              f"{MAX_PROFILE_CALLS}")
        launcher = None
        if data.get("launcher") is not None:
            try:
                launcher = Launcher.from_json(data["launcher"])
            except LauncherError as exc:
                raise RecipeError(str(exc)) from None

        def opt(name: str) -> str | None:
            return data.get(name) or None

        return cls(list(command), cwd, dict(env), platform,
                   opt("jax_version"), opt("jaxlib_version"), opt("python"),
                   opt("created") or "", opt("host") or "", origin, target=opt("target"),
                   launcher=launcher, profile=profile)

    def display_command(self) -> str:
        """The command as a shell would print it."""
        return shlex.join(self.command)


# ------------------------------------------------------------------ files ---

def recipe_path(dump_dir: str | os.PathLike) -> pathlib.Path:
    """``<dump_dir>/hlo-lsp-recipe.json``."""
    return pathlib.Path(dump_dir) / RECIPE_FILE


def load_recipe(dump_dir: str | os.PathLike) -> Recipe | None:
    """The recipe stored in ``dump_dir``, or None when there is none.

    The file is untrusted input (anyone who ships a dump directory writes it):
    it is read only when it is a regular file (a FIFO, a device or a symlink to
    one is refused without being read) of at most :data:`MAX_RECIPE_BYTES`,
    UTF-8, JSON nested at most :data:`MAX_JSON_DEPTH` deep, with the field types
    of :meth:`Recipe.from_json`. A relative ``cwd`` or ``python`` is relative to
    ``dump_dir`` (never to the server's working directory); the result's are
    absolute. Raises RecipeError (``str()``: one sentence naming the file) for
    every file that exists but cannot be used, never another exception.
    Synchronous and blocking (it reads the disk): call it off the event loop."""
    path = recipe_path(dump_dir)
    try:
        text = read_text(path, MAX_RECIPE_BYTES, errors="strict")
    except UntrustedFileError as exc:
        if exc.missing:
            return None
        if exc.errno is not None:
            raise RecipeError(f"cannot read {path}: {exc.reason}") from None
        raise RecipeError(f"{path} is {exc.reason}") from None
    if json_depth(text, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        raise RecipeError(f"{path} is nested more than {MAX_JSON_DEPTH} levels deep")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise RecipeError(f"{path} is not valid JSON: {exc}") from None
    try:
        recipe = Recipe.from_json(data)
    except RecipeError as exc:
        raise RecipeError(f"{path}: {exc}") from None
    base = os.path.abspath(dump_dir)
    recipe.cwd = os.path.normpath(os.path.join(base, recipe.cwd))
    if recipe.python:
        recipe.python = os.path.normpath(os.path.join(base, recipe.python))
    return recipe


#: A JSON string (an unterminated one runs to the end) or a bracket. Possessive
#: quantifiers: no backtracking, each character is looked at once.
_JSON_TOKEN = re.compile(r'"(?:[^"\\]++|\\.)*+"?|[\[\]{}]', re.S)


def json_depth(text: str, limit: int | None = None) -> int:
    """How deeply the JSON ``text`` nests arrays and objects (0 for a scalar;
    brackets inside strings do not count); it stops at the first level deeper
    than ``limit`` and returns ``limit + 1``. Linear in ``len(text)``, no
    recursion: checked before :func:`json.loads`, whose recursion a deep
    document exhausts."""
    depth = deepest = 0
    for m in _JSON_TOKEN.finditer(text):
        token = m.group()
        if token in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if limit is not None and deepest > limit:
                break
        elif token in "]}":
            depth -= 1
    return deepest


def save_recipe(recipe: Recipe, dump_dir: str | os.PathLike) -> pathlib.Path:
    """Write ``recipe`` to ``<dump_dir>/hlo-lsp-recipe.json`` atomically (temp file
    + rename); returns the path. OSError propagates."""
    path = recipe_path(dump_dir)
    tmp = path.with_name(f".{RECIPE_FILE}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(recipe.to_json(), indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def now_iso() -> str:
    """The current UTC time, ISO 8601 with seconds (``2025-01-31T12:00:00Z``)."""
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
