"""Autotuning explained: what XLA:GPU tried for a GEMM, convolution or fusion and
what it chose, from the autotuning files beside a dump
(:mod:`hlo_lsp.dump.autotuning`). Pure: the files are read by the caller.

The join (:func:`autotuning_for`) uses XLA's own key
(xla/service/gpu/autotuning/autotune_cache_key.cc): an ``AutotuneResults``
entry's ``hlo`` is the fused computation (for a fusion) or the instruction (a
cuBLAS/cuDNN custom-call) as XLA canonicalizes it, compared with the dump's text
through :func:`hlo_lsp.dump.autotuning.hlo_signature`; an ``AutotuningLog`` is
joined by its ``fusion_name`` (the name when tuned; renames after autotuning
break it, and then nothing is said rather than a guess).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hlo_lsp.dump.autotuning import AutotuneFile, Candidate, LogEntry, ResultEntry, hlo_signature
from hlo_lsp.model.hlo import HloModule, Instruction
from hlo_lsp.model.markdown import code, text

#: At most this many candidates listed in a hover (fastest first).
MAX_CANDIDATES = 8
#: The opcodes whose kernel XLA may autotune.
TUNABLE = ("fusion", "custom-call", "convolution", "dot")


@dataclass(frozen=True)
class Autotuned:
    """What the autotuning files say of one instruction: the ``result`` entry
    (the winner, None without one), the ``log`` (every candidate, None without
    one) and the files they came from (``sources``)."""

    result: ResultEntry | None
    log: LogEntry | None
    sources: tuple[str, ...]


def instruction_key_text(module: HloModule, ins: Instruction) -> str:
    """The dump's text XLA's key is made of: the called computation's text for a
    fusion, else the instruction's own line."""
    if ins.opcode == "fusion" and ins.called:
        comp = module.resolve(ins.called[0].ref.name, ins.start)
        if comp is not None:
            return module.text[comp.body_start:comp.end]
    return module.text[ins.start:ins.end]


def autotuning_for(module: HloModule, ins: Instruction,
                   files: Sequence[AutotuneFile]) -> Autotuned | None:
    """The autotuning of ``ins`` in ``files`` (read ones; unreadable ones are
    skipped here, their messages are the caller's), or None when no entry is
    for it (see the module docstring for the keys)."""
    if ins.opcode not in TUNABLE or not files:
        return None
    signature = hlo_signature(instruction_key_text(module, ins))
    result = log = None
    sources: list[str] = []
    for f in files:
        if result is None and (found := f.result_for(signature)) is not None:
            result = found
            sources.append(f.path)
        for entry in f.logs:
            if log is None and entry.fusion_name == ins.name.name:
                log = entry
                if f.path not in sources:
                    sources.append(f.path)
    if result is None and log is None:
        return None
    return Autotuned(result, log, tuple(sources))


def _time(c: Candidate) -> str:
    if c.failure:
        return f"failed ({text(c.failure)})"
    if c.run_time_us is None:
        return "not measured"
    return f"{c.run_time_us:.3g} µs" if c.run_time_us >= 1 else f"{c.run_time_us * 1000:.3g} ns"


def autotuning_lines(tuned: Autotuned) -> list[str]:
    """Markdown lines for hover: ``Autotuned on <device>: N candidates; winner
    <backend config>, <time>`` and the candidates, fastest first (at most
    :data:`MAX_CANDIDATES`, failures last), or the winner alone from a results
    file. Text from the files is escaped (:mod:`hlo_lsp.model.markdown`)."""
    lines: list[str] = []
    device = (tuned.result.device if tuned.result else "") or \
        (tuned.log.device if tuned.log else "")
    where = f" on {text(device)}" if device else ""
    if tuned.log is not None and tuned.log.candidates:
        cands = tuned.log.candidates
        winner = tuned.log.winner()
        head = f"**Autotuned**{where}: {len(cands)} candidates"
        if winner is not None:
            head += f"; winner {text(winner.label())}, {_time(winner)}"
        lines.append(head)
        ordered = sorted(cands, key=lambda c: (c.failure is not None,
                                               c.run_time_us is None, c.run_time_us or 0.0))
        for c in ordered[:MAX_CANDIDATES]:
            lines.append(f"- {text(c.label())}: {_time(c)}")
        if len(ordered) > MAX_CANDIDATES:
            lines.append(f"- ... {len(ordered) - MAX_CANDIDATES} more")
    elif tuned.result is not None:
        w = tuned.result.winner
        timed = f", {_time(w)}" if w.run_time_us is not None or w.failure else ""
        lines.append(f"**Autotuned**{where}: chose {text(w.label())}{timed}")
    if tuned.sources:
        lines.append("From " + ", ".join(code(s.rsplit("/", 1)[-1]) for s in tuned.sources))
    return lines


#: The summary's mark of a kernel XLA chose without measuring.
HEURISTICS = "chosen by heuristics"


def autotuning_mark(module: HloModule, ins: Instruction, files: Sequence[AutotuneFile],
                    deviceless: bool = False) -> str:
    """The summary's mark of a kernel: "autotuned" when a readable autotuning
    file has an entry for it; "chosen by heuristics (deviceless)" for any other
    tunable kernel of a dump compiled without its GPU (``deviceless``), and
    "chosen by heuristics" when the dump's results files were read and hold
    nothing; "" when nothing is known (or an opcode XLA does not autotune)."""
    if ins.opcode not in TUNABLE:
        return ""
    readable = [f for f in files if f.message is None]
    if any(f.results or f.logs for f in readable) and \
            autotuning_for(module, ins, readable) is not None:
        return "autotuned"
    if deviceless:
        return f"{HEURISTICS} (deviceless)"
    if readable and all(f.empty for f in readable):
        return HEURISTICS
    return ""


def autotuning_note(module: HloModule, offsets: Sequence[int],
                    files: Sequence[AutotuneFile], deviceless: bool = False) -> str:
    """The summary's line on autotuning for the kernels defined at ``offsets``
    (:attr:`hlo_lsp.model.summary.Kernel.offset`): ``Autotuning: 2 kernels
    autotuned (%a, %b); 3 chosen by heuristics (deviceless)``, and the files
    that could not be read (counted: their messages are hover's); "" when
    nothing is known. Only instruction names (word characters, ``.``, ``-``)
    come from the dump, safe in Markdown and plain text alike."""
    marks: dict[str, list[str]] = {}
    by_start = {i.start: i for c in module.computations for i in c.instructions}
    for off in offsets:
        ins = by_start.get(off)
        if ins is None:
            ins = next((i for c in module.computations for i in c.instructions
                        if i.start <= off < i.end), None)
        if ins is None:
            continue
        mark = autotuning_mark(module, ins, files, deviceless)
        if mark:
            marks.setdefault(mark, []).append("%" + ins.name.name)
    parts = []
    for mark, names in sorted(marks.items(), key=lambda kv: kv[0] != "autotuned"):
        shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
        kernels = "kernel" if len(names) == 1 else "kernels"
        parts.append(f"{len(names)} {kernels} {mark}" + (f" ({shown})" if mark == "autotuned"
                                                          else ""))
    bad = sum(1 for f in files if f.message)
    if bad:
        parts.append(f"{bad} autotuning file{'s' if bad > 1 else ''} not read")
    return "Autotuning: " + "; ".join(parts) if parts else ""


__all__ = ["Autotuned", "MAX_CANDIDATES", "autotuning_for", "autotuning_lines",
           "autotuning_mark", "autotuning_note", "instruction_key_text"]
