"""The dump directory as a workspace, over LSP (docs/protocol.md, "Workspace").

- ``initialized`` / ``workspace/didChangeWorkspaceFolders``: index the HLO files
  of the workspace folders (else the root) in background worker processes
  (:class:`hlo_lsp.analysis.workspace.Workspace`), with ``window/workDoneProgress``
  ("indexed 120/500 files") when the client supports it; register a file watcher
  (``**/*.hlo``, ``**/module_*.txt``) with ``client/registerCapability`` when the
  client supports dynamic registration of ``workspace/didChangeWatchedFiles``.
- ``workspace/symbol``: computations, fusions (by name, HLO kind, backend kind),
  custom-calls (by name, target), every other instruction by name and opcode
  (collectives and control flow with their own kinds) and modules of every
  indexed file (dump directories only, unless ``dumpDirectoriesOnly`` is false); the container
  name is ``module · stage · platform · module_NNNN``. Answered from what is
  indexed so far while indexing runs.
- ``workspace/didChangeWatchedFiles``: re-index created/changed files, drop deleted
  ones (:meth:`hlo_lsp.analysis.host.AnalysisHost.files_changed`, which also
  forgets what was read of them).
- request ``hlo/counterpart`` ``{textDocument, position}`` -> ``Location[]``: the
  instruction(s) of the other optimization stage of the same module
  (:meth:`hlo_lsp.analysis.workspace.Workspace.counterparts`); command
  ``hlo.gotoCounterpart`` ``[uri, position]`` returns the same.
- request ``hlo/counterpartFiles`` ``{textDocument}`` -> ``string[]``: the URIs of
  the files of the other optimization stage of the document's module, best first
  (:func:`hlo_lsp.dump.index.counterpart_files`), wherever the cursor is (what
  ``HLO: Compare With...`` offers first).
- request ``hlo/workspaceStatus`` -> :class:`hlo_lsp.lsp.messages.WorkspaceStatus`.

Each handler converts: the questions are the host's snapshot's
(:mod:`hlo_lsp.analysis.host`), the indexing is
:class:`~hlo_lsp.analysis.workspace.Workspace`'s, and its progress and warnings
come back through the callbacks of :func:`_reporter`. Settings:
:class:`hlo_lsp.lsp.settings.WorkspaceSettings`. The workspace's directories:
:meth:`hlo_lsp.lsp.protocol.HloLanguageServer.workspace_folders`.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path

from hlo_lsp.analysis.workspace import IndexStatus, Reporter, workspace_index
from hlo_lsp.dump.index import SymbolHit, WorkspaceIndex
from hlo_lsp.dump.names import HLO_FILE_GLOBS
from hlo_lsp.dump.profiles import PROFILE_GLOBS
from hlo_lsp.lsp import messages
from hlo_lsp.lsp.convert import SYMBOL_KINDS, to_range
from hlo_lsp.lsp.dispatch import route
from hlo_lsp.lsp.messages import (COUNTERPART, COUNTERPART_FILES, GOTO_COUNTERPART,
                                  WORKSPACE_STATUS)
from hlo_lsp.lsp.protocol import HloLanguageServer
from hlo_lsp.lsp.settings import WorkspaceSettings

log = logging.getLogger("hlo_lsp.workspace")


# ------------------------------------------------------------ conversions ---

def index_of(settings: WorkspaceSettings) -> WorkspaceIndex:
    """The workspace index the settings ``hlo.workspace`` describe."""
    return workspace_index(workers=settings.workers,
                           size_limit=int(settings.max_file_size_mb * (1 << 20)),
                           max_files=settings.max_files, exclude=list(settings.exclude),
                           dump_dirs_only=settings.dump_directories_only,
                           max_scanned=settings.max_scanned_files)


def _tell(ls: HloLanguageServer, message: str) -> None:
    """A ``window/showMessage`` warning."""
    ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning,
                                                   message=message))


def _reporter(ls: HloLanguageServer) -> Reporter:
    """Indexing's progress as ``window/workDoneProgress`` (tokens
    ``hlo-index-<uuid>``; none when the client cannot show it) and its warnings
    as ``window/showMessage``."""

    async def begin(title: str, message: str) -> str | None:
        return await ls.begin_progress(title, message, percentage=0, kind="index")

    def report(token: str, message: str, percentage: int) -> None:
        ls.work_done_progress.report(token, types.WorkDoneProgressReport(
            message=message, percentage=percentage))

    return Reporter(begin, report, ls.end_progress, lambda message: _tell(ls, message))


async def register_watchers(ls: HloLanguageServer) -> bool:
    """``client/registerCapability`` for ``workspace/didChangeWatchedFiles`` with
    :data:`HLO_FILE_GLOBS` and the profiles' :data:`PROFILE_GLOBS`, when the
    client supports its dynamic registration."""
    caps = ls.client_capabilities
    watched = caps.workspace.did_change_watched_files if caps and caps.workspace else None
    if watched is None or not watched.dynamic_registration:
        return False
    try:
        await ls.client_register_capability_async(types.RegistrationParams(registrations=[
            types.Registration(
                id=f"hlo-watch-{uuid.uuid4()}", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=[
                    types.FileSystemWatcher(glob_pattern=g)
                    for g in (*HLO_FILE_GLOBS, *PROFILE_GLOBS)]))]))
        return True
    except Exception:  # noqa: BLE001
        log.info("client/registerCapability for watched files failed", exc_info=True)
        return False


def symbol_of(hit: SymbolHit) -> types.WorkspaceSymbol:
    """A :class:`SymbolHit` as an LSP WorkspaceSymbol (columns are characters;
    HLO names and the text before them are ASCII, so they equal UTF-16 units)."""
    uri = from_fs_path(hit.summary.path) or hit.summary.path
    rng = types.Range(start=types.Position(line=hit.line, character=hit.column),
                      end=types.Position(line=hit.line, character=hit.end_column))
    return types.WorkspaceSymbol(name=hit.label, kind=SYMBOL_KINDS[hit.kind],
                                 location=types.Location(uri=uri, range=rng),
                                 container_name=hit.summary.container)


def status_of(status: IndexStatus) -> messages.WorkspaceStatus:
    """:class:`IndexStatus` as the ``hlo/workspaceStatus`` answer."""
    return messages.WorkspaceStatus(status.indexing, status.done, status.total, status.files,
                                    status.symbols, status.seconds)


async def counterpart_locations(ls: HloLanguageServer, uri: str, position: types.Position
                                ) -> list[types.Location]:
    """Locations of the counterpart(s) of the instruction (or computation) at
    ``position`` of ``uri`` (:meth:`hlo_lsp.analysis.host.AnalysisSnapshot.counterparts`)."""
    places = await ls.host.snapshot().counterparts(uri, position.line, position.character)
    return [types.Location(uri=other, range=to_range(p.lines, p.start, p.end))
            for other, p in places]


# --------------------------------------------------------------- register ---

def register(server: HloLanguageServer) -> None:
    """Register the workspace handlers on ``server``, each as its row of
    :data:`hlo_lsp.lsp.dispatch.ROUTES` says."""

    @route(server, types.INITIALIZED)
    async def on_initialized(ls: HloLanguageServer, params: types.InitializedParams) -> None:
        settings = ls.settings.workspace
        if not settings.index:
            return
        ls.spawn(register_watchers(ls))
        ls.host.workspace.open(index_of(settings), ls.workspace_folders(), _reporter(ls))

    @route(server, types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def on_folders(ls: HloLanguageServer,
                         params: types.DidChangeWorkspaceFoldersParams) -> None:
        removed = [p for f in (params.event.removed or []) if (p := to_fs_path(f.uri))]
        ls.host.workspace.folders_changed(removed, ls.workspace_folders(), _reporter(ls))

    @route(server, types.WORKSPACE_SYMBOL)
    async def on_workspace_symbol(ls: HloLanguageServer, params: types.WorkspaceSymbolParams
                                  ) -> list[types.WorkspaceSymbol]:
        hits = await ls.host.snapshot().workspace_symbols(params.query or "")
        return [symbol_of(h) for h in hits]

    @route(server, types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    async def on_watched(ls: HloLanguageServer,
                         params: types.DidChangeWatchedFilesParams) -> None:
        changed, deleted = [], []
        for ev in params.changes:
            if path := to_fs_path(ev.uri):
                (deleted if ev.type == types.FileChangeType.Deleted else changed).append(path)
        await ls.host.files_changed(changed, deleted, lambda message: _tell(ls, message))

    @route(server, COUNTERPART)
    async def on_counterpart(ls: HloLanguageServer, params: Any) -> list[types.Location]:
        parsed = messages.parse_params(messages.DocumentPositionParams, params)
        if parsed is None:
            return []
        return await counterpart_locations(ls, parsed.text_document.uri, parsed.position)

    @route(server, COUNTERPART_FILES)
    async def on_counterpart_files(ls: HloLanguageServer, params: Any) -> list[str]:
        parsed = messages.parse_params(messages.DocumentParams, params)
        if parsed is None:
            return []
        paths = await ls.host.snapshot().counterpart_files(parsed.text_document.uri)
        return [u for p in paths if (u := from_fs_path(p))]

    @route(server, WORKSPACE_STATUS)
    async def on_status(ls: HloLanguageServer, params: Any) -> dict | None:
        return messages.to_json(status_of(ls.host.workspace.status()))

    @route(server, GOTO_COUNTERPART)
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
