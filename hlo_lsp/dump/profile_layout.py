"""Which events of a profile are executions of XLA instructions: the layout of
``jax.profiler``'s profiles, one rule for the xplane and the trace JSON alike.

Both files hold the same events (the trace JSON is the xplane converted by
``xla/tsl/profiler/convert/xplane_to_trace_events.cc``): a *plane* (the JSON's
process, ``process_name``) per device, ``/host:CPU`` and ``/device:GPU:N``; a
*line* (the JSON's thread, ``thread_name``) per host thread or GPU stream; events
with stats (the JSON's ``args``, every value as text). The conversion leaves
out the ``Async XLA Ops`` line and the stats ``IsInternalStat`` names, and keeps
at most 5,000,000 events (``CapEvents``); JAX's ``ProfileData`` gives an event's
own stats, not its metadata's (jaxlib's ``ProfileEvent::stats``); a CPU
thunk's and a GPU kernel's ``hlo_op`` are its own (the thunk's ``TraceMe``
arguments; ``cupti_collector.cc`` adds them to the event). The readers turn
either into :class:`RawEvent` values and :func:`instruction_events` decides,
for both, which are executions of an instruction and what each measured:

- **The CPU** (``xla/backends/cpu/runtime/thunk_executor.cc``): every thunk's
  execution is an event on the host thread that ran it, with the stats
  ``hlo_op``, ``hlo_module``, ``run_id`` and, in the xplane only,
  ``program_id``. The trace JSON leaves ``program_id`` out: it is one of the
  stats ``IsInternalStat`` drops (``xla/tsl/profiler/utils/xplane_schema.cc``),
  which is why the xplane is the better file.
- **GPUs**: a kernel (or memcpy) on a stream line ``Stream #N(...)`` of the
  plane ``/device:GPU:N`` carries the stats of the annotations active when it
  was launched (``xla/backends/profiler/gpu/cupti_collector.cc``:
  ``ParseAnnotationStack``; the innermost annotation's value wins). XLA
  annotates each module ``XlaModule:#hlo_module=NAME,program_id=ID#`` and each
  thunk ``Thunk:#hlo_op=NAME,...#`` (``xla/backends/gpu/runtime/annotation.cc``),
  so a kernel has ``hlo_op``, ``hlo_module`` and ``program_id``; its event's
  name is the kernel's (demangled) name. Some versions join the ``hlo_op`` of
  nested annotations with ``::``; the instruction is the last one, as xprof's
  ``GpuEventStats`` (``xprof/utils/gpu_event_stats.cc``) takes it.
- **Kernel launches** are not executions: the CUPTI driver API plane
  (``/host:CUPTI``, ``cuLaunchKernel``...) is merged into ``/host:CPU`` when
  the profile is saved (``xla/tsl/profiler/convert/post_process_single_host_xplane.cc``:
  ``MergeHostPlanesAndSortLines``), and its events carry the same annotation
  stats; on a host plane, an event with ``correlation_id`` is such a launch
  (the stat the collector gives CUPTI's events; xprof's ``LaunchEventStats``),
  as is an NVTX range (named ``NVTX:...``). XLA's own join reads the device
  planes only.
- **Derived lines** are not measurements: xprof (``xprof/utils/derived_timeline.cc``)
  and older TensorFlow profiler servers add lines that repeat the stream lines'
  time per op, module, step or name scope (``XLA Ops``, ``XLA Modules``,
  ``Steps``, ``Framework Ops``..., :data:`DERIVED_LINES`, per stream with a
  suffix `` - from #N``). Their events would count every kernel twice; they
  are skipped by name (xprof skips them by their reserved line ids, which the
  trace JSON does not keep).
- **Kernel fragments**: one execution of an instruction may run as several
  kernels; the fragments of one execution share a ``scope_range_id`` and are
  merged into one span from the first start to the last end, as XLA's own join
  does (``xla/python/xplane_to_profile_instructions.cc``:
  ``GetXPlaneLatencyInfo``). Events without ``scope_range_id`` are one
  execution each.
- **Command buffers** (CUDA graphs, ``xla/backends/gpu/runtime/command_buffer_thunk.cc``):
  XLA gathers runs of thunks into one command buffer thunk annotated
  ``command_buffer_<thunk id>`` (``command_buffer_conversion_pass.cc``; with
  `` (disabled for profiling)`` when it runs its thunks one by one because a
  profiler is active, the default). When the graph itself runs under the
  profiler, one measurement (an event with ``cuda_graph_exec_id``, or with the
  command buffer's ``hlo_op``) covers every instruction recorded into it: its
  :attr:`~hlo_lsp.model.profile.OpEvent.covers` names those the same profile
  shows inside that graph (kernels whose ``cuda_graph_id`` is the graph's id,
  or whose ``hlo_op`` path runs through the command buffer's annotation);
  :func:`is_command_buffer` tells such an ``op`` from an instruction's name.

No real GPU profile of an XLA program was available to test this layout (the
public test data of openxla/xprof holds one, ``gpu_training_2.xplane.pb``, too
large to be copied here; its GPU demo profile ``GPU-multi-worker`` is of
TensorFlow without XLA: device planes and stream and derived lines, no
``hlo_op``): these rules are read from the sources named above.

Plain data, standard library only: the trace JSON reader uses it without jax,
and the xplane worker (:mod:`hlo_lsp.dump.xplane`) with it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from sys import intern

from hlo_lsp.model.profile import OpEvent

#: Lines xprof and TensorFlow's profiler derive from the stream lines
#: (``xla/tsl/profiler/utils/xplane_schema.cc``: ``kStepLineName``,
#: ``kXlaOpLineName``..., the TensorFlow names of older profiles too).
DERIVED_LINES = frozenset({
    "Steps", "XLA Ops", "XLA Modules", "Async XLA Ops", "Framework Ops",
    "Framework Name Scope", "TensorFlow Ops", "TensorFlow Name Scope", "Source code",
    "Launch Stats", "Host Offload Ops", "_counters_", "Sparse Core Steps",
    "Sparse Core Modules", "Sparse Core Ops", "Tensor Core Sync Flag",
    "Sparse Core Syncs",
})

#: xprof names the derived lines of each stream ``XLA Ops - from #<stream>``.
_FROM_STREAM = " - from #"

#: The profile annotation of XLA's command buffer thunks
#: (``command_buffer_conversion_pass.cc``: ``command_buffer_<thunk id>``, and
#: `` (disabled for profiling)`` while a profiler makes it run thunk by thunk).
_COMMAND_BUFFER = re.compile(r"command_buffer(?:_\d+)?(?: \(disabled for profiling\))?")
_DISABLED = " (disabled for profiling)"

#: The separator of nested ``hlo_op`` values (xprof's ``kAnnotationDelimiter``).
_NESTED = "::"


def is_derived_line(name: str) -> bool:
    """Whether the line (thread) ``name`` is one xprof or TensorFlow derived
    from the stream lines (``XLA Ops``, ``Steps - from #12``...): its events
    repeat time measured elsewhere."""
    return name.partition(_FROM_STREAM)[0] in DERIVED_LINES


def is_command_buffer(op: str) -> bool:
    """Whether ``op`` (an ``hlo_op`` value) names an XLA command buffer thunk
    (``command_buffer_12``), not an instruction of the module."""
    return _COMMAND_BUFFER.fullmatch(op) is not None


@dataclass(frozen=True, slots=True)
class RawEvent:
    """One event as a profile file gives it. ``device``: its plane (process)
    name; ``line``: its line (thread) name; ``track``: a name unique to that
    timeline in the file; ``name``: the event's name (a GPU kernel's name);
    ``start_us``/``duration_us``: µs; ``stats``: its stats (the JSON's
    ``args``), values as the file has them (numbers, or their text)."""

    device: str
    line: str
    track: str
    name: object
    start_us: object
    duration_us: object
    stats: Mapping[str, object]


def _is_launch(e: RawEvent) -> bool:
    """Whether ``e`` is a host-side launch of device work (a CUPTI driver API
    event, an NVTX range), not an execution."""
    if e.device.startswith("/device:"):
        return False
    return "correlation_id" in e.stats or (isinstance(e.name, str)
                                           and e.name.startswith("NVTX:"))


def _int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"-?\d{1,20}", value):
        return int(value)
    return None


def _time(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _command_buffer_name(op: str) -> str:
    return op.removesuffix(_DISABLED)


def instruction_events(events: Iterable[RawEvent]) -> tuple[list[OpEvent], int]:
    """The executions of XLA instructions among ``events``, in the order of
    their first appearance, and how many events carried ``hlo_op`` but could
    not be read (a time that is not a number, no ``hlo_module``...).

    An event counts when it is not on a derived line, not a launch on the host
    and has the stats ``hlo_op`` and ``hlo_module``; fragments sharing a ``scope_range_id``
    (same device, module, program and instruction) are one execution; a
    command buffer's measurement covers the instructions seen inside it (see
    the module's docstring for the sources). ``kernel`` is the event's name on
    a device plane (``/device:...``), "" on the host.
    """
    merged: dict[tuple, int] = {}
    spans: list[list] = []   # [OpEvent fields..., graph exec id, graph id]
    members: dict[tuple[str, str, str], set[str]] = {}
    skipped = 0
    for e in events:
        if is_derived_line(e.line):
            continue
        hlo_op = e.stats.get("hlo_op")
        if hlo_op is None or _is_launch(e):
            continue
        module = e.stats.get("hlo_module")
        start, duration = _time(e.start_us), _time(e.duration_us)
        path = [p.strip() for p in hlo_op.split(_NESTED)] if isinstance(hlo_op, str) else []
        path = [p for p in path if p]
        if not path or not isinstance(module, str) or not module or start is None \
                or duration is None or duration < 0:
            skipped += 1
            continue
        op = path[-1]
        for level in path[:-1]:
            if is_command_buffer(level):
                members.setdefault((e.device, module, _command_buffer_name(level)),
                                   set()).add(op)
        program = _int(e.stats.get("program_id"))
        run = e.stats.get("run_id")
        run = None if run is None or isinstance(run, (dict, list)) else str(run)
        kernel = e.name if e.device.startswith("/device:") and isinstance(e.name, str) else ""
        scope = _int(e.stats.get("scope_range_id"))
        graph_exec = _int(e.stats.get("cuda_graph_exec_id"))
        graph = _int(e.stats.get("cuda_graph_id"))
        if scope is not None:
            key = (e.device, module, program, op, scope)
            at = merged.get(key)
            if at is not None:
                span = spans[at]
                end = max(span[2] + span[3], start + duration)
                span[2] = min(span[2], start)
                span[3] = end - span[2]
                continue
            merged[key] = len(spans)
        spans.append([module, op, start, duration, e.track, run, program, e.device, kernel,
                      graph_exec, graph])
    in_graph: dict[tuple[str, int], set[str]] = {}
    for s in spans:
        if s[10] is not None:
            in_graph.setdefault((s[7], s[10]), set()).add(s[1])
    out = []
    for (module, op, start, duration, track, run, program, device, kernel, graph_exec,
         _graph) in spans:
        covered: set[str] = set()
        if graph_exec is not None:
            covered |= in_graph.get((device, graph_exec), set())
        if is_command_buffer(op):
            covered |= members.get((device, module, _command_buffer_name(op)), set())
        covered.discard(op)
        # one string per repeated name (module, track, run...) in every event
        out.append(OpEvent(module=intern(module), op=intern(op), start_us=start,
                           duration_us=duration, track=intern(track),
                           run=None if run is None else intern(run), program_id=program,
                           device=intern(device), kernel=intern(kernel),
                           covers=tuple(sorted(covered)) if covered else ()))
    return out, skipped


__all__ = ["DERIVED_LINES", "RawEvent", "instruction_events", "is_command_buffer",
           "is_derived_line"]
