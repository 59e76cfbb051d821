"""The dispatch table: for every request, notification and command the server
registers, the thread its answer is computed on, its priority there and its
answer on failure, in one place (as ruff's server declares each request's
schedule, and rust-analyzer's ``RequestDispatcher`` whether it runs on the main
loop or the pool).

Threads (see docs/architecture.md, Threads and processes):

- ``loop``: answered on the event loop (quick answers: a position's hover,
  definition and references; notifications). Hover of a big document while its
  analysis runs uses the ``quick`` pool (:mod:`hlo_lsp.analysis.answers`).
- ``work``: computed in the work queue (:mod:`hlo_lsp.analysis.work`), one at a
  time, :data:`~hlo_lsp.analysis.work.INTERACTIVE` (what the editor asks by
  itself) before :data:`~hlo_lsp.analysis.work.REPORT` (what a command asks).
- ``thread``: short blocking calls in asyncio's default pool (the workspace
  index, reports beside a dump); ``process``: a child process (recompile).

:func:`route` registers a handler from its row (the guard with the row's
failure answer included); :func:`unrouted` lists what a server registered
without a row, which :func:`hlo_lsp.lsp.server.create_server` refuses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from lsprotocol import types

from hlo_lsp.analysis.work import INTERACTIVE, REPORT
from hlo_lsp.lsp import messages
from hlo_lsp.lsp.requests import guarded

#: The failure answer of a handler that is not guarded (notifications, the
#: lifecycle, commands that report their own errors).
UNGUARDED = object()


@dataclass(frozen=True)
class Route:
    """One row: ``method`` (an LSP method or a command name), ``kind``
    ("request", "notification" or "command"), ``thread`` ("loop", "work",
    "thread" or "process"), ``priority`` in the work queue (None off it) and
    ``on_failure`` (the answer after an internal error, or :data:`UNGUARDED`)."""

    method: str
    kind: str
    thread: str
    priority: int | None
    on_failure: Any


def _rows(*rows: tuple) -> dict[str, Route]:
    return {r[0]: Route(*r) for r in rows}


#: Every method and command the server registers, by name.
ROUTES: dict[str, Route] = _rows(
    # lifecycle and documents (lsp/handlers/text.py, workspace.py)
    (types.INITIALIZE, "request", "loop", None, UNGUARDED),
    (types.INITIALIZED, "notification", "loop", None, UNGUARDED),
    (types.SHUTDOWN, "request", "loop", None, UNGUARDED),
    (types.TEXT_DOCUMENT_DID_OPEN, "notification", "loop", None, UNGUARDED),
    (types.TEXT_DOCUMENT_DID_CHANGE, "notification", "loop", None, UNGUARDED),
    (types.TEXT_DOCUMENT_DID_CLOSE, "notification", "loop", None, UNGUARDED),
    (types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS, "notification", "loop", None, UNGUARDED),
    (types.WORKSPACE_DID_CHANGE_WATCHED_FILES, "notification", "loop", None, UNGUARDED),
    # answers at a position (text.py)
    (types.TEXT_DOCUMENT_HOVER, "request", "loop", None, None),
    (types.TEXT_DOCUMENT_DEFINITION, "request", "loop", None, []),
    (types.TEXT_DOCUMENT_REFERENCES, "request", "loop", None, []),
    # whole-document answers the editor asks by itself (text.py, readable.py)
    (types.TEXT_DOCUMENT_DOCUMENT_SYMBOL, "request", "work", INTERACTIVE, []),
    (types.TEXT_DOCUMENT_FOLDING_RANGE, "request", "work", INTERACTIVE, []),
    (messages.INLINE_REGIONS, "request", "work", INTERACTIVE, []),
    (types.TEXT_DOCUMENT_INLAY_HINT, "request", "work", INTERACTIVE, []),
    (types.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL, "request", "work", INTERACTIVE, None),
    (types.TEXT_DOCUMENT_SEMANTIC_TOKENS_RANGE, "request", "work", INTERACTIVE, None),
    (types.TEXT_DOCUMENT_CODE_LENS, "request", "work", INTERACTIVE, []),
    # reports a command or a page asks for (readable.py, graph.py)
    (messages.SHOW_SUMMARY, "command", "work", REPORT, None),
    (messages.READABLE_VIEW, "command", "work", REPORT, None),
    (messages.COMPARE_DUMPS, "command", "work", REPORT, None),
    (messages.GRAPH, "request", "work", REPORT, None),
    (messages.MEMORY, "request", "work", REPORT, None),
    # the dump directory as a workspace (workspace.py)
    (types.WORKSPACE_SYMBOL, "request", "thread", None, []),
    (messages.COUNTERPART, "request", "thread", None, []),
    (messages.COUNTERPART_FILES, "request", "thread", None, []),
    (messages.WORKSPACE_STATUS, "request", "loop", None, None),
    (messages.GOTO_COUNTERPART, "command", "thread", None, []),
    # recompile (recompile.py)
    (types.TEXT_DOCUMENT_CODE_ACTION, "request", "thread", None, None),
    (messages.RECOMPILE, "command", "process", None, UNGUARDED),
    (types.TEXT_DOCUMENT_DOCUMENT_LINK, "request", "work", INTERACTIVE, []),
    # measured profiles (profiles.py): the analysis layer reads them off the loop
    (messages.PROFILE_RUNS, "request", "thread", None, None),
    (messages.LOAD_PROFILE, "command", "thread", None, None),
    # the pass history (passes.py): walked in a thread by the analysis layer
    (messages.PASS_HISTORY, "request", "thread", None, None),
    (messages.PASS_BLAME, "request", "thread", None, None),
)


def route(server: Any, method: str, *options: Any) -> Callable:
    """Decorate a handler to register it for ``method`` as its row of
    :data:`ROUTES` says: guarded with the row's failure answer (unless
    :data:`UNGUARDED`), as a command or a feature (``options`` as pygls'
    ``feature`` takes them). Raises KeyError for a method without a row."""
    row = ROUTES[method]

    def register(fn: Callable) -> Callable:
        handler = fn if row.on_failure is UNGUARDED else guarded(default=row.on_failure)(fn)
        if row.kind == "command":
            return server.command(method)(handler)
        return server.feature(method, *options)(handler)
    return register


def unrouted(server: Any) -> list[str]:
    """The methods and commands registered on ``server`` without a row in
    :data:`ROUTES`, sorted."""
    fm = server.protocol.fm
    return sorted(m for m in (*fm.features, *fm.commands) if m not in ROUTES)
