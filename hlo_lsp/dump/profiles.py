"""Profiles beside a dump: where ``jax.profiler`` wrote them, and their events.

``jax.profiler.trace(DIR)`` (tsl/profiler/rpc/client/save_profile.cc) writes one
directory per capture, ``DIR/plugins/profile/<run>/`` with ``<run>`` the capture's
time (``2026_11_29_06_10_12``), holding ``<host>.xplane.pb`` (the XSpace proto)
and ``<host>.trace.json.gz`` (the same events in the Chrome trace format; with
``create_perfetto_trace=True`` also ``perfetto_trace.json.gz``).

- :func:`find_runs`: the runs under or beside a directory (a dump directory, the
  recipe's working directory, a ``plugins/profile`` folder or a run itself),
  oldest first, without walking whole trees.
- :func:`join_file`: the one join of an HLO file (its path and parsed module)
  with a run's events: the module's :class:`~hlo_lsp.model.profile.ModuleProfile`,
  or the one sentence saying why nothing is shown (another compile, a stage
  XLA does not run, a module the profile did not measure).
- :func:`read_run`: a run's events of XLA instructions (:class:`ProfileTrace`),
  from its xplane (:mod:`hlo_lsp.dump.xplane`, through jax in a worker process)
  or else its trace JSON, read with the standard library alone; which events
  count is :mod:`hlo_lsp.dump.profile_layout`'s rule for both.

Every file here is untrusted input: read through :mod:`hlo_lsp.dump.untrusted`
(regular files only, size limits, a gzip stream limited after decompression
too), and a file that is not a profile is one :class:`ProfileError` naming the
file and the reason, never a traceback. These functions block on the disk:
callers run them off the event loop.
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from dataclasses import dataclass

from hlo_lsp.dump.names import AFTER_OPTIMIZATIONS, module_id, parse_dump_name
from hlo_lsp.dump.profile_layout import RawEvent, instruction_events
from hlo_lsp.dump.untrusted import UntrustedFileError, open_regular, read_bytes
from hlo_lsp.dump.profile_data import MAX_PROFILE_BYTES, ProfileError, ProfileTrace
from hlo_lsp.model.hlo import HloModule
from hlo_lsp.model.profile import ModuleProfile, identify

#: The file names a run holds.
XPLANE_SUFFIX = ".xplane.pb"
TRACE_SUFFIXES = (".trace.json.gz", ".trace.json")
#: Every profile file's suffix.
PROFILE_SUFFIXES = (XPLANE_SUFFIX, *TRACE_SUFFIXES)
#: The files a client watches for new or changed captures.
PROFILE_GLOBS = tuple(f"**/plugins/profile/*/*{suffix}" for suffix in PROFILE_SUFFIXES)

#: How deep under a directory runs are looked for: the directory itself and its
#: children (``DUMP/prof/plugins/profile/<run>``), never a whole tree.
_PLUGINS = os.path.join("plugins", "profile")


@dataclass(frozen=True, slots=True)
class ProfileRun:
    """One capture of ``jax.profiler``: ``path`` (its directory), ``name`` (the
    directory's name, the capture time) and ``files`` (its xplane and trace
    files, absolute paths, preferred first)."""

    path: str
    name: str
    files: tuple[str, ...]


def _run_files(path: str) -> tuple[str, ...]:
    try:
        names = sorted(os.listdir(path))
    except (OSError, ValueError):  # ValueError: a path with a NUL character
        return ()
    xplanes = [n for n in names if n.endswith(XPLANE_SUFFIX)]
    traces = [n for n in names if n.endswith(TRACE_SUFFIXES) and not n.startswith("perfetto")]
    # The xplane first: it keeps program_id, the module's identity (the trace
    # JSON drops it); the trace JSON when the xplane cannot be read.
    return tuple(os.path.join(path, n) for n in xplanes + traces)


def run_at(path: str | os.PathLike) -> ProfileRun | None:
    """The run in directory ``path`` when it holds a profile file, else None."""
    path = os.path.abspath(os.fspath(path))
    files = _run_files(path)
    return ProfileRun(path, os.path.basename(path), files) if files else None


def _runs_in_plugins(plugins: str) -> list[ProfileRun]:
    try:
        entries = sorted(os.listdir(plugins))
    except (OSError, ValueError):  # ValueError: a path with a NUL character
        return []
    runs = (run_at(os.path.join(plugins, e)) for e in entries)
    return [r for r in runs if r is not None]


def find_runs(directory: str | os.PathLike) -> list[ProfileRun]:
    """The profile runs of ``directory``, oldest first (by run name, which is the
    capture time, then path): ``directory`` itself when it is a run, the runs of
    ``directory/plugins/profile/`` (or of ``directory`` when it is that folder),
    and those of each child's ``plugins/profile/`` (a profile written into
    ``DUMP/prof`` or beside the dump's files). [] when there is none or the
    directory cannot be listed."""
    directory = os.path.abspath(os.fspath(directory))
    own = run_at(directory)
    if own is not None:
        return [own]
    found: dict[str, ProfileRun] = {}
    candidates = [directory, os.path.join(directory, _PLUGINS)]
    try:
        children = sorted(e.path for e in os.scandir(directory) if e.is_dir(follow_symlinks=False))
    except (OSError, ValueError):  # ValueError: a path with a NUL character
        children = []
    candidates += [os.path.join(c, _PLUGINS) for c in children]
    for plugins in candidates:
        for run in _runs_in_plugins(plugins):
            found.setdefault(run.path, run)
    return sorted(found.values(), key=lambda r: (r.name, r.path))


def newest_run(runs: list[ProfileRun]) -> ProfileRun | None:
    """The latest capture of ``runs`` (the last by name; names are times)."""
    return runs[-1] if runs else None


def read_run(run: ProfileRun, limit: int = MAX_PROFILE_BYTES) -> ProfileTrace:
    """The XLA instructions measured in ``run``, from the first of its files
    that can be read: its xplane (through jax, with ``program_id``), else its
    trace JSON (jax not installed, or an xplane that cannot be read). Raises
    :class:`ProfileError` when no file of the run can be read (naming the last
    reason)."""
    error: ProfileError | None = None
    for path in run.files:
        try:
            return read_profile_file(path, limit)
        except ProfileError as exc:
            error = exc
    raise error or ProfileError(run.path, "no profile file (*.xplane.pb, *.trace.json.gz)")


def read_profile_file(path: str, limit: int = MAX_PROFILE_BYTES) -> ProfileTrace:
    """One profile file by its suffix: ``.xplane.pb`` through
    :func:`hlo_lsp.dump.xplane.read_xplane` (a worker process running jax),
    ``.trace.json.gz`` and ``.trace.json`` with :func:`read_trace_json`. Raises
    :class:`ProfileError`."""
    if path.endswith(XPLANE_SUFFIX):
        from hlo_lsp.dump.xplane import read_xplane

        return read_xplane(path, limit)
    return read_trace_json(path, limit)


def _read_json_bytes(path: str, limit: int) -> bytes:
    try:
        if not path.endswith(".gz"):
            return read_bytes(path, limit)
        with open_regular(path) as raw:
            if os.fstat(raw.fileno()).st_size > limit:
                raise ProfileError(path, f"larger than {limit >> 20} MiB")
            with gzip.GzipFile(fileobj=raw) as f:
                data = f.read(limit + 1)
    except UntrustedFileError as exc:
        raise ProfileError(path, exc.reason) from None
    except (gzip.BadGzipFile, zlib.error, EOFError) as exc:
        raise ProfileError(path, f"not a gzip file that can be read ({exc or 'cut short'})") from None
    except OSError as exc:
        raise ProfileError(path, exc.strerror or str(exc)) from None
    if len(data) > limit:
        raise ProfileError(path, f"decompresses to more than {limit >> 20} MiB")
    return data


def read_trace_json(path: str, limit: int = MAX_PROFILE_BYTES) -> ProfileTrace:
    """The XLA instructions measured in a Chrome trace JSON (``.trace.json.gz``
    as ``jax.profiler`` writes it, or plain): the complete events (``"ph":
    "X"``) whose ``args`` carry ``hlo_op`` and ``hlo_module``, chosen and merged
    by :func:`hlo_lsp.dump.profile_layout.instruction_events` (derived lines
    left out, kernel fragments merged); ``ts``/``dur`` in µs; the process's
    ``process_name`` metadata is the device (``/host:CPU``, ``/device:GPU:0``),
    its ``thread_name`` the line, a track is one ``pid``/``tid``. Raises
    :class:`ProfileError` for a file that cannot be read or is not such a
    trace."""
    data = _read_json_bytes(path, limit)
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise ProfileError(path, f"not a trace: not JSON ({str(exc).splitlines()[0][:80]})") from None
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc if isinstance(doc, list) else None
    if not isinstance(events, list):
        raise ProfileError(path, "not a trace: no traceEvents list")
    processes: dict[object, str] = {}
    threads: dict[tuple[object, object], str] = {}
    for e in events:
        if isinstance(e, dict) and e.get("ph") == "M" and e.get("name") in (
                "process_name", "thread_name"):
            args = e.get("args")
            if isinstance(args, dict) and isinstance(args.get("name"), str):
                if e["name"] == "process_name":
                    processes[_key(e.get("pid"))] = args["name"]
                else:
                    threads[(_key(e.get("pid")), _key(e.get("tid")))] = args["name"]
    raw: list[RawEvent] = []
    skipped = 0
    for e in events:
        if not isinstance(e, dict):
            continue
        args = e.get("args")
        if not isinstance(args, dict) or "hlo_op" not in args:
            continue
        if e.get("ph") != "X":
            skipped += 1
            continue
        pid, tid = _key(e.get("pid")), _key(e.get("tid"))
        raw.append(RawEvent(processes.get(pid, ""), threads.get((pid, tid), ""),
                            f"{pid}/{tid}", e.get("name"), e.get("ts"), e.get("dur"), args))
    out, unread = instruction_events(raw)
    devices = tuple(dict.fromkeys(e.device for e in out if e.device))
    return ProfileTrace(path, tuple(out), devices, skipped + unread)


def _key(value: object) -> object:
    """A pid or tid as a dictionary key (a list or dict from a hostile file is
    not hashable)."""
    return value if isinstance(value, (int, float, str)) or value is None else repr(value)


@dataclass(frozen=True, slots=True)
class FileProfile:
    """The measured times of one HLO file's module from one profile.

    ``run``: the capture; ``source``: the profile file read. ``measured``: the
    module's per-instruction times (µs), None when nothing is shown, and then
    ``message`` says why in one sentence (another compile of a module of the
    same name, a stage XLA does not execute, a module the profile did not
    measure). ``device``: the plane the module ran on (``/host:CPU``,
    ``/device:GPU:0``), "" when unknown. ``refused``: the profile measured a
    module of this name from another compile (the message names both).
    """

    run: ProfileRun
    source: str
    measured: ModuleProfile | None
    message: str = ""
    device: str = ""
    refused: bool = False


def prepare_join(trace: ProfileTrace, path: str) -> None:
    """Make the joins :func:`join_file` will ask of ``trace`` for the dump file
    ``path`` (its module name and number from the file name), so that a later
    join costs a pass over the module's instructions only. Blocks: a pass over
    every event."""
    dump = parse_dump_name(os.path.basename(path))
    if dump is None or dump.module_name not in trace.modules:
        return
    everything = trace.measure(dump.module_name)
    if everything is not None and dump.number in everything.program_ids:
        trace.measure(dump.module_name, dump.number)


def join_file(module: HloModule, path: str, run: ProfileRun, trace: ProfileTrace) -> FileProfile:
    """Join ``trace`` (read from ``run``) to the module of the HLO file ``path``.

    Only a module as XLA executes it can be measured: a dump's
    ``*after_optimizations.txt`` (or a file whose name is not a dump's, judged
    by its instructions). The module is found by name (``HloModule jit_f``);
    when the profile knows XLA's ``program_id`` and the file name its number
    (``module_0006``), the measurements of that compile only are joined and a
    profile of another compile is refused; without ids, by the instruction set
    (:func:`hlo_lsp.model.profile.identify`). Never raises."""
    label = os.path.basename(path)
    name = module.name.name if module.name is not None else ""
    dump = parse_dump_name(label)
    if dump is not None and dump.stage != AFTER_OPTIMIZATIONS:
        return FileProfile(run, trace.path, None,
                           f"{label} is not the module XLA runs (measured times are of "
                           "the after-optimizations file)")
    if not name or name not in trace.modules:
        measured_names = trace.modules
        shown = ", ".join(measured_names[:4]) + (" ..." if len(measured_names) > 4 else "")
        return FileProfile(run, trace.path, None,
                           f"the profile {run.name} did not measure {name or label}"
                           + (f" (it measured {shown})" if shown else " (no XLA instruction in it)"))
    number = dump.number if dump is not None else None
    everything = trace.measure(name)
    program = number if number is not None and everything and number in everything.program_ids \
        else None
    measured = trace.measure(name, program) if program is not None else everything
    assert measured is not None
    names = [i.name.name for c in module.computations for i in c.instructions]
    verdict = identify(measured, names, number,
                       f"{module_id(number)}.{name}" if number is not None else label)
    device = measured.devices[0] if measured.devices else ""
    if not verdict.same:
        return FileProfile(run, trace.path, None, verdict.reason, device, refused=True)
    return FileProfile(run, trace.path, measured, "", device)


__all__ = ["MAX_PROFILE_BYTES", "PROFILE_GLOBS", "PROFILE_SUFFIXES", "FileProfile", "ProfileError",
           "ProfileRun", "ProfileTrace", "find_runs", "join_file", "newest_run", "prepare_join", "read_profile_file", "read_run",
           "read_trace_json", "run_at"]
