"""textDocument/documentLink: metadata source locations as links to Python.

In each ``metadata={...}`` attribute, the ``stack_frame_id=N`` (resolved through
the module's stack-frame tables) or the ``source_file=".." source_line=N`` pair
of older dumps (xla/xla_data.proto OpMetadata) that
:func:`hlo_lsp.model.frames.frame_origin` reads becomes a link to the file and
line of the innermost Python frame; the tooltip is the whole call stack.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Optional

from hlo_lsp.model.frames import STACK_FRAME_ID, format_frame, frame_origin
from hlo_lsp.model.hlo import HloModule, SourceFrame

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
                 resolve: Callable[[str], Optional[str]] = lambda p: p,
                 note: Callable[[str], str] | None = None) -> list[SourceLink]:
    """Links for all source locations in metadata, in text order: one per
    instruction whose metadata names a Python frame
    (:func:`hlo_lsp.model.frames.frame_origin`), over its ``stack_frame_id=N`` or
    its ``source_file=".." [source_line=N]``. ``resolve`` turns a path as written
    in the dump into the path to link to (e.g.
    :func:`hlo_lsp.dump.sources.resolve_source_path`), or None when the file does
    not exist: that instruction gets no link. It is called once per distinct path.
    ``note(path)``, when given, is a sentence about the resolved path that
    starts the tooltip ("" for none; e.g.
    :func:`hlo_lsp.dump.sources.outside_note`: the file lies outside the dump
    directory, the source roots and the workspace folders)."""
    out: list[SourceLink] = []
    resolved: dict[str, str | None] = {}
    notes: dict[str, str] = {}
    for comp in module.computations:
        for ins in comp.instructions:
            meta = ins.attribute("metadata")
            if meta is None:
                continue
            origin, stack = frame_origin(module, ins)
            if not stack:
                continue
            value, base = meta.value, meta.value_start
            if origin == STACK_FRAME_ID:
                m = _FRAME_ID.search(value)
                if m is None:
                    continue
                start, end = m.start(), m.end()
            else:
                m = _SOURCE_FILE.search(value)
                if m is None:
                    continue
                line_m = _SOURCE_LINE.match(value, m.end())
                start, end = m.start(), (line_m.end() if line_m else m.end())
            top = stack[0]
            if top.file not in resolved:
                resolved[top.file] = resolve(top.file)
            path = resolved[top.file]
            if path is None:
                continue
            tooltip = stack_tooltip(stack)
            if note is not None:
                if path not in notes:
                    notes[path] = note(path)
                if notes[path]:
                    tooltip = f"{notes[path]}\n\n{tooltip}"
            out.append(SourceLink(base + start, base + end, path, top.line or 1, tooltip))
    return out
