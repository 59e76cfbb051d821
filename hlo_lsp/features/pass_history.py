"""A module's pass history as text: the timeline ``hlo-lsp passes`` prints
(one screen: snapshots that changed nothing left out, a pass repeated in a row
folded), the answer ``hlo-lsp blame`` prints, and the hover line of an
instruction ("created by `triton-gemm-rewriter` in `hlo_normalization`,
snapshot 0022"). Pure: the steps and blames of :mod:`hlo_lsp.dump.passes` in,
text out. Names from a dump are data: :func:`hlo_lsp.model.visible.visible`
for a terminal, :mod:`hlo_lsp.model.markdown` for Markdown.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from hlo_lsp.dump.fusion_dump import FusionDump, ProducerDecisions
from hlo_lsp.dump.passes import AFTER, BEFORE, Blame, History, Stage, Step
from hlo_lsp.features.fusion_decisions import decision_lines, fused_root_named, names_in_log
from hlo_lsp.model import markdown
from hlo_lsp.model.hlo import HloModule
from hlo_lsp.model.units import plural
from hlo_lsp.model.visible import visible

#: Rows of the timeline before consecutive rows of one pipeline are folded into one.
MAX_ROWS = 40
#: Characters of a folded row's label before it is cut with "…".
LABEL_WIDTH = 64
#: Characters of the appeared/vanished column before it is cut with "…".
NOTES_WIDTH = 60


@dataclass(frozen=True, slots=True)
class Row:
    """One row of the timeline: the ``steps`` it folds (one or more, in order),
    its label (``hlo_normalization: triton-gemm-rewriter``, ``simplification:
    algsimp ×2``) and the instruction counts summed."""

    steps: tuple[Step, ...]
    label: str

    @property
    def first(self) -> Stage:
        return self.steps[0].stage

    def counts(self) -> tuple[int, int, int]:
        """(added, removed, changed), summed over the steps."""
        return (sum(len(s.added) for s in self.steps), sum(len(s.removed) for s in self.steps),
                sum(len(s.changed) for s in self.steps))

    def notes(self) -> str:
        """``+fusion __triton_gemm -dot``: what appeared and vanished over the
        row (net), or the reason a file could not be read."""
        problems = [s.problem for s in self.steps if s.problem]
        if problems:
            return "unreadable: " + problems[0]
        appeared: list[str] = []
        vanished: list[str] = []
        for s in self.steps:
            for label in s.appeared:
                if label in vanished:
                    vanished.remove(label)
                elif label not in appeared:
                    appeared.append(label)
            for label in s.vanished:
                if label in appeared:
                    appeared.remove(label)
                elif label not in vanished:
                    vanished.append(label)
        return " ".join([f"+{a}" for a in appeared] + [f"-{v}" for v in vanished])


def _index(stage: Stage) -> str:
    return "-" if stage.pass_name == BEFORE and not stage.pipeline else f"{stage.index:04d}"


def _pass_label(stage: Stage, step: bool = True) -> str:
    if stage.is_end:
        return stage.pass_name
    name = stage.pass_name + (f" ({stage.step})" if stage.step and step else "")
    return f"{stage.pipeline}: {name}" if stage.pipeline else name


def timeline_rows(steps: list[Step], everything: bool = False,
                  max_rows: int = MAX_ROWS) -> list[Row]:
    """The rows of the timeline: the two ends, each step that changed something
    or could not be read (every step with ``everything``), consecutive steps
    of the same pass in the same pipeline folded (``algsimp ×2``); above
    ``max_rows`` rows, consecutive rows of one pipeline folded too."""
    keep = [s for s in steps if everything or s.stage.is_end or s.changes or s.problem]
    rows: list[list[Step]] = []
    for s in keep:
        prev = rows[-1][-1] if rows else None
        if prev is not None and not s.stage.is_end and not prev.stage.is_end \
                and not s.problem and not prev.problem \
                and (s.stage.pipeline, s.stage.pass_name) == (prev.stage.pipeline,
                                                                prev.stage.pass_name):
            rows[-1].append(s)
        else:
            rows.append([s])
    out = [Row(tuple(r), _pass_label(r[0].stage, len(r) == 1)
               + (f" ×{len(r)}" if len(r) > 1 else "")) for r in rows]
    if len(out) <= max_rows:
        return out
    folded: list[Row] = []
    for row in out:
        prev = folded[-1] if folded else None
        if prev is not None and not row.first.is_end and not prev.first.is_end \
                and row.first.pipeline and row.first.pipeline == prev.first.pipeline:
            folded[-1] = Row(prev.steps + row.steps, "")
        else:
            folded.append(row)
    return [r if r.label else Row(r.steps, _pipeline_label(r.steps)) for r in folded]


def _pipeline_label(steps: tuple[Step, ...]) -> str:
    """``simplification: algsimp ×4, cse ×3, dce ×2, …``: the passes of one
    pipeline's folded row, each once with its count, cut at :data:`LABEL_WIDTH`."""
    counts: dict[str, int] = {}
    for s in steps:
        counts[s.stage.pass_name] = counts.get(s.stage.pass_name, 0) + 1
    names = ", ".join(n + (f" ×{c}" if c > 1 else "") for n, c in counts.items())
    return _cut(f"{steps[0].stage.pipeline}: {names}", LABEL_WIDTH)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


def format_timeline(history: History, steps: list[Step], everything: bool = False) -> str:
    """The timeline ``hlo-lsp passes`` prints: a header (the module, how many
    snapshots, the directory), a row per pass that changed the module (step
    number, pipeline and pass, instructions added, removed, changed, what
    appeared and vanished), the ends, and how many snapshots changed nothing."""
    snapshots = sum(1 for s in steps if not s.stage.is_end)
    rows = timeline_rows(steps, everything)
    width = max([len(r.label) for r in rows] + [20])
    lines = [f"{history.label}: {plural(snapshots, 'pass snapshot')} in {history.directory}",
             f"  {'step':<9} {'pipeline: pass':<{width}} {'added':>5} {'removed':>7} "
             f"{'changed':>7}  appeared (+) / vanished (-)"]
    for row in rows:
        first, last = row.first, row.steps[-1].stage
        step = _index(first) if first is last else f"{_index(first)}-{_index(last)}"
        if first.is_end and not any(s.problem for s in row.steps):
            lines.append(f"  {step:<9} {row.label:<{width}} {row.steps[0].instructions:>5} "
                         f"instructions")
            continue
        added, removed, changed = row.counts()
        counts = f"{added:>5} {removed:>7} {changed:>7}"
        if any(s.problem for s in row.steps):
            counts = f"{'':>5} {'':>7} {'':>7}"
        lines.append(f"  {step:<9} {row.label:<{width}} {counts}  "
                     f"{_cut(row.notes(), NOTES_WIDTH)}".rstrip())
    quiet = sum(1 for s in steps if not s.stage.is_end and not s.changes and not s.problem)
    if quiet and not everything:
        lines.append(f"  ({plural(quiet, 'snapshot')} changed nothing: pipeline starts, and "
                     "passes dumped by another --xla_dump_hlo_pass_re than .*; --all lists them)")
    return "\n".join(visible(line) for line in lines) + "\n"


def stage_words(stage: Stage) -> str:
    """``triton-gemm-rewriter in hlo_normalization, snapshot 0022``; the ends
    as ``the before-optimizations file``; a pipeline's start (XLA dumps the
    module as each pipeline starts: what changed there was changed outside the
    passes it dumped) as ``the start of pipeline X, snapshot N (...)``."""
    if stage.is_end:
        return "the before-optimizations file" if stage.pass_name == BEFORE \
            else "the after-optimizations file"
    if stage.pass_name == "pipeline-start" and stage.pipeline:
        return (f"the start of pipeline {stage.pipeline}, snapshot {stage.index:04d} (a change "
                "made outside the passes XLA dumped)")
    where = f" in {stage.pipeline}" if stage.pipeline else ""
    return f"{stage.pass_name}{where}, snapshot {stage.index:04d}"


def format_blame(result: Blame, fusion: FusionDump | None = None,
                 module: HloModule | None = None) -> str:
    """What ``hlo-lsp blame`` prints: the instruction, the pass that created it
    and the passes that changed it since, each with its snapshot file; its
    names where it was renamed; with the module's priority-fusion log
    (``fusion``; ``module`` the file parsed, :func:`blamed_decisions`), why
    it was or was not fused (:func:`fusion_lines`); the files that could not
    be read."""
    created = result.created_by
    lines = [f"{result.instruction}"]
    if created.pass_name == BEFORE and created.is_end:
        lines.append(f"  there from the start: {created.file}")
    elif created.pass_name == AFTER and created.is_end:
        lines.append(f"  created after the last pass snapshot: {created.file}")
    else:
        lines.append(f"  created by {stage_words(created)}")
        lines.append(f"    {created.file}")
    for stage in result.changed_by:
        lines.append(f"  changed by {stage_words(stage)}")
        lines.append(f"    {stage.file}")
    if len(result.names) > 1:
        lines.append("  names: " + " -> ".join(result.names))
    lines.extend(fusion_lines(result, fusion, module))
    for problem in result.problems:
        lines.append(f"  not read: {problem}")
    return "\n".join(visible(line) for line in lines) + "\n"


def blamed_decisions(result: Blame, fusion: FusionDump | None,
                     module: HloModule | None = None) -> ProducerDecisions | None:
    """What XLA:GPU's priority-fusion log ``fusion`` decided of the instruction
    of ``result``, under the name the log gives it
    (:func:`hlo_lsp.features.fusion_decisions.names_in_log`, hover's answer:
    its own name; for a fusion, by its fused root in ``module``, the parsed
    file blamed (None: not looked at); the latest of its names along the pass
    history the log names; the matcher's name, ``fusion.renamed``); None
    without a readable log or when it does not name the instruction. The one
    answer for ``hlo-lsp blame`` and ``hlo/passBlame``."""
    if fusion is None or fusion.problem:
        return None
    root = fused_root_named(module, result.instruction) if module is not None else None
    found = names_in_log(fusion, result.instruction, root, result.names)
    return fusion.about(found[0][0]) if found else None


def blamed_decision_lines(decisions: ProducerDecisions) -> list[str]:
    """The lines of :func:`blamed_decisions` as ``hlo-lsp blame`` and the
    editors' blame show them: plain text, names as ``%name``, each line made
    visible (:func:`hlo_lsp.model.visible.visible`: text from the log is data)."""
    return [visible(line) for line in decision_lines(decisions, lambda n: f"%{n}", str)]


def fusion_lines(result: Blame, fusion: FusionDump | None,
                 module: HloModule | None = None) -> list[str]:
    """:func:`blamed_decisions` as ``hlo-lsp blame`` prints them: a head line
    naming the log and the instruction's name there, one line per decision
    (:func:`blamed_decision_lines`), plain text; []
    without a log or a decision; one line when the log could not be read."""
    if fusion is not None and fusion.problem:
        return [f"  priority fusion log not read: {fusion.problem}"]
    decisions = blamed_decisions(result, fusion, module)
    if decisions is None:
        return []
    lines = [f"  priority fusion ({os.path.basename(fusion.path)}), where it is "
             f"%{decisions.name}:"]
    lines.extend(f"    {line}" for line in blamed_decision_lines(decisions))
    return lines


@dataclass(frozen=True, slots=True)
class TimelineEntry:
    """One row of the timeline as an editor's *Pass History* view lists it
    (:func:`timeline_entries`): ``label`` and ``step`` (``0014``,
    ``0006-0007``, ``-``) as :func:`format_timeline` prints them; ``first`` and
    ``last`` the positions in the history's stages of the row's first and last
    step; ``previous`` the position of the file the first step was compared
    with (the left side of the row's diff; None for the first file read);
    instruction counts ``added``, ``removed``, ``changed`` (None for a file
    that could not be read), ``instructions`` in the row's last file; ``notes``
    (:meth:`Row.notes`); ``end``: the before- or after-optimizations file."""

    label: str
    step: str
    first: int
    last: int
    previous: int | None
    added: int | None
    removed: int | None
    changed: int | None
    instructions: int
    notes: str
    end: bool


def timeline_entries(steps: list[Step], everything: bool = False) -> list[TimelineEntry]:
    """The rows of :func:`timeline_rows` of ``steps`` (every stage of a
    history, in order) with the positions an editor opens: each row's files
    and the file its first step was compared with (the last one before it that
    could be read). Names from the dump are left as they are (data: a client
    shows them as text)."""
    position = {id(s): i for i, s in enumerate(steps)}
    readable_before: list[int | None] = []
    last: int | None = None
    for i, s in enumerate(steps):
        readable_before.append(last)
        if not s.problem:
            last = i
    out = []
    for row in timeline_rows(steps, everything):
        first, last_pos = position[id(row.steps[0])], position[id(row.steps[-1])]
        a, b = row.first, row.steps[-1].stage
        step = _index(a) if a is b else f"{_index(a)}-{_index(b)}"
        unreadable = any(s.problem for s in row.steps)
        counts = (None, None, None) if unreadable else row.counts()
        out.append(TimelineEntry(row.label, step, first, last_pos, readable_before[first],
                                 *counts, row.steps[-1].instructions, row.notes(),
                                 a.is_end and a is b))
    return out


def quiet_snapshots(steps: list[Step]) -> int:
    """How many snapshots changed nothing (left out of the timeline)."""
    return sum(1 for s in steps if not s.stage.is_end and not s.changes and not s.problem)


def created_line(result: Blame) -> str | None:
    """The hover line of an instruction's origin, Markdown: "created by
    `triton-gemm-rewriter` in `hlo_normalization`, snapshot 0022"; None when it
    was in the before-optimizations file (nothing to say)."""
    stage = result.created_by
    if stage.is_end:
        return None if stage.pass_name == BEFORE else \
            "created after the last pass snapshot"
    where = f" in {markdown.code(stage.pipeline)}" if stage.pipeline else ""
    return f"created by {markdown.code(stage.pass_name)}{where}, snapshot {stage.index:04d}"


def blame_sentence(result: Blame) -> str:
    """One line of plain text for an editor's message: ``%ynn_fusion: created
    by dot-library-rewriter in dot-library-passes, snapshot 0014; changed by 2
    passes since`` (control characters escaped)."""
    changes = len(result.changed_by)
    text = f"%{result.instruction}: created by {stage_words(result.created_by)}"
    if changes:
        text += f"; changed by {changes} pass{'es' if changes > 1 else ''} since"
    return visible(text)


def history_section(result: Blame) -> str | None:
    """The hover's **Pass history** paragraph, Markdown: :func:`created_line`,
    how many passes changed the instruction since, and where its name was
    another (``rename-instructions``); None when it was in the
    before-optimizations file and nothing changed it."""
    created = created_line(result)
    changes = len(result.changed_by)
    if created is None and not changes:
        return None
    parts = [created[0].upper() + created[1:] if created else "There from the start"]
    if changes:
        parts.append(f"changed by {changes} pass{'es' if changes > 1 else ''} since")
    text = "; ".join(parts)
    if len(result.names) > 1:
        text += "; was " + ", ".join(markdown.code(n) for n in result.names[:-1][:3])
    return f"**Pass history**: {text}"


__all__ = ["MAX_ROWS", "Row", "TimelineEntry", "blame_sentence", "blamed_decision_lines",
           "blamed_decisions", "created_line", "format_blame", "format_timeline", "fusion_lines",
           "history_section", "quiet_snapshots", "stage_words", "timeline_entries",
           "timeline_rows"]
