"""The one place that touches pygls internals, each guarded by a version check.

pygls answers ``$/cancelRequest`` for a ``workspace/executeCommand`` but keeps
running the command's coroutine, and it keeps the cancellation of a
server-initiated progress report in a future it does not expose; the recompile
command needs both to stop its subprocess. Written against pygls 2.x
(``JsonRPCProtocol._request_futures``, ``JsonRPCProtocol.msg_id``,
``WorkDoneProgress.tokens``). With another major version, or if these are
missing, the functions return None: cancelling then only stops the
``$/cancelRequest`` answer, never the server.
"""

from __future__ import annotations

import logging
from concurrent.futures import Future
from importlib.metadata import PackageNotFoundError, version
from typing import Any

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
