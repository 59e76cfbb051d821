"""Recompile a dump from its JAX program, and links from metadata to Python.

- ``textDocument/codeAction``: anywhere in an XLA dump file (an instruction, a
  header, a ``}``, a blank line), first what a plain recompile does: "Recompile with JAX on GPU and
  refresh" (CPU/TPU when that is the platform it would run on; "Compile for H100
  here, no GPU needed" when the recipe or the setting names a target GPU), kind
  ``source.hlo.recompile``, running the command ``hlo.recompile`` with arguments
  ``[uri]``; then the other choices, with arguments ``[uri, {"platform": "gpu"}]``
  ("Run on this machine's GPU and refresh", when it has one), ``[uri, {"target":
  "h100"}]`` ("Compile for H100 here, no GPU needed": the target of
  ``hlo.recompile.target``, else the recipe's, else H100) and ``[uri,
  {"platform": "cpu"}]`` ("Run on the CPU and refresh").
- ``workspace/executeCommand`` ``hlo.recompile``: resolve the recipe (the
  ``hlo-lsp-recipe.json`` of the dump directory; else the setting
  ``hlo.recompile.command``; else one inferred from the stack frames). What a
  recipe or an inference would run (:class:`hlo_lsp.dump.environment.RunPlan`: the
  command line, working directory, interpreter and environment changes) runs
  only when the user confirmed that exact plan: answered "Run" to the
  ``window/showMessageRequest`` that shows it, now or before (remembered in the
  user's state directory, :mod:`hlo_lsp.dump.trust`); the setting's command
  runs without asking. Then it runs in a
  subprocess with ``window/workDoneProgress`` (cancellable: the progress cancel
  notification and ``$/cancelRequest`` both kill the process tree), stream its
  output as ``window/logMessage``, then refresh: ``window/showDocument`` for
  each open file whose module was renumbered, fresh diagnostics for every open
  file, and a ``window/showMessage`` saying what changed. Returns
  :meth:`hlo_lsp.dump.recompile.RecompileResult.to_json` (plus ``shownDocuments``).
- A recipe that cannot be used (not a regular file, too large, not UTF-8 or
  JSON, too deep, wrong field types) is said once per file version in a
  ``window/showMessage`` warning (when links or code actions are asked for a
  file of its dump); links, definitions, hover and the code action work without
  it, and ``hlo.recompile`` answers with the reason.
- ``textDocument/documentLink``: every ``stack_frame_id=N`` and
  ``source_file=".." source_line=N`` links to ``file:///...py#L<line>`` with the
  call stack as tooltip; relative paths are resolved in
  :meth:`hlo_lsp.lsp.protocol.HloLanguageServer.source_dirs`. In XLA's reports,
  the links of :mod:`hlo_lsp.lsp.handlers.reports`.

What runs, how it is confirmed, the launchers (issue 16), progress and the
refresh are :mod:`hlo_lsp.analysis.recompile` (:class:`~hlo_lsp.analysis.recompile.Recompiles`,
held by the analysis host); this module converts: LSP params to a dump file's
path and the command's options, and :class:`ClientUI` shows what it says as LSP
messages. The links are the snapshot's
(:meth:`hlo_lsp.analysis.host.AnalysisSnapshot.source_links`), encoded here.

Settings: :class:`hlo_lsp.lsp.settings.RecompileSettings`, from the
initialization options and, when the client supports it, the
``workspace/configuration`` section ``hlo.recompile`` (which wins).
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path

from hlo_lsp.analysis.recompile import RecompileRequest, failed
from hlo_lsp.dump.names import parse_dump_name
from hlo_lsp.features.links import SourceLink
from hlo_lsp.lsp import wire
from hlo_lsp.lsp.convert import to_diagnostic
from hlo_lsp.lsp.dispatch import route
from hlo_lsp.lsp.handlers import reports
from hlo_lsp.lsp.messages import RECOMPILE as COMMAND, recompile_reply
from hlo_lsp.lsp.protocol import HloLanguageServer
from hlo_lsp.lsp.pygls_adapter import current_request_future, progress_cancel_future
from hlo_lsp.lsp.settings import RecompileSettings
from hlo_lsp.model.hlo import Problem
from hlo_lsp.syntax.lines import LineIndex

log = logging.getLogger("hlo_lsp.recompile")

ACTION_KIND = "source.hlo.recompile"
CONFIG_TIMEOUT_S = 5.0


# --------------------------------------------------------------- register ---

def register(server: HloLanguageServer) -> None:
    """Register the code action, the ``hlo.recompile`` command and documentLink,
    each as its row of :data:`hlo_lsp.lsp.dispatch.ROUTES` says."""

    @route(server, types.TEXT_DOCUMENT_CODE_ACTION,
           types.CodeActionOptions(code_action_kinds=[ACTION_KIND]))
    async def code_actions(ls: HloLanguageServer, params: types.CodeActionParams):
        """The recompile actions anywhere in an XLA dump file (see the module
        docstring); none for other files or when ``only`` asks for other kinds."""
        uri = params.text_document.uri
        path = _dump_file(uri)
        only = params.context.only if params.context else None
        if path is None or (only and not any(_asks_for_recompile(k) for k in only)):
            return None
        # Anywhere in the file: on an instruction, a header, a `}`, a blank line or
        # the stack-frame tables (issue 40: "No code actions available" on `}`).
        planned = await ls.host.recompiles.actions(path, ls.settings.recompile,
                                                   ClientUI(ls).say, params.range.start.line, uri)
        return [types.CodeAction(title=title, kind=ACTION_KIND, is_preferred=not extra or None,
                                 command=types.Command(title=title, command=COMMAND,
                                                       arguments=[uri, *extra]))
                for title, extra in planned]

    @route(server, COMMAND)
    async def recompile_command(ls: HloLanguageServer, *args: Any) -> dict:
        """``hlo.recompile``, arguments ``[uri]`` (the plain recompile), ``[uri,
        {"target": T}]`` (compile for the target GPU ``T`` without one: a name of
        :func:`hlo_lsp.dump.targets.builtin_targets` or a GpuTargetConfig file),
        ``[uri, {"platform": P}]`` (run on the device platform ``P``: ``cpu``,
        ``gpu``, ...) or ``[{"uri": uri}]``; exactly the arguments of the code
        actions, which every client must pass on whole. Never raises (errors are
        shown and answered); see :meth:`hlo_lsp.analysis.recompile.Recompiles.run`."""
        uri = args[0] if args else None
        uri = uri.get("uri") if isinstance(uri, dict) else uri
        options = args[1] if len(args) > 1 and isinstance(args[1], dict) else {}
        ui = ClientUI(ls)
        ui.watch_request()
        try:
            path = _dump_file(uri)
            if path is None:
                return recompile_reply(**failed(
                    ui, f"hlo.recompile: {uri!r} is not a file of an XLA dump directory."))
            request = RecompileRequest(
                uri, path, options, await recompile_settings(ls, uri),
                next(iter(ls.workspace_folders()), None), await ls.source_dirs(uri),
                ls.settings.device)
            return _reply(await ls.host.recompiles.run(request, ui))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - report, never crash the server
            log.exception("hlo.recompile failed")
            return recompile_reply(**failed(ui, f"hlo.recompile failed: {exc!r}"))

    @route(server, types.TEXT_DOCUMENT_DOCUMENT_LINK,
           types.DocumentLinkOptions(resolve_provider=False))
    async def document_links(ls: HloLanguageServer, params: types.DocumentLinkParams):
        """Metadata source locations as links to ``file.py#L<line>``; in buffer
        assignment reports, instruction names as links to the HLO dump."""
        uri = params.text_document.uri
        if reports.is_report_uri(uri):
            return await reports.report_document_links(ls, uri)
        path = _dump_file(uri)
        if path is not None:  # says once if its recipe is unusable
            await ls.host.recompiles.recipe(os.path.dirname(path), ClientUI(ls).say)
        got = await ls.host.snapshot().source_links(
            uri, await ls.source_dirs(uri), ls.source_roots(uri), _links_answer)
        return [] if got is None else got


# ---------------------------------------------------------- conversions ---

def _asks_for_recompile(kind: Any) -> bool:
    """Whether the code action kind ``kind`` of a request's ``only`` includes ours."""
    kind = str(getattr(kind, "value", kind))
    return ACTION_KIND == kind or ACTION_KIND.startswith(kind + ".")


def _links_answer(links: list[SourceLink], lines: LineIndex) -> wire.Encoded:
    """The ``textDocument/documentLink`` answer: each link as an LSP
    ``DocumentLink`` to ``file.py#L<line>``, its tooltip the Python call stack;
    a link whose file a URI cannot hold is left out (:func:`_file_uri`)."""
    at = wire.converter(lines)
    out = []
    for link in links:
        target = _file_uri(link.path)
        if target is None:
            continue
        out.append({"range": {"start": at(link.start), "end": at(max(link.start, link.end))},
                    "target": f"{target}#L{link.line}", "tooltip": link.tooltip})
    return wire.encode(out)


def _file_uri(path: str) -> str | None:
    """The ``file:`` URI of the absolute ``path``; None for a relative path or
    one a URI cannot hold (a lone surrogate, from an undecodable byte in a file
    name or from the dump's text): that link alone is left out."""
    if not os.path.isabs(path):
        return None
    try:
        return from_fs_path(path)
    except UnicodeEncodeError:
        return None


def _dump_file(uri: str | None) -> str | None:
    """The absolute path of ``uri`` when it is an XLA dump file, else None."""
    if not isinstance(uri, str):
        return None
    path = to_fs_path(uri)
    if not path or parse_dump_name(os.path.basename(path)) is None:
        return None
    return os.path.abspath(path)


def _reply(fields: dict) -> dict:
    """The command's JSON answer (:func:`hlo_lsp.lsp.messages.recompile_reply`)
    from the fields :meth:`~hlo_lsp.analysis.recompile.Recompiles.run` answers,
    their paths as URIs."""
    if "mapping" in fields:
        fields["mapping"] = {from_fs_path(k): (from_fs_path(v) if v else None)
                             for k, v in fields["mapping"].items()}
    if "shown_documents" in fields:
        fields["shown_documents"] = [from_fs_path(p) for p in fields["shown_documents"]]
    return recompile_reply(**fields)


async def recompile_settings(ls: HloLanguageServer, uri: str) -> RecompileSettings:
    """``hlo.recompile`` settings: the initialization options, overridden by the
    client's ``workspace/configuration`` answer for section ``hlo.recompile``
    (asked only when the client supports it; empty values are ignored)."""
    settings = ls.settings.recompile
    caps = ls.client_capabilities
    if caps.workspace is not None and caps.workspace.configuration:
        try:
            answer = await asyncio.wait_for(ls.workspace_configuration_async(
                types.ConfigurationParams(items=[types.ConfigurationItem(
                    scope_uri=uri, section="hlo.recompile")])), CONFIG_TIMEOUT_S)
        except Exception:  # noqa: BLE001 - a client that cannot answer has no settings
            log.info("workspace/configuration for hlo.recompile failed", exc_info=True)
            answer = None
        if answer:
            settings = settings.overridden_by(answer[0])
    return settings


class ClientUI:
    """:class:`hlo_lsp.analysis.recompile.RecompileUI` through LSP:
    ``window/showMessage``, ``window/showMessageRequest`` (the confirmation),
    ``window/workDoneProgress`` (cancellable), ``window/logMessage``,
    ``textDocument/publishDiagnostics`` and ``window/showDocument``. One per
    command; :attr:`cancel` is set by the progress report's cancel and, after
    :meth:`watch_request`, by ``$/cancelRequest``."""

    def __init__(self, ls: HloLanguageServer) -> None:
        self.ls = ls
        self.cancel = asyncio.Event()
        self.token: str | None = None

    def watch_request(self) -> None:
        """Set :attr:`cancel` when the client sends ``$/cancelRequest`` for the
        request being handled (called in its handler). pygls answers the request
        as cancelled but keeps running the command's coroutine, so the request's
        future is watched (:func:`hlo_lsp.lsp.pygls_adapter.current_request_future`)."""
        self._watch(current_request_future(self.ls.protocol))

    def _watch(self, future) -> None:
        if future is not None:
            loop = asyncio.get_running_loop()
            future.add_done_callback(
                lambda f: f.cancelled() and loop.call_soon_threadsafe(self.cancel.set))

    def say(self, kind: str, message: str) -> None:
        self.ls.window_show_message(types.ShowMessageParams(
            type=getattr(types.MessageType, kind.capitalize()), message=message))

    async def confirm(self, message: str, choices: list[str]) -> str | None:
        answer = await self.ls.window_show_message_request_async(
            types.ShowMessageRequestParams(
                type=types.MessageType.Warning, message=message,
                actions=[types.MessageActionItem(title=c) for c in choices]))
        return None if answer is None else answer.title

    async def begin_progress(self, title: str, message: str) -> None:
        self.token = await self.ls.begin_progress(title, message, cancellable=True,
                                                  kind="recompile")
        if self.token is not None:
            self._watch(progress_cancel_future(self.ls, self.token))

    def report_progress(self, message: str) -> None:
        if self.token is not None:
            self.ls.work_done_progress.report(self.token, types.WorkDoneProgressReport(
                message=message))

    def end_progress(self, message: str) -> None:
        if self.token is not None:
            self.ls.end_progress(self.token, message)

    def log(self, line: str, kind: str = "log") -> None:
        self.ls.window_log_message(types.LogMessageParams(
            type=getattr(types.MessageType, kind.capitalize()), message=line))

    def publish(self, path: str, problems: list[Problem], lines: LineIndex | None) -> None:
        self.ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=from_fs_path(path), diagnostics=[to_diagnostic(p, lines) for p in problems]))

    async def show(self, path: str, take_focus: bool, line: int | None = None) -> bool:
        caps = self.ls.client_capabilities.window
        if not (caps and caps.show_document and caps.show_document.support):
            return False
        at = types.Position(line=line, character=0) if line is not None else None
        try:
            await self.ls.window_show_document_async(types.ShowDocumentParams(
                uri=from_fs_path(path), take_focus=take_focus,
                selection=types.Range(start=at, end=at) if at is not None else None))
        except Exception:  # noqa: BLE001
            log.info("window/showDocument failed", exc_info=True)
            return False
        return True
