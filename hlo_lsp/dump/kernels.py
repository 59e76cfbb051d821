"""The kernels XLA:GPU generated for a module, in its dump directory: where the
kernel of a fusion (or an emitted custom-call) is written in PTX and LLVM IR.

XLA:GPU dumps, beside the module's HLO, the LLVM IR of each compiled LLVM
module before and after LLVM's optimizations (``module_NNNN.<name>.K.ir-no-opt.ll``,
``...K.ir-with-opt.ll``) and the PTX made of it (``...K.ptx``; K a counter of
the module's LLVM modules; xla/service/gpu/gpu_compiler.cc and
xla/service/llvm_ir/llvm_util.cc ``DumpIrIfEnabled``). A kernel is named after
its HLO instruction by ``llvm_ir::SanitizeFunctionName``
(xla/service/llvm_ir/llvm_util.cc): every character outside ``[A-Za-z0-9_$]``
becomes ``_``, a leading digit gets a ``_`` before it, "" becomes
``__unnamed``, "_" and "$" get a ``_`` after them (:func:`kernel_name`). So
``%gemm_fusion_dot.1`` runs as ``.visible .entry gemm_fusion_dot_1(`` in the
PTX and ``define ... @gemm_fusion_dot_1(`` in the optimized IR. Sanitized names
may collide (``a.1`` and ``a_1``); XLA then uniquifies one of them, which this
module does not follow: such a name finds the kernel of both.

Every file is untrusted input (:mod:`hlo_lsp.dump.untrusted`): regular files
of at most :data:`MAX_KERNEL_FILE_BYTES`; one that cannot be read is skipped
and named in :attr:`KernelIndex.problems`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import NamedTuple

from hlo_lsp.dump.names import AFTER_OPTIMIZATIONS, parse_dump_name
from hlo_lsp.dump.untrusted import UntrustedFileError, read_text

#: The largest PTX or LLVM IR file read (bytes).
MAX_KERNEL_FILE_BYTES = 64 * 1024 * 1024
#: At most this many kernel files of one module are read.
MAX_KERNEL_FILES = 256

PTX = "ptx"
LLVM_IR = "llvm"

#: ``.visible .entry name(`` (PTX ISA: kernel entry directives; the name is
#: an identifier ``[A-Za-z_$%][A-Za-z0-9_$]*`` or one starting with ``_``/``$``/``%``).
_PTX_ENTRY = re.compile(
    r"^[ \t]*(?:\.visible[ \t]+|\.weak[ \t]+)?\.entry[ \t]+(?P<name>[A-Za-z0-9_$%]+)[ \t]*\(",
    re.MULTILINE)
#: ``define ... @name(`` of a function definition in LLVM IR (quoted names too).
_LL_DEFINE = re.compile(
    r"^define\b[^@\n]*@(?:\"(?P<quoted>[^\"\n]*)\"|(?P<name>[-A-Za-z0-9_$.]+))\(",
    re.MULTILINE)
#: The kernel files of a module: ``K.ptx`` and ``K.ir-with-opt.ll`` after the
#: module's prefix (the unoptimized IR holds the same functions).
_KERNEL_FILE = re.compile(r"^(?P<k>\d+)\.(?:ptx|ir-with-opt\.ll)$")


@dataclass(frozen=True, slots=True)
class KernelSite:
    """Where a kernel is written: the file ``path``, its ``kind`` (:data:`PTX` or
    :data:`LLVM_IR`), the 0-based ``line`` and the kernel name's columns
    ``[start, end)`` on it (characters), and the ``kernel`` name."""

    path: str
    kind: str
    kernel: str
    line: int
    start: int
    end: int


@dataclass(frozen=True)
class KernelIndex:
    """The kernels of one module's dump: ``sites`` by kernel name (the PTX site
    first, then the LLVM IR), and ``problems``: one line per kernel file that
    could not be read (``<path>: <reason>``)."""

    sites: dict[str, tuple[KernelSite, ...]] = field(default_factory=dict)
    problems: tuple[str, ...] = ()

    def for_instruction(self, name: str) -> tuple[KernelSite, ...]:
        """The sites of the kernel of the HLO instruction ``name``
        (:func:`kernel_name`); () when the dump holds none (a library call such as
        cuBLAS, a kernel XLA did not dump)."""
        return self.sites.get(kernel_name(name), ())

    def instruction_of(self, kernel: str, names) -> str | None:
        """The HLO instruction among ``names`` (an iterable of instruction names)
        whose kernel is ``kernel``, None when none is."""
        for name in names:
            if kernel_name(name) == kernel:
                return name
        return None


def kernel_name(hlo_name: str) -> str:
    """The kernel (LLVM function, PTX entry) name XLA gives the instruction
    ``hlo_name``: ``llvm_ir::SanitizeFunctionName`` (xla/service/llvm_ir/llvm_util.cc),
    e.g. ``gemm_fusion_dot.1`` -> ``gemm_fusion_dot_1``."""
    out = "".join(c if c.isascii() and (c.isalnum() or c in "_$") else "_" for c in hlo_name)
    if not out:
        out = "__unnamed"
    if out[0].isdigit():
        out = "_" + out
    if out in ("_", "$"):
        out += "_"
    return out


def kernel_files(hlo_path: str) -> list[str]:
    """The PTX and optimized LLVM IR files of the module of the HLO dump
    ``hlo_path`` (``<module prefix>.K.ptx``, ``<module prefix>.K.ir-with-opt.ll``),
    sorted by K, PTX first; [] when the name is not an XLA dump name or the
    directory cannot be listed. At most :data:`MAX_KERNEL_FILES`."""
    name = parse_dump_name(os.path.basename(hlo_path))
    if name is None or not name.module_name:
        return []
    prefix = _module_prefix(name)
    directory = os.path.dirname(hlo_path)
    try:
        entries = os.listdir(directory or ".")
    except OSError:
        return []
    found = []
    for entry in entries:
        if entry.startswith(prefix):
            m = _KERNEL_FILE.match(entry[len(prefix):])
            if m:
                found.append((int(m.group("k")), not entry.endswith(".ptx"), entry))
    found.sort()
    return [os.path.join(directory, e) for _, _, e in found[:MAX_KERNEL_FILES]]


def scan_kernels(text: str, path: str, kind: str) -> list[KernelSite]:
    """The kernels defined in ``text`` (a PTX file's text for :data:`PTX`, LLVM IR
    for :data:`LLVM_IR`), each with its line and columns."""
    pattern = _PTX_ENTRY if kind == PTX else _LL_DEFINE
    out = []
    line = 0
    counted = 0
    for m in pattern.finditer(text):
        group = "name" if kind == PTX or m.group("name") is not None else "quoted"
        start = m.start(group)
        line += text.count("\n", counted, start)
        counted = start
        column = start - (text.rfind("\n", 0, start) + 1)
        kernel = m.group(group)
        out.append(KernelSite(path, kind, kernel, line, column, column + len(kernel)))
    return out


def read_kernels(hlo_path: str, limit: int = MAX_KERNEL_FILE_BYTES) -> KernelIndex:
    """The kernels of the module of the HLO dump ``hlo_path`` (:func:`kernel_files`)
    as a :class:`KernelIndex`. Only an after-optimizations file has kernels (the
    kernels are of the optimized module): any other stage gives an empty index.
    Files that cannot be read (not regular, larger than ``limit``, ...) are
    skipped and named in ``problems``. Blocks on the disk."""
    name = parse_dump_name(os.path.basename(hlo_path))
    if name is None or name.stage != AFTER_OPTIMIZATIONS:
        return KernelIndex()
    sites: dict[str, list[KernelSite]] = {}
    problems = []
    for path in kernel_files(hlo_path):
        kind = PTX if path.endswith(".ptx") else LLVM_IR
        try:
            text = read_text(path, limit)
        except UntrustedFileError as exc:
            problems.append(str(exc))
            continue
        for site in scan_kernels(text, path, kind):
            sites.setdefault(site.kernel, []).append(site)
    ordered = {k: tuple(sorted(v, key=lambda s: s.kind != PTX)) for k, v in sites.items()}
    return KernelIndex(ordered, tuple(problems))


#: A kernel file's name: the module's prefix, then ``K.ptx``,
#: ``K.ir-with-opt.ll``, ``K.ir-no-opt.ll`` (K a number or ``constants``).
_KERNEL_FILE_NAME = re.compile(
    r"^(?P<prefix>(?:\d+\.)?module_\d+\..+?)\.(?:\d+|constants)\."
    r"(?:ptx|ir-(?:with|no)-opt(?:-noconst)?\.ll)$")
#: An instruction's definition at the start of a line of HLO text: its name.
_HLO_DEFINITION = re.compile(r"^[ \t]*(?:ROOT[ \t]+)?(?P<name>%?[^\s=,(){}%]+)[ \t]*=",
                             re.MULTILINE)


def is_kernel_file(path: str) -> bool:
    """Whether ``path`` names a PTX or LLVM IR file XLA:GPU dumped for a module
    (:data:`_KERNEL_FILE_NAME`)."""
    return _KERNEL_FILE_NAME.match(os.path.basename(path)) is not None


def after_optimizations_for(kernel_path: str) -> str | None:
    """The after-optimizations HLO file of the module whose kernel file is
    ``kernel_path`` (same directory, same ``[ts.]module_NNNN.<name>`` prefix),
    None when there is none or the name is not a kernel file's. Lists the
    directory."""
    m = _KERNEL_FILE_NAME.match(os.path.basename(kernel_path))
    if m is None:
        return None
    prefix = m.group("prefix") + "."
    directory = os.path.dirname(kernel_path)
    try:
        entries = sorted(os.listdir(directory or "."))
    except OSError:
        return None
    for entry in entries:
        name = parse_dump_name(entry) if entry.startswith(prefix) else None
        if name is not None and name.stage == AFTER_OPTIMIZATIONS and \
                _module_prefix(name) == prefix:
            return os.path.join(directory, entry)
    return None


def _module_prefix(name) -> str:
    """``[ts.]module_NNNN.<name>.``: what the files of one module start with."""
    ts = f"{name.timestamp}." if name.timestamp else ""
    return f"{ts}module_{name.number:04d}.{name.module_name}."


def kernel_on_line(text: str, line: int, kind: str) -> str | None:
    """The kernel defined on the 0-based ``line`` of ``text`` (a PTX ``.entry`` or
    an LLVM IR ``define``), None when that line defines none."""
    lines = text.split("\n", line + 1)
    if line < 0 or line >= len(lines):
        return None
    found = scan_kernels(lines[line], "", kind)
    return found[0].kernel if found else None


class KernelOrigin(NamedTuple):
    """The HLO instruction of a kernel: its after-optimizations file ``hlo``,
    the 0-based ``line`` and columns ``[start, end)`` of its name (``%``
    included, as written), the ``instruction`` name (no ``%``) and the
    ``kernel`` name on the kernel file's line."""

    hlo: str
    line: int
    start: int
    end: int
    instruction: str
    kernel: str


def kernel_instruction(kernel_path: str, line: int,
                       limit: int = MAX_KERNEL_FILE_BYTES) -> KernelOrigin | None:
    """The :class:`KernelOrigin` of the kernel defined on the 0-based ``line``
    of the PTX or LLVM IR file ``kernel_path``: the instruction of the module's
    after-optimizations file (:func:`after_optimizations_for`) whose kernel
    name (:func:`kernel_name`) is that kernel's; None when the line defines no
    kernel, there is no such file or no instruction of it has that name. Reads
    both files as untrusted input (at most ``limit`` bytes each); raises
    :class:`UntrustedFileError` when one cannot be read."""
    kind = PTX if kernel_path.endswith(".ptx") else LLVM_IR
    kernel = kernel_on_line(read_text(kernel_path, limit), line, kind)
    hlo = after_optimizations_for(kernel_path) if kernel else None
    if hlo is None:
        return None
    text = read_text(hlo)
    for m in _HLO_DEFINITION.finditer(text):
        name = m.group("name").removeprefix("%")
        if kernel_name(name) == kernel:
            start = m.start("name")
            row = text.count("\n", 0, start)
            column = start - (text.rfind("\n", 0, start) + 1)
            return KernelOrigin(hlo, row, column, column + len(m.group("name")), name, kernel)
    return None


def kernel_origin(kernel_path: str, line: int,
                  limit: int = MAX_KERNEL_FILE_BYTES) -> tuple[str, int, int, int] | None:
    """Where the HLO instruction of the kernel defined on the 0-based ``line`` of
    the PTX or LLVM IR file ``kernel_path`` is defined: ``(HLO file, 0-based
    line, start column, end column)`` of its name (:func:`kernel_instruction`);
    None when there is none. Raises :class:`UntrustedFileError` when a file
    cannot be read."""
    got = kernel_instruction(kernel_path, line, limit)
    return None if got is None else (got.hlo, got.line, got.start, got.end)


__all__ = ["KernelIndex", "KernelOrigin", "KernelSite", "LLVM_IR", "MAX_KERNEL_FILES",
           "MAX_KERNEL_FILE_BYTES", "PTX", "after_optimizations_for", "is_kernel_file", "kernel_files", "kernel_name",
           "kernel_instruction", "kernel_on_line", "kernel_origin", "read_kernels", "scan_kernels"]
