"""XLA dump file names: which files are HLO text, and what a name says.

Naming follows xla/service/dump.cc: ``[timestamp.]module_NNNN[.module_name].SUFFIX``
with suffixes ``before_optimizations.txt``, ``<platform>_after_optimizations.txt``
(``cpu_``, ``sm_9.0_gpu_``, ``gfx942_gpu_``, ...), per-pass
``NNNN.<pipeline>.after_<pass>.before_<next>.txt``, and the non-HLO reports
``-buffer-assignment.txt``, ``-memory-usage-report.txt``, ... .
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NON_HLO_SUFFIXES = ("-buffer-assignment.txt", "-memory-usage-report.txt",
                    "-buffer-assignment-values.txt", "-live-range.txt",
                    ".debug_options", ".dot", ".html", ".pb", ".pbtxt", ".ll", ".o", ".mlir")

_DUMP = re.compile(
    r"^(?:(?P<timestamp>\d+)\.)?module_(?P<number>\d+)(?:\.(?P<rest>.+))?\.txt$")
_AFTER = re.compile(r"^(?P<name>.*?)\.(?:(?P<platform>[A-Za-z0-9_.]+?)_)?after_optimizations$")
_PASS = re.compile(r"^(?P<name>.*?)\.(?P<pass_no>\d{4})\.(?P<pass>.+)$")


@dataclass(frozen=True, slots=True)
class DumpName:
    """What an XLA dump file name says. ``stage`` is "before_optimizations",
    "after_optimizations", or "pass:<pipeline.after_x.before_y>"; ``platform`` is
    e.g. "cpu", "sm_9.0_gpu" (CUDA compute capability 9.0), "gfx942_gpu" or ""."""

    number: int
    module_name: str
    stage: str
    platform: str = ""
    timestamp: str = ""


def is_non_hlo_dump_file(filename: str) -> bool:
    """True for dump-directory files that are not HLO text (buffer assignment,
    memory-usage reports, ...)."""
    return filename.endswith(NON_HLO_SUFFIXES)


def parse_dump_name(filename: str) -> DumpName | None:
    """Decode ``module_0012.jit_step.sm_9.0_gpu_after_optimizations.txt`` and the
    like; None for names that are not HLO dump files."""
    if is_non_hlo_dump_file(filename):
        return None
    m = _DUMP.match(filename)
    if not m:
        return None
    number = int(m.group("number"))
    rest = m.group("rest") or ""
    ts = m.group("timestamp") or ""
    if rest.endswith("before_optimizations"):
        return DumpName(number, rest[:-len("before_optimizations")].rstrip("."),
                        "before_optimizations", "", ts)
    after = _AFTER.match(rest)
    if after:
        return DumpName(number, after.group("name"), "after_optimizations",
                        after.group("platform") or "", ts)
    per_pass = _PASS.match(rest)
    if per_pass:
        return DumpName(number, per_pass.group("name"),
                        "pass:" + per_pass.group("pass_no") + "." + per_pass.group("pass"), "", ts)
    return DumpName(number, rest, "", "", ts)


def looks_like_hlo(filename: str, first_line: str) -> bool:
    """Whether a file should be treated as HLO text: ``*.hlo``, an XLA dump name,
    or a ``.txt`` whose first line starts with ``HloModule``."""
    if is_non_hlo_dump_file(filename):
        return False
    if filename.endswith(".hlo"):
        return True
    if parse_dump_name(filename) is not None:
        return True
    return filename.endswith(".txt") and first_line.lstrip().startswith("HloModule")
