"""The pygls server class: the state one server holds, and how edits arrive.

:class:`HloLanguageServer` holds the :class:`~hlo_lsp.analysis.host.AnalysisHost`
(documents, analyses, the dump's inputs, the workspace index, XLA's check, the
parse/quick/work/xla threads) and the typed :class:`~hlo_lsp.lsp.settings.Settings`,
and does what pygls must: the position encoding, the workspace folders,
publishing diagnostics, progress; the handlers (:mod:`hlo_lsp.lsp.handlers`)
read them. :func:`hlo_lsp.lsp.server.create_server`
builds one and registers the handlers.

Threads and processes: the event loop answers requests; ``parse`` (2 threads)
runs analyses, ``quick`` (2 threads) answers hover and definition from the
snapshot of a big document while its analysis runs; ``xla`` (1 thread) talks
to XLA's parser in a worker process (:mod:`hlo_lsp.syntax.xla`); the workspace
index runs in its own process pool (:mod:`hlo_lsp.dump.index`). The garbage
collector is kept off the request path (:mod:`hlo_lsp.analysis.collector`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from typing import Any, Callable, TypeVar

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from hlo_lsp import __version__
from hlo_lsp.features.diagnostics import merge_xla
from hlo_lsp.analysis.collector import ModelCollector
from hlo_lsp.lsp import messages
from hlo_lsp.lsp.pygls_adapter import HloProtocol, forget_progress
from hlo_lsp.lsp.convert import to_diagnostic
from hlo_lsp.analysis.documents import Analysis
from hlo_lsp.analysis.host import AnalysisHost
from hlo_lsp.lsp.settings import Settings, parse_settings
from hlo_lsp.analysis.work import INTERACTIVE
from hlo_lsp.model.hlo import Problem
from hlo_lsp.syntax.lines import LineIndex
from hlo_lsp.syntax.parser import warm_up as parser_threads_ready


log = logging.getLogger("hlo_lsp")
T = TypeVar("T")


class HloLanguageServer(LanguageServer):
    """The hlo-lsp server; see the module docstring."""

    def __init__(self) -> None:
        super().__init__("hlo-lsp", __version__, protocol_cls=HloProtocol,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.settings: Settings = Settings()
        #: the documents, their analyses, the dump's inputs and the threads that
        #: compute (:class:`~hlo_lsp.analysis.host.AnalysisHost`); the names
        #: below are its parts
        self.host = AnalysisHost(to_fs_path, self, from_fs_path)
        self.parse_pool = self.host.parse_pool
        self.quick_pool = self.host.quick_pool
        self.inputs = self.host.inputs
        self.host.profiles.tell = self.warn
        self.host.profiles.arrived = self.refresh_code_lenses
        self.host.passes.changed = self.pass_history_changed
        #: whole-document answers, one at a time, the editor's own first (:meth:`work`)
        self.work_pool = self.host.work_pool
        self.collector = ModelCollector(self.parse_pool)
        self.store = self.host.store
        self._tasks: set[asyncio.Task] = set()
        self.shutdown_requested = False
        #: uri -> (version, problems) published by :meth:`edited`, until the
        #: analysis of that version publishes (or not, when they are the same).
        self._published: dict[str, tuple[int, list[Problem]]] = {}

    # -- lifecycle ------------------------------------------------------------
    def shut_down(self) -> None:
        """Release what the server started: the host's workspace index and its
        worker processes, XLA's parser process, the thread pools
        (:meth:`AnalysisHost.close`). Idempotent; called at ``shutdown`` and
        when the process is told to stop."""
        try:
            self.store.close_all()
        except RuntimeError:  # no event loop any more (after start_io returned)
            pass
        for task in list(self._tasks):
            task.cancel()
        self.host.close()

    async def work(self, fn: Callable[..., T], *args: Any, priority: int = INTERACTIVE) -> T:
        """``fn(*args)`` in the work queue (:mod:`hlo_lsp.analysis.work`): the
        computations of whole-document answers (outline, inlay hints,
        summaries, views, graphs), one at a time, ``priority``
        :data:`~hlo_lsp.analysis.work.INTERACTIVE` (what the editor asks by itself)
        before :data:`~hlo_lsp.analysis.work.REPORT` (what a command asks), each in
        the order asked.

        Threads share one interpreter lock: five such answers computed side by
        side all finish when the last does (a 3 MB dump's batch of semantic
        tokens, summary, comparison and readable view: each after 2-4 s on a
        busy machine); one after the other, each finishes as soon as its own
        work and the work queued before it are done. Answers of a position
        (hover, definition) do not queue here."""
        return await asyncio.wrap_future(self.work_pool.submit_at(priority, fn, *args))

    @property
    def exit_code(self) -> int:
        """The process exit code the specification asks for: 0 after ``shutdown``,
        else 1 (LSP 3.17, "exit")."""
        return 0 if self.shutdown_requested else 1

    # -- set-up ---------------------------------------------------------------
    def configure(self, initialization_options: Any) -> None:
        """Read the settings and the negotiated position encoding (at initialize)."""
        self.settings = parse_settings(initialization_options)
        self.store.encoding = self.position_encoding()
        self.host.xla.enabled = self.settings.xla_diagnostics
        # Build the grammar's parsers for this thread now (quick definitions run
        # here), so the first answer does not pay for it; worker threads build
        # their own on first use.
        parser_threads_ready()

    def position_encoding(self) -> str:
        """The position encoding negotiated at initialize ("utf-16" by default).
        Read from the workspace, which pygls creates with the chosen encoding
        before the user's initialize handler runs; the server capabilities are
        built only after it (reading them there gave "utf-16" to a client that
        was told "utf-8", e.g. Neovim 0.11)."""
        try:
            enc = self.workspace.position_encoding
        except Exception:  # noqa: BLE001 - before initialize
            return "utf-16"
        return str(getattr(enc, "value", enc) or "utf-16")

    def workspace_folders(self) -> list[str]:
        """The workspace's directories: the workspace folders that exist, else the
        root path. The one answer for indexing, Python source lookup (with
        :func:`hlo_lsp.dump.sources.source_dirs`) and recompile."""
        out = []
        for folder in (self.workspace.folders or {}).values():
            path = to_fs_path(folder.uri)
            if path and path not in out and os.path.isdir(path):
                out.append(path)
        if not out:
            root = getattr(self.workspace, "root_path", None)
            if root and os.path.isdir(root):
                out.append(root)
        return out

    async def source_dirs(self, uri: str) -> list[str]:
        """Where relative Python paths in the metadata of the dump ``uri`` are
        looked for, with this workspace's folders and ``sourceRoot``
        (:meth:`hlo_lsp.analysis.inputs.DumpInputs.source_dirs`, cached)."""
        return await self.inputs.source_dirs(to_fs_path(uri), self.workspace_folders(),
                                             self.settings.source_root)

    def source_roots(self, uri: str) -> list[str]:
        """Where a source file named by the dump ``uri`` may lie without hover and
        the link's tooltip saying so
        (:meth:`hlo_lsp.analysis.inputs.DumpInputs.source_roots`)."""
        return self.inputs.source_roots(to_fs_path(uri), self.workspace_folders(),
                                        self.settings.source_root)

    def warn(self, message: str) -> None:
        """Show the user ``message`` as a ``window/showMessage`` warning (a
        profile file that cannot be read, ...)."""
        self.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning,
                                                         message=message))

    def refresh_code_lenses(self) -> bool:
        """Ask the client to ask for code lenses again (``workspace/codeLens/refresh``:
        a profile loaded or read since), when it says it supports that; the
        answer is not awaited. Whether it was asked."""
        caps = self.client_capabilities
        lens = caps.workspace.code_lens if caps and caps.workspace else None
        if lens is None or not lens.refresh_support:
            return False
        try:
            self.workspace_code_lens_refresh(None)
        except Exception:  # noqa: BLE001 - a courtesy, never a failure
            log.info("workspace/codeLens/refresh failed", exc_info=True)
            return False
        return True

    def pass_history_changed(self, directory: str) -> None:
        """Tell the client that the dump directory ``directory``, where it was
        given a pass history, changed (``hlo/passHistoryChanged``: it asks
        ``hlo/passHistory`` again)."""
        try:
            self.protocol.notify(messages.PASS_HISTORY_CHANGED,
                                 messages.to_json(messages.PassHistoryChanged(directory)))
        except Exception:  # noqa: BLE001 - a courtesy, never a failure
            log.info("%s failed", messages.PASS_HISTORY_CHANGED, exc_info=True)

    # -- documents ------------------------------------------------------------
    async def analysis(self, uri: str) -> Analysis | None:
        """The analysis of the current version of ``uri`` (opened, or read from disk)."""
        return await self.store.analysis(uri)

    def lease(self, uri: str):
        """``async with ls.lease(uri) as analysis``: see :meth:`DocumentStore.lease`."""
        return self.store.lease(uri)

    # -- StoreListener (XlaListener: the host's XLA check publishes through it)
    def analysed(self, analysis: Analysis, current: bool) -> None:
        """Publish the diagnostics of a new analysis (the host then asks XLA's
        parser: :class:`hlo_lsp.analysis.xla_check.XlaCheck`)."""
        self.collector.analysed()
        if current:
            self.publish(analysis)

    def spawn(self, coro) -> asyncio.Task:
        """Run ``coro`` as a task the server keeps until it is done."""
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def edited(self, uri: str, version: int, problems: list[Problem],
               lines: LineIndex) -> None:
        """Publish an edit's first diagnostics (its computation checked, the rest
        as before); the analysis' own follow when they differ."""
        self._published[uri] = (version, problems)
        self._publish(uri, version, problems, lines)

    def publish(self, analysis: Analysis) -> None:
        """textDocument/publishDiagnostics: ours, and XLA's verdict when ours missed
        it; nothing when exactly these were published first (:meth:`edited`)."""
        problems = merge_xla(list(analysis.problems), analysis.xla_problems, analysis.lines)
        early = self._published.pop(analysis.uri, None)
        if early is not None and early[0] == analysis.version and early[1] == problems:
            return
        self._publish(analysis.uri, analysis.version, problems, analysis.lines)

    def _publish(self, uri: str, version: int, problems: list[Problem],
                 lines: LineIndex) -> None:
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, version=version, diagnostics=[to_diagnostic(p, lines) for p in problems]))

    def clear_diagnostics(self, uri: str) -> None:
        self._published.pop(uri, None)
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    async def begin_progress(self, title: str, message: str | None = None,
                             cancellable: bool = False, percentage: int | None = None,
                             kind: str = "parse") -> str | None:
        """Create and begin a window/workDoneProgress report; returns its token
        (``hlo-<kind>-<uuid>``), or None when the client does not support progress
        (it is never an error)."""
        caps = self.client_capabilities
        if caps is None or caps.window is None or not caps.window.work_done_progress:
            return None
        token = f"hlo-{kind}-{uuid.uuid4()}"
        try:
            await self.work_done_progress.create_async(token)
            self.work_done_progress.begin(token, types.WorkDoneProgressBegin(
                title=title, cancellable=cancellable, message=message,
                percentage=percentage))
        except Exception:  # noqa: BLE001 - progress is a courtesy, never a failure
            log.info("window/workDoneProgress is not available", exc_info=True)
            return None
        return token

    def end_progress(self, token: str, message: str) -> None:
        """End the progress report ``token``."""
        try:
            self.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))
        except Exception:  # noqa: BLE001
            log.debug("progress end failed", exc_info=True)
        forget_progress(self, token)

