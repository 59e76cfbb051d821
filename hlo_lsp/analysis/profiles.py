"""Profiles as inputs of a dump directory: which capture of ``jax.profiler``
applies to an open dump, read off the event loop and cached, and the one join
of its events to a document's module per analysis.

Which run applies to the dump file ``path`` (first that holds one):

1. the run loaded for its directory with the ``hlo.loadProfile`` command
   (:meth:`Profiles.load`: *HLO: Load Profile...*, ``:HloProfile``);
2. the newest run of the ``hlo.profile`` setting's directory;
3. the newest run beside the dump: under its directory
   (:func:`hlo_lsp.dump.profiles.find_runs`), else under its parent (a profile
   written next to the dump directory, ``work/prof`` beside ``work/dump``).

A run's files are read in a thread (:func:`asyncio.to_thread`) and kept by
``(path, mtime, size)``; every profile file is untrusted input, and one that
cannot be read is told to the user once (``tell``, one line naming the file and
the reason) while the run's other file is used when it reads. The join of a
run with a document (:func:`hlo_lsp.dump.profiles.join_file`) is kept on the
analysis's module, so it is made once per edit.
"""

from __future__ import annotations

import asyncio
import os
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from hlo_lsp.dump.profiles import (FileProfile, ProfileError, ProfileRun, ProfileTrace,
                                   find_runs, join_file, newest_run, prepare_join,
                                   read_profile_file, run_at)
from hlo_lsp.model.hlo import HloModule

#: How many profile files are kept read (the events of a long capture are
#: tens of MB in memory).
MAX_TRACES = 4


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
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (path, st.st_mtime_ns, st.st_size)


def runs_near(path: str, directory: str | None, setting: str) -> list[ProfileRun]:
    """The runs that may apply to the dump file ``path``, oldest first: those
    of ``directory`` when given, else of the ``setting``'s directory when set,
    else those beside the dump (its directory, then its parent). Blocks on the
    disk (a few directory listings)."""
    if directory:
        return find_runs(os.path.expanduser(directory))
    if setting:
        return find_runs(os.path.expanduser(setting))
    dump_dir = os.path.dirname(os.path.abspath(path)) if path else ""
    if not dump_dir:
        return []
    return find_runs(dump_dir) or find_runs(os.path.dirname(dump_dir))


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


class Profiles:
    """The profiles of the open dumps; see the module docstring. ``tell(text)``
    shows the user one line (a file that cannot be read, said once per file
    version)."""

    def __init__(self, tell: Callable[[str], None] | None = None) -> None:
        self.tell = tell or (lambda text: None)
        #: dump directory -> the run loaded for it by command
        self._loaded: dict[str, str] = {}
        #: (file, mtime_ns, size) -> what was read
        self._traces: OrderedDict[tuple, ProfileTrace] = OrderedDict()
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
        got = await self._read(run)
        if got is None:
            return None, f"Profile {run.path} could not be read (see the message before)"
        trace = got[0]
        self._loaded[os.path.dirname(path)] = run.path
        modules = sorted({e.module for e in trace.events})
        shown = ", ".join(modules[:4]) + (" ..." if len(modules) > 4 else "")
        what = f"{len(trace.events)} measurements of {shown}" if modules else \
            "no XLA instruction measured in it"
        return run.path, f"Profile {run.name} loaded ({run.path}): {what}"

    async def for_file(self, path: str, setting: str) -> ProfileInput | None:
        """The profile that applies to the dump file ``path`` (module docstring),
        read; None when there is none or it cannot be read (told once)."""
        if not path:
            return None
        loaded = self._loaded.get(os.path.dirname(path))
        run = await asyncio.to_thread(run_at, loaded) if loaded else None
        if run is None:
            run = newest_run(await asyncio.to_thread(runs_near, path, None, setting))
        if run is None:
            return None
        got = await self._read(run)
        if got is None:
            return None
        await asyncio.to_thread(prepare_join, got[0], path)
        return ProfileInput(path, run, *got)

    async def _read(self, run: ProfileRun) -> tuple[ProfileTrace, tuple] | None:
        for file in run.files:
            key = await asyncio.to_thread(_identity, file)
            if key is not None and key in self._traces:
                self._traces.move_to_end(key)
                return self._traces[key], key
        trace, errors = await asyncio.to_thread(read_first, run)
        for exc in errors:
            key = await asyncio.to_thread(_identity, exc.path) or (exc.path,)
            if key not in self._told:
                self._told.add(key)
                self.tell(f"Profile not read: {exc}")
        if trace is None:
            return None
        key = await asyncio.to_thread(_identity, trace.path) or (trace.path,)
        self._traces[key] = trace
        while len(self._traces) > MAX_TRACES:
            self._traces.popitem(last=False)
        return trace, key

    def forget(self, path: str) -> None:
        """Drop what was read of the profile file ``path`` (changed on disk)."""
        for key in [k for k in self._traces if k[0] == path]:
            del self._traces[key]


def measured_in(module: HloModule, profile: ProfileInput | None) -> FileProfile | None:
    """The join of ``profile`` with ``module`` (the analysis of
    ``profile.path``), made once per module and profile file and kept on the
    module (:meth:`HloModule.remembered`); None without a profile."""
    if profile is None:
        return None
    return module.remembered("profiles", (profile.path, profile.version),
                             lambda: join_file(module, profile.path, profile.run, profile.trace))


__all__ = ["MAX_TRACES", "ProfileInput", "Profiles", "measured_in", "read_first", "runs_near"]
