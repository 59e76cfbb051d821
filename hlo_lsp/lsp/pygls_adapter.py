"""pygls behind one adapter: every override of a pygls method and every pygls
internal the server needs lives in this module, and nowhere else
(``tests/unit/test_layers.py`` checks: a name starting with ``_`` read on a
pygls object, or a pygls method overridden, outside this file fails).

Written against the pygls versions pinned in ``pyproject.toml`` (2.x; ``.ci/run``
also runs the protocol tests against the newest 2.x). The internals used, each
guarded by a version check where the server can do without it:

- :class:`HloProtocol` overrides ``structure_message``, ``handle_message`` and the
  ``didOpen``/``didChange``/``didClose`` handlers (public or documented pygls 2.x
  extension points) and ``_execute_handler``, ``_send_response`` (private);
- ``JsonRPCProtocol._request_futures``, ``msg_id`` (cancelling a command),
  ``_converter`` (structuring params), ``_include_headers``, ``_result_types``,
  ``writer`` (answers encoded once), ``_server`` (the server a protocol serves),
  ``WorkDoneProgress.tokens`` (cancelling and forgetting progress reports).

The server (:class:`hlo_lsp.lsp.protocol.HloLanguageServer`) is reached through
two methods of its document store only, so this module does not import it:
``store.handles(uri)`` (whether the store keeps that document's text) and
``store.arriving(uri)`` (the version a request arrived with).

pygls answers ``$/cancelRequest`` for a ``workspace/executeCommand`` but keeps
running the command's coroutine, and it keeps the cancellation of a
server-initiated progress report in a future it does not expose; the recompile
command needs both to stop its subprocess. pygls also keeps the future of
every notification and of every handler its own handlers call (the user's
``didOpen``, a command) for the life of the server, with its result
(:func:`forget_when_done`). Answers of thousands of items are written as JSON
encoded once (:func:`send_encoded_result`, pygls' response framing). With another
major version, or if these are missing, the functions return None: cancelling
then only stops the ``$/cancelRequest`` answer, never the server.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from concurrent.futures import Future
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from hlo_lsp.lsp.wire import Encoded

log = logging.getLogger("hlo_lsp")

SUPPORTED_PYGLS_MAJOR = 2


def _pygls_major() -> int | None:
    try:
        return int(version("pygls").split(".")[0])
    except (PackageNotFoundError, ValueError):
        return None


PYGLS_SUPPORTED = _pygls_major() == SUPPORTED_PYGLS_MAJOR
if not PYGLS_SUPPORTED:
    log.warning("pygls %s is not the major version hlo-lsp was written for (%d): "
                "cancelling a recompile will not stop its program",
                _pygls_major(), SUPPORTED_PYGLS_MAJOR)


def current_request_future(protocol: Any) -> Future | None:
    """The future pygls cancels when the client sends ``$/cancelRequest`` for the
    request being handled now (in this task); None when unknown."""
    if not PYGLS_SUPPORTED:
        return None
    try:
        msg_id = protocol.msg_id
        futures = protocol._request_futures
    except AttributeError:
        return None
    return futures.get(msg_id) if msg_id is not None else None


def structure_request(protocol: Any, data: Any) -> tuple[bool, Any]:
    """Structure a request message the way pygls does (its type for the method),
    but report failure instead of logging a traceback: (True, message) or
    (False, None) when the params cannot be read. Messages that are not requests
    are left to pygls: (False, data).

    The params of a method lsprotocol has no type for (``hlo/inlineRegions``,
    ``hlo/counterpart``) stay plain JSON, for the handler to read
    (:func:`hlo_lsp.lsp.messages.parse_params`). pygls would turn each of their
    objects into an instance of a new ``namedtuple`` class: a class per object
    per request, each a reference cycle that only a full collection frees (about
    a thousand of them held in a server after 250 fuzzed documents)."""
    if not (PYGLS_SUPPORTED and isinstance(data, dict) and "jsonrpc" in data
            and "id" in data and "method" in data and "error" not in data):
        return False, data
    try:
        from pygls.protocol import JsonRPCRequestMessage

        request_type = protocol.get_message_type(data["method"])
        if request_type is None:
            return True, JsonRPCRequestMessage(id=data["id"], method=data["method"],
                                               params=data.get("params"),
                                               jsonrpc=data["jsonrpc"])
        return True, protocol._converter.structure(data, request_type)
    except Exception:  # noqa: BLE001 - malformed params: the caller answers -32602
        return True, None


def send_error(protocol: Any, msg_id: Any, error: Exception) -> None:
    """Answer request ``msg_id`` with the JSON-RPC error ``error`` (a pygls
    ``JsonRpcException``)."""
    protocol._send_response(msg_id, error=error.to_response_error())


def progress_cancel_future(server: Any, token: str) -> Future | None:
    """The future pygls cancels when the client cancels the progress report
    ``token`` (``window/workDoneProgress/cancel``); None when unknown."""
    if not PYGLS_SUPPORTED:
        return None
    tokens = getattr(server.work_done_progress, "tokens", None)
    return tokens.get(token) if isinstance(tokens, dict) else None


def forget_progress(server: Any, token: str) -> None:
    """Drop pygls' record of a finished progress report (pygls keeps every token
    for the life of the server otherwise)."""
    if not PYGLS_SUPPORTED:
        return
    tokens = getattr(server.work_done_progress, "tokens", None)
    if isinstance(tokens, dict):
        tokens.pop(token, None)


def forget_when_done(protocol: Any, msg_id: Any) -> None:
    """Drop pygls' record of the handler just started for ``msg_id`` once it is
    done.

    pygls 2.1 files every handler it runs under ``_request_futures[msg_id]`` (so
    that ``$/cancelRequest`` finds it) but removes the entry only when it sends
    a response. A notification (``didOpen``, ``didChange``...) and the user
    handler that one of pygls' built-in handlers calls (the command behind
    ``workspace/executeCommand``, the server's ``didOpen``) run under a fresh
    uuid and send none, so their futures stayed, with their results: the
    readable view or the summary of every command, a few kilobytes for each
    edit, for as long as the server ran. The entry is removed only if it is
    still the future of that handler (a request's own, which pygls removes
    itself, is left to pygls)."""
    if not PYGLS_SUPPORTED:
        return
    futures = getattr(protocol, "_request_futures", None)
    future = futures.get(msg_id) if isinstance(futures, dict) else None
    if future is None or not hasattr(future, "add_done_callback"):
        return

    def forget(done: Any) -> None:  # in a worker thread for a threaded handler
        if futures.get(msg_id) is done:
            futures.pop(msg_id, None)
    future.add_done_callback(forget)


def send_encoded_result(protocol: Any, msg_id: Any, result_json: str) -> bool:
    """Answer request ``msg_id`` with a result already encoded as JSON (ASCII)
    text, written into the response as it is (pygls would unstructure a result
    through cattrs first). Follows pygls 2.x's ``JsonRPCProtocol._send_data``
    framing (``writer``, ``_include_headers``, ``CONTENT_TYPE``, ``CHARSET``).
    False when that is not available: the caller then answers the usual way."""
    if not PYGLS_SUPPORTED:
        return False
    try:
        writer = protocol.writer
        include_headers = protocol._include_headers
        result_types = protocol._result_types
    except AttributeError:
        return False
    if writer is None:
        return False
    result_types.pop(msg_id, None)
    body = f'{{"jsonrpc":"2.0","id":{json.dumps(msg_id)},"result":{result_json}}}'
    if include_headers:
        body = (f"Content-Length: {len(body)}\r\n"
                f"Content-Type: {protocol.CONTENT_TYPE}; charset={protocol.CHARSET}\r\n\r\n"
                + body)
    try:
        res = writer.write(body.encode(protocol.CHARSET))
        if inspect.isawaitable(res):
            asyncio.ensure_future(res)
    except Exception:  # noqa: BLE001 - as pygls' _send_data: the client is gone
        log.exception("sending the answer to request %s failed", msg_id)
    return True


@dataclass(frozen=True, slots=True)
class _UnreadableRequest:
    """A request whose params could not be read (answered with -32602)."""

    msg_id: Any
    method: str
    jsonrpc: str = "2.0"


class HloProtocol(LanguageServerProtocol):
    """pygls' protocol, except that

    - the text of a document the server analyses is kept by its document store
      alone (:meth:`keeps_text`): pygls' workspace holds no copy, and the
      server's ``didOpen``/``didChange``/``didClose`` handlers, which give the
      store the text and the edits, run at once, in the order the client sent
      them (they are plain functions), before the requests read after them;
      pygls' workspace keeps the other documents (an XLA report);
    - a request whose params cannot be read is answered with ``InvalidParams``
      (-32602), as JSON-RPC 2.0 wants, instead of being dropped with a logged
      traceback;
    - a result encoded as JSON by the handler (:class:`hlo_lsp.lsp.wire.Encoded`:
      the answers of thousands of items) is written as it is;
    - a handler's future is forgotten when it is done, not only when a response
      is sent (:func:`forget_when_done`)."""

    def _execute_handler(self, msg_id, handler, callback, args=None, kwargs=None):
        super()._execute_handler(msg_id, handler, callback, args, kwargs)
        forget_when_done(self, msg_id)

    def structure_message(self, data: dict[str, Any]):
        is_request, message = structure_request(self, data)
        if not is_request:
            return super().structure_message(data)
        if message is None:
            log.warning("invalid params for %s (request %s)", data.get("method"), data.get("id"))
            return _UnreadableRequest(data["id"], str(data["method"]))
        return message

    def _send_response(self, msg_id, result=None, error=None):
        if error is None and isinstance(result, Encoded):
            if send_encoded_result(self, msg_id, result.text):
                return
            result = json.loads(result.text)
        super()._send_response(msg_id, result, error)

    def handle_message(self, message):
        if isinstance(message, _UnreadableRequest):
            send_error(self, message.msg_id, JsonRpcInvalidParams(
                f"invalid params for {message.method}"))
            return
        server = self._server
        store = getattr(server, "store", None)
        params = getattr(message, "params", None)
        doc = (params.get("textDocument") if isinstance(params, dict)  # a custom request's
               else getattr(params, "text_document", None))
        uri = doc.get("uri") if isinstance(doc, dict) else getattr(doc, "uri", None)
        if getattr(message, "id", None) is None or not isinstance(uri, str) \
                or store is None:
            super().handle_message(message)
            return
        # The positions of a request are in the text of the version current when
        # it arrives; its handler runs later, after the messages read with it
        # (edits among them) were handled. pygls runs the handler in a copy of
        # this context, so it finds the version there.
        with store.arriving(uri):
            super().handle_message(message)

    def keeps_text(self, uri: str) -> bool:
        """Whether the server's document store keeps the text of ``uri`` (then
        pygls' workspace keeps none)."""
        store = getattr(self._server, "store", None)
        return store is not None and store.handles(uri)

    def _server_handler(self, method: str, params: Any):
        """Run the server's handler of ``method`` (a pygls generator step)."""
        if (handler := self.fm.features.get(method)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: types.DidOpenTextDocumentParams):
        if not self.keeps_text(params.text_document.uri):
            yield from super().lsp_text_document__did_open(params)
            return
        yield from self._server_handler(types.TEXT_DOCUMENT_DID_OPEN, params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams):
        if not self.keeps_text(params.text_document.uri):
            yield from super().lsp_text_document__did_change(params)
            return
        yield from self._server_handler(types.TEXT_DOCUMENT_DID_CHANGE, params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: types.DidCloseTextDocumentParams):
        if not self.keeps_text(params.text_document.uri):
            yield from super().lsp_text_document__did_close(params)
            return
        yield from self._server_handler(types.TEXT_DOCUMENT_DID_CLOSE, params)
