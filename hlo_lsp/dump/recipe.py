"""Recipes: how an XLA dump directory was made, so that it can be made again.

A *recipe* is the command line of the JAX program, its working directory, the
few environment variables that decide what XLA does (``XLA_FLAGS``,
``JAX_PLATFORMS``, ``CUDA_VISIBLE_DEVICES``), the platform and the jax/jaxlib
versions, and the target GPU when it was compiled for one without it
(``target``: a built-in name such as ``h100`` or a GpuTargetConfig file, see
:mod:`hlo_lsp.dump.targets`). ``hlo-lsp dump`` writes one as ``hlo-lsp-recipe.json`` into the dump
directory (format in docs/protocol.md, "Recipe file"). For a dump made without
it, :func:`infer_recipe` *proposes* one from the Python stack frames in the
dump; a proposal is only ever run after the user confirmed it.

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
(:data:`PROBE_CODE`, run by :func:`hlo_lsp.dump.recompile.probe_versions_async`)
starts the program's Python interpreter once.
"""

from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import json
import os
import pathlib
import re
import shlex
import shutil
import socket
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from hlo_lsp.dump.launchers import Launcher, LauncherError
from hlo_lsp.dump.targets import RUNNER
from hlo_lsp.dump.untrusted import UntrustedFileError, read_text
from hlo_lsp.model.collectives import replica_and_partition_count
from hlo_lsp.model.frames import python_stack

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
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

_PLATFORM_LABEL = {"cuda": "GPU", "rocm": "GPU", "cpu": "CPU", "tpu": "TPU"}


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
    (:func:`recorded_env`), as the program saw them
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

    def to_json(self) -> dict:
        """The JSON object stored in ``hlo-lsp-recipe.json`` (``launcher`` only
        when there is one)."""
        out = {"format": FORMAT, "command": list(self.command), "cwd": self.cwd,
               "env": dict(self.env), "platform": self.platform,
               "jax_version": self.jax_version, "jaxlib_version": self.jaxlib_version,
               "python": self.python, "created": self.created, "host": self.host,
               "target": self.target}
        if self.launcher is not None:
            out["launcher"] = self.launcher.to_json()
        return out

    @classmethod
    def from_json(cls, data: object, origin: str = "recipe") -> "Recipe":
        """Decode :meth:`to_json` output. Raises RecipeError when a field has the
        wrong type: ``command`` (non-empty list of strings), ``cwd`` (non-empty
        string), ``env`` (object of strings named like environment variables),
        ``platform`` (one of :data:`PLATFORMS`), the optional strings,
        ``launcher`` (:meth:`hlo_lsp.dump.launchers.Launcher.from_json`); or when a
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
                   launcher=launcher)

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


# ------------------------------------------------------------------ flags ---

#: A word of XLA_FLAGS as XLA reads it (xla/parse_flags_from_env.cc): characters up
#: to white space, where a double-quoted part ("...", no escapes) may hold any but '"'.
_XLA_WORD = re.compile(r'(?:[^\s"]|"[^"]*"?)+')


def xla_flag_words(xla_flags: str | None) -> list[str]:
    """The flags of ``xla_flags`` as XLA splits them: at white space outside
    double quotes (single quotes, ``#``, ``$`` and backslashes are ordinary
    characters there, unlike in a shell), quotes kept as written."""
    return _XLA_WORD.findall(xla_flags or "")


def strip_dump_flags(xla_flags: str | None) -> str:
    """``xla_flags`` without ``--xla_dump_to`` and ``--xla_dump_hlo_as_text`` (the
    flags hlo-lsp sets itself); other flags keep their order and spelling
    (quoted values stay quoted)."""
    tokens = xla_flag_words(xla_flags)
    return " ".join(t for t in tokens
                    if not re.match(r"^--xla_dump_to(=|$)", t)
                    and not re.match(r"^--xla_dump_hlo_as_text(=|$)", t))


def set_dump_flags(xla_flags: str | None, dump_dir: str) -> str:
    """``xla_flags`` (the user's ``XLA_FLAGS``) with any ``--xla_dump_to`` replaced
    by ``--xla_dump_to=dump_dir`` and ``--xla_dump_hlo_as_text`` ensured.

    Other flags keep their order and spelling (quoted values stay quoted). A path
    with spaces is double-quoted, which XLA's flag parser accepts.
    """
    kept = strip_dump_flags(xla_flags)
    where = f'"{dump_dir}"' if re.search(r"\s", dump_dir) else dump_dir
    return " ".join(([kept] if kept else []) + [f"--xla_dump_to={where}",
                                                "--xla_dump_hlo_as_text"])


# -------------------------------------------------------------- platforms ---

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


# ----------------------------------------------------------- the program ---

_PYTHON = re.compile(r"^(?:python|pypy)(?:\d+(?:\.\d+)*)?(?:\.exe)?$")


def _interpreter_index(argv: Sequence[str]) -> int:
    """Where the program's own command starts in ``argv``: after ``env`` and its
    ``NAME=value`` words (0 without ``env``)."""
    i = 0
    if argv and os.path.basename(argv[0]) == "env":
        i = 1
        while i < len(argv) and "=" in argv[i] and not argv[i].startswith("-"):
            i += 1
    return i


def find_program(name: str, cwd: str, path_var: str | None) -> str | None:
    """The absolute path of the executable file the OS runs for ``name`` when
    started in the directory ``cwd`` with ``PATH=path_var`` (``os.defpath`` when
    None), None when there is none. As ``execvp`` after ``chdir(cwd)``: a name
    with a ``/`` is relative to ``cwd``; a bare name is looked for in each PATH
    entry in order, and a relative entry (``.``, an empty entry) is relative to
    ``cwd``, not to the server's working directory."""
    if os.sep in name:
        candidates = [os.path.join(cwd, name)]
    else:
        entries = (path_var if path_var is not None else os.defpath).split(os.pathsep)
        candidates = [os.path.join(cwd, entry or ".", name) for entry in entries]
    for candidate in candidates:
        candidate = os.path.normpath(candidate)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def python_interpreter(command: Sequence[str], cwd: str,
                       env: Mapping[str, str] | None = None) -> str | None:
    """The absolute path of the Python interpreter ``command`` starts with
    (``python3 train.py``, ``/venv/bin/python -m pkg``, ``env A=1 python x.py``),
    or None when it does not start with one or it cannot be found
    (:func:`find_program` with ``env``'s PATH, default this process's)."""
    args = list(command)[_interpreter_index(command):]
    if not args or not _PYTHON.match(os.path.basename(args[0])):
        return None
    return find_program(args[0], cwd, (env if env is not None else os.environ).get("PATH"))


def resolved_command(recipe: Recipe, env: Mapping[str, str] | None = None) -> list[str]:
    """The argv that runs for ``recipe`` in ``recipe.cwd`` with the environment
    ``env`` (default: this process's): ``recipe.command`` with

    - a bare interpreter name (``python``, ``python3``, also after ``env A=1``)
      replaced by the recorded ``recipe.python`` when that is an executable file
      (relative to ``recipe.cwd``): the program runs with the interpreter it ran
      with when the dump was made, whatever PATH the server was started with;
    - the program (``argv[0]``, and the command after ``env NAME=value...``) as
      the absolute path :func:`find_program` finds, so that what is shown is the
      file that runs (left as written when none is found: starting it fails).
    """
    argv = list(recipe.command)
    path_var = (env if env is not None else os.environ).get("PATH")
    i = _interpreter_index(argv)
    if recipe.python and i < len(argv) and os.sep not in argv[i] and _PYTHON.match(argv[i]):
        python = os.path.normpath(os.path.join(recipe.cwd, recipe.python))
        if os.path.isfile(python) and os.access(python, os.X_OK):
            argv[i] = python
    for k in {0, i}:
        if k < len(argv) and not (k > 0 and argv[k].startswith("-")):
            argv[k] = find_program(argv[k], recipe.cwd, path_var) or argv[k]
    return argv


@dataclass(frozen=True)
class RunPlan:
    """Exactly what a recompile of a recipe runs (:func:`plan_run`): what the user
    confirms, and what :func:`hlo_lsp.dump.recompile.recompile` then runs.

    ``argv``: the command line as executed (:func:`resolved_command`); ``cwd``:
    the absolute working directory; ``interpreter``: the Python interpreter it
    starts (absolute), None when it does not start one; ``env``: the values the
    recorded variables (``XLA_FLAGS`` without the dump flags, ``CUDA_VISIBLE_DEVICES``,
    ``JAX_*`` but ``JAX_PLATFORMS``) have in the program's environment, sorted;
    ``env_changes``: those that differ from the server's environment. hlo-lsp
    also sets ``JAX_PLATFORMS`` and the dump flags of ``XLA_FLAGS`` (the run's
    platform and its new dump directory), which are not part of the plan.
    ``launcher``: how the command is run elsewhere (SLURM, ssh, a container),
    None to run it here; a new launcher is a new plan (:meth:`fingerprint`).
    """

    argv: tuple[str, ...]
    cwd: str
    interpreter: str | None
    env: tuple[tuple[str, str], ...] = ()
    env_changes: tuple[tuple[str, str], ...] = ()
    launcher: Launcher | None = None

    def display_command(self) -> str:
        """The command line as a POSIX shell would read it (:func:`shlex.join`)."""
        return shlex.join(self.argv)

    def display_env(self) -> str:
        """The environment changes as ``NAME=value`` words (values shell-quoted),
        or "none"."""
        return " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env_changes) or "none"

    def fingerprint(self) -> str:
        """SHA-256 (hex) of the canonical JSON of ``argv``, ``cwd``,
        ``interpreter``, ``env`` and, when there is one, ``launcher`` (its
        argument list and whether it shares the file system): equal plans run
        the same program, in the same place, with the same interpreter and
        recorded variables, through the same launcher."""
        data = {"argv": list(self.argv), "cwd": self.cwd,
                "interpreter": self.interpreter, "env": dict(self.env)}
        if self.launcher is not None:
            data["launcher"] = {"argv": list(self.launcher.argv),
                                "shared": self.launcher.shared}
        canonical = json.dumps(data, sort_keys=True, separators=(",", ":"),
                               ensure_ascii=True)
        return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def plan_run(recipe: Recipe, base_env: Mapping[str, str] | None = None,
             launcher: Launcher | None = None) -> RunPlan:
    """What running ``recipe`` with the server's environment ``base_env``
    (default: this process's) through ``launcher`` (None: here) executes: see
    :class:`RunPlan`. Looks at the disk (which files are executable). The
    command is resolved on this machine (:func:`resolved_command`) only when it
    runs on this machine's files: without a launcher or through SLURM; over
    ssh or in a container it runs as written (paths name the other machine's
    or the image's files), with no interpreter recorded. Raises RecipeError when
    ``recipe.cwd`` is not absolute (:func:`load_recipe` resolves a relative one
    against the dump directory; nothing is resolved against the server's
    working directory)."""
    if not os.path.isabs(recipe.cwd):
        raise RecipeError(f"the working directory {recipe.cwd!r} is not an absolute path")
    env = dict(os.environ if base_env is None else base_env)
    run_env = program_env(env, recipe, "", "cpu")
    here = launcher is None or launcher.kind == "slurm"
    argv = resolved_command(recipe, run_env) if here else list(recipe.command)

    def recorded(values: Mapping[str, str]) -> dict[str, str]:
        out = {k: v for k, v in recorded_env(values).items() if k != "JAX_PLATFORMS"}
        flags = strip_dump_flags(out.pop("XLA_FLAGS", ""))
        return {**out, "XLA_FLAGS": flags} if flags else out

    effective, before = recorded(run_env), recorded(env)
    return RunPlan(tuple(argv), os.path.normpath(recipe.cwd),
                   python_interpreter(argv, recipe.cwd, run_env) if here else None,
                   tuple(sorted(effective.items())),
                   tuple(sorted((k, v) for k, v in effective.items() if before.get(k) != v)),
                   launcher)


def deviceless_command(argv: Sequence[str], target_config: str, target_name: str,
                       dump_to: str) -> list[str]:
    """``argv`` (``python train.py ARGS``, also after ``env A=1``) with the
    deviceless runner (:mod:`hlo_lsp.dump.deviceless`, run as a file by the same
    interpreter) between the interpreter and the program, so that every function
    the program jits is also compiled for the target GPU into ``dump_to``.
    Interpreter options before the program (``python -u x.py``) are not
    supported. Raises RecipeError when ``argv`` does not start with a Python
    interpreter (the runner is Python)."""
    argv = list(argv)
    i = _interpreter_index(argv)
    if i >= len(argv) or not _PYTHON.match(os.path.basename(argv[i])) or i + 1 >= len(argv):
        raise RecipeError(f"compiling for a target GPU needs a command that starts with a "
                          f"Python interpreter and a script (python train.py ...), not "
                          f"`{shlex.join(argv)}`")
    rest = argv[i + 1:]
    if rest[0].startswith("-") and rest[0] != "-m":
        raise RecipeError(f"compiling for a target GPU: put the interpreter option "
                          f"{rest[0]!r} in the environment (PYTHONUNBUFFERED=1 ...) instead")
    return [*argv[:i + 1], str(RUNNER), "--target-config", target_config,
            "--target", target_name, "--dump-to", dump_to, "--", *rest]


PROBE_CODE = ("import jax, jaxlib; print(jax.__version__); "
              "print(getattr(jaxlib, '__version__', '') or jaxlib.version.__version__)")


def probe_env(env: Mapping[str, str] | None) -> dict[str, str]:
    """The environment for the version probe: ``env`` without ``XLA_FLAGS``
    (importing jax compiles nothing, but be sure nothing is dumped)."""
    out = dict(env if env is not None else os.environ)
    out.pop("XLA_FLAGS", None)
    return out


def parse_probe_output(returncode: int, stdout: str) -> tuple[str | None, str | None]:
    """``(jax, jaxlib)`` versions from the output of :data:`PROBE_CODE`."""
    lines = stdout.split()
    if returncode != 0 or len(lines) < 2:
        return None, None
    return lines[0], lines[1]


def program_env(base_env: Mapping[str, str], recipe: Recipe, dump_to: str,
                platform: str) -> dict[str, str]:
    """The environment to run ``recipe`` in: ``base_env`` with the recipe's
    ``CUDA_VISIBLE_DEVICES`` and ``JAX_*`` configuration, ``XLA_FLAGS`` (the
    recipe's, else ``base_env``'s) with the dump flags set to ``dump_to``, and
    ``JAX_PLATFORMS=platform``."""
    env = dict(base_env)
    for key, value in recipe.env.items():
        if key == "CUDA_VISIBLE_DEVICES" or key.startswith(RECORDED_PREFIX):
            env[key] = value
    flags = recipe.env.get("XLA_FLAGS", env.get("XLA_FLAGS", ""))
    env["XLA_FLAGS"] = set_dump_flags(flags, dump_to)
    env["JAX_PLATFORMS"] = platform
    return env


def travelling_env(base_env: Mapping[str, str], recipe: Recipe, dump_to: str,
                   platform: str) -> dict[str, str]:
    """The environment that travels with the command through a launcher (the
    other machine has its own environment; these are the variables that decide
    what XLA does): the :func:`recorded_env` of :func:`program_env` — ``XLA_FLAGS``
    dumping into ``dump_to``, ``JAX_PLATFORMS=platform``, the recipe's
    ``CUDA_VISIBLE_DEVICES`` and ``JAX_*`` — sorted by name."""
    return recorded_env(program_env(base_env, recipe, dump_to, platform))


def recorded_env(env: Mapping[str, str]) -> dict[str, str]:
    """The variables of :data:`RECORDED_ENV` and every ``JAX_*`` variable
    (:data:`RECORDED_PREFIX`) that are set in ``env``, sorted by name."""
    return {k: env[k] for k in sorted(env)
            if k in RECORDED_ENV or k.startswith(RECORDED_PREFIX)}


def device_count(module) -> tuple[int, str]:
    """How many devices the HloModule ``module`` was compiled for, from its header
    (``replica_count=R``, ``num_partitions=P``, printed by
    xla/hlo/ir/hlo_module.cc when not 1): ``(R * P, "replica_count=R,
    num_partitions=P")``; ``(1, "")`` when the header names neither. The numbers:
    :func:`hlo_lsp.model.collectives.replica_and_partition_count`."""
    replicas, partitions = replica_and_partition_count(module)
    said = [f"{name}={value}" for name, value in (("replica_count", replicas),
                                                  ("num_partitions", partitions))
            if module.header_attribute(name) is not None]
    return replicas * partitions, ", ".join(said)


def new_recipe(command: Sequence[str], cwd: str, dump_dir: str, platform: str,
               base_env: Mapping[str, str] | None = None, origin: str = "cli",
               target: str | None = None, launcher: Launcher | None = None) -> Recipe:
    """A recipe for running ``command`` in ``cwd`` so that it dumps into
    ``dump_dir`` on ``platform`` (versions not probed yet; see
    :func:`hlo_lsp.dump.recompile.probe_versions_async`), compiled for ``target``
    (a target GPU spec, see :class:`Recipe`) when given, run through
    ``launcher`` (None: on this machine)."""
    base = dict(os.environ if base_env is None else base_env)
    cwd = os.path.abspath(cwd)
    probe = Recipe(list(command), cwd)
    env = program_env(base, probe, os.path.abspath(dump_dir), platform)
    here = launcher is None or launcher.kind == "slurm"
    return Recipe(list(command), cwd, recorded_env(env), platform,
                  python=python_interpreter(command, cwd, env) if here else None,
                  created=now_iso(), host=socket.gethostname(), origin=origin,
                  target=target, launcher=launcher)


# -------------------------------------------------------------- inference ---

_LIBRARY = re.compile(r"(?:^<|/site-packages/|/dist-packages/|/lib/python\d)")


def _default_python(workspace: str | None) -> str:
    for rel in (".venv/bin/python", "venv/bin/python"):
        if workspace and os.access(os.path.join(workspace, rel), os.X_OK):
            return os.path.join(workspace, rel)
    import importlib.util
    if importlib.util.find_spec("jax") is not None:
        return sys.executable
    return shutil.which("python3") or "python3"


def _outermost_files(module) -> Counter:
    """(file, function) of the outermost frame of every stack of ``module``'s
    stack-frame tables, counted; without tables, of every instruction's stack
    (:func:`hlo_lsp.model.frames.python_stack`: the ``source_file`` of older
    metadata, function "")."""
    found: Counter = Counter()
    frames = module.frames
    for fid in frames.frames:
        stack = frames.resolve(fid)
        if stack:
            found[(stack[-1].file, stack[-1].function)] += 1
    if found:
        return found
    for comp in module.computations:
        for ins in comp.instructions:
            stack = python_stack(module, ins)
            if stack:
                found[(stack[-1].file, stack[-1].function)] += 1
    return found


def infer_recipe(dump_dir: str | os.PathLike, module=None, workspace: str | None = None,
                 python: str | None = None,
                 dirs: Sequence[str] | None = None) -> Recipe | None:
    """Propose a recipe for a dump made without ``hlo-lsp dump``; None when the
    dump names no Python file.

    The program is the outermost Python file of the stack-frame tables (the last
    frame of every resolved stack, xla/hlo/ir/stack_frames.cc), or the
    ``source_file`` of older metadata. Files that exist on disk, that are not library
    code, and whose outermost function is ``<module>`` (the script itself) are
    preferred, then the most frequent. Relative paths are looked for in ``dirs``
    (default: :func:`hlo_lsp.dump.sources.source_dirs` of the dump with
    ``workspace``: the dump directory and its parents, the workspace...). ``module`` (an HloModule) is looked at
    first, then up to 8 other HLO files of ``dump_dir``. The command is
    ``[python, file]`` relative to ``cwd`` = ``workspace`` when the file is inside
    it, else the file's directory. The result has ``origin="inferred"`` and a
    ``note``; it must be confirmed by the user before it is run.
    """
    from hlo_lsp.dump.names import parse_dump_name
    from hlo_lsp.syntax.parser import parse

    dump_dir = pathlib.Path(dump_dir).resolve()
    modules = [module] if module is not None else []
    candidates: Counter = Counter()
    source = ""
    chosen = None
    for m in modules:
        candidates = _outermost_files(m)
        source = m.name.name if getattr(m, "name", None) else ""
        chosen = m
    if not candidates and dump_dir.is_dir():
        files = sorted((p for p in dump_dir.iterdir()
                        if p.is_file() and parse_dump_name(p.name) is not None),
                       key=lambda p: p.stat().st_size)
        for p in files[:8]:
            try:
                m = parse(read_text(p))
            except OSError:  # UntrustedFileError: not a regular file, too large
                continue
            candidates = _outermost_files(m)
            if candidates:
                source = p.name
                chosen = m
                break
    if not candidates:
        return None
    # Where relative paths are: the one answer of hlo_lsp.dump.sources (imported
    # here: sources reads recipes).
    from hlo_lsp.dump.sources import resolve_source_path, source_dirs
    bases = list(dirs) if dirs is not None else source_dirs(
        str(dump_dir / "_"), [workspace] if workspace else [])

    def where(file: str) -> str | None:
        return resolve_source_path(file, bases)

    def rank(item):
        (file, function), count = item
        return (where(file) is not None, not _LIBRARY.search(file),
                function == "<module>", count)

    (file, function), _ = max(candidates.items(), key=rank)
    path = where(file) or (file if os.path.isabs(file) else
                           os.path.normpath(os.path.join(bases[0], file)))
    if workspace and os.path.commonpath([os.path.abspath(workspace), path]) == \
            os.path.abspath(workspace):
        cwd = os.path.abspath(workspace)
    else:
        cwd = os.path.dirname(path)
    python = python or _default_python(workspace)
    note = (f"{os.path.relpath(path, cwd)} is the outermost Python file in the stack "
            f"frames of {source or 'the dump'}")
    if where(file) is None:
        note += " (it does not exist on this machine)"
    env: dict[str, str] = {}
    devices, said = device_count(chosen) if chosen is not None else (1, "")
    if devices > 1:
        # Without it a CPU run has one device and a sharded program fails.
        env["XLA_FLAGS"] = f"{HOST_DEVICE_COUNT_FLAG}={devices}"
        note += (f"; the module header says {said}, so it runs with "
                 f"XLA_FLAGS={HOST_DEVICE_COUNT_FLAG}={devices} ({devices} devices)")
    return Recipe([python, os.path.relpath(path, cwd)], cwd, env, "cpu", python=python,
                  created=now_iso(), host=socket.gethostname(), origin="inferred", note=note)


def configured_recipe(command: str | Sequence[str], cwd: str | None,
                      fallback_cwd: str) -> Recipe:
    """A recipe from the setting ``hlo.recompile.command`` (a shell-like string or
    an argv list) and ``hlo.recompile.cwd``. Raises RecipeError when empty."""
    argv = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
    if not argv:
        raise RecipeError("the setting hlo.recompile.command is empty")
    where = os.path.abspath(os.path.expanduser(cwd)) if cwd else fallback_cwd
    return Recipe(argv, where, {}, "cpu", python=python_interpreter(argv, where),
                  created=now_iso(), host=socket.gethostname(), origin="setting")
