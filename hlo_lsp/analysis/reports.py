"""XLA's buffer-assignment and memory-usage reports beside a dump
(``*-buffer-assignment.txt``, ``*-memory-usage-report.txt``; parsed by
:mod:`hlo_lsp.dump.reports`), the questions asked of them in an editor.

These files are not HLO text: the document store does not analyse them. The
text of a report is the editor's copy when it is open (the caller passes it),
else the file, read off the event loop as untrusted input.

- links (:func:`report_links`): in a buffer-assignment report every instruction
  name (``<id name ...>``) links to the instruction in the HLO dump; in a
  memory-usage report each row's offset links to the first value at that offset
  in the buffer-assignment report, the tooltip listing what is placed there. At
  most :data:`MAX_REPORT_LINKS` links.
- definition (:func:`report_definition`): on an instruction name, that
  instruction in the HLO dump; on an allocation header (or a memory-usage table
  header), every instruction with a value in the allocation; on a memory-usage
  row, the instructions whose values share that offset.

Positions are ``(line, character)`` in the store's position encoding
(``DocumentStore.encoding``). Paths become URIs through the caller's
``to_uri(path) -> str | None`` (the protocol adapter's). No pygls.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass

from hlo_lsp.analysis.answers import Placed
from hlo_lsp.analysis.documents import DocumentStore
from hlo_lsp.analysis.work import in_thread
from hlo_lsp.dump.index import instruction_names
from hlo_lsp.dump.names import hlo_path_for_report
from hlo_lsp.dump.reports import report_links as parse_links
from hlo_lsp.dump.reports import report_names_at
from hlo_lsp.dump.untrusted import UntrustedFileError, read_text
from hlo_lsp.syntax.lines import LineIndex

log = logging.getLogger("hlo_lsp.reports")

#: Link answers for a report stop after this many links.
MAX_REPORT_LINKS = 50_000

ToUri = Callable[[str], "str | None"]


@dataclass(frozen=True)
class ReportLink:
    """A link of a report: ``place`` (the linked text in the report's current
    text) goes to line ``line`` (0-based) of the file ``uri``, ``tooltip`` saying
    what is there ("" for none)."""

    place: Placed
    uri: str
    line: int
    tooltip: str


@dataclass(frozen=True)
class Elsewhere:
    """Places in another document: the HLO dump ``uri`` a report describes, each
    place in the text of its analysis (the instruction's name, with ``%``)."""

    uri: str
    places: list[Placed]


async def _report_text(store: DocumentStore, uri: str, text: str | None
                       ) -> tuple[str, str, LineIndex] | None:
    """(path, text, line index) of the report ``uri``: ``text`` (the editor's
    copy) when given, else the file, read off the event loop; None when it
    cannot be read."""
    path = store.to_path(uri)
    if not path:
        return None
    if text is None:
        def read() -> str | None:
            try:
                return read_text(path)
            except UntrustedFileError as exc:
                log.warning("report not read: %s", exc)
                return None
        text = await in_thread(read)
        if text is None:
            return None
    return path, text, LineIndex(text, store.encoding)


async def _hlo_names(store: DocumentStore, report_path: str, to_uri: ToUri):
    """(hlo uri, its analysis, instruction name -> instruction) of the HLO dump a
    report describes; (None, None, {}) without one."""
    hlo_path = hlo_path_for_report(report_path)
    hlo_uri = to_uri(hlo_path) if hlo_path and os.path.isfile(hlo_path) else None
    a = await store.analysis(hlo_uri) if hlo_uri else None
    if a is None:
        return None, None, {}
    return hlo_uri, a, await in_thread(instruction_names, a.module)


async def report_links(store: DocumentStore, uri: str, text: str | None,
                       to_uri: ToUri) -> list[ReportLink]:
    """The links of the report ``uri`` (its open ``text``, or None to read the
    file); see the module docstring. [] for a report that cannot be read."""
    report = await _report_text(store, uri, text)
    if report is None:
        return []
    path, text, lines = report
    hlo_uri, a, names = await _hlo_names(store, path, to_uri)
    links = await in_thread(parse_links, path, text)
    out = []
    for link in links[:MAX_REPORT_LINKS]:
        start = lines.starts[link.line] + link.start if link.line < len(lines.starts) else 0
        place = Placed(lines, start, start + (link.end - link.start))
        if link.instruction is not None:
            ins = names.get(link.instruction)
            if ins is not None:
                out.append(ReportLink(place, hlo_uri, a.lines.position(ins.name.start)[0],
                                      link.tooltip))
        elif link.target_path and (target := to_uri(link.target_path)):
            out.append(ReportLink(place, target, link.target_line, link.tooltip))
    return out


async def report_definition(store: DocumentStore, uri: str, line: int, character: int,
                            text: str | None, to_uri: ToUri) -> Elsewhere | None:
    """Where the report ``uri`` (its open ``text``, or None to read the file)
    points at the position: instructions of the HLO dump it describes; see the
    module docstring. None when nothing is there or there is no HLO dump."""
    report = await _report_text(store, uri, text)
    if report is None:
        return None
    path, text, lines = report
    offset = lines.offset(line, character)
    at = lines.line_of(offset)
    found = await in_thread(report_names_at, path, text, at, offset - lines.starts[at])
    if not found:
        return None
    hlo_uri, a, names = await _hlo_names(store, path, to_uri)
    if hlo_uri is None:
        return None
    return Elsewhere(hlo_uri, [Placed(a.lines, ins.name.start, ins.name.end)
                               for name in found if (ins := names.get(name)) is not None])
