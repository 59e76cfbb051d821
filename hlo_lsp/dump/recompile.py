"""Re-run a dump's JAX program and swap the fresh dump in, safely.

:func:`recompile` runs a :class:`~hlo_lsp.dump.recipe.Recipe` as a subprocess in its
own session (``start_new_session=True``), so that cancelling kills the whole
process tree with ``os.killpg`` (POSIX only). XLA writes into a NEW temporary
directory next to the dump; only when the program exits 0 and wrote HLO text
are the old dump files moved to a backup directory, the new ones moved in and
the backup removed. On failure, cancellation or timeout the old dump is left
byte-identical and the temporary directory is removed.

Dump file names follow xla/service/dump.cc (``[ts.]module_NNNN.name.suffix``,
see :mod:`hlo_lsp.dump.names`). Module numbers change between runs (JAX compiles a
different number of helper modules first), so a file is mapped to its
counterpart by module name, occurrence of that name (in number order), stage
and platform, never by number (:mod:`hlo_lsp.dump.changes`, which also compares
them). Running the program and killing its process tree is
:mod:`hlo_lsp.dump.processes`.

What runs is a :class:`~hlo_lsp.dump.environment.RunPlan`: the command with a bare
``python`` replaced by the interpreter the recipe recorded and the program as an
absolute path (:func:`hlo_lsp.dump.environment.resolved_command`); the server has the
user confirm it first (:mod:`hlo_lsp.dump.trust`). Nothing here
imports pygls: the server (:mod:`hlo_lsp.analysis.recompile`) and
the CLI (:mod:`hlo_lsp.cli.commands.dump`) drive it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import pathlib
import shutil
import shlex
import socket
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

from hlo_lsp.dump import capture, trust
from hlo_lsp.dump.changes import ModuleChange, compare_dumps, map_files
from hlo_lsp.dump.launchers import (Launcher, LauncherError, Stage, cancel_argv, copy_back_argv,
                                    launched_argv, new_job_name, parse_stage,
                                    remote_cleanup_argv, remote_dump_dir)
from hlo_lsp.dump.names import DumpName, is_dump_entry, parse_dump_name
from hlo_lsp.dump.processes import (REMOTE_STOP_TIMEOUT_S, OutputCallback, RunResult,
                                    probe_versions_async, run_program)
from hlo_lsp.dump.environment import (RunPlan, deviceless_command, plan_run,
                                      profiled_command, program_env, python_interpreter,
                                      recorded_env, travelling_env)
from hlo_lsp.dump.platforms import platform_label
from hlo_lsp.dump.recipe import Recipe, RecipeError, now_iso, save_recipe
from hlo_lsp.dump.targets import Target, read_deviceless

#: How long copying a dump back over ssh may take.
COPY_BACK_TIMEOUT_S = 600.0


# -------------------------------------------------------- dump directory ---

def dump_entries(directory: str | os.PathLike) -> list[str]:
    """Names in ``directory`` that XLA wrote (``[ts.]module_NNNN...`` files and
    per-module folders), sorted; other files (the recipe, the user's) are not."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    return sorted(n for n in names if is_dump_entry(n))


def hlo_files(directory: str | os.PathLike) -> dict[str, DumpName]:
    """The HLO text files of a dump directory, name -> decoded name."""
    out: dict[str, DumpName] = {}
    for name in dump_entries(directory):
        decoded = parse_dump_name(name)
        if decoded is not None and os.path.isfile(os.path.join(directory, name)):
            out[name] = decoded
    return out


def swap_dump(dump_dir: str | os.PathLike, new_dir: str | os.PathLike) -> None:
    """Replace the dump entries of ``dump_dir`` by everything in ``new_dir``.

    The profile folder (:data:`hlo_lsp.dump.capture.PROFILE_DIR`) is part of the
    dump: the old one is replaced by the new run's, or removed when the new run
    was not profiled (it measured the previous compile).

    Old entries are first moved to a backup directory next to ``dump_dir``,
    then the new ones are moved in, then the backup is removed. If a move
    fails, what was moved is moved back (nothing is lost) and the OSError
    propagates. ``new_dir`` and ``dump_dir`` must be on the same file system
    (they are siblings here), so every move is a rename.
    """
    dump_dir = pathlib.Path(dump_dir)
    new_dir = pathlib.Path(new_dir)
    backup = pathlib.Path(_sibling_temp_dir(dump_dir, "backup"))
    moved_out: list[str] = []
    moved_in: list[str] = []
    old = dump_entries(dump_dir)
    if os.path.lexists(dump_dir / capture.PROFILE_DIR):
        old.append(capture.PROFILE_DIR)
    try:
        for name in old:
            os.replace(dump_dir / name, backup / name)
            moved_out.append(name)
        for name in sorted(os.listdir(new_dir)):
            os.replace(new_dir / name, dump_dir / name)
            moved_in.append(name)
    except OSError:
        for name in reversed(moved_in):
            with contextlib.suppress(OSError):
                os.replace(dump_dir / name, new_dir / name)
        for name in reversed(moved_out):
            with contextlib.suppress(OSError):
                os.replace(backup / name, dump_dir / name)
        with contextlib.suppress(OSError):
            if not os.listdir(backup):
                os.rmdir(backup)
        raise
    shutil.rmtree(backup, ignore_errors=True)


def _sibling_temp_dir(dump_dir: pathlib.Path, what: str) -> str:
    """A new empty directory next to ``dump_dir`` (inside it when the parent is not
    writable or another file system), named ``.<dump>.hlo-lsp-<what>-XXXX``
    (hidden, and never taken for a dump entry)."""
    prefix = f".{dump_dir.name}.hlo-lsp-{what}-"
    try:
        # A mount point's parent is another file system: renames would fail.
        if os.stat(dump_dir.parent).st_dev == os.stat(dump_dir).st_dev:
            return tempfile.mkdtemp(prefix=prefix, dir=dump_dir.parent)
    except OSError:
        pass
    return tempfile.mkdtemp(prefix=prefix, dir=dump_dir)


# ------------------------------------------------------------ recompile ---

@dataclass
class RecompileResult:
    """What :func:`recompile` did.

    ``mapping``: each requested open file (absolute path) -> its new counterpart
    (absolute path; the same path when the name did not change), None when the
    new dump lacks it; empty unless ``ok``. ``changes``: per module, see
    :class:`ModuleChange`. ``error``: why it failed (with ``stderr_tail``).
    ``summary``: a few lines for the user. ``target``: the target GPU's name when
    compiled for it without the device (``platform`` is then "cpu"), and
    ``deviceless``: the runner's record of that compile
    (:meth:`hlo_lsp.dump.targets.DevicelessRecord.statement`, failed modules).
    ``launcher``: the launcher's name ("slurm", "ssh", "docker"..., "custom")
    when the program ran through one, else None; ``launched``: the full command
    line that ran here (launcher included, :func:`shlex.join`); ``job_id``: the
    SLURM job id (or the remote process group over ssh) when seen; ``stages``:
    the stages reported (:meth:`hlo_lsp.dump.launchers.Stage.message`).
    ``profile``: when the run was profiled (:mod:`hlo_lsp.dump.capture`), the
    sentence saying what was traced, where and on which device
    (:func:`hlo_lsp.dump.capture.statement`); when it was not but the old dump had
    a profile, that it was removed; else ""; ``profile_run``: the new
    profile run's directory (``DUMP/profile/plugins/profile/<run>``), None
    without one.
    """

    ok: bool
    dump_dir: str
    command: str
    platform: str
    cancelled: bool = False
    timed_out: bool = False
    returncode: int | None = None
    seconds: float = 0.0
    error: str = ""
    stderr_tail: str = ""
    mapping: dict[str, str | None] = field(default_factory=dict)
    changes: list[ModuleChange] = field(default_factory=list)
    recipe_file: str | None = None
    summary: str = ""
    target: str | None = None
    deviceless: str = ""
    launcher: str | None = None
    launched: str = ""
    job_id: str | None = None
    stages: list[str] = field(default_factory=list)
    profile: str = ""
    profile_run: str | None = None

    def to_json(self) -> dict:
        """A JSON-ready dict (what the ``hlo.recompile`` command returns)."""
        return {"ok": self.ok, "cancelled": self.cancelled, "timedOut": self.timed_out,
                "returncode": self.returncode, "platform": self.platform,
                "command": self.command, "dumpDir": self.dump_dir,
                "seconds": round(self.seconds, 3), "error": self.error,
                "stderrTail": self.stderr_tail, "mapping": dict(self.mapping),
                "changes": [c.to_json() for c in self.changes],
                "recipeFile": self.recipe_file, "summary": self.summary,
                "target": self.target, "deviceless": self.deviceless,
                "launcher": self.launcher, "launched": self.launched, "jobId": self.job_id,
                "stages": list(self.stages), "profile": self.profile,
                "profileRun": self.profile_run}


def summarize(result: RecompileResult, focus: Iterable[str] = (),
              max_lines: int = 8) -> str:
    """The user-facing text of ``result``: a head line, renamed open files, and
    the changes of the modules in ``focus`` (module names; with their change in
    cost) plus other modules whose counts changed, at most ``max_lines`` of
    them (the JSON reply has every module's cost)."""
    where = platform_label(result.platform)
    if result.launcher:
        where += f" through the {result.launcher} launcher"
        if result.job_id and result.launcher != "ssh":
            where += f" (job {result.job_id})"
    if result.target:
        where = f"{result.target.upper()} without a GPU (the program ran on the CPU)"
    if result.cancelled:
        return f"Recompile cancelled; the old dump in {result.dump_dir} is unchanged."
    if not result.ok:
        head = f"Recompile on {where} failed: {result.error}"
        if result.stderr_tail:
            tail = result.stderr_tail.splitlines()[-12:]
            head += "\n" + "\n".join(tail)
        return head + f"\nThe old dump in {result.dump_dir} is unchanged."
    lines = [f"Recompiled on {where} in {result.seconds:.1f} s (`{result.command}`)."]
    for old, new in result.mapping.items():
        if new is None:
            lines.append(f"{os.path.basename(old)}: no longer in the dump.")
        elif os.path.basename(old) != os.path.basename(new):
            lines.append(f"{os.path.basename(old)} is now {os.path.basename(new)}.")
    focus = set(focus)
    shown = [c for c in result.changes if c.module in focus]
    shown += [c for c in result.changes if c.module not in focus and c.changed]
    for c in shown[:max_lines]:
        lines.extend(c.report(costs=c.module in focus))
    if len(shown) > max_lines:
        lines.append(f"... and {len(shown) - max_lines} more modules changed.")
    if not shown:
        lines.append("No instruction, custom-call or fusion count changed.")
    if result.deviceless:
        lines.append(result.deviceless)
    if result.profile:
        lines.append(result.profile)
    return "\n".join(lines)


async def recompile(recipe: Recipe, dump_dir: str | os.PathLike, *, platform: str,
                    open_files: Iterable[str] = (), on_output: OutputCallback | None = None,
                    cancel: asyncio.Event | None = None, timeout: float | None = None,
                    base_env: Mapping[str, str] | None = None, save: bool = True,
                    probe: bool = True, target: Target | None = None,
                    plan: RunPlan | None = None, launcher: Launcher | None = None,
                    on_stage: Callable[[Stage], None] | None = None,
                    device: str | None = None, profile: int | None = None
                    ) -> RecompileResult:
    """Run ``recipe`` on ``platform`` so that XLA dumps into a new temporary
    directory next to ``dump_dir``, then swap the new dump in (:func:`swap_dump`).

    ``open_files`` are absolute paths of files of ``dump_dir`` whose new
    counterparts the result should name (``mapping``). ``base_env`` (default:
    this process's environment) is extended per :func:`hlo_lsp.dump.environment.program_env`.
    With ``save``, the recipe is (re)written to ``dump_dir`` on success with the
    time, platform and — when ``probe`` and the command starts with a Python
    interpreter — the jax/jaxlib versions that interpreter reports. Failures,
    cancellation (``cancel`` set) and ``timeout`` leave the old dump as it was.
    CancelledError of the awaiting task kills the program and propagates.

    With ``target`` (a GPU this machine need not have), the program runs on the
    CPU (``platform`` should be "cpu") under the deviceless runner
    (:func:`hlo_lsp.dump.environment.deviceless_command`), which compiles every
    function it jits for the target into the dump, without autotuning; the
    result's ``deviceless`` says so and the saved recipe records the target.

    ``plan`` is what runs (argv and working directory), as the user confirmed it;
    default :func:`hlo_lsp.dump.environment.plan_run` of ``recipe`` and ``base_env``.
    A recipe of origin "cli" (the command line the user gave ``hlo-lsp dump``)
    is remembered as confirmed when it is saved (:func:`hlo_lsp.dump.trust.remember`),
    so that the editor does not ask about the user's own command; a failure to
    remember it is said in the summary.

    ``launcher`` (used when ``plan`` is not given, default ``recipe.launcher``;
    else ``plan.launcher``) runs
    the program elsewhere (:mod:`hlo_lsp.dump.launchers`): its argument list
    from :func:`hlo_lsp.dump.launchers.launched_argv` runs here, with the
    environment that matters travelling on the command line. ``on_stage`` is
    told each stage (queued in SLURM with its job id, running, copying back;
    also in ``stages`` of the result). Without a shared file system the program
    dumps into a remote temporary directory that is copied back
    (:func:`hlo_lsp.dump.launchers.copy_back_argv`: rsync, and scp when rsync
    fails or is missing) into the new directory before the swap, and removed
    afterwards; a failure there leaves the old
    dump. Cancelling or a timeout first stops the remote side
    (:func:`hlo_lsp.dump.launchers.cancel_argv`: scancel, a kill of the remote
    process group), then the local process tree. ``device`` (the ``hlo.device``
    setting) is where the change in cost is estimated (:func:`compare_dumps`).

    With ``profile`` (a number of calls), the program runs under the profiling
    hook (:func:`hlo_lsp.dump.environment.profiled_command`; inside the deviceless
    runner for ``target``), which traces that many calls of its jitted functions
    with ``jax.profiler`` into the new dump's profile folder
    (:mod:`hlo_lsp.dump.capture`), swapped in with the dump; the result's
    ``profile`` says what was traced and the saved recipe records ``profile``.
    """
    dump_path = pathlib.Path(dump_dir).resolve()
    dump_path.mkdir(parents=True, exist_ok=True)
    result = RecompileResult(False, str(dump_path), recipe.display_command(), platform,
                             target=target.name if target else None)
    env = dict(base_env if base_env is not None else os.environ)
    work = pathlib.Path(_sibling_temp_dir(dump_path, "new"))
    try:
        job = _prepare(recipe, plan, launcher, env, platform, target, dump_path, work, result,
                       profile)
    except _GivenUp as exc:  # before the program ran
        shutil.rmtree(work, ignore_errors=True)
        result.error = str(exc)
        return _done(result, time.monotonic())
    # The version probe starts the interpreter here: not for a program run elsewhere.
    python = (python_interpreter(job.argv, job.cwd, job.run_env)
              if probe and job.launcher is None else None)
    versions = (asyncio.ensure_future(probe_versions_async(python, job.cwd, job.run_env))
                if python and os.path.isdir(job.cwd) else None)
    t0 = time.monotonic()
    try:
        if not os.path.isdir(job.local_cwd):
            result.error = f"the working directory {job.cwd} does not exist"
            return _done(result, t0)
        run = await run_program(
            job.argv, job.local_cwd, job.run_env,
            on_output=functools.partial(_watch, job, result, on_output, on_stage),
            cancel=cancel, timeout=timeout,
            on_stop=(functools.partial(_stop_remote_side, job, result, on_output)
                     if job.launcher is not None else None))
        if not _ran(result, run, timeout, job.launcher):
            return _done(result, t0)
        if job.remote_dir is not None and \
                not await _copy_back(job, result, cancel, on_output, on_stage):
            return _done(result, t0)
        had_profile = os.path.isdir(dump_path / capture.PROFILE_DIR)
        if not await _take_new_dump(result, dump_path, work, open_files, target, device):
            return _done(result, t0)
        result.ok = True
        if profile:
            result.profile, result.profile_run = await asyncio.to_thread(
                _profile_statement, dump_path, target)
        elif had_profile:
            result.profile = (f"The profile of the previous compile "
                              f"({dump_path / capture.PROFILE_DIR}) was removed: this run "
                              "was not profiled.")
        if save:
            await _save_recipe(result, recipe, job, versions, python, dump_path, target,
                               platform, profile)
        return _done(result, t0)
    finally:
        await _clean_up(job, versions)


# The steps of :func:`recompile`, in order.

class _GivenUp(Exception):
    """The recompile cannot start (the message says why); nothing ran."""


@dataclass
class _Job:
    """A recompile ready to run (:func:`_prepare`): ``argv`` runs here in
    ``local_cwd`` with ``run_env``; ``cwd`` is the program's working directory
    (on the other machine for ssh); ``env`` the environment it was planned with;
    ``remote_dir`` where the program dumps when it runs without a shared file
    system (else it dumps into ``work``, the new directory beside the dump)."""

    argv: list[str]
    cwd: str
    local_cwd: str
    env: dict[str, str]
    run_env: dict[str, str]
    launcher: Launcher | None
    job_name: str
    remote_dir: str | None
    work: pathlib.Path


def _prepare(recipe: Recipe, plan: RunPlan | None, launcher: Launcher | None,
             env: dict[str, str], platform: str, target: Target | None,
             dump_path: pathlib.Path, work: pathlib.Path, result: RecompileResult,
             profile: int | None = None) -> _Job:
    """Step 1: the command line that runs (the plan, under the profiling hook for
    ``profile``, under the deviceless runner for ``target``, through the
    launcher), where, and with what environment;
    ``result`` learns the command and the launcher. Raises :class:`_GivenUp`
    when the recipe or the launcher cannot make one."""
    try:
        plan = plan if plan is not None else plan_run(
            recipe, env, launcher if launcher is not None else recipe.launcher)
    except RecipeError as exc:
        raise _GivenUp(str(exc)) from None
    launcher = plan.launcher
    job_name = new_job_name()
    remote_dir = remote_dump_dir(job_name) if launcher is not None and not launcher.shared \
        else None
    dump_to = remote_dir or str(work)
    run_env = program_env(env, recipe, dump_to, platform)
    argv, cwd = list(plan.argv), plan.cwd
    result.command = plan.display_command()
    if profile:
        try:
            argv = profiled_command(argv, os.path.join(dump_to, capture.PROFILE_DIR), profile)
        except RecipeError as exc:
            raise _GivenUp(str(exc)) from None
    if target is not None:
        try:
            argv = deviceless_command(argv, target.path, target.name, dump_to)
        except RecipeError as exc:
            raise _GivenUp(str(exc)) from None
    local_cwd = cwd
    if launcher is not None:
        try:
            launched = launched_argv(launcher, argv,
                                     travelling_env(env, recipe, dump_to, platform), cwd,
                                     dump_to, job_name)
        except LauncherError as exc:
            raise _GivenUp(str(exc)) from None
        result.launcher = launcher.name
        result.launched = shlex.join(launched)
        if launcher.kind == "ssh" and not os.path.isdir(cwd):
            local_cwd = str(dump_path)  # the working directory is the other machine's
        argv = launched
    return _Job(argv, cwd, local_cwd, env, run_env, launcher, job_name, remote_dir, work)


def _watch(job: _Job, result: RecompileResult, on_output: OutputCallback | None,
           on_stage: Callable[[Stage], None] | None, stream: str, line: str) -> None:
    """Step 2, while the program runs: each line of its output, with the stage
    a launcher's line reports (queued with its job id, running)."""
    stage = parse_stage(job.launcher, line) if job.launcher is not None else None
    if stage is not None:
        result.job_id = stage.job or result.job_id
        _stage(result, stage, on_stage)
    if on_output is not None:
        on_output(stream, line)


async def _stop_remote_side(job: _Job, result: RecompileResult,
                            on_output: OutputCallback | None) -> None:
    """Step 2, on cancel or timeout: stop the launcher's remote side first."""
    stop = cancel_argv(job.launcher, job.job_name, result.job_id) if job.launcher else None
    if stop is not None:
        if on_output is not None:
            on_output("stderr", f"hlo-lsp: stopping the remote side: {shlex.join(stop)}")
        await run_program(stop, job.local_cwd, job.env, on_output=on_output,
                          timeout=REMOTE_STOP_TIMEOUT_S)


def _ran(result: RecompileResult, run: RunResult, timeout: float | None,
         launcher: Launcher | None) -> bool:
    """Step 3: whether the program ran to a good end (exit status 0); else
    ``result`` says why not (an error, cancelled, timed out, a status or a
    signal)."""
    result.returncode, result.cancelled, result.timed_out = (
        run.returncode, run.cancelled, run.timed_out)
    result.stderr_tail = run.stderr_tail
    if run.error:
        result.error = run.error
        return False
    if run.cancelled:
        return False
    if run.timed_out:
        result.error = f"the program did not finish within {timeout:g} s and was stopped"
        return False
    if run.returncode != 0:
        result.error = (f"the program exited with status {run.returncode}"
                        if run.returncode and run.returncode > 0 else
                        f"the program was killed by signal {-(run.returncode or 0)}")
        if launcher is not None:
            result.error += f" (run through the {launcher.name} launcher)"
        return False
    return True


async def _copy_back(job: _Job, result: RecompileResult, cancel: asyncio.Event | None,
                     on_output: OutputCallback | None,
                     on_stage: Callable[[Stage], None] | None) -> bool:
    """Step 4, without a shared file system: the remote dump copied into the new
    directory (rsync, then scp when rsync fails). Whether it was; else
    ``result`` says why (cancelled, or the copy's error)."""
    launcher, remote_dir = job.launcher, job.remote_dir
    assert launcher is not None and remote_dir is not None
    _stage(result, Stage("copying back", result.job_id, launcher.kind), on_stage)
    copy = copy_back_argv(launcher, remote_dir, str(job.work))
    if on_output is not None:
        on_output("stderr", f"hlo-lsp: copying the dump back: {shlex.join(copy)}")
    back = await run_program(copy, job.local_cwd, job.env, on_output=on_output,
                             cancel=cancel, timeout=COPY_BACK_TIMEOUT_S)
    if copy[0] == "rsync" and back.returncode not in (0, None):
        # rsync must be on both machines; scp needs only the remote's sshd.
        copy = copy_back_argv(launcher, remote_dir, str(job.work), tool="scp")
        if on_output is not None:
            on_output("stderr", f"hlo-lsp: rsync failed, copying with scp: "
                                f"{shlex.join(copy)}")
        back = await run_program(copy, job.local_cwd, job.env, on_output=on_output,
                                 cancel=cancel, timeout=COPY_BACK_TIMEOUT_S)
    if back.cancelled:
        result.cancelled, result.returncode = True, None
        return False
    if back.returncode != 0:
        result.error = (f"copying the dump back from {remote_dir} failed "
                        f"(`{shlex.join(copy)}`: "
                        f"{back.error or f'status {back.returncode}'})")
        result.stderr_tail = back.stderr_tail
        return False
    return True


async def _take_new_dump(result: RecompileResult, dump_path: pathlib.Path,
                         work: pathlib.Path, open_files: Iterable[str],
                         target: Target | None, device: str | None) -> bool:
    """Step 5: the new dump compared with the old one (:func:`compare_dumps`,
    in a thread), the open files mapped to their counterparts, and the new dump
    swapped in (:func:`swap_dump`). Whether it was; else ``result`` says why
    (no HLO text written, or the swap failed: the old dump is unchanged)."""
    new_files = hlo_files(work)
    record = read_deviceless(work) if target is not None else None
    if record is not None:
        result.deviceless = record.statement() + "".join(
            f"\nNot compiled for {record.target}: {f.get('module')}: {f.get('error')}"
            for f in record.failed[:4])
    if not new_files:
        result.error = ("the program exited 0 but XLA wrote no HLO text into the "
                        "new dump directory: does it compile anything, or set "
                        "--xla_dump_to itself (XLA_FLAGS is read at jax's first "
                        "compile; the last --xla_dump_to wins)?")
        return False
    old_files = hlo_files(dump_path)
    result.changes = await asyncio.to_thread(compare_dumps, dump_path, old_files, work,
                                             new_files, device)
    names = map_files(old_files, new_files)
    for path in open_files:
        base, folder = os.path.basename(path), os.path.dirname(os.path.abspath(path))
        if os.path.realpath(folder) != str(dump_path) or base not in names:
            continue
        new = names[base]
        # Keep the caller's spelling of the directory (symlinks), so URIs match.
        result.mapping[path] = os.path.join(folder, new) if new else None
    try:
        swap_dump(dump_path, work)
    except OSError as exc:
        result.mapping = {}
        result.error = (f"could not move the new dump into {dump_path}: "
                        f"{exc.strerror or exc}")
        return False
    return True


async def _save_recipe(result: RecompileResult, recipe: Recipe, job: _Job,
                       versions: asyncio.Future | None, python: str | None,
                       dump_path: pathlib.Path, target: Target | None,
                       platform: str, profile: int | None = None) -> None:
    """Step 6: the recipe (re)written beside the new dump with the time, the
    platform and the jax/jaxlib versions probed; a command the user gave
    ``hlo-lsp dump`` remembered as confirmed (:func:`hlo_lsp.dump.trust.remember`).
    A failure of either is said in ``result.summary``."""
    jax_v = jaxlib_v = None
    if versions is not None:
        jax_v, jaxlib_v = await versions
    final_env = program_env(job.env, recipe, str(dump_path), platform)
    saved = Recipe(list(recipe.command), job.cwd, recorded_env(final_env),
                   platform, jax_v or recipe.jax_version,
                   jaxlib_v or recipe.jaxlib_version, python or recipe.python,
                   now_iso(), socket.gethostname(),
                   target=(target.name if target.builtin else target.path)
                   if target else None, launcher=recipe.launcher, profile=profile or None)
    try:
        result.recipe_file = str(save_recipe(saved, dump_path))
    except OSError as exc:
        result.summary = f"(could not write the recipe: {exc.strerror})"
        return
    if recipe.origin == "cli":
        try:
            trust.remember(plan_run(saved, job.env, saved.launcher))
        except (OSError, RecipeError) as exc:
            result.summary = (f"(could not remember the command as yours in "
                              f"{trust.state_dir()}: {exc}; the editor will "
                              "ask before running it)")


async def _clean_up(job: _Job, versions: asyncio.Future | None) -> None:
    """Last, whatever happened: the new directory removed (the swap emptied it
    on success), the version probe stopped, the remote dump directory removed."""
    shutil.rmtree(job.work, ignore_errors=True)
    if versions is not None and not versions.done():
        versions.cancel()
    if job.remote_dir is not None:
        with contextlib.suppress(Exception):
            await run_program(remote_cleanup_argv(job.launcher, job.remote_dir),
                              job.local_cwd, job.env, timeout=REMOTE_STOP_TIMEOUT_S)


def _profile_statement(dump_path: pathlib.Path, target: Target | None
                       ) -> tuple[str, str | None]:
    """After a profiled run: :func:`hlo_lsp.dump.capture.statement` and the new run's
    directory (blocking: call it in a thread)."""
    return (capture.statement(dump_path, target.label if target is not None else None),
            capture.run_directory(dump_path))


def _stage(result: "RecompileResult", stage: Stage,
           on_stage: Callable[[Stage], None] | None) -> None:
    """Record ``stage`` in ``result.stages`` (once per message) and tell ``on_stage``."""
    message = stage.message()
    if result.stages and result.stages[-1] == message:
        return
    result.stages.append(message)
    if on_stage is not None:
        on_stage(stage)


def _done(result: RecompileResult, t0: float) -> RecompileResult:
    result.seconds = time.monotonic() - t0
    extra = result.summary
    focus = {parse_dump_name(os.path.basename(p)).module_name for p in result.mapping
             if parse_dump_name(os.path.basename(p)) is not None}
    result.summary = summarize(result, focus) + (f"\n{extra}" if extra else "")
    return result
