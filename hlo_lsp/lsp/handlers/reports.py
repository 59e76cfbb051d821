"""XLA's buffer-assignment and memory-usage reports, over LSP (docs/protocol.md,
"Buffer-assignment and memory-usage reports").

These files are not HLO text: the document store does not analyse them, and the
text handlers (:mod:`hlo_lsp.lsp.handlers.text`, documentLink in
:mod:`hlo_lsp.lsp.handlers.recompile`) hand their URIs to this module.

- documentLink: in a buffer-assignment report every instruction name
  (``<id name ...>``) links to the instruction in the HLO dump (``#L<line>``); in
  a memory-usage report each row's offset links to the first value at that
  offset in the buffer-assignment report, the tooltip listing what is placed
  there. At most :data:`MAX_REPORT_LINKS` links.
- definition: on an instruction name, that instruction in the HLO dump; on an
  allocation header (or a memory-usage table header), every instruction with a
  value in the allocation; on a memory-usage row, the instructions whose values
  share that offset.

For an HLO dump itself, :func:`memory_of` reads the reports beside it as memory
over the schedule (the module header's hover, the summary, ``hlo/memory``).
"""

from __future__ import annotations

import logging
import os
from typing import Callable

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path

from hlo_lsp.dump.index import instruction_names
from hlo_lsp.dump.names import hlo_path_for_report, is_report_file
from hlo_lsp.dump.reports import report_links, report_names_at
from hlo_lsp.dump.untrusted import UntrustedFileError, read_text
from hlo_lsp.features.memory import MemoryTimeline, timeline_for
from hlo_lsp.analysis.documents import Analysis
from hlo_lsp.lsp.convert import to_offset, to_range
from hlo_lsp.lsp.protocol import HloLanguageServer
from hlo_lsp.analysis.work import REPORT, in_thread
from hlo_lsp.syntax.lines import LineIndex

log = logging.getLogger("hlo_lsp.reports")

#: documentLink answers for a report stop after this many links.
MAX_REPORT_LINKS = 50_000


async def memory_of(ls: HloLanguageServer, a: Analysis, priority: int = REPORT
                    ) -> MemoryTimeline | None:
    """Memory over the schedule of the dump ``a`` analyses, from the reports XLA
    wrote beside it (:func:`hlo_lsp.features.memory.timeline_for`), read in the
    work queue once per analysis at ``priority`` (a hover's is
    :data:`~hlo_lsp.analysis.work.INTERACTIVE`); None without reports or outside
    the file system."""
    path = to_fs_path(a.uri)
    if not path or a.lazy_only:
        return None
    return await ls.store.derive(a, "memory", timeline_for, path, a.module, priority=priority)


def is_report_uri(uri: str) -> bool:
    """True for ``*-buffer-assignment.txt`` / ``*-memory-usage-report.txt`` URIs."""
    return is_report_file(to_fs_path(uri) or uri)


async def _open_report(ls: HloLanguageServer, uri: str
                       ) -> tuple[str, str, LineIndex] | None:
    """(path, text, line index) of a report: the editor's copy when it is open,
    else the file, read off the event loop; None when it cannot be read."""
    path = to_fs_path(uri)
    if not path:
        return None
    doc = ls.workspace.text_documents.get(uri)
    if doc is not None:
        text = doc.source
    else:
        def read() -> str | None:
            try:
                return read_text(path)
            except UntrustedFileError as exc:
                log.warning("report not read: %s", exc)
                return None
        text = await in_thread(read)
        if text is None:
            return None
    return path, text, LineIndex(text, ls.position_encoding())


async def _hlo_locator(ls: HloLanguageServer, report_path: str
                       ) -> tuple[str | None, Callable[[str], types.Range | None]]:
    """(hlo uri, instruction name -> its Range) for the HLO dump a report describes."""
    hlo_path = hlo_path_for_report(report_path)
    hlo_uri = from_fs_path(hlo_path) if hlo_path and os.path.isfile(hlo_path) else None
    a = await ls.analysis(hlo_uri) if hlo_uri else None
    if a is None:
        return None, lambda name: None
    names = await in_thread(instruction_names, a.module)

    def locate(name: str) -> types.Range | None:
        ins = names.get(name)
        return to_range(a.lines, ins.name.start, ins.name.end) if ins is not None else None

    return hlo_uri, locate


async def report_document_links(ls: HloLanguageServer, uri: str) -> list[types.DocumentLink]:
    """documentLink of the report ``uri``; see the module docstring."""
    report = await _open_report(ls, uri)
    if report is None:
        return []
    path, text, lines = report
    hlo_uri, locate = await _hlo_locator(ls, path)
    links = await in_thread(report_links, path, text)
    out = []
    for link in links[:MAX_REPORT_LINKS]:
        start = lines.starts[link.line] + link.start if link.line < len(lines.starts) else 0
        rng = to_range(lines, start, start + (link.end - link.start))
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


async def report_definition(ls: HloLanguageServer, uri: str,
                            position: types.Position) -> list[types.Location]:
    """definition at ``position`` of the report ``uri``; see the module docstring."""
    report = await _open_report(ls, uri)
    if report is None:
        return []
    path, text, lines = report
    offset = to_offset(lines, position)
    line = lines.line_of(offset)
    names = await in_thread(report_names_at, path, text, line, offset - lines.starts[line])
    if not names:
        return []
    hlo_uri, locate = await _hlo_locator(ls, path)
    if hlo_uri is None:
        return []
    return [types.Location(uri=hlo_uri, range=rng) for name in names
            if (rng := locate(name)) is not None]
