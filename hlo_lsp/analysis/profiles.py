"""Profiles as inputs of a dump directory: which capture of ``jax.profiler``
applies to an open dump, read off the event loop and cached, and the one join
of its events to a document's module per analysis.

Which run applies to the dump file ``path`` (first that holds one):

1. the run loaded for its directory with the ``hlo.loadProfile`` command
   (:meth:`Profiles.load`: *HLO: Load Profile...*, ``:HloProfile``);
2. the newest run of the ``hlo.profile`` setting's directory;
3. the newest run beside the dump: under its directory
   (:func:`hlo_lsp.dump.profiles.find_runs`), else under its parent (a profile
   written next to the dump directory, ``work/prof`` beside ``work/dump``),
   else under the working directory of the dump's recipe.

A run's files are read in a thread (:func:`asyncio.to_thread`), once however
many ask meanwhile, and kept by ``(path, mtime, size)``; an answer waits for a
first read at most :data:`FIRST_READ_WAIT_S` and then goes on without it
(``arrived`` is called when it is done). Every profile file is untrusted
input: one that cannot be read is told to the user once (``tell``, one line
naming the file and the reason) while the run's other file is used when it
reads. The join of a run with a document (:func:`hlo_lsp.dump.profiles.join_file`) is kept on the
analysis's module, so it is made once per edit.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from hlo_lsp.analysis.refreshed import Refreshed
from hlo_lsp.dump.file_summary import stat_key
from hlo_lsp.dump.names import AFTER_OPTIMIZATIONS, parse_dump_name
from hlo_lsp.dump.profiles import (PROFILE_SUFFIXES, FileProfile, ProfileError, ProfileRun,
                                   ProfileTrace, find_runs, join_file, newest_run,
                                   prepare_join, read_profile_file, run_at)
from hlo_lsp.dump.recipe import RecipeError, load_recipe
from hlo_lsp.model.hlo import HloModule

#: How many profile files are kept read (the events of a long capture are
#: tens of MB in memory).
MAX_TRACES = 4
#: How long an answer waits for the first read of a dump's profile (seconds):
#: a small profile shows in the first hover; a large one (seconds per 100,000
#: events) does not hold the editor up, and shows once read.
FIRST_READ_WAIT_S = 2.0
#: How long the run that applies to a dump file is kept before it is looked for
#: again (seconds): a new capture is seen within about this time.
PROFILE_TTL_S = 5.0


@dataclass(frozen=True, slots=True)
class ProfileInput:
    """The profile that applies to the dump file ``path``: the ``run`` and what
    was read of it (``trace``), whose file version is ``version`` (path,
    mtime in ns, size)."""

    path: str
    run: ProfileRun
    trace: ProfileTrace
    version: tuple


def _identity(path: str) -> tuple[str, int, int] | None:
    """``(path, mtime_ns, size)`` of a profile file, None when it cannot be
    looked at (:func:`hlo_lsp.dump.file_summary.stat_key`)."""
    key = stat_key(path)
    return None if key is None else (path, *key)


def measurable(path: str) -> bool:
    """Whether a profile can measure the module of the file ``path``: a dump's
    after-optimizations file, or a file not named as a dump's (judged later by
    its instructions); not a before-optimizations file or a pass snapshot,
    whose instructions XLA does not run as such."""
    dump = parse_dump_name(os.path.basename(path))
    return dump is None or dump.stage == AFTER_OPTIMIZATIONS


def runs_near(path: str, directory: str | None, setting: str) -> list[ProfileRun]:
    """The runs that may apply to the dump file ``path``, oldest first: those
    of ``directory`` when given, else of the ``setting``'s directory when set,
    else those beside the dump (its directory, then its parent, then the
    working directory of its recipe). Blocks on the disk (a few directory
    listings)."""
    if directory:
        return find_runs(os.path.expanduser(directory))
    if setting:
        return find_runs(os.path.expanduser(setting))
    dump_dir = os.path.dirname(os.path.abspath(path)) if path else ""
    if not dump_dir:
        return []
    return find_runs(dump_dir) or find_runs(os.path.dirname(dump_dir)) or \
        _recipe_runs(dump_dir)


def _recipe_runs(dump_dir: str) -> list[ProfileRun]:
    """The runs under the working directory of the dump's recipe (a program
    that calls ``jax.profiler.trace("prof")`` writes there); [] without a
    usable recipe."""
    try:
        recipe = load_recipe(dump_dir)
    except RecipeError:
        return []
    return find_runs(recipe.cwd) if recipe is not None and recipe.cwd else []


def read_first(run: ProfileRun) -> tuple[ProfileTrace | None, list[ProfileError]]:
    """The first file of ``run`` that reads (preferred first), and the errors of
    the files tried before it, or of all when none reads. Blocks on the disk."""
    errors: list[ProfileError] = []
    for file in run.files:
        try:
            return read_profile_file(file), errors
        except ProfileError as exc:
            errors.append(exc)
    return None, errors


class _Traces:
    """The profile files read, by ``(path, mtime_ns, size)``, at most
    :data:`MAX_TRACES`, the oldest used dropped first; used from threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._read: OrderedDict[tuple, ProfileTrace] = OrderedDict()
        #: run directory -> the lock its read holds
        self._runs: dict[str, threading.Lock] = {}

    def read(self, run: ProfileRun) -> tuple[ProfileTrace | None, tuple, list[ProfileError]]:
        """``(trace, version, errors)`` of ``run``'s first file that reads
        (:func:`read_first`), from the cache when its version was read; one
        read of a run at a time (threads asking meanwhile wait for it and take
        its answer). Blocks."""
        with self._lock:
            run_lock = self._runs.setdefault(run.path, threading.Lock())
        with run_lock:
            return self._read_once(run)

    def _read_once(self, run: ProfileRun) -> tuple[ProfileTrace | None, tuple,
                                                   list[ProfileError]]:
        for file in run.files:
            key = _identity(file)
            with self._lock:
                if key is not None and key in self._read:
                    self._read.move_to_end(key)
                    return self._read[key], key, []
        trace, errors = read_first(run)
        if trace is None:
            return None, (), errors
        key = _identity(trace.path) or (trace.path,)
        with self._lock:
            self._read[key] = trace
            while len(self._read) > MAX_TRACES:
                self._read.popitem(last=False)
        return trace, key, errors

    def forget(self, path: str) -> None:
        with self._lock:
            for key in [k for k in self._read if k[0] == path]:
                del self._read[key]


class Profiles:
    """The profiles of the open dumps; see the module docstring. ``tell(text)``
    shows the user one line (a file that cannot be read, said once per file
    version). Which run applies to a dump file is kept for
    :data:`PROFILE_TTL_S` and then looked for again in the background, so a
    hover waits for the disk only the first time."""

    def __init__(self, tell: Callable[[str], None] | None = None,
                 ttl: float = PROFILE_TTL_S) -> None:
        self.tell = tell or (lambda text: None)
        #: called when a profile read after its answer's wait is done
        self.arrived: Callable[[], None] = lambda: None
        #: the keys whose first read outlasted its wait, watched by :meth:`_late`
        self._awaited: set[tuple] = set()
        #: dump directory -> the run loaded for it by command
        self._loaded: dict[str, str] = {}
        self._traces = _Traces()
        #: (dump file, setting, loaded run) -> (ProfileInput | None, errors)
        self._inputs = Refreshed(ttl)
        #: (file, mtime_ns, size) of the files whose problem was told
        self._told: set[tuple] = set()

    async def runs(self, path: str, directory: str | None,
                   setting: str) -> tuple[list[ProfileRun], str | None, str]:
        """``(runs, loaded, message)`` for the choice of a run for the dump file
        ``path``: the runs of ``directory`` (else of the setting, else beside
        the dump; :func:`runs_near`), oldest first, the run loaded for the dump's
        directory (None), and a sentence when there is none."""
        runs = await asyncio.to_thread(runs_near, path, directory, setting)
        loaded = self._loaded.get(os.path.dirname(path))
        if runs:
            return runs, loaded, ""
        where = directory or setting or os.path.dirname(path) or "."
        return [], loaded, (f"No profile in {where}: jax.profiler.trace(DIR) writes "
                            "DIR/plugins/profile/<run>/*.xplane.pb and *.trace.json.gz")

    async def load(self, path: str, directory: str | None,
                   setting: str) -> tuple[str | None, str]:
        """Use a run for the dump file ``path``'s directory from now on:
        ``directory`` itself when it is a run, else its newest run (without
        ``directory``: the newest near the dump). Returns ``(run path, message)``;
        ``(None, why)`` when there is no run or none of its files reads."""
        run = await asyncio.to_thread(run_at, directory) if directory else None
        if run is None:
            runs, _, message = await self.runs(path, directory, setting)
            run = newest_run(runs)
            if run is None:
                return None, message
        trace, _, errors = await asyncio.to_thread(self._traces.read, run)
        self._say(errors)
        if trace is None:
            return None, f"Profile {run.name} ({run.path}) has no file that can be read"
        dump_dir = os.path.dirname(path)
        self._loaded[dump_dir] = run.path
        self._inputs.forget(lambda key: os.path.dirname(key[0]) == dump_dir)
        modules = trace.modules
        shown = ", ".join(modules[:4]) + (" ..." if len(modules) > 4 else "")
        what = f"{len(trace.events)} measurements of {shown}" if modules else \
            "no XLA instruction measured in it"
        return run.path, f"Profile {run.name} loaded ({run.path}): {what}"

    async def for_file(self, path: str, setting: str) -> ProfileInput | None:
        """The profile that applies to the dump file ``path`` (module docstring),
        read; None when there is none, it cannot be read (told once), the file
        is a stage XLA does not run (before optimizations, a pass snapshot), or
        its first read takes longer than :data:`FIRST_READ_WAIT_S`: then the
        answer goes on without it, and :attr:`arrived` is called when the read
        is done (the server asks the editor to refresh its code lenses)."""
        if not path or not measurable(path):
            return None
        loaded = self._loaded.get(os.path.dirname(path))
        key = (path, setting, loaded)
        found, errors = await self._inputs.get(key, self._lookup, path, setting, loaded,
                                               wait=FIRST_READ_WAIT_S, default=(None, []))
        self._say(errors)
        reading = self._inputs.reading(key)
        if reading is not None and key not in self._awaited:
            self._awaited.add(key)
            reading.add_done_callback(lambda task: self._late(key, task))
        return found

    def pending(self, path: str, setting: str) -> asyncio.Task | None:
        """The first read of ``path``'s profile still under way after its
        answer's wait (await it, then ask :meth:`for_file` again), None when
        there is none."""
        return self._inputs.reading((path, setting, self._loaded.get(os.path.dirname(path))))

    def _late(self, key: tuple, task: asyncio.Task) -> None:
        """A first read that outlasted its wait is done: say its errors, and
        tell :attr:`arrived` when it found a profile."""
        self._awaited.discard(key)
        if task.cancelled() or task.exception() is not None:
            return
        found, errors = task.result()
        self._say(errors)
        if found is not None:
            self.arrived()

    def _lookup(self, path: str, setting: str,
                loaded: str | None) -> tuple[ProfileInput | None, list[ProfileError]]:
        """Blocking: the run for ``path``, read, and its join prepared."""
        run = run_at(loaded) if loaded else None
        if run is None:
            run = newest_run(runs_near(path, None, setting))
        if run is None:
            return None, []
        trace, version, errors = self._traces.read(run)
        if trace is None:
            return None, errors
        prepare_join(trace, path)
        return ProfileInput(path, run, trace, version), errors

    def _say(self, errors: list[ProfileError]) -> None:
        for exc in errors:
            key = _identity(exc.path) or (exc.path,)
            if key not in self._told:
                self._told.add(key)
                self.tell(f"Profile not read: {exc}")

    def forget(self, path: str) -> None:
        """Drop what was read of ``path`` when it is a profile file changed on
        disk: its events, and which run applies to each dump (a new capture
        may be the newest now)."""
        if not path.endswith(PROFILE_SUFFIXES):
            return
        self._traces.forget(path)
        self._inputs.forget(lambda key: True)


def measured_in(module: HloModule, profile: ProfileInput | None) -> FileProfile | None:
    """The join of ``profile`` with ``module`` (the analysis of
    ``profile.path``), made once per module and profile file and kept on the
    module (:meth:`HloModule.remembered`); None without a profile."""
    if profile is None:
        return None
    return module.remembered("profiles", (profile.path, profile.version),
                             lambda: join_file(module, profile.path, profile.run, profile.trace))


__all__ = ["FIRST_READ_WAIT_S", "MAX_TRACES", "PROFILE_TTL_S", "ProfileInput", "Profiles",
           "measurable", "measured_in", "read_first", "runs_near"]
