"""The pass history over LSP (docs/protocol.md, "Pass history"; issue 44):

- request ``hlo/passHistory`` ``{textDocument}`` ->
  :class:`~hlo_lsp.lsp.messages.PassHistoryReply`: every file of the history
  of the document's module in order (before optimizations, the pass
  snapshots, after optimizations) with what each changed, and the timeline's
  rows as ``hlo-lsp passes`` folds them, each with the two files of its diff.
- request ``hlo/passBlame`` ``{textDocument, position}`` ->
  :class:`~hlo_lsp.lsp.messages.PassBlameReply`: the pass that created the
  instruction at the position and each that changed it since, each with the
  instruction's place in that snapshot (its first appearance first), and
  what XLA:GPU's priority-fusion log decided of it.

Each handler converts; the walk over the snapshots and its cache are the
analysis layer's (:class:`hlo_lsp.analysis.pass_history.PassHistories`, the
host's ``passes``).
"""

from __future__ import annotations

import os
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path

from hlo_lsp.analysis.pass_history import BlameAt
from hlo_lsp.dump.passes import FileHistory, Place, Stage
from hlo_lsp.features.pass_history import (blame_sentence, blamed_decision_lines,
                                           quiet_snapshots, stage_words, timeline_entries)
from hlo_lsp.lsp import messages
from hlo_lsp.lsp.dispatch import route
from hlo_lsp.lsp.protocol import HloLanguageServer
from hlo_lsp.model.visible import visible


# ------------------------------------------------------------ conversions ---

def _uri(path: str) -> str:
    return from_fs_path(path) or path


def history_reply(found: FileHistory | str) -> messages.PassHistoryReply:
    """The ``hlo/passHistory`` result of a module's history (or why there is none)."""
    if isinstance(found, str):
        return messages.PassHistoryReply(message=visible(found))
    steps = list(found.steps)
    snapshots = [messages.PassSnapshotInfo(
        index=s.stage.index, pipeline=s.stage.pipeline, pass_name=s.stage.pass_name,
        file=s.stage.file, uri=_uri(s.stage.path), step=s.stage.step,
        **dict(zip(("added", "removed", "changed"),
                   (None,) * 3 if s.problem else (len(s.added), len(s.removed), len(s.changed)))),
        problem=visible(s.problem)) for s in steps]
    rows = [messages.PassRowInfo(visible(e.label), e.step, e.first, e.last, e.previous, e.added,
                                 e.removed, e.changed, e.instructions, visible(e.notes), e.end)
            for e in timeline_entries(steps)]
    return messages.PassHistoryReply(module=found.history.label,
                                     directory=found.history.directory, snapshots=snapshots,
                                     rows=rows, quiet=quiet_snapshots(steps))


def _place(stage: Stage, place: Place) -> messages.PassPlace:
    start = types.Position(line=place.line, character=place.column)
    end = types.Position(line=place.line, character=place.column + len(place.name))
    return messages.PassPlace(
        index=stage.index, pipeline=stage.pipeline, pass_name=stage.pass_name, file=stage.file,
        uri=_uri(stage.path), words=visible(stage_words(stage)), name=place.name,
        location=types.Location(uri=_uri(stage.path), range=types.Range(start=start, end=end)))


def blame_reply(found: BlameAt) -> messages.PassBlameReply:
    """The ``hlo/passBlame`` result of what the analysis found."""
    b = found.blame
    if b is None:
        return messages.PassBlameReply(message=visible(found.message))
    places = [_place(s, p) for s, p in zip((b.created_by, *b.changed_by), b.places)]
    fusion = None
    if found.decisions is not None and found.fusion is not None:
        fusion = messages.PassFusionInfo(file=visible(os.path.basename(found.fusion.path)),
                                         name=visible(found.decisions.name),
                                         decisions=blamed_decision_lines(found.decisions))
    return messages.PassBlameReply(instruction=b.instruction, created_by=places[0],
                                   changed_by=places[1:], names=list(b.names),
                                   problems=[visible(p) for p in b.problems],
                                   message=blame_sentence(b), fusion=fusion)


# --------------------------------------------------------------- register ---

def register(server: HloLanguageServer) -> None:
    """Register the pass-history handlers on ``server``, each as its row of
    :data:`hlo_lsp.lsp.dispatch.ROUTES` says."""

    @route(server, messages.PASS_HISTORY)
    async def on_pass_history(ls: HloLanguageServer, params: Any) -> dict | None:
        parsed = messages.parse_params(messages.DocumentParams, params)
        path = to_fs_path(parsed.text_document.uri) if parsed else None
        if path is None:
            return None
        found = await ls.host.passes.of_module(path)
        return messages.to_json(history_reply(found))

    @route(server, messages.PASS_BLAME)
    async def on_pass_blame(ls: HloLanguageServer, params: Any) -> dict | None:
        parsed = messages.parse_params(messages.DocumentPositionParams, params)
        path = to_fs_path(parsed.text_document.uri) if parsed else None
        if path is None:
            return None
        pos = parsed.position
        found = await ls.host.passes.blame_at(path, parsed.text_document.uri, pos.line,
                                              pos.character)
        return messages.to_json(blame_reply(found))
