"""The workspace index state one server holds (:class:`WorkspaceState`), apart
from the handlers that fill it (:mod:`hlo_lsp.lsp.handlers.workspace`), so that
the server class (:mod:`hlo_lsp.lsp.protocol`) can hold it without importing a
handler module (no import circle).
"""

from __future__ import annotations

import asyncio

from hlo_lsp.dump.index import WorkspaceIndex
from hlo_lsp.lsp import messages
from hlo_lsp.lsp.settings import WorkspaceSettings


class WorkspaceState:
    """The index of one server and its background indexing task."""

    def __init__(self, settings: WorkspaceSettings) -> None:
        self.settings = settings
        self.index = WorkspaceIndex(workers=settings.workers,
                                    size_limit=int(settings.max_file_size_mb * (1 << 20)),
                                    max_files=settings.max_files,
                                    exclude=list(settings.exclude),
                                    dump_dirs_only=settings.dump_directories_only,
                                    max_scanned=settings.max_scanned_files)
        self.task: asyncio.Task | None = None
        self.folders: list[str] = []
        self.started = 0.0
        self.finished = asyncio.Event()
        #: (path, reason) of the files skipped that the user was told of
        self.skipped_told: set[tuple[str, str]] = set()

    def close(self) -> None:
        """Stop indexing and the index's worker processes."""
        if self.task is not None:
            self.task.cancel()
        self.index.close()

    def status(self) -> messages.WorkspaceStatus:
        """Where indexing stands (seconds: of the last finished indexing pass)."""
        running = self.task is not None and not self.task.done()
        done, total = self.index.progress or (len(self.index), len(self.index))
        symbols = sum(len(s.computations) + len(s.fusions) + len(s.custom_calls)
                      + len(s.instructions) + 1
                      for s in self.index.summaries())
        return messages.WorkspaceStatus(running, done, total, len(self.index), symbols,
                                        round(self.index.last_index_seconds, 3))
