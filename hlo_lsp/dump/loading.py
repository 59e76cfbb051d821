"""Pick one HLO module out of a file or an XLA dump directory (for the
``show``, ``summary`` and ``diff`` commands).

- A file may hold several modules (test files concatenate them, one
  ``HloModule`` line each); XLA reads one module per file, so the modules are
  split at lines starting with ``HloModule`` and ``--module NAME`` picks one
  (default: the first).
- A dump directory (xla/service/dump.cc naming, :mod:`hlo_lsp.dump.names`) holds one
  file per module and stage; ``--module NAME`` picks the module whose name
  (``module_NNNN.NAME.*``) is ``NAME``, preferring the after-optimizations file.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from hlo_lsp.dump.names import AFTER_OPTIMIZATIONS, BEFORE_OPTIMIZATIONS, looks_like_hlo, parse_dump_name
from hlo_lsp.dump.untrusted import UntrustedFileError, read_text
from hlo_lsp.model.hlo import HloModule
from hlo_lsp.syntax.parser import parse

_MODULE_LINE = re.compile(r"^HloModule[ \t]+%?([A-Za-z0-9_.\-]+)", re.M)


class LoadError(Exception):
    """A file or module that cannot be loaded; the message is for the user."""


@dataclass(slots=True)
class Loaded:
    """A parsed module: ``path`` it came from, ``offset`` of its text in the file
    (non-zero for the second and later module of a multi-module file)."""

    path: str
    module: HloModule
    offset: int = 0


def split_modules(text: str) -> list[tuple[str, int, int]]:
    """``(name, start, end)`` of each ``HloModule`` section of ``text``; the whole
    text as one unnamed section when there is at most one header."""
    heads = list(_MODULE_LINE.finditer(text))
    if len(heads) <= 1:
        return [(heads[0].group(1) if heads else "", 0, len(text))]
    out = []
    for i, m in enumerate(heads):
        start = 0 if i == 0 else m.start()
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        out.append((m.group(1), start, end))
    return out


def _stage_rank(filename: str) -> int:
    dn = parse_dump_name(filename)
    if dn is None:
        return 3
    if dn.stage == AFTER_OPTIMIZATIONS:
        return 0
    if dn.stage == BEFORE_OPTIMIZATIONS:
        return 2
    return 1


def _pick_in_directory(path: str, name: str | None) -> str:
    candidates = []
    for entry in sorted(os.listdir(path)):
        full = os.path.join(path, entry)
        if not os.path.isfile(full):
            continue
        dn = parse_dump_name(entry)
        if dn is None:
            if not entry.endswith(".hlo"):
                continue
            mod = os.path.splitext(entry)[0]
        else:
            mod = dn.module_name
        if name is None or mod == name:
            candidates.append((_stage_rank(entry), entry, mod))
    if not candidates:
        raise LoadError(f"{path}: no HLO dump of module {name!r}" if name
                        else f"{path}: no HLO dump files")
    if name is None:
        mods = sorted({c[2] for c in candidates})
        if len(mods) > 1:
            raise LoadError(f"{path}: several modules, choose one with --module: "
                            + ", ".join(mods))
    candidates.sort()
    return os.path.join(path, candidates[0][1])


def load(path: str, module: str | None = None) -> Loaded:
    """Parse the module ``module`` (or the only / first one) of ``path``, a file
    or a dump directory. Raises :class:`LoadError` with a readable message."""
    from_dir = os.path.isdir(path)
    if from_dir:
        path = _pick_in_directory(path, module)
    try:
        text = read_text(path)
    except UntrustedFileError as exc:  # a FIFO, a device, too large, unreadable
        raise LoadError(str(exc)) from None
    first = text.split("\n", 1)[0]
    if not looks_like_hlo(os.path.basename(path), first) and "HloModule" not in text[:4096] \
            and "ENTRY" not in text:
        raise LoadError(f"{path}: not HLO text")
    sections = split_modules(text)
    chosen = sections[0]
    if module is not None and len(sections) > 1:
        matches = [s for s in sections if s[0] == module]
        if not matches:
            raise LoadError(f"{path}: no module {module!r}; modules: "
                            + ", ".join(s[0] for s in sections))
        chosen = matches[0]
    elif module is not None and sections[0][0] and sections[0][0] != module \
            and not from_dir:
        raise LoadError(f"{path}: module is {sections[0][0]!r}, not {module!r}")
    _, start, end = chosen
    return Loaded(path, parse(text[start:end]), start)
