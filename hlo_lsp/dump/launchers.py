"""Launchers: how a recompile runs the JAX program where the GPUs are.

A *launcher* is an argument list with placeholders that wraps the program's
command line: ``["srun", "--gpus=1", "{command}"]`` runs it as a SLURM job,
``["ssh", "gpu-box", "cd {cwd} && {env} {command}"]`` on another machine,
``["docker", "run", ..., "image", "{command}"]`` in a container. It comes only
from what the user wrote: the ``hlo.recompile.launcher`` setting, or the
``--launcher`` of ``hlo-lsp dump`` recorded in the recipe (and, like every
recipe command, confirmed by the user before it runs: it is part of the
:class:`~hlo_lsp.dump.environment.RunPlan` fingerprint). Nothing here reads a dump.

Placeholders (:data:`PLACEHOLDERS`; ``{{`` and ``}}`` are literal braces, any
other ``{name}`` is an error, never Python's ``str.format``):

- ``{command}``: the program's command line. The environment that matters
  (:func:`hlo_lsp.dump.environment.recorded_env` of the run: ``XLA_FLAGS`` with the
  dump directory, ``JAX_PLATFORMS``, ``CUDA_VISIBLE_DEVICES``, ``JAX_*``)
  travels with it exactly once: as ``{env}`` when the launcher uses ``{env}``,
  else as ``env NAME=value ...`` in front of the command.
- ``{env}``: those variables as ``NAME=value`` words.
- ``{cwd}``: the program's working directory; ``{dump}``: the directory XLA
  dumps into; ``{jobname}``: a name unique to this run (``hlo-lsp-<hex>``),
  used to find the job again (SLURM job name, container name).

How a placeholder is written depends on the argument it is in:

- an argument that is exactly ``{command}`` (or ``{env}``) becomes the
  command's words (or the ``NAME=value`` words), each one argument;
- an argument that holds ``{command}`` among other text, and the last
  argument of an ``ssh`` launcher (which must hold ``{command}``: ssh hands it
  to the remote shell), is a *shell command line* (what ``ssh`` and ``sh -c``
  take): every placeholder in it is quoted
  with :func:`shlex.quote` / :func:`shlex.join` (``NAME=`` + quoted value for
  the environment, so that the shell reads assignments);
- any other argument is one word: placeholders are replaced by their plain
  text (``-v {cwd}:{cwd}``, ``--chdir={cwd}``).

Kinds (:attr:`Launcher.kind`, from the program the launcher starts): ``slurm``
(``srun``), ``ssh``, ``container`` (``docker``, ``podman``, ``apptainer``,
``singularity``) and ``custom``. The kind decides the stages reported
(:func:`parse_stage`), how a cancel reaches the remote side
(:func:`cancel_argv`) and, for ``ssh`` without a shared file system
(``shared=False``), how the dump comes back (:func:`copy_back_argv`).

Facts used (man pages of the Debian 12 packages: slurm-wlm 22.05, OpenSSH
9.2, rsync 3.2.7):

- ``srun -v`` prints ``srun: jobid N: nodes(1):...`` once the job has its
  resources; without resources it first prints ``srun: job N queued and
  waiting for resources`` (also without ``-v``); ``scancel N`` ends job N,
  ``scancel --name=NAME`` the caller's jobs of that name.
- ``ssh host CMD`` hands CMD to the remote user's shell, started by sshd in a
  new session (``setsid``), so that shell's pid (``$$``) is the process group
  of everything the command starts; ``kill -TERM -- -PGID`` over a second
  connection ends it. Without a terminal (no ``-t``) closing the connection
  does not stop the remote program, hence the explicit kill.
- ``rsync -e COMMAND``: COMMAND is split on spaces with single and double
  quotes honoured (the quoting of :func:`shlex.join`); ``scp`` takes the
  port as ``-P``, not ``-p``.
"""

from __future__ import annotations

import os
import re
import secrets
import shlex
import shutil
from dataclasses import dataclass
from typing import Mapping, Sequence


PLACEHOLDERS = ("command", "env", "cwd", "dump", "jobname")
#: Preset names (:func:`preset_launcher`); ``local`` is no launcher at all.
PRESETS = ("local", "slurm", "ssh", "docker", "podman", "apptainer")
#: The arguments a preset adds when none are given: what asks for one GPU.
DEFAULT_ARGS = {"slurm": ("--gpus=1",), "docker": ("--gpus=all",),
                "podman": ("--device=nvidia.com/gpu=all",), "apptainer": ("--nv",),
                "ssh": ()}
#: Where a launcher without a shared file system has the program dump (on the
#: remote machine) before the dump is copied back.
REMOTE_TMP = "/tmp"
#: The line the ssh launcher's remote shell prints first (on stderr).
PGID_MARK = "hlo-lsp-remote-pgid="
_CONTAINERS = ("docker", "podman", "apptainer", "singularity")
_TOKEN = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")
_QUEUED = re.compile(r"^srun: job (\d+) queued and waiting for resources")
_ALLOCATED = re.compile(r"^srun: (?:job (\d+) has been allocated resources|jobid (\d+):)")
_PGID = re.compile(r"^" + re.escape(PGID_MARK) + r"(\d+)\s*$")


class LauncherError(Exception):
    """A launcher that cannot be used (unknown preset, missing ``{command}``,
    unknown placeholder, a path a container bind cannot hold...). ``str()`` is
    one sentence for the user."""


@dataclass(frozen=True)
class Launcher:
    """How to run the program elsewhere: ``argv``, the argument list with
    placeholders (see the module docstring), and ``shared``: whether the
    program's file system is this machine's (the dump is written in place;
    else the launcher must be ``ssh`` and the dump is copied back). ``name``:
    the preset it came from ("custom" for an argument list), shown to the
    user (:func:`checked_name`). Build it with :func:`make_launcher`, which
    checks it."""

    argv: tuple[str, ...]
    shared: bool = True
    name: str = "custom"

    @property
    def kind(self) -> str:
        """"slurm", "ssh", "container" or "custom", from ``argv[0]``'s base name."""
        program = os.path.basename(self.argv[0]) if self.argv else ""
        if program in ("srun",):
            return "slurm"
        if program == "ssh":
            return "ssh"
        if program in _CONTAINERS:
            return "container"
        return "custom"

    def command_index(self) -> int:
        """The index of the argument holding ``{command}``."""
        return next(i for i, a in enumerate(self.argv) if "{command}" in a)

    def is_shell(self) -> bool:
        """Whether ``{command}`` is part of a shell command line (an argument
        holding it among other text, or any ``ssh`` launcher's: ssh hands its
        command to the remote shell) rather than an argument of its own."""
        return self.kind == "ssh" or self.argv[self.command_index()] != "{command}"

    def to_json(self) -> dict:
        """The JSON object stored in a recipe's ``launcher`` field."""
        return {"argv": list(self.argv), "shared": self.shared, "name": self.name}

    @classmethod
    def from_json(cls, data: object) -> "Launcher":
        """Decode :meth:`to_json` output (a recipe is untrusted input). Raises
        LauncherError for a wrong type or an invalid argument list."""
        if not isinstance(data, dict):
            raise LauncherError("the recipe's launcher is not a JSON object")
        argv = data.get("argv")
        if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
            raise LauncherError("the recipe's launcher has no 'argv' (a list of strings)")
        shared = data.get("shared", True)
        if not isinstance(shared, bool):
            raise LauncherError("the recipe's launcher 'shared' is not true or false")
        name = data.get("name") or "custom"
        if not isinstance(name, str):
            raise LauncherError("the recipe's launcher 'name' is not a string")
        return make_launcher(argv, shared=shared, name=name)

    def display(self) -> str:
        """The argument list with its placeholders, as a shell would print it."""
        return shlex.join(self.argv)


def make_launcher(argv: Sequence[str], shared: bool = True, name: str = "custom") -> Launcher:
    """A checked :class:`Launcher`. Raises LauncherError when ``argv`` is empty,
    holds a NUL, does not hold ``{command}`` exactly once, names a placeholder
    not in :data:`PLACEHOLDERS`, uses ``{env}`` inside an argument that is not
    the shell command line, or is not shared without being an ``ssh`` launcher
    (the dump is copied back over ssh)."""
    argv = tuple(str(a) for a in argv)
    if not argv or not argv[0]:
        raise LauncherError("the launcher is empty")
    if any("\0" in a for a in argv):
        raise LauncherError("the launcher holds a NUL character")
    holders = [a for a in argv if "{command}" in a]
    if len(holders) != 1 or holders[0].count("{command}") != 1:
        raise LauncherError(f"the launcher `{shlex.join(argv)}` must hold {{command}} "
                            "exactly once (where the program's command line goes)")
    for a in argv:
        for m in _TOKEN.finditer(a):
            if m.group(1) is not None and m.group(1) not in PLACEHOLDERS:
                raise LauncherError(
                    f"the launcher argument {a!r} names an unknown placeholder "
                    f"{{{m.group(1)}}}: use {', '.join('{' + p + '}' for p in PLACEHOLDERS)}"
                    ", and {{ }} for literal braces")
        if "{env}" in a and a != "{env}" and "{command}" not in a:
            raise LauncherError(f"the launcher argument {a!r}: {{env}} stands alone or "
                                "in the shell command line with {command}")
    launcher = Launcher(argv, bool(shared), checked_name(name, argv))
    if launcher.kind == "ssh" and ("{command}" not in argv[-1] or any(
            "{env}" in a for a in argv[:-1])):
        raise LauncherError(f"the ssh launcher `{shlex.join(argv)}`: its last argument is "
                            "the command line the remote shell runs, and holds {command} "
                            "(and {env}, if used)")
    if not launcher.shared and launcher.kind != "ssh":
        raise LauncherError("only an ssh launcher can work without a shared file system "
                            "(the dump is copied back over ssh)")
    return launcher


#: The program each preset starts (what a name shown to the user must match).
_PRESET_PROGRAM = {"slurm": "srun", "ssh": "ssh", "docker": "docker", "podman": "podman",
                   "apptainer": "apptainer"}


def checked_name(name: str | None, argv: Sequence[str]) -> str:
    """``name`` when it is a preset whose program ``argv`` starts (``slurm`` for
    ``srun ...``), else ``"custom"``: the name shown in titles and reports comes
    from what runs, never from a recipe's say-so (a recipe calling ``ssh evil``
    "slurm" is shown as custom)."""
    if name in _PRESET_PROGRAM and argv and os.path.basename(argv[0]) == _PRESET_PROGRAM[name]:
        return name
    return "custom"


def preset_launcher(name: str, *, args: Sequence[str] | None = None,
                    host: str | None = None, ssh_options: Sequence[str] = (),
                    image: str | None = None, shared: bool | None = None) -> Launcher | None:
    """The launcher of preset ``name`` (:data:`PRESETS`); None for ``local``.

    - ``slurm``: ``srun -v --job-name={jobname} ARGS {command}`` (ARGS default
      ``--gpus=1``; add ``--partition=...``, ``--time=...``), shared;
    - ``ssh``: ``ssh -o BatchMode=yes SSH_OPTIONS HOST "cd {cwd} && {env}
      {command}"``, not shared unless ``shared`` (then the dump directory must
      be the same path on both machines);
    - ``docker`` / ``podman``: ``TOOL run --rm --name={jobname} ARGS -v
      {cwd}:{cwd} -v {dump}:{dump} -w {cwd} IMAGE {command}`` (ARGS default
      ``--gpus=all`` / ``--device=nvidia.com/gpu=all``), shared through the
      bind mounts;
    - ``apptainer``: ``apptainer exec ARGS --bind {cwd} --bind {dump} --pwd
      {cwd} IMAGE {command}`` (ARGS default ``--nv``).

    Raises LauncherError for an unknown name, an ssh preset without ``host``
    or a container preset without ``image``."""
    name = (name or "local").lower()
    if name not in PRESETS:
        raise LauncherError(f"unknown launcher preset {name!r}: use one of "
                            f"{', '.join(PRESETS)}, or an argument list with {{command}}")
    if name == "local":
        return None
    extra = list(DEFAULT_ARGS[name] if args is None else args)
    if name == "slurm":
        return make_launcher(["srun", "-v", "--job-name={jobname}", *extra, "{command}"],
                             True if shared is None else shared, name)
    if name == "ssh":
        if not host:
            raise LauncherError("the ssh launcher needs a host (user@machine or a Host "
                                "of ~/.ssh/config)")
        return make_launcher(["ssh", "-o", "BatchMode=yes", *ssh_options, *extra, host,
                              "cd {cwd} && {env} {command}"],
                             False if shared is None else shared, name)
    if not image:
        raise LauncherError(f"the {name} launcher needs an image")
    if name in ("docker", "podman"):
        return make_launcher([name, "run", "--rm", "--name={jobname}", *extra,
                              "-v", "{cwd}:{cwd}", "-v", "{dump}:{dump}", "-w", "{cwd}",
                              image, "{command}"], True, name)
    return make_launcher(["apptainer", "exec", *extra, "--bind", "{cwd}", "--bind", "{dump}",
                          "--pwd", "{cwd}", image, "{command}"], True, name)


def launcher_from_options(preset: str | None = None, argv: str | Sequence[str] | None = None,
                          *, args: Sequence[str] | None = None, host: str | None = None,
                          ssh_options: str | Sequence[str] | None = None,
                          image: str | None = None,
                          shared: bool | None = None) -> Launcher | None:
    """The launcher the user described, from the setting ``hlo.recompile.launcher``
    or the options of ``hlo-lsp dump``: ``argv`` (an argument list with
    ``{command}``, or shell words of one) wins; else the ``preset`` with its
    ``args``, ``host``, ``ssh_options`` (a list, or shell words) and ``image``
    (:func:`preset_launcher`); None when neither is given or the preset is
    ``local``. Raises LauncherError as those do."""
    if isinstance(ssh_options, str):
        ssh_options = shlex.split(ssh_options)
    if argv:
        words = shlex.split(argv) if isinstance(argv, str) else list(argv)
        return make_launcher(words, True if shared is None else shared, "custom")
    if not preset:
        return None
    return preset_launcher(preset, args=args, host=host, ssh_options=ssh_options or (),
                           image=image, shared=shared)


# -------------------------------------------------------------- expansion ---

def new_job_name() -> str:
    """A name unique to one run: ``hlo-lsp-`` and 8 hex digits."""
    return f"hlo-lsp-{secrets.token_hex(4)}"


def remote_dump_dir(job_name: str) -> str:
    """Where a launcher without a shared file system has XLA dump, on the remote
    machine: ``/tmp/<job_name>`` (created by the launched command, removed after
    the copy back)."""
    return f"{REMOTE_TMP}/{job_name}"


def _substitute(text: str, values: Mapping[str, str]) -> str:
    return _TOKEN.sub(lambda m: values[m.group(1)] if m.group(1) else m.group()[0], text)


def launched_argv(launcher: Launcher, command: Sequence[str], env: Mapping[str, str],
                  cwd: str, dump: str, job_name: str) -> list[str]:
    """The argument list that runs ``command`` (argv) in ``cwd`` with ``env``
    (the variables that travel: ``NAME -> value``) through ``launcher``, XLA
    dumping into ``dump`` (a path on the machine where the program runs); the
    one place a launcher is expanded (rules in the module docstring).

    An ``ssh`` launcher's shell command line is preceded by
    ``echo hlo-lsp-remote-pgid=$$ >&2; mkdir -p -- DUMP && ``: the remote
    process group, for :func:`cancel_argv`, and the dump directory. A container
    launcher refuses a ``cwd`` or ``dump`` holding ``:`` or ``,`` (the bind
    syntax of ``-v`` / ``--bind`` cannot hold them). Raises LauncherError."""
    if launcher.kind == "container":
        for what, path in (("working directory", cwd), ("dump directory", dump)):
            if ":" in path or "," in path:
                raise LauncherError(f"the {what} {path!r} holds ':' or ',', which a "
                                    f"container bind mount cannot hold")
    uses_env = any("{env}" in a for a in launcher.argv)
    env_words = [f"{k}={v}" for k, v in env.items()]
    words = list(command) if uses_env or not env_words else ["env", *env_words, *command]
    plain = {"cwd": cwd, "dump": dump, "jobname": job_name}
    quoted = {k: shlex.quote(v) for k, v in plain.items()}
    quoted["command"] = shlex.join(words)
    quoted["env"] = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    out: list[str] = []
    ssh = launcher.kind == "ssh"  # its command is a line for the remote shell
    for arg in launcher.argv:
        if arg == "{command}" and not ssh:
            out.extend(words)
        elif arg == "{env}" and not ssh:
            out.extend(env_words)
        elif "{command}" in arg:
            line = _substitute(arg, quoted)
            if ssh:
                line = (f"echo {PGID_MARK}$$ >&2; mkdir -p -- {shlex.quote(dump)} && "
                        + line)
            out.append(line)
        else:
            out.append(_substitute(arg, plain))
    return out


def ssh_prefix(launcher: Launcher, job_name: str = "") -> list[str]:
    """For an ``ssh`` launcher, the command that reaches its machine: the
    arguments before the shell command line (``ssh [options] host``), the last
    one the destination. Raises LauncherError for another kind."""
    if launcher.kind != "ssh" or not launcher.is_shell():
        raise LauncherError("only an ssh launcher whose last argument is the remote "
                            "command line reaches a remote machine")
    i = launcher.command_index()
    if i < 2:
        raise LauncherError("the ssh launcher names no host before the command line")
    return [_substitute(a, {"jobname": job_name, "cwd": "", "dump": ""})
            for a in launcher.argv[:i]]


def copy_back_argv(launcher: Launcher, remote_dir: str, local_dir: str,
                   tool: str | None = None) -> list[str]:
    """The command that copies the files of ``remote_dir`` (on the ssh
    launcher's machine) into the existing local directory ``local_dir``:
    ``rsync -a -s -e 'ssh OPTIONS' HOST:REMOTE/ LOCAL/`` when rsync is on PATH
    (or ``tool="rsync"``), else ``scp -r -q OPTIONS HOST:REMOTE/. LOCAL``
    (ssh's ``-p PORT`` passed as scp's ``-P PORT``). Raises LauncherError for a
    launcher that is not ssh."""
    prefix = ssh_prefix(launcher)
    ssh, host = prefix[:-1], prefix[-1]
    tool = tool or ("rsync" if shutil.which("rsync") else "scp")
    if tool == "rsync":
        return ["rsync", "-a", "-s", "-e", shlex.join(ssh), f"{host}:{remote_dir}/",
                f"{local_dir.rstrip('/')}/"]
    options: list[str] = []
    words = ssh[1:]
    i = 0
    while i < len(words):
        w = words[i]
        if w == "-p" and i + 1 < len(words):
            options += ["-P", words[i + 1]]
            i += 2
            continue
        if w.startswith("-p") and len(w) > 2 and w[2:].isdigit():
            options.append("-P" + w[2:])
        else:
            options.append(w)
        i += 1
    return ["scp", "-r", "-q", *options, f"{host}:{remote_dir}/.", local_dir]


def remote_cleanup_argv(launcher: Launcher, remote_dir: str) -> list[str]:
    """The command that removes ``remote_dir`` on the ssh launcher's machine."""
    return [*ssh_prefix(launcher), f"rm -rf -- {shlex.quote(remote_dir)}"]


# ------------------------------------------------------------------ stages ---

@dataclass(frozen=True)
class Stage:
    """A step of a launched run: ``name`` is "queued" (waiting in SLURM),
    "running" or "copying back"; ``job`` the SLURM job id, or the remote
    process group id over ssh (None when not known)."""

    name: str
    job: str | None = None
    kind: str = ""

    def message(self) -> str:
        """One line for the progress report, e.g. ``queued in SLURM (job 12)``."""
        if self.kind == "slurm" and self.job:
            where = {"queued": "queued in SLURM", "running": "running in SLURM"}.get(
                self.name, self.name)
            return f"{where} (job {self.job})"
        if self.kind == "ssh" and self.job and self.name == "running":
            return f"running over ssh (remote process group {self.job})"
        return self.name


def parse_stage(launcher: Launcher, line: str) -> Stage | None:
    """The stage a line of the launcher's output (stderr) announces, or None:
    for SLURM ``srun: job N queued and waiting for resources`` (queued) and
    ``srun: job N has been allocated resources`` / ``srun: jobid N: ...``
    (running); for ssh the ``hlo-lsp-remote-pgid=N`` line of
    :func:`launched_argv` (running, ``job`` the process group)."""
    kind = launcher.kind
    if kind == "slurm":
        m = _QUEUED.match(line)
        if m:
            return Stage("queued", m.group(1), kind)
        m = _ALLOCATED.match(line)
        if m:
            return Stage("running", m.group(1) or m.group(2), kind)
    elif kind == "ssh":
        m = _PGID.match(line.strip())
        if m:
            return Stage("running", m.group(1), kind)
    return None


def cancel_argv(launcher: Launcher, job_name: str, job: str | None) -> list[str] | None:
    """The command that stops the run on the remote side, or None when stopping
    the local process tree is enough (apptainer, custom launchers) or nothing
    is known yet (ssh before the remote shell said its process group):

    - SLURM: ``scancel JOB``, or ``scancel --name=JOBNAME`` before the job id
      was printed;
    - ssh: ``ssh ... HOST 'kill -TERM -- -PGID; sleep 1; kill -KILL -- -PGID'``
      (the remote shell's process group: the program and its children);
    - docker / podman: ``TOOL kill JOBNAME`` (the container's name)."""
    kind = launcher.kind
    if kind == "slurm":
        return ["scancel", job] if job else ["scancel", f"--name={job_name}"]
    if kind == "ssh" and job and job.isdigit():
        return [*ssh_prefix(launcher, job_name),
                f"kill -TERM -- -{job} 2>/dev/null; sleep 1; "
                f"kill -KILL -- -{job} 2>/dev/null; true"]
    if kind == "container" and os.path.basename(launcher.argv[0]) in ("docker", "podman") \
            and any("{jobname}" in a for a in launcher.argv):
        return [launcher.argv[0], "kill", job_name]
    return None


__all__ = ["DEFAULT_ARGS", "Launcher", "LauncherError", "PLACEHOLDERS", "PRESETS", "Stage",
           "cancel_argv", "checked_name", "copy_back_argv", "launched_argv",
           "launcher_from_options", "make_launcher", "new_job_name", "parse_stage",
           "preset_launcher", "remote_cleanup_argv", "remote_dump_dir", "ssh_prefix"]
