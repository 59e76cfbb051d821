"""XLA's own parser as a second opinion on each analysis of an opened document.

:class:`XlaCheck` stands between the document store and the server (a
:class:`~hlo_lsp.analysis.documents.StoreListener` passing every event on):
after each analysis it asks XLA's parser (:class:`hlo_lsp.syntax.xla.XlaOracle`,
a worker process, talked to from one ``xla`` thread) for its verdict on the
text, keeps it on the analysis (``derived["xla"]``, read by
:attr:`~hlo_lsp.analysis.documents.Analysis.xla_problems`) and, when it finds a
problem, has the listener publish the analysis again (:meth:`XlaListener.publish`).

The checks run one at a time, in the order of the analyses; one whose text is
no longer the document's by its turn (edited again, closed, or opened again
with another text: :func:`is_current`) is not run: its verdict could never be
published, and a typing storm on a large dump would queue a parse of the whole
text (0.4 s for 3 MB) per edit.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from hlo_lsp.analysis.documents import Analysis, Snapshot, StoreListener
from hlo_lsp.features.diagnostics import xla_problem
from hlo_lsp.model.hlo import Problem
from hlo_lsp.syntax.lines import LineIndex
from hlo_lsp.syntax.xla import SERVER_WORKER_NICE, XlaOracle, available as xla_available

#: Texts longer than this (characters) are not given to XLA's parser.
MAX_XLA_CHECK_CHARS = 64 * 1024 * 1024


class XlaListener(StoreListener, Protocol):
    """A store listener that also publishes an analysis' diagnostics again."""

    def publish(self, analysis: Analysis) -> None:
        """Publish the diagnostics of ``analysis`` (its own and XLA's verdict),
        a current analysis whose XLA verdict found a problem."""


def is_current(analysis: Analysis, snapshot: Snapshot | None) -> bool:
    """Whether ``analysis`` is of the text the editor has open now
    (``snapshot``, None for a closed document): the same version and the same
    text (a document closed and opened again starts over at version 1, with
    any text)."""
    return (snapshot is not None and snapshot.version == analysis.version
            and snapshot.text == analysis.module.text)


class XlaCheck:
    """See the module docstring. ``listener`` hears every event of the store
    first; ``snapshot_of(uri)`` is the store's current snapshot of an opened
    document (:meth:`~hlo_lsp.analysis.documents.DocumentStore.snapshot`).
    :attr:`enabled` is the setting ``xlaDiagnostics``."""

    def __init__(self, listener: XlaListener | None,
                 snapshot_of: Callable[[str], Snapshot | None]) -> None:
        self.listener = listener
        self.snapshot_of = snapshot_of
        self.enabled = True
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="xla")
        self._oracle: XlaOracle | None = None
        #: XLA's checks run one at a time, in the order of the analyses
        self._turn = asyncio.Lock()
        self._tasks: set[asyncio.Task] = set()
        self._closed = False

    def oracle(self) -> XlaOracle | None:
        """XLA's parser in a worker process (started on first use), unless
        :attr:`enabled` is false, jaxlib is missing or the check is closed."""
        if not self.enabled or self._closed or not xla_available():
            return None
        if self._oracle is None:
            self._oracle = XlaOracle(nice=SERVER_WORKER_NICE)
        return self._oracle

    # -- StoreListener ----------------------------------------------------------
    def analysed(self, analysis: Analysis, current: bool) -> None:
        """Tell the listener, then ask XLA's parser about the analysis' text
        (in the background; not for a document without a full model or one
        over :data:`MAX_XLA_CHECK_CHARS`)."""
        if self.listener is not None:
            self.listener.analysed(analysis, current)
        oracle = self.oracle()
        if (oracle is not None and not analysis.lazy_only
                and len(analysis.module.text) <= MAX_XLA_CHECK_CHARS):
            self._spawn(self.check(oracle, analysis))

    def edited(self, uri: str, version: int, problems: list[Problem],
               lines: LineIndex) -> None:
        if self.listener is not None:
            self.listener.edited(uri, version, problems, lines)

    async def begin_progress(self, title: str) -> str | None:
        return await self.listener.begin_progress(title) if self.listener is not None else None

    def end_progress(self, token: str, message: str) -> None:
        if self.listener is not None:
            self.listener.end_progress(token, message)

    # -- the check --------------------------------------------------------------
    async def check(self, oracle: XlaOracle, analysis: Analysis) -> None:
        """XLA's verdict on ``analysis``' text, kept on it and published when it
        finds a problem and the analysis is still current; not asked at all
        when the analysis is no longer current by its turn."""
        loop = asyncio.get_running_loop()
        async with self._turn:
            if not is_current(analysis, self.snapshot_of(analysis.uri)):
                return
            verdict = await loop.run_in_executor(self._pool, oracle.check,
                                                 analysis.module.text)
        problems = [xla_problem(verdict, analysis.lines)] \
            if verdict is not None and not verdict.ok else []
        analysis.derived["xla"] = problems
        if (problems and self.listener is not None
                and is_current(analysis, self.snapshot_of(analysis.uri))):
            self.listener.publish(analysis)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def close(self) -> None:
        """Cancel the pending checks, stop XLA's worker process and the ``xla``
        thread; no check runs afterwards. Idempotent."""
        self._closed = True
        for task in list(self._tasks):
            task.cancel()
        oracle, self._oracle = self._oracle, None
        if oracle is not None:
            oracle.close()
        self._pool.shutdown(wait=False, cancel_futures=True)
