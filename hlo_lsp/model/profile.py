"""Measured time: the events of a profile joined to the instructions of a module.

A profile (``jax.profiler.trace``: ``plugins/profile/<run>/<host>.xplane.pb`` and
``<host>.trace.json.gz``) records every execution of an XLA instruction as an
event carrying the stats ``hlo_module`` (the module's name, ``jit_net``) and
``hlo_op`` (the instruction's name without ``%``, ``sort.0``). On the CPU each
thunk's execution is one such event (xla/backends/cpu/runtime/thunk_executor.cc);
the thunks of a ``while`` body or a ``conditional`` branch run inside their
parent's span on the same thread. On GPUs the kernels on the device's stream
lines carry the same stats (xla/python/xplane_to_profile_instructions.cc).

The readers (:mod:`hlo_lsp.dump.profiles`) turn either file into
:class:`OpEvent` values; this module is the one join of those events to a
module (:func:`measure`) and the one decision whether a profile is of the
compile a dump file holds (:func:`identify`). Plain data, standard library only.

Units: every time is in microseconds (µs), as the Chrome trace format's ``ts``
and ``dur`` are.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class OpEvent:
    """One measured execution of one HLO instruction.

    ``module``/``op``: the event's ``hlo_module`` and ``hlo_op`` stats.
    ``start_us``/``duration_us``: when it ran, µs from the profile's start.
    ``track``: the timeline it ran on (a thread on the host, a stream on a GPU);
    events nest (a ``while`` and its body's ops) only within one track.
    ``run``: the ``run_id`` stat, one execution of the module (None when the
    profile does not say). ``program_id``: XLA's unique id of the compiled
    module, the ``NNNN`` of the dump's ``module_NNNN`` file names (xplane only;
    None in the trace JSON). ``device``: the plane (``/host:CPU``,
    ``/device:GPU:0``). ``kernel``: the GPU kernel's name, "" on the CPU.
    ``covers``: other instructions this one measurement also covers (a command
    buffer replays many kernels as one), () when it measures ``op`` alone.
    """

    module: str
    op: str
    start_us: float
    duration_us: float
    track: str = ""
    run: str | None = None
    program_id: int | None = None
    device: str = ""
    kernel: str = ""
    covers: tuple[str, ...] = ()

    @property
    def end_us(self) -> float:
        return self.start_us + self.duration_us


@dataclass(frozen=True, slots=True)
class Measured:
    """One instruction's measured time, summed over every event of it.

    ``count``: events (executions; an op of a ``while`` body once per
    iteration). ``total_us``: the sum of their durations. ``self_us``: the total
    minus the time of the ops measured inside its spans (its body's, its
    branches'). ``min_us``/``max_us``: the shortest and longest event.
    ``executions``: the module's executions it ran in. ``covers``: the other
    instructions its measurements also cover (command buffers), sorted.
    """

    count: int
    total_us: float
    self_us: float
    min_us: float
    max_us: float
    executions: int
    covers: tuple[str, ...] = ()

    @property
    def mean_us(self) -> float:
        """Mean duration of one event, µs."""
        return self.total_us / self.count if self.count else 0.0

    @property
    def mean_self_us(self) -> float:
        """Mean self time of one event, µs."""
        return self.self_us / self.count if self.count else 0.0


@dataclass(frozen=True, slots=True)
class ModuleProfile:
    """A module's measured instructions.

    ``module``: its name. ``program_ids``: XLA's ids of the compiles measured
    (empty when the profile does not say). ``executions``: how many times it ran
    (distinct ``run`` ids; 1 when the profile has none). ``step_us``: the time
    of all its executions together, each from its first event's start to its
    last event's end (µs). ``ops``: instruction name -> :class:`Measured`.
    ``devices``: the planes its events are on.
    """

    module: str
    program_ids: tuple[int, ...]
    executions: int
    step_us: float
    ops: dict[str, Measured] = field(default_factory=dict)
    devices: tuple[str, ...] = ()

    @property
    def step_mean_us(self) -> float:
        """One execution's mean time, µs."""
        return self.step_us / self.executions if self.executions else 0.0

    def share(self, op: str) -> float | None:
        """The fraction (0..1) of the module's execution time ``op`` ran for
        (its total over :attr:`step_us`); None if it is not measured."""
        m = self.ops.get(op)
        if m is None or self.step_us <= 0:
            return None
        return m.total_us / self.step_us


def module_names(events: Iterable[OpEvent]) -> list[str]:
    """The modules ``events`` measure, in order of first appearance."""
    return list(dict.fromkeys(e.module for e in events))


def measure(events: Sequence[OpEvent], module: str,
            program_id: int | None = None) -> ModuleProfile | None:
    """Join the events of ``module`` (and, when given, of that ``program_id``
    only) into per-instruction totals; None when no event is of it.

    Self time: within one track and one execution, an event's span minus the
    spans of the events directly inside it (an event starting and ending within
    another's span is inside it; the innermost enclosing one is its parent).
    """
    mine = [e for e in events if e.module == module
            and (program_id is None or e.program_id in (None, program_id))]
    if not mine:
        return None
    child_time = _nested_time(mine)
    by_op: dict[str, list[int]] = defaultdict(list)
    for i, e in enumerate(mine):
        by_op[e.op].append(i)
    runs: dict[str | None, list[float]] = {}
    for e in mine:
        span = runs.get(e.run)
        if span is None:
            runs[e.run] = [e.start_us, e.end_us]
        else:
            span[0] = min(span[0], e.start_us)
            span[1] = max(span[1], e.end_us)
    ops: dict[str, Measured] = {}
    for op, idx in by_op.items():
        durations = [mine[i].duration_us for i in idx]
        total = sum(durations)
        covers = sorted({c for i in idx for c in mine[i].covers} - {op})
        ops[op] = Measured(
            count=len(idx), total_us=total,
            self_us=max(0.0, total - sum(child_time[i] for i in idx)),
            min_us=min(durations), max_us=max(durations),
            executions=len({mine[i].run for i in idx}), covers=tuple(covers))
    return ModuleProfile(
        module=module,
        program_ids=tuple(sorted({e.program_id for e in mine if e.program_id is not None})),
        executions=len(runs), step_us=sum(b - a for a, b in runs.values()), ops=ops,
        devices=tuple(dict.fromkeys(e.device for e in mine if e.device)))


def _nested_time(events: Sequence[OpEvent]) -> list[float]:
    """For each event, the summed duration of the events directly inside it
    (same track and run), µs. A sweep over each track's events by start time
    with a stack of open spans: O(n log n)."""
    inside = [0.0] * len(events)
    tracks: dict[tuple[str, str | None], list[int]] = defaultdict(list)
    for i, e in enumerate(events):
        tracks[(e.track, e.run)].append(i)
    for idx in tracks.values():
        # Longer spans first at equal starts: the parent opens before its child.
        idx.sort(key=lambda i: (events[i].start_us, -events[i].duration_us))
        stack: list[int] = []
        for i in idx:
            e = events[i]
            while stack and events[stack[-1]].end_us < e.end_us - _EPSILON_US:
                stack.pop()
            if stack:
                inside[stack[-1]] += e.duration_us
            stack.append(i)
    return inside


#: Timestamps are printed with nanosecond precision (3 decimals of µs); a child
#: ending within this of its parent's end is still inside it.
_EPSILON_US = 1e-3


@dataclass(frozen=True, slots=True)
class Identity:
    """Whether a profile's measurements are of the module a file holds.

    ``same``: True when they are. ``reason``: one sentence for the user when
    they are not (names both compiles), else "". ``how``: what decided it
    (``"program id"``, ``"instructions"``).
    """

    same: bool
    reason: str = ""
    how: str = ""


def identify(profile: ModuleProfile, instructions: Iterable[str],
             module_number: int | None = None, file_label: str = "") -> Identity:
    """Decide whether ``profile`` measured the compile whose instruction names
    are ``instructions`` and whose dump file has the id ``module_number`` (the
    ``NNNN`` of ``module_NNNN``; None when the file's name does not give it).

    By program id when both sides know it (XLA's ``program_id`` stat is the
    module's unique id, the number XLA's dump names print); otherwise by the
    instruction set: every instruction measured must be one of the module's
    (another compile of a function of the same name has other fusions and
    other numbers). ``file_label`` names the file's side in the reason.
    """
    theirs = f"{profile.module}"
    ours = file_label or profile.module
    if module_number is not None and profile.program_ids:
        if module_number in profile.program_ids:
            return Identity(True, how="program id")
        ids = ", ".join(f"module_{p:04d}" for p in profile.program_ids)
        return Identity(False, f"the profile measured {theirs} as {ids}, another compile "
                               f"than {ours} (module_{module_number:04d}); "
                               "no measured times shown", "program id")
    known = set(instructions)
    missing = sorted(op for op in profile.ops if op not in known)
    if missing:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        return Identity(False, f"the profile measured {theirs} from another compile than "
                               f"{ours}: it ran {shown}, which {ours} does not have; "
                               "no measured times shown", "instructions")
    return Identity(True, how="instructions")


__all__ = ["Identity", "Measured", "ModuleProfile", "OpEvent", "identify", "measure",
           "module_names"]
