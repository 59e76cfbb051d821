"""LSP features as pure functions of the model: offsets in, offsets out.

Each module answers one request; none imports pygls or lsprotocol. The server
(:mod:`hlo_lsp.server`) converts offsets to LSP positions.
"""

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Span:
    """A range ``[start, end)`` of character offsets in the same document."""

    start: int
    end: int


@dataclass(frozen=True, slots=True)
class FileTarget:
    """A place in another file: absolute ``path``, 1-based ``line`` and ``column``
    (0 when unknown), as printed in XLA metadata and stack-frame tables."""

    path: str
    line: int
    column: int = 0
    end_line: int = 0
    end_column: int = 0
