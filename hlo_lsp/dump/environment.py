"""The program a recipe runs and its environment: the Python interpreter of its
command, the command line with a bare ``python`` resolved (:class:`RunPlan`,
what the user confirms), the deviceless runner's command line for a target
GPU and the profiling hook's for a profiled run, the environment the program runs in (``XLA_FLAGS`` dumping into the new
directory, ``JAX_PLATFORMS``) and the part of it that travels through a
launcher, the jax/jaxlib version probe, and a new recipe for ``hlo-lsp dump``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import socket
from dataclasses import dataclass
from typing import Mapping, Sequence

from hlo_lsp.dump.capture import HOOK
from hlo_lsp.dump.launchers import Launcher
from hlo_lsp.dump.recipe import RECORDED_ENV, RECORDED_PREFIX, Recipe, RecipeError, now_iso
from hlo_lsp.dump.targets import RUNNER
from hlo_lsp.dump.xla_flags import set_dump_flags, strip_dump_flags

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
    ``recipe.cwd`` is not absolute (:func:`hlo_lsp.dump.recipe.load_recipe`
    resolves a relative one against the dump directory; nothing is resolved
    against the server's working directory)."""
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


def _runner_split(argv: Sequence[str], what: str) -> tuple[list[str], list[str]]:
    """``argv`` split after its Python interpreter (also after ``env A=1``): the
    interpreter part and the program with its arguments, for a runner of hlo-lsp
    run as a file between them (``what`` says which, in the error). Raises
    RecipeError when ``argv`` does not start with a Python interpreter and a
    program, or puts interpreter options before it (``python -u x.py``)."""
    argv = list(argv)
    i = _interpreter_index(argv)
    if i >= len(argv) or not _PYTHON.match(os.path.basename(argv[i])) or i + 1 >= len(argv):
        raise RecipeError(f"{what} needs a command that starts with a "
                          f"Python interpreter and a script (python train.py ...), not "
                          f"`{shlex.join(argv)}`")
    rest = argv[i + 1:]
    if rest[0].startswith("-") and rest[0] != "-m":
        raise RecipeError(f"{what}: put the interpreter option "
                          f"{rest[0]!r} in the environment (PYTHONUNBUFFERED=1 ...) instead")
    return argv[:i + 1], rest


def deviceless_command(argv: Sequence[str], target_config: str, target_name: str,
                       dump_to: str) -> list[str]:
    """``argv`` (``python train.py ARGS``, also after ``env A=1``) with the
    deviceless runner (:mod:`hlo_lsp.dump.deviceless`, run as a file by the same
    interpreter) between the interpreter and the program, so that every function
    the program jits is also compiled for the target GPU into ``dump_to``.
    Interpreter options before the program (``python -u x.py``) are not
    supported. Raises RecipeError when ``argv`` does not start with a Python
    interpreter (the runner is Python)."""
    head, rest = _runner_split(argv, "compiling for a target GPU")
    return [*head, str(RUNNER), "--target-config", target_config,
            "--target", target_name, "--dump-to", dump_to, "--", *rest]


def profiled_command(argv: Sequence[str], profile_dir: str, calls: int) -> list[str]:
    """``argv`` (``python train.py ARGS``, also after ``env A=1``) with the
    profiling hook (:mod:`hlo_lsp.dump.profiling_hook`, run as a file by the same
    interpreter) between the interpreter and the program, tracing ``calls``
    calls of its jitted functions with ``jax.profiler`` into ``profile_dir``
    (:mod:`hlo_lsp.dump.capture`). For a target GPU, :func:`deviceless_command`
    is applied to the result (the deviceless runner first, the hook as its
    program). Raises RecipeError as :func:`deviceless_command`, and for
    ``calls`` < 1."""
    if calls < 1:
        raise RecipeError(f"profiling needs at least 1 call to trace, not {calls}")
    head, rest = _runner_split(argv, "profiling")
    return [*head, str(HOOK), "--profile-dir", profile_dir, "--calls", str(calls),
            "--", *rest]


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


def new_recipe(command: Sequence[str], cwd: str, dump_dir: str, platform: str,
               base_env: Mapping[str, str] | None = None, origin: str = "cli",
               target: str | None = None, launcher: Launcher | None = None,
               profile: int | None = None) -> Recipe:
    """A recipe for running ``command`` in ``cwd`` so that it dumps into
    ``dump_dir`` on ``platform`` (versions not probed yet; see
    :func:`hlo_lsp.dump.processes.probe_versions_async`), compiled for ``target``
    (a target GPU spec, see :class:`Recipe`) when given, run through
    ``launcher`` (None: on this machine), profiling ``profile`` calls when given
    (:mod:`hlo_lsp.dump.capture`)."""
    base = dict(os.environ if base_env is None else base_env)
    cwd = os.path.abspath(cwd)
    probe = Recipe(list(command), cwd)
    env = program_env(base, probe, os.path.abspath(dump_dir), platform)
    here = launcher is None or launcher.kind == "slurm"
    return Recipe(list(command), cwd, recorded_env(env), platform,
                  python=python_interpreter(command, cwd, env) if here else None,
                  created=now_iso(), host=socket.gethostname(), origin=origin,
                  target=target, launcher=launcher, profile=profile or None)
