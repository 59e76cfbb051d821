"""XLA dump file names: which files are HLO text, which are reports about
which HLO file, and what a name says. The one place that knows the naming.

Naming follows xla/service/dump.cc (``FilenameFor``, ``DumpHloModuleIfEnabled``,
``DumpToFileInDirOrStdout``): ``[timestamp.]module_NNNN[.module_name].SUFFIX``
where ``NNNN`` is the module's unique id printed ``%04d``, with suffixes
``before_optimizations.txt``, ``<platform>_after_optimizations.txt`` (``cpu_``,
``sm_9.0_gpu_``, ``gfx942_gpu_``, ...), per-pass
``NNNN.<pipeline>.after_<pass>.before_<next>.txt``, and the non-HLO files
written beside them: the buffer-assignment and memory-usage reports
(``X-buffer-assignment.txt``, ``X-memory-usage-report.txt`` describe the
module of ``X.txt``; xla/service/buffer_assignment.cc), live ranges, debug
options, graphs (``.dot``, ``.html``), protos (``.pb``, ``.pbtxt``), LLVM IR,
objects, PTX and MLIR, and text files that are not HLO under a module's name:
XLA:GPU's thunk sequences (``thunk_sequence.txt``, and
``thunk_sequence_after_thunk_passes.txt`` when thunk passes changed it;
xla/service/gpu/gpu_executable.cc), thunk metadata, and the priority-fusion
log (``priority_fusion_dump.txt``, written with pass dumps on). A dump may also
hold one folder per module (``module_NNNN.name/``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from hlo_lsp.dump.untrusted import read_text
from hlo_lsp.model.accelerators import DEFAULT, ACCELERATORS, Accelerator, accelerator, \
    accelerator_for_platform

#: Optimization stages of a dump name (``DumpName.stage``); per-pass dumps are
#: ``"pass:<NNNN.pipeline.after_x.before_y>"``.
BEFORE_OPTIMIZATIONS = "before_optimizations"
AFTER_OPTIMIZATIONS = "after_optimizations"

#: Report kind -> the suffix that replaces ``.txt`` of the HLO file it describes.
REPORT_SUFFIXES = {"buffer-assignment": "-buffer-assignment.txt",
                   "memory-usage": "-memory-usage-report.txt"}

NON_HLO_SUFFIXES = (*REPORT_SUFFIXES.values(), "-buffer-assignment-values.txt",
                    "-live-range.txt", ".debug_options", ".dot", ".html", ".pb", ".pbtxt",
                    ".ll", ".o", ".mlir", ".ptx", ".thunk_sequence.txt", ".thunk_metadata.txt")

#: ``.txt`` files XLA writes under a module's name that are not HLO text, by the
#: last part of the name: thunk sequences in any variant
#: (``thunk_sequence_after_thunk_passes``), thunk metadata, the priority-fusion
#: log, autotuning logs and the debug options.
_NON_HLO_TXT = re.compile(
    r"\.(?:thunk_sequence\w*|thunk_metadata\w*|priority_fusion_dump\w*|autotun\w*"
    r"|debug_options)\.txt$")

#: HLO text dumped by XLA:GPU after one named pass, outside the per-pass naming
#: (``module_NNNN.name.after_spmd_partitioner.txt``, written by XLA:GPU in jaxlib
#: 0.10.2 after SPMD partitioning, also for one device); decoded as
#: stage ``"pass:<name>"``.
NAMED_PASS_STAGES = ("after_spmd_partitioner",)

#: Globs (LSP ``workspace/didChangeWatchedFiles`` syntax) matching the files that
#: may be HLO text: ``*.hlo`` and every dump file (a ``.txt`` whose first line is
#: ``HloModule`` is only found by a scan, see :func:`looks_like_hlo`).
HLO_FILE_GLOBS = ("**/*.hlo", "**/module_*.txt", "**/*.module_*.txt")

_ENTRY = re.compile(r"^(?:\d+\.)?(?P<module>module_\d+)")
_DUMP = re.compile(
    r"^(?:(?P<timestamp>\d+)\.)?module_(?P<number>\d+)(?:\.(?P<rest>.+))?\.txt$")
_AFTER = re.compile(r"^(?P<name>.*?)\.(?:(?P<platform>[A-Za-z0-9_.]+?)_)?after_optimizations$")
_PASS = re.compile(r"^(?P<name>.*?)\.(?P<pass_no>\d{4})\.(?P<pass>.+)$")


@dataclass(frozen=True, slots=True)
class DumpName:
    """What an XLA dump file name says. ``stage`` is :data:`BEFORE_OPTIMIZATIONS`,
    :data:`AFTER_OPTIMIZATIONS`, "pass:<NNNN.pipeline.after_x.before_y>" or "";
    ``platform`` is e.g. "cpu", "sm_9.0_gpu" (CUDA compute capability 9.0),
    "gfx942_gpu" or ""; ``timestamp`` the optional leading number ("" when absent)."""

    number: int
    module_name: str
    stage: str
    platform: str = ""
    timestamp: str = ""


def module_id(number: int) -> str:
    """``module_0028``: how dump.cc prints a module's unique id (``%04d``)."""
    return f"module_{number:04d}"


def is_dump_entry(filename: str) -> bool:
    """Whether a dump-directory entry (file or folder name) was written by XLA:
    ``[timestamp.]module_NNNN...``. Other entries (the recipe, the user's files,
    hidden temporary directories) are not."""
    return _ENTRY.match(filename) is not None


def is_non_hlo_dump_file(filename: str) -> bool:
    """True for dump-directory files that are not HLO text (buffer assignment,
    memory-usage reports, graphs, protos, thunk sequences, ...;
    :data:`NON_HLO_SUFFIXES`)."""
    return filename.endswith(NON_HLO_SUFFIXES) or _NON_HLO_TXT.search(filename) is not None


def parse_dump_name(filename: str) -> DumpName | None:
    """Decode ``module_0012.jit_step.sm_9.0_gpu_after_optimizations.txt`` and the
    like (a base name, not a path); None for names that are not HLO dump files."""
    if is_non_hlo_dump_file(filename):
        return None
    m = _DUMP.match(filename)
    if not m:
        return None
    number = int(m.group("number"))
    rest = m.group("rest") or ""
    ts = m.group("timestamp") or ""
    if rest.endswith(BEFORE_OPTIMIZATIONS):
        return DumpName(number, rest[:-len(BEFORE_OPTIMIZATIONS)].rstrip("."),
                        BEFORE_OPTIMIZATIONS, "", ts)
    for named in NAMED_PASS_STAGES:
        if rest.endswith("." + named):
            return DumpName(number, rest[:-len(named) - 1], "pass:" + named, "", ts)
    after = _AFTER.match(rest)
    if after:
        return DumpName(number, after.group("name"), AFTER_OPTIMIZATIONS,
                        after.group("platform") or "", ts)
    per_pass = _PASS.match(rest)
    if per_pass:
        return DumpName(number, per_pass.group("name"),
                        "pass:" + per_pass.group("pass_no") + "." + per_pass.group("pass"), "", ts)
    return DumpName(number, rest, "", "", ts)


def stage_label(name: DumpName) -> str:
    """A stage as the file name writes it: "before_optimizations",
    "sm_9.0a_gpu_after_optimizations" (the platform kept), "after_spmd_partitioner",
    "0007.pipeline.after_x.before_y" for a pass snapshot; "" for a name without
    a stage."""
    if name.stage == AFTER_OPTIMIZATIONS and name.platform:
        return f"{name.platform}_{AFTER_OPTIMIZATIONS}"
    return name.stage.removeprefix("pass:")


def is_pass_snapshot(name: DumpName) -> bool:
    """Whether the file is one of the per-pass dumps of ``--xla_dump_hlo_pass_re``
    (``NNNN.pipeline.after_x.before_y``), not a stage XLA always writes."""
    return name.stage.startswith("pass:") and name.stage[5:] not in NAMED_PASS_STAGES


def holds_hlo_text(path: str) -> bool:
    """Whether the file at ``path`` holds HLO text: its first non-blank line (of
    the first 4096 characters) starts with ``HloModule``, as every module XLA
    dumps as text does (xla/hlo/ir/hlo_module.cc ``ToString``). False when it
    cannot be read (:func:`hlo_lsp.dump.untrusted.read_text`: regular files
    only)."""
    try:
        head = read_text(path, 4096, whole=False)
    except OSError:
        return False
    return head.lstrip().startswith("HloModule")


def module_label(filename: str | None) -> str:
    """``module_0004`` from a dump entry name (``[ts.]module_0004...``) as
    written, "?" for other names or None."""
    m = _ENTRY.match(filename or "")
    return m.group("module") if m else "?"


def counterpart_stage(stage: str) -> str | None:
    """The stage a file of ``stage`` is compared with: after -> before
    optimizations and back; a per-pass dump -> before optimizations; None for
    an unknown stage."""
    if stage == BEFORE_OPTIMIZATIONS:
        return AFTER_OPTIMIZATIONS
    if stage == AFTER_OPTIMIZATIONS or stage.startswith("pass:"):
        return BEFORE_OPTIMIZATIONS
    return None


def looks_like_hlo(filename: str, first_line: str) -> bool:
    """Whether a file should be treated as HLO text: ``*.hlo``, an XLA dump name,
    or a ``.txt`` whose first line starts with ``HloModule``; never a report."""
    if is_non_hlo_dump_file(filename):
        return False
    if filename.endswith(".hlo"):
        return True
    if parse_dump_name(filename) is not None:
        return True
    return filename.endswith(".txt") and first_line.lstrip().startswith("HloModule")


def is_hlo_path(path: str) -> bool:
    """Whether the file at ``path`` is HLO text by :func:`looks_like_hlo`; reads
    the first line (512 characters at most) only of ``.txt`` files whose name is
    not a dump name (:mod:`hlo_lsp.dump.untrusted`). False when it cannot be read
    or is not a regular file."""
    name = os.path.basename(path)
    if is_non_hlo_dump_file(name):
        return False
    if name.endswith(".hlo") or parse_dump_name(name) is not None:
        return True
    if not name.endswith(".txt"):
        return False
    try:
        first = read_text(path, 2048, whole=False).split("\n", 1)[0][:512]
    except OSError:  # UntrustedFileError: not a regular file (a FIFO...), unreadable
        return False
    return looks_like_hlo(name, first)


# ------------------------------------------------------------------ reports ---

def report_kind(path: str) -> str | None:
    """"buffer-assignment" for ``*-buffer-assignment.txt``, "memory-usage" for
    ``*-memory-usage-report.txt`` (:data:`REPORT_SUFFIXES`), else None."""
    for kind, suffix in REPORT_SUFFIXES.items():
        if path.endswith(suffix):
            return kind
    return None


def is_report_file(path: str) -> bool:
    """True for a buffer-assignment or memory-usage report (:func:`report_kind`)."""
    return report_kind(os.path.basename(path)) is not None


def hlo_path_for_report(report_path: str) -> str | None:
    """The HLO dump a report belongs to: ``X-buffer-assignment.txt`` and
    ``X-memory-usage-report.txt`` describe ``X.txt`` (same directory, same module
    number and name). None for other names."""
    kind = report_kind(report_path)
    if kind is None:
        return None
    return report_path[:-len(REPORT_SUFFIXES[kind])] + ".txt"


def report_paths_for_hlo(hlo_path: str) -> tuple[str, str] | None:
    """``(buffer-assignment path, memory-usage-report path)`` for the HLO dump
    ``X.txt`` (the files may not exist); None when the name does not end in .txt."""
    if not hlo_path.endswith(".txt"):
        return None
    base = hlo_path[:-4]
    return base + REPORT_SUFFIXES["buffer-assignment"], base + REPORT_SUFFIXES["memory-usage"]


def report_path(path: str, kind: str) -> str | None:
    """The report of ``kind`` ("buffer-assignment" or "memory-usage") about the HLO
    dump ``path``, or about the HLO dump the report ``path`` belongs to (its
    sibling); the file may not exist. None when ``path`` is neither an HLO
    ``.txt`` nor a report."""
    hlo = hlo_path_for_report(path) if report_kind(path) is not None else path
    paths = report_paths_for_hlo(hlo)
    if paths is None:
        return None
    return paths[0] if kind == "buffer-assignment" else paths[1]


def device_for(path: str | None, setting: str | None = None) -> Accelerator:
    """The device estimates are for: ``setting`` (a key or name of
    :data:`hlo_lsp.model.accelerators.ACCELERATORS`) when it names one; else
    the device the dump file name's platform implies (also a ``sm90`` written
    anywhere in the file name); else the CPU default."""
    chosen = accelerator(setting)
    if chosen is not None:
        return chosen
    if path:
        base = os.path.basename(path)
        name = parse_dump_name(base)
        found = accelerator_for_platform(name.platform) if name is not None else None
        found = found or accelerator_for_platform(base)  # e.g. "...sm90_gpu_after..."
        if found is not None:
            return found
    return ACCELERATORS[DEFAULT]


__all__ = [
    "AFTER_OPTIMIZATIONS", "BEFORE_OPTIMIZATIONS", "DumpName", "NON_HLO_SUFFIXES",
    "REPORT_SUFFIXES", "counterpart_stage", "device_for", "hlo_path_for_report", "holds_hlo_text",
    "is_dump_entry", "is_hlo_path", "is_non_hlo_dump_file", "is_pass_snapshot", "is_report_file",
    "looks_like_hlo", "module_id", "module_label", "parse_dump_name", "report_kind", "report_path",
    "report_paths_for_hlo", "stage_label",
]
