"""Where an answer points: a span of the same document, or a place in another file.

Features return these instead of LSP ranges; :mod:`hlo_lsp.lsp.convert` turns them
into LSP locations with the document's line index.
"""

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Span:
    """A range ``[start, end)`` of character offsets (code points) in the same document."""

    start: int
    end: int


@dataclass(frozen=True, slots=True)
class FileTarget:
    """A place in another file: absolute ``path``, 1-based ``line`` and ``column``
    (0 when unknown), as printed in XLA metadata and stack-frame tables
    (xla/xla_data.proto ``OpMetadata``, ``StackFrameIndexProto``)."""

    path: str
    line: int
    column: int = 0
    end_line: int = 0
    end_column: int = 0
