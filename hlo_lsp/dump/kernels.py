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
    ts = f"{name.timestamp}." if name.timestamp else ""
    prefix = f"{ts}module_{name.number:04d}.{name.module_name}."
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


__all__ = ["KernelIndex", "KernelSite", "LLVM_IR", "MAX_KERNEL_FILES", "MAX_KERNEL_FILE_BYTES",
           "PTX", "kernel_files", "kernel_name", "read_kernels", "scan_kernels"]
