"""The dump directory as a workspace, over LSP (docs/protocol.md, "Workspace").

- ``initialized`` / ``workspace/didChangeWorkspaceFolders``: index the HLO files
  of the workspace folders (else the root) in background worker processes
  (:class:`hlo_lsp.dump.index.WorkspaceIndex`), with ``window/workDoneProgress``
  ("indexed 120/500 files") when the client supports it; register a file watcher
  (``**/*.hlo``, ``**/module_*.txt``) with ``client/registerCapability`` when the
  client supports dynamic registration of ``workspace/didChangeWatchedFiles``.
- ``workspace/symbol``: computations, fusions (by name, HLO kind, backend kind),
  custom-calls (by name, target), every other instruction by name and opcode
  (collectives and control flow with their own kinds) and modules of every
  indexed file (dump directories only, unless ``dumpDirectoriesOnly`` is false); the container
  name is ``module · stage · platform · module_NNNN``. Answered from what is
  indexed so far while indexing runs.
- ``workspace/didChangeWatchedFiles``: re-index created/changed files, drop deleted ones.
- request ``hlo/counterpart`` ``{textDocument, position}`` -> ``Location[]``: the
  instruction(s) of the other optimization stage of the same module
  (:func:`hlo_lsp.dump.index.find_counterparts`); command ``hlo.gotoCounterpart``
  ``[uri, position]`` returns the same.
- request ``hlo/counterpartFiles`` ``{textDocument}`` -> ``string[]``: the URIs of
  the files of the other optimization stage of the document's module, best first
  (:func:`hlo_lsp.dump.index.counterpart_files`), wherever the cursor is (what
  ``HLO: Compare With...`` offers first).
- request ``hlo/workspaceStatus`` -> :class:`hlo_lsp.lsp.messages.WorkspaceStatus`.

Settings: :class:`hlo_lsp.lsp.settings.WorkspaceSettings`. The workspace's
directories: :meth:`hlo_lsp.lsp.protocol.HloLanguageServer.workspace_folders`.
Files the index finds changed on disk are also dropped from the document
store's cache of files read from disk.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import time
import uuid
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path

from hlo_lsp.analysis.work import in_thread
from hlo_lsp.dump.index import (SymbolHit, WorkspaceIndex, counterpart_files, find_counterparts,
                                special_reports)
from hlo_lsp.dump.names import HLO_FILE_GLOBS
from hlo_lsp.lsp import messages
from hlo_lsp.lsp.convert import SYMBOL_KINDS, to_range
from hlo_lsp.lsp.messages import (COUNTERPART, COUNTERPART_FILES, GOTO_COUNTERPART,
                                  WORKSPACE_STATUS)
from hlo_lsp.lsp.protocol import HloLanguageServer
from hlo_lsp.lsp.requests import guarded
from hlo_lsp.lsp.workspace_state import WorkspaceState
from hlo_lsp.model.hlo import Computation, Instruction
from hlo_lsp.model.index import Kind, find_at
from hlo_lsp.model.visible import visible

log = logging.getLogger("hlo_lsp.workspace")

PROGRESS_EVERY_S = 0.2
#: Indexing passes shorter than this, or of fewer files, show no progress.
PROGRESS_DELAY_S = 0.3
PROGRESS_MIN_FILES = 16
MAX_SYMBOLS = 500
#: Counterpart files tried, best first, until one yields a match.
MAX_COUNTERPART_FILES = 4


# ------------------------------------------------------------------ state ---

def workspace_index(ls: HloLanguageServer) -> WorkspaceIndex | None:
    """The workspace index of server ``ls`` (None before ``initialized`` or when
    indexing is off)."""
    st = ls.workspace_state
    return st.index if st is not None else None


async def _start_progress(ls, title: str) -> str | None:
    return await ls.begin_progress(title, "looking for HLO files", percentage=0,
                                   kind="index")


async def index_folders(ls, st: WorkspaceState, folders: list[str]) -> None:
    """Discover and index ``folders`` in the workers. Progress
    (``window/workDoneProgress``) is shown when at least :data:`PROGRESS_MIN_FILES`
    files need indexing and the pass is still running after
    :data:`PROGRESS_DELAY_S`, so quick passes do not flicker."""
    t0 = time.perf_counter()
    token: str | None = None
    last = 0.0
    latest = (0, 0)
    total_files = 0

    def report(done: int, total: int) -> None:
        nonlocal last, latest
        latest = (done, total)
        now = time.monotonic()
        if token is None or (now - last < PROGRESS_EVERY_S and done < total):
            return
        last = now
        ls.work_done_progress.report(token, types.WorkDoneProgressReport(
            message=f"indexed {done}/{total} files",
            percentage=int(100 * done / total) if total else 100))

    async def show_progress() -> None:
        nonlocal token
        await asyncio.sleep(PROGRESS_DELAY_S)
        token = await _start_progress(ls, "Indexing HLO files")
        if token is not None and latest[1]:
            report(*latest)

    shower: asyncio.Task | None = None
    try:
        paths = await st.index.scan_async(folders)
        total_files = len(paths)
        if len(st.index.stale(paths)) >= PROGRESS_MIN_FILES:
            shower = asyncio.get_running_loop().create_task(show_progress())
        summaries = await st.index.index_async(paths, report)
        skipped = [(s.path, s.error) for s in summaries if s.skipped]
        skipped += await in_thread(
            special_reports, {os.path.dirname(p) for p in paths})
        tell_skipped(ls, st, skipped)
    except asyncio.CancelledError:
        raise
    except Exception:  # noqa: BLE001 - indexing is best effort
        log.exception("indexing %s failed", folders)
    finally:
        if shower is not None:
            shower.cancel()
        seconds = time.perf_counter() - t0
        if token is not None:
            ls.end_progress(token, f"indexed {total_files} files in {seconds:.1f} s")
        log.info("indexed %d HLO files under %s in %.2f s", total_files, folders, seconds)


#: Skipped files named in one message; the rest are counted.
MAX_SKIPPED_NAMED = 5


def tell_skipped(ls, st: WorkspaceState, skipped: list[tuple[str, str]]) -> None:
    """One ``window/showMessage`` warning naming the files of the workspace that
    were not read (``(path, reason)``: a FIFO or a link to a device named like a
    dump or a report, an unreadable file; :mod:`hlo_lsp.dump.untrusted`) that the
    user was not told of yet, e.g. ``hlo-lsp did not read 2 files of the
    workspace: /w/d/x.txt: not a regular file (a FIFO); ...``; each is logged."""
    new = [s for s in dict.fromkeys(skipped) if s not in st.skipped_told]
    if not new:
        return
    st.skipped_told.update(new)
    for path, reason in new:
        log.warning("skipped %s: %s", path, reason)
    named = "; ".join(f"{visible(path)}: {reason}" for path, reason in new[:MAX_SKIPPED_NAMED])
    more = len(new) - MAX_SKIPPED_NAMED
    ls.window_show_message(types.ShowMessageParams(
        type=types.MessageType.Warning,
        message=f"hlo-lsp did not read {len(new)} file{'s' if len(new) > 1 else ''} of the "
                f"workspace: {named}{f'; and {more} more (see the log)' if more > 0 else ''}."))


#: Indexing waits until no document has been analysed for this long (seconds),
#: at most :data:`INDEX_WAIT_S` after it was asked for: the documents an editor
#: opens with the workspace are analysed and answered first, instead of sharing
#: the machine with the index's worker processes (on 2 cores that more than
#: doubled the first hover's time: docs/benchmarks.md).
INDEX_QUIET_S = 0.3
INDEX_WAIT_S = 5.0


async def _documents_settled(ls, quiet: float = INDEX_QUIET_S,
                             limit: float = INDEX_WAIT_S) -> None:
    """Return once no analysis of an opened document has run for ``quiet``
    seconds, or after ``limit`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    calm_since = loop.time()
    while loop.time() < deadline:
        if ls.store.analysing():
            calm_since = loop.time()
        elif loop.time() - calm_since >= quiet:
            return
        await asyncio.sleep(0.05)


def start_indexing(ls, st: WorkspaceState, folders: list[str]) -> None:
    """(Re)start the background indexing of ``folders``, once the opened
    documents are analysed (:func:`_documents_settled`)."""
    st.folders = folders
    if st.task is not None and not st.task.done():
        st.task.cancel()
    st.finished.clear()
    st.started = time.perf_counter()

    async def run() -> None:
        try:
            await _documents_settled(ls)
            await index_folders(ls, st, folders)
        finally:
            st.finished.set()

    st.task = asyncio.get_running_loop().create_task(run())


async def register_watchers(ls) -> bool:
    """``client/registerCapability`` for ``workspace/didChangeWatchedFiles`` with
    :data:`HLO_FILE_GLOBS`, when the client supports its dynamic registration."""
    caps = ls.client_capabilities
    watched = caps.workspace.did_change_watched_files if caps and caps.workspace else None
    if watched is None or not watched.dynamic_registration:
        return False
    try:
        await ls.client_register_capability_async(types.RegistrationParams(registrations=[
            types.Registration(
                id=f"hlo-watch-{uuid.uuid4()}", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=[
                    types.FileSystemWatcher(glob_pattern=g) for g in HLO_FILE_GLOBS]))]))
        return True
    except Exception:  # noqa: BLE001
        log.info("client/registerCapability for watched files failed", exc_info=True)
        return False


# ------------------------------------------------------------ conversions ---

def symbol_of(hit: SymbolHit) -> types.WorkspaceSymbol:
    """A :class:`SymbolHit` as an LSP WorkspaceSymbol (columns are characters;
    HLO names and the text before them are ASCII, so they equal UTF-16 units)."""
    uri = from_fs_path(hit.summary.path) or hit.summary.path
    rng = types.Range(start=types.Position(line=hit.line, character=hit.column),
                      end=types.Position(line=hit.line, character=hit.end_column))
    return types.WorkspaceSymbol(name=hit.label, kind=SYMBOL_KINDS[hit.kind],
                                 location=types.Location(uri=uri, range=rng),
                                 container_name=hit.summary.container)


# ----------------------------------------------------------- counterparts ---

def _target_of(module, offset: int) -> Instruction | Computation | None:
    occ = find_at(module, offset)
    if occ is not None:
        if occ.kind == Kind.INSTRUCTION_USE and isinstance(occ.target, Instruction):
            return occ.target
        if occ.kind in (Kind.COMPUTATION_DEF, Kind.COMPUTATION_USE) and \
                isinstance(occ.target, Computation):
            return occ.target
        if occ.instruction is not None:
            return occ.instruction
    return module.instruction_at(offset)


async def counterpart_file_uris(ls: HloLanguageServer, uri: str) -> list[str]:
    """The URIs of the files holding the other optimization stage of ``uri``'s
    module, best first, as :func:`hlo_lsp.dump.index.counterpart_files` ranks
    them (the module named by the document's ``HloModule`` header, else by its
    dump name); [] for a document that is no file or has no counterpart."""
    path = to_fs_path(uri)
    if not path:
        return []
    async with ls.lease(uri) as a:
        if a is None:
            return []
        module_name = a.module.name.name if a.module.name is not None else None
    files = await in_thread(counterpart_files, path, workspace_index(ls), module_name)
    return [u for s in files if (u := from_fs_path(s.path))]


async def counterpart_locations(ls: HloLanguageServer, uri: str, position: types.Position
                                ) -> list[types.Location]:
    """Locations of the counterpart(s) of the instruction (or computation) at
    ``position`` of ``uri`` in the other optimization stage's file of the same
    module; [] when there is none. The other file is read through the document
    store: opened, or from disk as it is now."""
    path = to_fs_path(uri)
    if not path:
        return []
    async with ls.lease(uri) as a:
        if a is None:
            return []
        target = _target_of(a.module, a.lines.offset(position.line, position.character))
        if target is None:
            return []
        module_name = a.module.name.name if a.module.name is not None else None
        files = await in_thread(counterpart_files, path, workspace_index(ls), module_name)
        for summary in files[:MAX_COUNTERPART_FILES]:
            other_uri = from_fs_path(summary.path)
            if not other_uri:
                continue
            async with ls.lease(other_uri) as b:
                if b is None:
                    continue
                if isinstance(target, Computation):
                    comp = b.module.by_name.get(target.name.name)
                    if comp is not None:
                        return [types.Location(uri=b.uri, range=to_range(
                            b.lines, comp.name.start, comp.name.end))]
                    continue
                matches = await in_thread(find_counterparts, a.module, target, b.module)
                if matches:
                    return [types.Location(uri=b.uri, range=to_range(
                        b.lines, m.instruction.name.start, m.instruction.name.end))
                        for m in matches]
    return []


# --------------------------------------------------------------- register ---

def register(server: HloLanguageServer) -> None:
    """Register the workspace handlers on ``server``."""

    @server.feature(types.INITIALIZED)
    async def on_initialized(ls: HloLanguageServer, params: types.InitializedParams) -> None:
        settings = ls.settings.workspace
        if not settings.index:
            return
        st = ls.workspace_state = WorkspaceState(settings)
        atexit.register(st.index.close)
        ls.spawn(register_watchers(ls))
        folders = ls.workspace_folders()
        if folders:
            start_indexing(ls, st, folders)
        else:
            st.finished.set()

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def on_folders(ls: HloLanguageServer,
                         params: types.DidChangeWorkspaceFoldersParams) -> None:
        st = ls.workspace_state
        if st is None:
            return
        removed = [p for f in (params.event.removed or []) if (p := to_fs_path(f.uri))]
        st.index.remove(removed)
        start_indexing(ls, st, ls.workspace_folders())

    @server.feature(types.WORKSPACE_SYMBOL)
    @guarded(default=[])
    async def on_workspace_symbol(ls: HloLanguageServer, params: types.WorkspaceSymbolParams
                                  ) -> list[types.WorkspaceSymbol]:
        index = workspace_index(ls)
        if index is None:
            return []
        hits = await in_thread(index.symbols, params.query or "", MAX_SYMBOLS)
        return [symbol_of(h) for h in hits]

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    async def on_watched(ls: HloLanguageServer,
                         params: types.DidChangeWatchedFilesParams) -> None:
        changed, deleted = [], []
        for ev in params.changes:
            path = to_fs_path(ev.uri)
            if not path:
                continue
            ls.store.forget_file(path)
            ls.inputs.forget(path)
            (deleted if ev.type == types.FileChangeType.Deleted else changed).append(path)
        st = ls.workspace_state
        if st is None:
            return
        try:
            st.index.remove(deleted)
            if changed:
                summaries = await st.index.update(changed)
                tell_skipped(ls, st, [(s.path, s.error) for s in summaries if s.skipped])
        except Exception:  # noqa: BLE001 - indexing is best effort
            log.exception("re-indexing watched files failed")

    @server.feature(COUNTERPART)
    @guarded(default=[])
    async def on_counterpart(ls: HloLanguageServer, params: Any) -> list[types.Location]:
        parsed = messages.parse_params(messages.DocumentPositionParams, params)
        if parsed is None:
            return []
        return await counterpart_locations(ls, parsed.text_document.uri, parsed.position)

    @server.feature(COUNTERPART_FILES)
    @guarded(default=[])
    async def on_counterpart_files(ls: HloLanguageServer, params: Any) -> list[str]:
        parsed = messages.parse_params(messages.DocumentParams, params)
        if parsed is None:
            return []
        return await counterpart_file_uris(ls, parsed.text_document.uri)

    @server.feature(WORKSPACE_STATUS)
    @guarded(default=None)
    async def on_status(ls: HloLanguageServer, params: Any) -> dict | None:
        st = ls.workspace_state
        return messages.to_json(st.status() if st is not None else messages.WorkspaceStatus())

    @server.command(GOTO_COUNTERPART)
    @guarded(default=[])
    async def goto_counterpart(ls: HloLanguageServer, *args: Any) -> list:
        """[uri, position] or [{textDocument, position}] -> Location[]."""
        if len(args) >= 2:
            parsed = messages.parse_params(messages.DocumentPositionParams,
                                           {"textDocument": {"uri": args[0]}
                                            if isinstance(args[0], str) else args[0],
                                            "position": args[1]})
        else:
            found = messages.parse_arguments(args, messages.DocumentPositionParams)
            parsed = found[0] if found else None
        if parsed is None:
            return []
        return await counterpart_locations(ls, parsed.text_document.uri, parsed.position)
