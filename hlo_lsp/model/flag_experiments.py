"""Experiments with XLA flags (issue 44): a curated table of the ``XLA_FLAGS``
that decide what an instruction became (a dot a Triton GEMM fusion or a
cuBLASLt call, a convolution a cuDNN call in one layout or another, a
collective async or combined, ops fused or not), which of them apply to an
instruction, and what the flags are set to in a dump. Pure facts and queries;
running a variant is :mod:`hlo_lsp.dump.experiments`.

Each entry (:class:`FlagExperiment`) is one flag set to one value, with one
line on what it does and its source, the ``DebugOptions`` field of
``xla/xla.proto`` (openxla/xla) the flag sets (xla/debug_options_flags.cc
names each flag after its field). ``default`` is XLA's own default
(``DefaultDebugOptionsIgnoringFlags``) as jaxlib 0.10.2 has it, None where it
depends on the device or was not checked: XLA writes a module's
``*.debug_options`` file with the fields that differ from those defaults,
which is how the defaults here were checked (the full-tier test
``tests/e2e/test_gpu_flag_experiments.py`` sets each flag to its ``default`` and
finds none of them in the file, and runs jaxlib with every flag of the table:
XLA aborts on a flag it does not know).

An experiment is offered for an instruction (:func:`applicable`) when its
kind matches (:func:`instruction_kind`: "gemm", "convolution", "collective",
"fusion"), its platform matches the dump's ("gpu" or "cpu", from the file
name's platform), it can change something there (``needs_device``: an
experiment that only matters when XLA autotunes on a GPU is not offered for a
dump compiled without one), and the flag is not already at that value in the
dump (:func:`current_value`: the ``*.debug_options`` value, else ``default``):
"Triton GEMM off" is offered where Triton GEMM is on, "Triton GEMM on" where
it is off.

An experiment may set several entries at once (:func:`combine`, a
:class:`FlagSet`: Triton GEMM off and cuBLASLt off, to see what runs a dot
then); two entries setting one flag to different values are refused
(:class:`FlagConflict`), a list flag's values are added together.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping

from hlo_lsp.model.accelerators import Accelerator
from hlo_lsp.model.backend_config import GEMM_EPILOGUES
from hlo_lsp.model.cost import cost_model
from hlo_lsp.model.hlo import HloModule, Instruction
from hlo_lsp.model.kernels import backend_config_data, fusion_backend_kind
from hlo_lsp.model.matching import instruction_role, kernel_label, match_modules
from hlo_lsp.model.summary import kernel_costs, kernel_summary
from hlo_lsp.model.units import format_seconds
from hlo_lsp.model.visible import visible

#: The kinds of instruction an experiment is about.
GEMM, CONVOLUTION, COLLECTIVE, FUSION = "gemm", "convolution", "collective", "fusion"

_PROTO = "xla/xla.proto DebugOptions."


@dataclass(frozen=True, slots=True)
class FlagExperiment:
    """One flag set to one value. ``key``: a short stable name (``triton-gemm-off``,
    the CLI's ``--flag`` accepts it or the flag); ``flag`` without ``--``
    (``xla_gpu_enable_triton_gemm``); ``value`` as XLA_FLAGS writes it
    (``false``, ``0``, ``ALLREDUCE``, ``priority-fusion``); ``title``: a few
    words ("Triton GEMM off"); ``what``: one line on what it does; ``source``:
    the ``xla/xla.proto`` field; ``kind``: :data:`GEMM`... ; ``platform``
    "gpu" or "cpu"; ``default``: XLA's default (None: not fixed);
    ``opcodes``: for a collective, the opcodes (without ``-start``/``-done``) it
    is about (empty: every collective); ``needs_device``: it changes what XLA
    chooses only when XLA autotunes on a device; ``list_flag``: a repeated
    field (``--xla_disable_hlo_passes=a,b``), whose value is added to the
    recipe's own rather than replacing it."""

    key: str
    flag: str
    value: str
    title: str
    what: str
    source: str
    kind: str
    platform: str
    default: str | None = None
    opcodes: tuple[str, ...] = ()
    needs_device: bool = False
    list_flag: bool = False

    @property
    def argument(self) -> str:
        """``--xla_gpu_enable_triton_gemm=false``: the word added to ``XLA_FLAGS``."""
        return f"--{self.flag}={self.value}"

    @property
    def action_title(self) -> str:
        """The code action's title: ``Recompile with Triton GEMM off
        (--xla_gpu_enable_triton_gemm=false)``."""
        return f"Recompile with {self.title} ({self.argument})"

    def to_dict(self) -> dict:
        """JSON-ready (the CLI's ``--list --json``, the command's argument)."""
        return {"key": self.key, "flag": self.flag, "value": self.value,
                "argument": self.argument, "title": self.title, "what": self.what,
                "source": self.source, "kind": self.kind, "platform": self.platform,
                "default": self.default}


def _entry(key, flag, value, title, what, field_number, kind, platform, default=None,
           **extra) -> FlagExperiment:
    return FlagExperiment(key, flag, value, title, what,
                          f"{_PROTO}{flag} (field {field_number})", kind, platform, default,
                          **extra)


#: The table, in the order the editor offers it.
EXPERIMENTS: tuple[FlagExperiment, ...] = (
    # GEMMs (dots, cuBLAS/cuBLASLt calls, GEMM fusions) on the GPU.
    _entry("triton-gemm-off", "xla_gpu_enable_triton_gemm", "false", "Triton GEMM off",
           "Dots are not made Triton GEMM fusions: cuBLAS/cuBLASLt library calls run them.",
           188, GEMM, "gpu", "true"),
    _entry("triton-gemm-on", "xla_gpu_enable_triton_gemm", "true", "Triton GEMM on",
           "Dots that Triton can run become Triton GEMM fusions (XLA's default).",
           188, GEMM, "gpu", "true"),
    _entry("cublaslt-off", "xla_gpu_enable_cublaslt", "false", "cuBLASLt off",
           "GEMM library calls go to cuBLAS instead of cuBLASLt (FP8 GEMMs stay cuBLASLt calls).",
           166, GEMM, "gpu", "true"),
    _entry("cublaslt-on", "xla_gpu_enable_cublaslt", "true", "cuBLASLt on",
           "GEMM library calls go to cuBLASLt, with fused epilogues (bias, activation).",
           166, GEMM, "gpu", "true"),
    _entry("cudnn-gemm-fusions", "xla_gpu_cudnn_gemm_fusion_level", "2", "cuDNN GEMM fusions",
           "The GEMM fusion autotuner also tries cuDNN (GEMM with elementwise, transposes, "
           "broadcasts and slices); chosen only when it is faster on the GPU.",
           285, GEMM, "gpu", "0", needs_device=True),
    _entry("autotune-off", "xla_gpu_autotune_level", "0", "autotuning off",
           "No GEMM, convolution or fusion autotuning: heuristics choose each kernel and "
           "its configuration, as when compiling without a GPU.",
           123, GEMM, "gpu", "4"),
    # Convolutions on the GPU (cuDNN).
    _entry("conv-nhwc", "xla_gpu_force_conv_nhwc", "true", "convolutions in NHWC",
           "cuDNN convolutions use the NHWC layout whatever XLA's layout heuristic says.",
           146, CONVOLUTION, "gpu", "false"),
    _entry("conv-nchw", "xla_gpu_force_conv_nchw", "true", "convolutions in NCHW",
           "cuDNN convolutions use the NCHW layout whatever XLA's layout heuristic says.",
           125, CONVOLUTION, "gpu", "false"),
    _entry("cudnn-runtime-fusion", "xla_gpu_use_runtime_fusion", "true",
           "cuDNN runtime fusion",
           "Convolutions with their elementwise epilogues become cuDNN runtime-compiled "
           "fusions (Ampere and newer).",
           181, CONVOLUTION, "gpu", "false"),
    _entry("autotune-off-conv", "xla_gpu_autotune_level", "0", "autotuning off",
           "No convolution autotuning: heuristics choose each cuDNN algorithm, as when "
           "compiling without a GPU.",
           123, CONVOLUTION, "gpu", "4"),
    # Collectives on the GPU.
    _entry("sync-all-reduce", "xla_gpu_disable_async_collectives", "ALLREDUCE",
           "synchronous all-reduce",
           "All-reduces are not made async (-start/-done): nothing overlaps them.",
           289, COLLECTIVE, "gpu", opcodes=("all-reduce",), list_flag=True),
    _entry("sync-all-gather", "xla_gpu_disable_async_collectives", "ALLGATHER",
           "synchronous all-gather",
           "All-gathers are not made async (-start/-done): nothing overlaps them.",
           289, COLLECTIVE, "gpu", opcodes=("all-gather",), list_flag=True),
    _entry("sync-reduce-scatter", "xla_gpu_disable_async_collectives", "REDUCESCATTER",
           "synchronous reduce-scatter",
           "Reduce-scatters are not made async: nothing overlaps them.",
           289, COLLECTIVE, "gpu", opcodes=("reduce-scatter",), list_flag=True),
    _entry("sync-all-to-all", "xla_gpu_disable_async_collectives", "ALLTOALL",
           "synchronous all-to-all", "All-to-alls are not made async: nothing overlaps them.",
           289, COLLECTIVE, "gpu", opcodes=("all-to-all", "ragged-all-to-all"),
           list_flag=True),
    _entry("sync-collective-permute", "xla_gpu_disable_async_collectives",
           "COLLECTIVEPERMUTE", "synchronous collective-permute",
           "Collective-permutes are not made async: nothing overlaps them.",
           289, COLLECTIVE, "gpu", opcodes=("collective-permute",), list_flag=True),
    _entry("all-reduce-no-combine", "xla_gpu_all_reduce_combine_threshold_bytes", "0",
           "no all-reduce combining",
           "The all-reduce combiner merges nothing (threshold 0 bytes): each all-reduce "
           "runs alone.", 157, COLLECTIVE, "gpu", opcodes=("all-reduce",)),
    _entry("all-gather-no-combine", "xla_gpu_all_gather_combine_threshold_bytes", "0",
           "no all-gather combining",
           "The all-gather combiner merges nothing (threshold 0 bytes): each all-gather "
           "runs alone.", 212, COLLECTIVE, "gpu", opcodes=("all-gather",)),
    _entry("reduce-scatter-no-combine", "xla_gpu_reduce_scatter_combine_threshold_bytes",
           "0", "no reduce-scatter combining",
           "The reduce-scatter combiner merges nothing (threshold 0 bytes).",
           213, COLLECTIVE, "gpu", opcodes=("reduce-scatter",)),
    _entry("latency-hiding-scheduler", "xla_gpu_enable_latency_hiding_scheduler", "true",
           "the latency-hiding scheduler",
           "Schedules async collectives to overlap with independent compute.",
           186, COLLECTIVE, "gpu", "false"),
    # Fusions on the GPU.
    _entry("no-priority-fusion", "xla_disable_hlo_passes", "priority-fusion",
           "priority fusion off",
           "XLA:GPU's priority-fusion pass does not run: each op becomes its own kernel "
           "(what fusing saved).", 30, FUSION, "gpu", list_flag=True),
    _entry("block-level-rewriter", "xla_gpu_experimental_enable_fusion_block_level_rewriter",
           "true", "Triton for fusions",
           "Fusions that Triton can tile are rewritten into Triton (block-level) fusions.",
           334, FUSION, "gpu", "false"),
    # The CPU.
    _entry("no-cpu-fusion", "xla_disable_hlo_passes", "fusion", "CPU fusion off",
           "XLA:CPU's fusion pass does not run: each op becomes its own loop.",
           30, FUSION, "cpu", list_flag=True),
    _entry("no-ynnpack", "xla_cpu_experimental_ynn_fusion_type", "", "YNNPACK off",
           "No YNNPACK fusions: dots and the ops around them run as XLA's own "
           "(Eigen) kernels.", 422, GEMM, "cpu", list_flag=False),
)


def find_experiment(name: str) -> FlagExperiment | None:
    """The entry ``name`` names: its ``key``, its argument
    (``--xla_gpu_enable_triton_gemm=false``, with or without ``--``); None when
    none does."""
    name = name.strip()
    bare = name[2:] if name.startswith("--") else name
    for e in EXPERIMENTS:
        if name == e.key or bare == e.argument[2:]:
            return e
    return None


class FlagConflict(ValueError):
    """Two entries given together set the same flag, not a list flag, to
    different values (``triton-gemm-off`` and ``triton-gemm-on``): one
    sentence naming both."""


@dataclass(frozen=True, slots=True)
class FlagSet:
    """One experiment: one or more entries of the table set together
    (:func:`combine`), e.g. Triton GEMM off and cuBLASLt off to see what runs a
    dot then. ``entries`` in a fixed order whatever order they were given in
    (by flag, then value), each flag and value once, no two setting the same
    flag to different values unless it is a list flag (``list_flag``: their
    values are added together)."""

    entries: tuple[FlagExperiment, ...]

    @property
    def arguments(self) -> tuple[str, ...]:
        """The words added to ``XLA_FLAGS``, one per flag, a list flag's values
        joined by ``,`` as XLA_FLAGS writes them
        (``--xla_gpu_disable_async_collectives=ALLGATHER,ALLREDUCE``)."""
        values: dict[str, list[str]] = {}
        for e in self.entries:
            values.setdefault(e.flag, []).append(e.value)
        return tuple(f"--{flag}={','.join(v)}" for flag, v in values.items())

    @property
    def argument(self) -> str:
        """:attr:`arguments` joined by a blank: ``--xla_gpu_enable_cublaslt=false
        --xla_gpu_enable_triton_gemm=false`` (one flag: its
        :attr:`FlagExperiment.argument`)."""
        return " ".join(self.arguments)

    @property
    def title(self) -> str:
        """The entries' titles: "cuBLASLt off and Triton GEMM off"."""
        titles = list(dict.fromkeys(e.title for e in self.entries))
        return titles[0] if len(titles) == 1 else \
            ", ".join(titles[:-1]) + " and " + titles[-1]

    @property
    def name(self) -> str:
        """Each entry's ``flag=value`` joined by ``+``
        (``xla_gpu_enable_cublaslt=false+xla_gpu_enable_triton_gemm=false``),
        the same for the same entries in any order; one entry:
        ``xla_gpu_enable_triton_gemm=false``. Not bounded in length, nor made a
        safe file name (:func:`hlo_lsp.dump.experiments.variant_dir` does both)."""
        return "+".join(f"{e.flag}={e.value}" for e in self.entries)

    def to_dict(self) -> dict:
        """JSON fields: ``{"experiment": the first entry, "experiments": [each
        entry]}`` (:meth:`FlagExperiment.to_dict`; one flag: ``experiment`` as
        before there were several)."""
        return {"experiment": self.entries[0].to_dict(),
                "experiments": [e.to_dict() for e in self.entries]}


def combine(entries: Iterable[FlagExperiment]) -> FlagSet:
    """The experiment (:class:`FlagSet`) of ``entries``: sorted by flag and
    value, the same flag and value kept once (``autotune-off`` and
    ``autotune-off-conv`` are one flag). Raises :class:`FlagConflict` for two
    entries setting the same flag to different values (a list flag's values are
    added together, one word ``--flag=a,b``: XLA keeps only the last word of
    ``--xla_gpu_disable_async_collectives``), ValueError for none."""
    kept: dict[tuple[str, str], FlagExperiment] = {}
    for e in entries:
        kept.setdefault((e.flag, e.value), e)
    if not kept:
        raise ValueError("no flag to set")
    by_flag: dict[str, FlagExperiment] = {}
    for flag, value in sorted(kept):
        e = kept[flag, value]
        other = by_flag.setdefault(flag, e)
        if other is not e and not (e.list_flag and other.list_flag):
            raise FlagConflict(
                f"{other.key} ({other.argument}) and {e.key} ({e.argument}) set --{flag} to "
                "different values; give one of them")
    return FlagSet(tuple(kept[k] for k in sorted(kept)))


class UnknownExperiment(ValueError):
    """Names given for an experiment that no entry of the table has
    (:func:`find_experiment`): ``names``, in the order given."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = tuple(names)
        super().__init__(f"{', '.join(repr(n) for n in self.names)} "
                         f"{'is' if len(self.names) == 1 else 'are'} not in the table")


def combine_named(names: Iterable[str]) -> FlagSet:
    """:func:`combine` of the entries ``names`` name (each a key or an argument,
    :func:`find_experiment`): what ``hlo-lsp experiment --flag ...`` and the
    ``hlo.recompile`` command's ``experiment`` run. Raises
    :class:`UnknownExperiment` naming every name that is not in the table,
    :class:`FlagConflict`, and ValueError for no name."""
    names = list(names)
    entries = [find_experiment(n) for n in names]
    unknown = [n for n, e in zip(names, entries) if e is None]
    if unknown:
        raise UnknownExperiment(unknown)
    return combine(entries)


def dump_platform(platform: str) -> str:
    """"gpu" or "cpu" for a dump file name's platform (``sm_9.0a_gpu``,
    ``gfx942_gpu``, ``cpu``); "" when it says neither (a file without one)."""
    if platform.endswith("gpu"):
        return "gpu"
    return "cpu" if platform == "cpu" else ""


def instruction_kind(module: HloModule, ins: Instruction) -> str:
    """What kind of instruction the table has experiments for: :data:`GEMM` (a
    dot, a cuBLAS(Lt) call, a GEMM fusion, a YNNPACK fusion: the work of
    :func:`hlo_lsp.model.matching.instruction_role` "dot"), :data:`CONVOLUTION`,
    :data:`COLLECTIVE` (the collectives and their ``-start``/``-done``),
    :data:`FUSION` (any other fusion); "" for the rest."""
    role = instruction_role(module, ins)
    if role == "dot":
        return GEMM
    if role == "convolution":
        return CONVOLUTION
    if _collective(ins):
        return COLLECTIVE
    if ins.opcode == "fusion":
        return GEMM if fusion_backend_kind(ins)[0] == "__ynn_fusion" else FUSION
    return ""


_COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                "ragged-all-to-all", "collective-permute", "collective-broadcast")


def _collective(ins: Instruction) -> str:
    """The collective ``ins`` is (``all-reduce`` for ``all-reduce-start``), ""."""
    op = re.sub(r"-(start|done)$", "", ins.opcode)
    return op if op in _COLLECTIVES else ""


def current_value(experiment: FlagExperiment, debug_options: Mapping[str, str]) -> str | None:
    """What the dump's compile had the flag at: the ``*.debug_options`` value
    (field name -> value as written, strings unquoted), else XLA's default
    (None when the table has none)."""
    value = debug_options.get(experiment.flag)
    return value if value is not None else experiment.default


def applicable(module: HloModule, ins: Instruction, platform: str,
               debug_options: Mapping[str, str] | None = None,
               deviceless: bool = False) -> list[FlagExperiment]:
    """The experiments of :data:`EXPERIMENTS` for ``ins`` of ``module`` in a
    dump of ``platform`` ("gpu" or "cpu", :func:`dump_platform`): of its kind
    (:func:`instruction_kind`) and platform, not already set to their value
    (:func:`current_value` of ``debug_options``), without those that need a
    device when the dump was compiled without one (``deviceless``), in table
    order. A list flag is offered when its value is not among the dump's."""
    kind = instruction_kind(module, ins)
    if not kind or not platform:
        return []
    options = debug_options or {}
    collective = _collective(ins)
    out = []
    for e in EXPERIMENTS:
        if e.kind != kind or e.platform != platform or (deviceless and e.needs_device):
            continue
        if e.opcodes and collective not in e.opcodes:
            continue
        now = current_value(e, options)
        if e.list_flag:
            if e.value.lower() in [v.strip().lower() for v in (now or "").split(",")]:
                continue
        elif now is not None and now.lower() == e.value.lower():
            continue
        if e.flag == "xla_gpu_autotune_level" and deviceless:
            continue  # compiled without a GPU: never autotuned
        out.append(e)
    return out


# ------------------------------------------------------------- the report ---

@dataclass(frozen=True, slots=True)
class Outcome:
    """What one instruction became in a variant (:func:`outcome`). ``name``: the
    kernel followed (the instruction under the cursor, or the fusion holding
    it), without ``%``; ``counterpart``: its match in the variant's module
    (:func:`hlo_lsp.model.matching.match_modules`), None when it has none;
    ``before``/``after``: what each runs as (:func:`hlo_lsp.model.matching.kernel_label`,
    with a cuBLAS call's epilogue: "cuBLASLt FP8 call with a BIAS epilogue");
    ``seconds_before``/``seconds_after``: the roofline estimate of each kernel on
    ``device`` (:func:`hlo_lsp.model.summary.kernel_costs`; None for an
    instruction that is not a kernel); ``device``: the device's name;
    ``experiment``: the flags the variant was compiled with."""

    experiment: FlagSet
    name: str
    counterpart: str | None
    before: str
    after: str
    seconds_before: float | None
    seconds_after: float | None
    device: str

    def sentence(self) -> str:
        """One line, as issue 44 shows it: ``with
        `--xla_gpu_enable_triton_gemm=false`: `%gemm_fusion_dot` -> one cuBLASLt
        FP8 call with a BIAS epilogue (`%cublas-gemm.3`); estimated 665 ns -> 157 ns
        on H100 SXM.`` (several flags: each, ``with `--a=false --b=false`: ...``).
        Names are escaped (:func:`hlo_lsp.model.visible.visible`)."""
        head = f"with `{self.experiment.argument}`: `%{visible(self.name)}`"
        if self.counterpart is None:
            return (f"{head} has no counterpart in the variant (it was {_a(self.before)}; "
                    "fused into another kernel or removed).")
        now = f"still {_a(self.after)}" if self.before == self.after else f"one {self.after}"
        text = f"{head} -> {now} (`%{visible(self.counterpart)}`)"
        if self.before != self.after:
            text += f", was {_a(self.before)}"
        if self.seconds_before is not None and self.seconds_after is not None:
            text += (f"; estimated {format_seconds(self.seconds_before)} -> "
                     f"{format_seconds(self.seconds_after)} on {self.device}")
        return text + "."

    def to_dict(self) -> dict:
        """JSON-ready (the CLI's ``--json``, the command's reply): ``experiments``
        each entry (:meth:`FlagExperiment.to_dict`), ``experiment`` the first of
        them (the only one for one flag)."""
        return {**self.experiment.to_dict(), "instruction": self.name,
                "counterpart": self.counterpart, "before": self.before, "after": self.after,
                "secondsBefore": self.seconds_before, "secondsAfter": self.seconds_after,
                "device": self.device, "sentence": self.sentence()}


def _a(noun: str) -> str:
    return ("an " if noun[:1].lower() in "aeiou" else "a ") + noun


def kernel_of(module: HloModule, ins: Instruction) -> Instruction:
    """The kernel holding ``ins``: the fusion whose fused computation holds it
    (outermost, at most 8 levels), else ``ins``."""
    model = cost_model(module)
    for _ in range(8):
        comp = ins.computation
        fusion = model.fusion_of(comp.name.name) if comp is not None else None
        if fusion is None:
            break
        ins = fusion
    return ins


def runs_as(ins: Instruction) -> str:
    """What ``ins`` runs as (:func:`hlo_lsp.model.matching.kernel_label`), with
    the epilogue of a cuBLAS(Lt) GEMM call when it has one
    (``gemm_backend_config.epilogue``, one of
    :data:`hlo_lsp.model.backend_config.GEMM_EPILOGUES`; never other dump text)."""
    label = kernel_label(ins)
    if ins.opcode == "custom-call":
        data = backend_config_data(ins) or {}
        gemm = data.get("gemm_backend_config")
        epilogue = gemm.get("epilogue") if isinstance(gemm, dict) else None
        if isinstance(epilogue, str) and epilogue in GEMM_EPILOGUES and epilogue != "DEFAULT":
            label += f" with a {epilogue} epilogue"
    return label


def _seconds(module: HloModule, ins: Instruction, device: Accelerator) -> float | None:
    summary = kernel_summary(module)
    for counted in kernel_costs(module, summary, device):
        if counted is not None and counted[0] is ins:
            return counted[2]
    return None


def outcome(experiment: FlagSet, old: HloModule, ins: Instruction, new: HloModule,
            device: Accelerator) -> Outcome:
    """What the kernel of ``ins`` (:func:`kernel_of`) of ``old`` became in ``new``,
    the same module compiled with the flags of ``experiment``: its counterpart by the matcher
    that survives renames (:func:`hlo_lsp.model.matching.match_modules`), what
    each runs as (:func:`runs_as`) and their estimated times on ``device``.
    Pure; never raises on parsed modules."""
    kernel = kernel_of(old, ins)
    name = kernel.name.name
    matched = match_modules(old, new).get(name)
    found = new.instruction_named(matched) if matched is not None else None
    return Outcome(experiment, name, matched if found is not None else None, runs_as(kernel),
                   runs_as(found) if found is not None else "",
                   _seconds(old, kernel, device),
                   _seconds(new, found, device) if found is not None else None, device.name)
