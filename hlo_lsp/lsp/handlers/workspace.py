"""The dump directory as a workspace, over LSP (docs/protocol.md, "Workspace").

- ``initialized`` / ``workspace/didChangeWorkspaceFolders``: index the HLO files
  of the workspace folders (else the root) in background worker processes
  (:class:`hlo_lsp.dump.index.WorkspaceIndex`), with ``window/workDoneProgress``
  ("indexed 120/500 files") when the client supports it; register a file watcher
  (``**/*.hlo``, ``**/module_*.txt``) with ``client/registerCapability`` when the
  client supports dynamic registration of ``workspace/didChangeWatchedFiles``.
- ``workspace/symbol``: computations, fusions (by name, HLO kind, backend kind),
  custom-calls (by name, target) and modules of every indexed file; the container
  name is ``module · stage · platform · module_NNNN``. Answered from what is
  indexed so far while indexing runs.
- ``workspace/didChangeWatchedFiles``: re-index created/changed files, drop deleted ones.
- request ``hlo/counterpart`` ``{textDocument, position}`` -> ``Location[]``: the
  instruction(s) of the other optimization stage of the same module
  (:func:`hlo_lsp.dump.index.find_counterparts`); command ``hlo.gotoCounterpart``
  ``[uri, position]`` returns the same.
- request ``hlo/workspaceStatus`` -> ``{indexing, done, total, files, symbols, seconds}``.
- For ``*-buffer-assignment.txt`` / ``*-memory-usage-report.txt``:
  :func:`report_document_links` and :func:`report_definition` (called by the
  server's documentLink / definition handlers for those URIs) link instruction
  names to the HLO dump they describe.

Settings (initialization options ``{"hlo": {"workspace": {...}}}`` or flat
``"hlo.workspace.<key>"``): ``index`` (bool, default true), ``maxFiles`` (20000),
``maxFileSizeMB`` (64: larger files are summarised without a full parse),
``workers`` (1-2, default 2 on machines with more than 2 CPUs else 1),
``exclude`` (directory names not to enter).
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

from hlo_lsp.dump.names import hlo_path_for_report, is_report_file
from hlo_lsp.dump.reports import report_links, report_names_at
from hlo_lsp.model.index import Kind, find_at
from hlo_lsp.model.hlo import Computation, Instruction
from hlo_lsp.syntax.lines import LineIndex
from hlo_lsp.dump.index import DEFAULT_MAX_FILES, DEFAULT_SIZE_LIMIT, SymbolHit, WorkspaceIndex, counterpart_files, find_counterparts, instruction_names

log = logging.getLogger("hlo_lsp.dump.index")

COUNTERPART = "hlo/counterpart"
WORKSPACE_STATUS = "hlo/workspaceStatus"
GOTO_COUNTERPART = "hlo.gotoCounterpart"
WATCH_GLOBS = ("**/*.hlo", "**/module_*.txt")
PROGRESS_EVERY_S = 0.2
#: Indexing passes shorter than this, or of fewer files, show no progress.
PROGRESS_DELAY_S = 0.3
PROGRESS_MIN_FILES = 16
MAX_SYMBOLS = 500
#: documentLink answers for a report stop after this many links.
MAX_REPORT_LINKS = 50_000
#: Counterpart files tried, best first, until one yields a match.
MAX_COUNTERPART_FILES = 4

_SYMBOL_KINDS = {"module": types.SymbolKind.Module, "computation": types.SymbolKind.Function,
                 "entry": types.SymbolKind.Function, "fusion": types.SymbolKind.Operator,
                 "custom-call": types.SymbolKind.Method}


# --------------------------------------------------------------- settings ---

def workspace_settings(options: Any) -> dict[str, Any]:
    """The ``hlo.workspace.*`` settings from the initialization options, with
    defaults: ``index`` (bool), ``maxFiles`` (int), ``maxFileSizeMB`` (number),
    ``workers`` (int, 1-2), ``exclude`` (list of directory names)."""
    opts = options if isinstance(options, dict) else {}
    merged: dict[str, Any] = {}
    nested = opts.get("hlo")
    for src in ((nested or {}).get("workspace") if isinstance(nested, dict) else None,
                {k[len("hlo.workspace."):]: v for k, v in opts.items()
                 if isinstance(k, str) and k.startswith("hlo.workspace.")}):
        if isinstance(src, dict):
            merged.update(src)
    cpus = os.cpu_count() or 1
    out = {"index": merged.get("index", True) is not False,
           "maxFiles": DEFAULT_MAX_FILES, "maxFileSizeMB": DEFAULT_SIZE_LIMIT / (1 << 20),
           "workers": 2 if cpus > 2 else 1, "exclude": []}
    for key in ("maxFiles", "workers"):
        if isinstance(merged.get(key), int) and merged[key] > 0:
            out[key] = merged[key]
    if isinstance(merged.get("maxFileSizeMB"), (int, float)) and merged["maxFileSizeMB"] > 0:
        out["maxFileSizeMB"] = merged["maxFileSizeMB"]
    if isinstance(merged.get("exclude"), list):
        out["exclude"] = [x for x in merged["exclude"] if isinstance(x, str)]
    out["workers"] = max(1, min(2, out["workers"]))
    return out


# ------------------------------------------------------------------ state ---

class WorkspaceState:
    """The index of one server and its background indexing task."""

    def __init__(self, settings: dict[str, Any]) -> None:
        self.settings = settings
        self.index = WorkspaceIndex(workers=settings["workers"],
                                    size_limit=int(settings["maxFileSizeMB"] * (1 << 20)),
                                    max_files=settings["maxFiles"],
                                    exclude=settings["exclude"])
        self.task: asyncio.Task | None = None
        self.folders: list[str] = []
        self.started = 0.0
        self.finished = asyncio.Event()

    def status(self) -> dict[str, Any]:
        """``{indexing, done, total, files, symbols, seconds}`` (seconds: of the
        last finished indexing pass)."""
        running = self.task is not None and not self.task.done()
        done, total = self.index.progress or (len(self.index), len(self.index))
        symbols = sum(len(s.computations) + len(s.fusions) + len(s.custom_calls) + 1
                      for s in self.index.summaries())
        return {"indexing": running, "done": done, "total": total,
                "files": len(self.index), "symbols": symbols,
                "seconds": round(self.index.last_index_seconds, 3)}


def state_of(ls) -> WorkspaceState | None:
    """The :class:`WorkspaceState` of server ``ls`` (None before ``initialized``
    or when indexing is disabled)."""
    return getattr(ls, "hlo_workspace", None)


def workspace_index(ls) -> WorkspaceIndex | None:
    """The workspace index of server ``ls``, if any."""
    st = state_of(ls)
    return st.index if st is not None else None


def _folders(ls) -> list[str]:
    out = []
    for folder in (ls.workspace.folders or {}).values():
        path = to_fs_path(folder.uri)
        if path and os.path.isdir(path):
            out.append(path)
    if not out:
        root = getattr(ls.workspace, "root_path", None)
        if root and os.path.isdir(root):
            out.append(root)
    return out


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
        await st.index.index_async(paths, report)
    except asyncio.CancelledError:
        raise
    except Exception:  # noqa: BLE001 - indexing is best effort
        log.exception("indexing %s failed", folders)
    finally:
        if shower is not None:
            shower.cancel()
        seconds = time.perf_counter() - t0
        if token is not None:
            ls.work_done_progress.end(token, types.WorkDoneProgressEnd(
                message=f"indexed {total_files} files in {seconds:.1f} s"))
            ls.work_done_progress.tokens.pop(token, None)
        log.info("indexed %d HLO files under %s in %.2f s", total_files, folders, seconds)


def start_indexing(ls, st: WorkspaceState, folders: list[str]) -> None:
    """(Re)start the background indexing of ``folders``."""
    st.folders = folders
    if st.task is not None and not st.task.done():
        st.task.cancel()
    st.finished.clear()
    st.started = time.perf_counter()

    async def run() -> None:
        try:
            await index_folders(ls, st, folders)
        finally:
            st.finished.set()

    st.task = asyncio.get_running_loop().create_task(run())


async def register_watchers(ls) -> bool:
    """``client/registerCapability`` for ``workspace/didChangeWatchedFiles`` with
    :data:`WATCH_GLOBS`, when the client supports its dynamic registration."""
    caps = ls.client_capabilities
    watched = caps.workspace.did_change_watched_files if caps and caps.workspace else None
    if watched is None or not watched.dynamic_registration:
        return False
    try:
        await ls.client_register_capability_async(types.RegistrationParams(registrations=[
            types.Registration(
                id=f"hlo-watch-{uuid.uuid4()}", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=[
                    types.FileSystemWatcher(glob_pattern=g) for g in WATCH_GLOBS]))]))
        return True
    except Exception:  # noqa: BLE001
        log.info("client/registerCapability for watched files failed", exc_info=True)
        return False


# ------------------------------------------------------------ conversions ---

def _get(obj: Any, *names: str) -> Any:
    for name in names:
        if isinstance(obj, dict):
            if name in obj:
                return obj[name]
        elif hasattr(obj, name):
            return getattr(obj, name)
    return None


def _uri_and_position(params: Any) -> tuple[str | None, int, int]:
    doc = _get(params, "textDocument", "text_document")
    uri = doc if isinstance(doc, str) else _get(doc, "uri")
    pos = _get(params, "position")
    line = _get(pos, "line") if pos is not None else None
    char = _get(pos, "character") if pos is not None else None
    return (uri if isinstance(uri, str) else None,
            line if isinstance(line, int) else 0, char if isinstance(char, int) else 0)


def _range(lines: LineIndex, start: int, end: int) -> types.Range:
    sl, sc = lines.position(start)
    el, ec = lines.position(max(start, end))
    return types.Range(start=types.Position(line=sl, character=sc),
                       end=types.Position(line=el, character=ec))


def symbol_of(hit: SymbolHit) -> types.WorkspaceSymbol:
    """A :class:`SymbolHit` as an LSP WorkspaceSymbol (columns are characters;
    HLO names and the text before them are ASCII, so they equal UTF-16 units)."""
    uri = from_fs_path(hit.summary.path) or hit.summary.path
    rng = types.Range(start=types.Position(line=hit.line, character=hit.column),
                      end=types.Position(line=hit.line, character=hit.end_column))
    return types.WorkspaceSymbol(name=hit.label, kind=_SYMBOL_KINDS[hit.kind],
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


async def counterpart_locations(ls, uri: str, line: int, character: int
                                ) -> list[types.Location]:
    """Locations of the counterpart(s) of the instruction (or computation) at
    ``(line, character)`` of ``uri`` in the other optimization stage's file of
    the same module; [] when there is none."""
    a = await ls.analysis(uri)
    path = to_fs_path(uri)
    if a is None or not path:
        return []
    target = _target_of(a.module, a.lines.offset(line, character))
    if target is None:
        return []
    module_name = a.module.name.name if a.module.name is not None else None
    files = await asyncio.to_thread(counterpart_files, path, workspace_index(ls), module_name)
    for summary in files[:MAX_COUNTERPART_FILES]:
        other_uri = from_fs_path(summary.path)
        b = await ls.analysis(other_uri) if other_uri else None
        if b is None:
            continue
        if isinstance(target, Computation):
            comp = b.module.by_name.get(target.name.name)
            if comp is not None:
                return [types.Location(uri=b.uri, range=_range(b.lines, comp.name.start,
                                                               comp.name.end))]
            continue
        matches = await asyncio.to_thread(find_counterparts, a.module, target, b.module)
        if matches:
            return [types.Location(uri=b.uri, range=_range(b.lines, m.instruction.name.start,
                                                           m.instruction.name.end))
                    for m in matches]
    return []


# ---------------------------------------------------------------- reports ---

def _report_text(ls, uri: str) -> str | None:
    try:
        doc = ls.workspace.text_documents.get(uri)
        if doc is not None:
            return doc.source
    except Exception:  # noqa: BLE001
        pass
    path = to_fs_path(uri)
    if not path or not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def is_report_uri(uri: str) -> bool:
    """True for ``*-buffer-assignment.txt`` / ``*-memory-usage-report.txt`` URIs."""
    path = to_fs_path(uri) or uri
    return is_report_file(path)


async def _hlo_locator(ls, report_path: str):
    """(hlo uri, name -> Range | None) for the HLO dump ``report_path`` describes."""
    hlo_path = hlo_path_for_report(report_path)
    hlo_uri = from_fs_path(hlo_path) if hlo_path and os.path.isfile(hlo_path) else None
    if hlo_uri is None:
        return None, lambda name: None
    a = await ls.analysis(hlo_uri)
    if a is None:
        return None, lambda name: None
    names = await asyncio.to_thread(instruction_names, a.module)

    def locate(name: str) -> types.Range | None:
        ins = names.get(name)
        return _range(a.lines, ins.name.start, ins.name.end) if ins is not None else None

    return hlo_uri, locate


async def report_document_links(ls, params: types.DocumentLinkParams
                                ) -> list[types.DocumentLink] | None:
    """documentLink for report files, None for other URIs (the caller goes on).

    Buffer-assignment report: every instruction name (``<id name ...>``) links to
    the instruction in the HLO dump (``#L<line>``). Memory-usage report: each row's
    offset links to the first value at that offset in the buffer-assignment
    report; the tooltip lists the instructions placed there. At most
    :data:`MAX_REPORT_LINKS` links."""
    report = _open_report(ls, params.text_document.uri)
    if not isinstance(report, tuple):
        return report
    path, text, lines = report
    hlo_uri, locate = await _hlo_locator(ls, path)
    links = await asyncio.to_thread(report_links, path, text)
    out = []
    for link in links[:MAX_REPORT_LINKS]:
        start = lines.starts[link.line] + link.start if link.line < len(lines.starts) else 0
        rng = _range(lines, start, start + (link.end - link.start))
        if link.instruction is not None:
            target = locate(link.instruction) if hlo_uri else None
            if target is None:
                continue
            out.append(types.DocumentLink(range=rng,
                                          target=f"{hlo_uri}#L{target.start.line + 1}",
                                          tooltip=link.tooltip or None))
        elif link.target_path:
            target_uri = from_fs_path(link.target_path)
            if target_uri:
                out.append(types.DocumentLink(range=rng,
                                              target=f"{target_uri}#L{link.target_line + 1}",
                                              tooltip=link.tooltip or None))
    return out


def _open_report(ls, uri: str):
    """(path, text, LineIndex) of a report document; None when ``uri`` is not a
    report (the caller goes on), [] when it cannot be read (the answer is empty)."""
    if not is_report_uri(uri):
        return None
    path = to_fs_path(uri)
    text = _report_text(ls, uri)
    if not path or text is None:
        return []
    return path, text, LineIndex(text, ls.position_encoding())


async def report_definition(ls, params: types.DefinitionParams
                            ) -> list[types.Location] | None:
    """definition for report files, None for other URIs (the caller goes on).

    On an instruction name: that instruction in the HLO dump; on an allocation
    header (or a memory-usage table header): every instruction with a value in
    the allocation; on a memory-usage row: the instructions whose values share
    that offset."""
    report = _open_report(ls, params.text_document.uri)
    if not isinstance(report, tuple):
        return report
    path, text, lines = report
    offset = lines.offset(params.position.line, params.position.character)
    line = lines.line_of(offset)
    names = await asyncio.to_thread(report_names_at, path, text, line,
                                    offset - lines.starts[line])
    if not names:
        return []
    hlo_uri, locate = await _hlo_locator(ls, path)
    if hlo_uri is None:
        return []
    out = []
    for name in names:
        rng = locate(name)
        if rng is not None:
            out.append(types.Location(uri=hlo_uri, range=rng))
    return out


# --------------------------------------------------------------- register ---

def register(server) -> None:
    """Register the workspace handlers on ``server`` (an HloLanguageServer)."""
    from hlo_lsp.lsp.server import guarded

    @server.feature(types.INITIALIZED)
    async def on_initialized(ls, params: types.InitializedParams) -> None:
        try:
            settings = workspace_settings(ls.options)
            if not settings["index"]:
                return
            st = WorkspaceState(settings)
            ls.hlo_workspace = st
            atexit.register(st.index.close)
            asyncio.get_running_loop().create_task(register_watchers(ls))
            folders = _folders(ls)
            if folders:
                start_indexing(ls, st, folders)
            else:
                st.finished.set()
        except Exception:  # noqa: BLE001
            log.exception("workspace initialization failed")

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def on_folders(ls, params: types.DidChangeWorkspaceFoldersParams) -> None:
        st = state_of(ls)
        if st is None:
            return
        removed = [p for f in (params.event.removed or []) if (p := to_fs_path(f.uri))]
        st.index.remove(removed)
        start_indexing(ls, st, _folders(ls))

    @server.feature(types.WORKSPACE_SYMBOL)
    @guarded(default=[])
    async def on_workspace_symbol(ls, params: types.WorkspaceSymbolParams
                                  ) -> list[types.WorkspaceSymbol]:
        index = workspace_index(ls)
        if index is None:
            return []
        hits = await asyncio.to_thread(index.symbols, params.query or "", MAX_SYMBOLS)
        return [symbol_of(h) for h in hits]

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    async def on_watched(ls, params: types.DidChangeWatchedFilesParams) -> None:
        st = state_of(ls)
        if st is None:
            return
        changed, deleted = [], []
        for ev in params.changes:
            path = to_fs_path(ev.uri)
            if not path:
                continue
            (deleted if ev.type == types.FileChangeType.Deleted else changed).append(path)
        try:
            st.index.remove(deleted)
            if changed:
                await st.index.update(changed)
        except Exception:  # noqa: BLE001
            log.exception("re-indexing watched files failed")

    @server.feature(COUNTERPART)
    @guarded(default=[])
    async def on_counterpart(ls, params: Any) -> list[types.Location]:
        uri, line, char = _uri_and_position(params)
        if not uri:
            return []
        return await counterpart_locations(ls, uri, line, char)

    @server.feature(WORKSPACE_STATUS)
    @guarded(default=None)
    async def on_status(ls, params: Any) -> dict | None:
        st = state_of(ls)
        return st.status() if st is not None else {"indexing": False, "done": 0, "total": 0,
                                                   "files": 0, "symbols": 0, "seconds": 0.0}

    @server.command(GOTO_COUNTERPART)
    async def goto_counterpart(ls, *args: Any) -> list | None:
        """[uri, position] or [{textDocument, position}] -> Location[]."""
        try:
            if len(args) >= 2:
                uri, line, char = _uri_and_position({"textDocument": args[0],
                                                     "position": args[1]})
            elif args:
                uri, line, char = _uri_and_position(args[0])
            else:
                return []
            return await counterpart_locations(ls, uri, line, char) if uri else []
        except Exception:  # noqa: BLE001
            log.exception("%s failed", GOTO_COUNTERPART)
            return []

    try:
        @server.feature(types.SHUTDOWN)
        async def on_shutdown(ls, params: Any) -> None:
            st = state_of(ls)
            if st is not None:
                if st.task is not None:
                    st.task.cancel()
                st.index.close()
    except Exception:  # noqa: BLE001 - another module owns shutdown
        log.info("shutdown handler not registered", exc_info=True)


__all__ = [
    "COUNTERPART", "GOTO_COUNTERPART", "WORKSPACE_STATUS", "WorkspaceState",
    "counterpart_locations", "is_report_uri", "register", "report_definition",
    "report_document_links", "state_of", "symbol_of", "workspace_index",
    "workspace_settings",
]
