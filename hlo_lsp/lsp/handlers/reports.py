"""XLA's buffer-assignment and memory-usage reports, over LSP (docs/protocol.md,
"Buffer-assignment and memory-usage reports").

These files are not HLO text: the document store does not analyse them, and the
text handlers (definition in :mod:`hlo_lsp.lsp.handlers.text`, documentLink in
:mod:`hlo_lsp.lsp.handlers.recompile`) hand their URIs to this module, which
converts: the report's text when the editor has it open (pygls' copy) and the
position go to the analysis layer (:mod:`hlo_lsp.analysis.reports`, through the
host's snapshot), its plain answers come back as LSP links and locations.

For an HLO dump itself, memory over the schedule from the reports beside it is
the snapshot's :meth:`~hlo_lsp.analysis.host.AnalysisSnapshot.memory`.
"""

from __future__ import annotations

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path

from hlo_lsp.dump.names import is_report_file
from hlo_lsp.lsp.convert import to_range
from hlo_lsp.lsp.protocol import HloLanguageServer


def is_report_uri(uri: str) -> bool:
    """True for ``*-buffer-assignment.txt`` / ``*-memory-usage-report.txt`` URIs."""
    return is_report_file(to_fs_path(uri) or uri)


def _open_text(ls: HloLanguageServer, uri: str) -> str | None:
    """The editor's text of ``uri`` when it is open, else None (read from disk)."""
    doc = ls.workspace.text_documents.get(uri)
    return None if doc is None else doc.source


async def report_document_links(ls: HloLanguageServer, uri: str) -> list[types.DocumentLink]:
    """documentLink of the report ``uri``
    (:meth:`~hlo_lsp.analysis.host.AnalysisSnapshot.report_links`)."""
    links = await ls.host.snapshot().report_links(uri, _open_text(ls, uri), from_fs_path)
    return [types.DocumentLink(range=to_range(k.place.lines, k.place.start, k.place.end),
                               target=f"{k.uri}#L{k.line + 1}", tooltip=k.tooltip or None)
            for k in links]


async def report_definition(ls: HloLanguageServer, uri: str,
                            position: types.Position) -> list[types.Location]:
    """definition at ``position`` of the report ``uri``
    (:meth:`~hlo_lsp.analysis.host.AnalysisSnapshot.report_definition`)."""
    got = await ls.host.snapshot().report_definition(
        uri, position.line, position.character, _open_text(ls, uri), from_fs_path)
    return [] if got is None else [
        types.Location(uri=got.uri, range=to_range(p.lines, p.start, p.end))
        for p in got.places]
