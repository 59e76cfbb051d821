"""textDocument/documentLink: metadata source locations as links to Python.

Every ``stack_frame_id=N`` (resolved through the module's stack-frame tables,
:meth:`hlo_lsp.model.StackFrameTables.resolve`) and every
``source_file=".." source_line=N`` pair of older dumps (xla/xla_data.proto
OpMetadata) inside a ``metadata={...}`` attribute becomes a link to the file
and line of the innermost Python frame; the tooltip is the whole call stack.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from hlo_lsp.model.hlo import HloModule, SourceFrame, unescape
from hlo_lsp.features.sources import format_frame

_FRAME_ID = re.compile(r"\bstack_frame_id=(\d+)")
_SOURCE_FILE = re.compile(r'\bsource_file="((?:[^"\\]|\\.)*)"')
_SOURCE_LINE = re.compile(r"\s*source_line=(\d+)")
MAX_TOOLTIP_FRAMES = 40


@dataclass(frozen=True, slots=True)
class SourceLink:
    """A link at ``[start, end)`` (document offsets) to 1-based ``line`` of ``path``
    (resolved by the caller's ``resolve``); ``tooltip`` lists the call stack."""

    start: int
    end: int
    path: str
    line: int
    tooltip: str


def stack_tooltip(stack: list[SourceFrame]) -> str:
    """``Python call stack (innermost first):`` and one ``file:line:col (fn)`` per
    frame, at most :data:`MAX_TOOLTIP_FRAMES`."""
    lines = ["Python call stack (innermost first):"]
    lines += [f"{i}. {format_frame(f)}" for i, f in enumerate(stack[:MAX_TOOLTIP_FRAMES], 1)]
    if len(stack) > MAX_TOOLTIP_FRAMES:
        lines.append(f"... {len(stack) - MAX_TOOLTIP_FRAMES} more frames")
    return "\n".join(lines)


def source_links(module: HloModule,
                 resolve: Callable[[str], str] = lambda p: p) -> list[SourceLink]:
    """Links for all source locations in metadata, in text order. ``resolve``
    turns a path as written in the dump into the path to link to (e.g.
    :func:`hlo_lsp.features.sources.resolve_source_path`)."""
    out: list[SourceLink] = []
    frames_memo: dict[int, list[SourceFrame]] = {}
    for comp in module.computations:
        for ins in comp.instructions:
            meta = ins.attribute("metadata")
            if meta is None:
                continue
            value, base = meta.value, meta.value_start
            for m in _FRAME_ID.finditer(value):
                fid = int(m.group(1))
                stack = frames_memo.get(fid)
                if stack is None:
                    stack = frames_memo[fid] = module.frames.resolve(fid)
                if stack:
                    out.append(SourceLink(base + m.start(), base + m.end(),
                                          resolve(stack[0].file), stack[0].line,
                                          stack_tooltip(stack)))
            for m in _SOURCE_FILE.finditer(value):
                line_m = _SOURCE_LINE.match(value, m.end())
                line = int(line_m.group(1)) if line_m else 1
                end = line_m.end() if line_m else m.end()
                file = unescape(m.group(1))
                if file:
                    out.append(SourceLink(base + m.start(), base + end, resolve(file), line,
                                          stack_tooltip([SourceFrame(file, "", line)])))
    return out
