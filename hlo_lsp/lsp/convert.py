"""From the features' plain data (character offsets, :class:`~hlo_lsp.model.spans.Span`,
:class:`~hlo_lsp.model.spans.FileTarget`, problems) to LSP types (the answers
of thousands of items: :mod:`hlo_lsp.lsp.wire`).

Positions go through the document's :class:`~hlo_lsp.syntax.lines.LineIndex`,
which counts columns in the encoding negotiated at initialize (UTF-16 unless the
client offers another, LSP 3.17 ``PositionEncodingKind``).
"""

from __future__ import annotations

from lsprotocol import types
from pygls.uris import from_fs_path

from hlo_lsp.model.hlo import Problem, Severity
from hlo_lsp.model.spans import FileTarget
from hlo_lsp.syntax.lines import LineIndex

_SEVERITY = {Severity.ERROR: types.DiagnosticSeverity.Error,
             Severity.WARNING: types.DiagnosticSeverity.Warning,
             Severity.INFORMATION: types.DiagnosticSeverity.Information,
             Severity.HINT: types.DiagnosticSeverity.Hint}

SYMBOL_KINDS = {"module": types.SymbolKind.Module, "computation": types.SymbolKind.Function,
                "entry": types.SymbolKind.Function, "instruction": types.SymbolKind.Variable,
                "parameter": types.SymbolKind.Field, "table": types.SymbolKind.Namespace,
                "fusion": types.SymbolKind.Operator, "custom-call": types.SymbolKind.Method,
                "collective": types.SymbolKind.Event, "control flow": types.SymbolKind.Struct}


def to_position(lines: LineIndex, offset: int) -> types.Position:
    """The LSP position of character ``offset``."""
    line, character = lines.position(offset)
    return types.Position(line=line, character=character)


def to_range(lines: LineIndex, start: int, end: int) -> types.Range:
    """The LSP range of characters ``[start, end)`` (empty when ``end < start``)."""
    return types.Range(start=to_position(lines, start), end=to_position(lines, max(start, end)))


def to_offset(lines: LineIndex, position: types.Position) -> int:
    """The character offset of an LSP position (clamped to the text)."""
    return lines.offset(position.line, position.character)


def to_diagnostic(p: Problem, lines: LineIndex) -> types.Diagnostic:
    """A problem as a diagnostic; an empty range is widened to one character."""
    return types.Diagnostic(range=to_range(lines, p.start, max(p.end, p.start + 1)),
                            message=p.message, severity=_SEVERITY[p.severity],
                            source=p.source)


def file_location(target: FileTarget) -> types.Location | None:
    """A place in another file (1-based line and column, 0 = unknown) as a Location."""
    uri = from_fs_path(target.path)
    if uri is None:
        return None
    line = max(target.line - 1, 0)
    col = max(target.column - 1, 0) if target.column else 0
    end_line = max(target.end_line - 1, line) if target.end_line else line
    end_col = max(target.end_column - 1, 0) if target.end_column else col
    return types.Location(uri=uri, range=types.Range(
        start=types.Position(line=line, character=col),
        end=types.Position(line=end_line, character=end_col)))

