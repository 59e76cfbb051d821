"""What the analysis reads from beside a dump, with caches and explicit
invalidation: the buffer assignment XLA wrote (``*-buffer-assignment.txt``,
:mod:`hlo_lsp.dump.reports`), the deviceless statement
(:func:`hlo_lsp.dump.targets.deviceless_statement`), the directories the
dump's Python paths are looked for in (:func:`hlo_lsp.dump.sources.source_dirs`,
which reads its recipe), XLA:GPU's priority-fusion log
(:func:`hlo_lsp.dump.fusion_dump.fusion_dump_beside`), the kernels of the
dump's PTX and LLVM IR (:func:`hlo_lsp.dump.kernels.read_kernels`) and a
module's ``*.debug_options`` (:func:`hlo_lsp.dump.experiments.read_debug_options`,
for the experiments' code actions). Read off
the event loop; an answer older than its cache period is still given at once
while it is read again in the background (:class:`Refreshed`), so a hover never
waits for a thread once a dump's inputs are known. :meth:`DumpInputs.forget`
drops what was read for a file that changed on disk (the server's file-change
events; the PTX and LLVM IR files are not watched: their kernels are read again
after :data:`FUSION_TTL_S`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from hlo_lsp.analysis.profiles import ProfileInput
from hlo_lsp.analysis.refreshed import Refreshed
from hlo_lsp.dump.autotuning import AutotuneFile, read_dump_autotuning
from hlo_lsp.dump.experiments import debug_options_path, read_debug_options
from hlo_lsp.dump.file_summary import stat_key
from hlo_lsp.dump.fusion_dump import FusionDump, fusion_dump_beside, names_at_fusion
from hlo_lsp.dump.kernels import KernelIndex, kernel_instruction, kernel_origin, read_kernels
from hlo_lsp.dump.passes import FileHistory
from hlo_lsp.dump.reports import (BufferAssignment, cached_buffer_assignment_for,
                                  load_buffer_assignment_for)
from hlo_lsp.dump.sources import source_dirs, trusted_roots
from hlo_lsp.dump.targets import deviceless_statement
from hlo_lsp.features.fusion_decisions import kernel_origin_markdown
from hlo_lsp.model.spans import FileTarget

#: How long the deviceless statement of a dump is kept before it is read again
#: (seconds): a record written by a recompile is seen within about this time.
DEVICELESS_TTL_S = 5.0
#: How long the Python source directories of a dump are kept (seconds): a recipe
#: written by a recompile is seen within this time.
SOURCE_DIRS_TTL_S = 5.0
#: How long the priority-fusion log and the kernels of a dump are kept (seconds)
#: when no file-change event says they changed.
FUSION_TTL_S = 30.0
#: At most this many after-optimizations files keep the log's names the matcher
#: found for them (:meth:`DumpInputs.fusion_dump`).
MAX_RENAMED = 16
#: A source root setting: one directory, a list, or None.
SourceRoot = str | Sequence[str] | None


@dataclass(frozen=True)
class HoverInputs:
    """What hover needs beside the model: the buffer assignment (None without
    one), the deviceless statement (None for a dump made on a device), the
    directories relative Python paths are looked for in, the trusted source
    roots, the device (a target name, or None), the dump's profile
    (:meth:`hlo_lsp.analysis.profiles.Profiles.for_file`; None without one) and
    its priority-fusion log (:meth:`DumpInputs.fusion_dump`; None without one)."""

    assignment: BufferAssignment | None
    deviceless: str | None
    source_dirs: list[str]
    source_roots: list[str]
    device: str | None
    profile: ProfileInput | None = None
    fusion: FusionDump | None = None
    #: the dump's autotuning files (:meth:`DumpInputs.autotuning`)
    autotuning: tuple[AutotuneFile, ...] = ()
    #: the file's pass history (:meth:`hlo_lsp.analysis.pass_history.PassHistories.for_hover`)
    passes: FileHistory | None = None


class DumpInputs:
    """The files beside a dump that answers read, cached per dump directory."""

    def __init__(self, deviceless_ttl: float = DEVICELESS_TTL_S,
                 source_dirs_ttl: float = SOURCE_DIRS_TTL_S) -> None:
        #: dump directory -> the deviceless statement (or None)
        self._deviceless = Refreshed(deviceless_ttl)
        #: (dump directory, workspace folders, source root) -> the source directories
        self._source_dirs = Refreshed(source_dirs_ttl)
        #: dump file -> its module's priority-fusion log (or None)
        self._fusion = Refreshed(FUSION_TTL_S)
        #: dump file -> (the log read, the stats of both files, the log with
        #: ``renamed`` set): the matcher's names, kept while neither file changes
        self._renamed: dict[str, tuple] = {}
        #: dump file -> its module's kernels
        self._kernels = Refreshed(FUSION_TTL_S)
        #: dump directory -> its autotuning files, read
        self._autotuning = Refreshed(deviceless_ttl)
        #: a module's ``*.debug_options`` file -> its flags
        self._debug_options = Refreshed(deviceless_ttl)

    async def buffer_assignment(self, path: str) -> BufferAssignment | None:
        """The buffer assignment beside the dump file ``path``: from the cache
        of :mod:`hlo_lsp.dump.reports` when known (hovers while typing do not
        wait for a thread), else read in a thread."""
        known, assignment = cached_buffer_assignment_for(path)
        if not known:
            assignment = await asyncio.to_thread(load_buffer_assignment_for, path)
        return assignment

    async def deviceless(self, path: str) -> str | None:
        """What hover says of a dump compiled for a GPU without it (the
        directory of ``path``), None for one made on a device or no path."""
        if not path:
            return None
        return await self._deviceless.get(os.path.dirname(path), deviceless_statement, path)

    async def autotuning(self, path: str) -> tuple[AutotuneFile, ...]:
        """The autotuning files of the dump directory of ``path``, read
        (:func:`hlo_lsp.dump.autotuning.read_dump_autotuning`); () for no path."""
        if not path:
            return ()
        return await self._autotuning.get(os.path.dirname(path), read_dump_autotuning,
                                          os.path.dirname(path))

    async def debug_options(self, path: str) -> Mapping[str, str]:
        """The flags of the compile of the module of the dump file ``path`` that
        differ from XLA's defaults (:func:`hlo_lsp.dump.experiments.read_debug_options`:
        field -> value; empty without a ``*.debug_options`` file), read in a thread
        and kept per module file like the deviceless record (read again in the
        background after :data:`DEVICELESS_TTL_S`, forgotten when a file of the
        dump directory changes); not to be changed by the caller. Empty for
        no path or a file whose name is not a dump file's."""
        where = debug_options_path(path) if path else None
        if where is None:
            return {}
        return await self._debug_options.get(where, read_debug_options, path)

    async def source_dirs(self, path: str | None, folders: Sequence[str],
                          source_root: SourceRoot) -> list[str]:
        """Where relative Python paths in the metadata of the dump file ``path``
        are looked for, given the workspace ``folders`` and the ``sourceRoot``
        setting: the one answer for hover, definition, documentLink and recipe
        inference (:func:`hlo_lsp.dump.sources.source_dirs`). It reads the
        dump's recipe and stats directories, so it runs off the event loop (a
        recipe file could be a FIFO); the answer is kept per dump directory,
        folders and source root, read again in the background after
        :data:`SOURCE_DIRS_TTL_S`."""
        key = (os.path.dirname(path or ""), tuple(folders), str(source_root))
        return await self._source_dirs.get(key, source_dirs, path, list(folders), source_root)

    async def fusion_dump(self, path: str) -> FusionDump | None:
        """The priority-fusion log of the module of the dump file ``path``
        (:func:`hlo_lsp.dump.fusion_dump.fusion_dump_beside`: None without one,
        its ``problem`` set when it cannot be read), read in a thread and kept,
        with ``renamed`` set: the log's names of the instructions renamed since
        priority fusion (:func:`hlo_lsp.dump.fusion_dump.names_at_fusion`, the
        rename-robust matcher; bounded by
        :data:`~hlo_lsp.dump.fusion_dump.MAX_MATCH_BYTES`), found once per
        version of the two files (their stats; a log read again after
        :data:`FUSION_TTL_S` is not matched again), for at most
        :data:`MAX_RENAMED` files."""
        if not path:
            return None
        dump = await self._fusion.get(path, fusion_dump_beside, path)
        if dump is None or dump.problem:
            return dump
        stats = (stat_key(path), stat_key(dump.path))
        known = self._renamed.get(path)
        if known is not None and known[0] is dump and known[1] == stats:
            return known[2]
        if known is not None and known[1] == stats:
            renamed = known[2].renamed
        else:
            renamed = await asyncio.to_thread(names_at_fusion, path, dump)
        named = dataclasses.replace(dump, renamed=renamed)
        self._renamed.pop(path, None)
        self._renamed[path] = (dump, stats, named)
        while len(self._renamed) > MAX_RENAMED:
            self._renamed.pop(next(iter(self._renamed)))
        return named

    async def kernels(self, path: str) -> KernelIndex | None:
        """The kernels in the PTX and LLVM IR of the module of the dump file
        ``path`` (:func:`hlo_lsp.dump.kernels.read_kernels`; empty but for an
        after-optimizations file), read in a thread and kept."""
        if not path:
            return None
        return await self._kernels.get(path, read_kernels, path)

    async def kernel_origin(self, path: str, line: int) -> FileTarget | None:
        """The HLO instruction whose kernel is defined on the 0-based ``line`` of
        the PTX or LLVM IR file ``path`` (:func:`hlo_lsp.dump.kernels.kernel_origin`),
        read in a thread; None when the line defines no kernel, the module's
        after-optimizations file or the instruction is not found, or a file
        cannot be read. Not cached: one definition request, two reads."""
        try:
            got = await asyncio.to_thread(kernel_origin, path, line)
        except OSError:  # UntrustedFileError: unreadable, not regular, too large
            return None
        if got is None:
            return None
        hlo, row, start, end = got
        return FileTarget(hlo, row + 1, start + 1, row + 1, end + 1)

    async def kernel_hover(self, path: str, line: int) -> str | None:
        """The hover of the 0-based ``line`` of the PTX or LLVM IR file ``path``:
        on a kernel's ``.entry`` or ``define``, the HLO instruction it was
        generated for (:func:`hlo_lsp.features.fusion_decisions.kernel_origin_markdown`);
        None on any other line, without that instruction, or when a file cannot
        be read. Read in a thread, not cached."""
        try:
            got = await asyncio.to_thread(kernel_instruction, path, line)
        except OSError:  # UntrustedFileError: unreadable, not regular, too large
            return None
        return None if got is None else kernel_origin_markdown(got)

    @staticmethod
    def source_roots(path: str | None, folders: Sequence[str],
                     source_root: SourceRoot) -> list[str]:
        """Where a source file named by the dump file ``path`` may lie without
        hover and the link's tooltip saying so: the dump directory, the source
        roots and the workspace ``folders`` (:func:`hlo_lsp.dump.sources.trusted_roots`;
        a few ``realpath`` calls, not cached)."""
        return trusted_roots(path, list(folders), source_root)

    def forget(self, path: str) -> None:
        """Drop what was read for the directory of ``path`` (a file there
        changed): its deviceless statement, source directories, priority-fusion
        logs, kernels, autotuning files and modules' debug options."""
        dump_dir = os.path.dirname(path)
        self._deviceless.forget(lambda key: key == dump_dir)
        self._source_dirs.forget(lambda key: key[0] == dump_dir)
        self._fusion.forget(lambda key: os.path.dirname(key) == dump_dir)
        for key in [k for k in self._renamed if os.path.dirname(k) == dump_dir]:
            del self._renamed[key]
        self._kernels.forget(lambda key: os.path.dirname(key) == dump_dir)
        self._autotuning.forget(lambda key: key == dump_dir)
        self._debug_options.forget(lambda key: os.path.dirname(key) == dump_dir)
