"""What a profile file holds once read, and the one error of a profile that
cannot be: shared by the readers (:mod:`hlo_lsp.dump.profiles` for the trace
JSON, :mod:`hlo_lsp.dump.xplane` for the xplane) without either importing
the other.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from hlo_lsp.model.profile import ModuleProfile, OpEvent, measure, module_names

#: The largest profile file read, compressed or not, and the most bytes a
#: ``.json.gz`` may decompress to. A trace of a few thousand steps of a large
#: model is tens of MB; XProf itself refuses to convert traces past about 1 GB.
MAX_PROFILE_BYTES = 256 * 1024 * 1024


class ProfileError(OSError):
    """A profile that was not read: ``path`` and a one-line ``reason`` ("not a
    profile: no traceEvents", "larger than 256 MiB"). ``str()`` is
    ``"<path>: <reason>"``."""

    def __init__(self, path: str | os.PathLike, reason: str) -> None:
        super().__init__(reason)
        self.path = os.fspath(path)
        self.reason = reason

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"

    def __reduce__(self):
        return (ProfileError, (self.path, self.reason))


@dataclass(frozen=True, slots=True)
class ProfileTrace:
    """What one profile file holds, as read: ``path``, the ``events`` of XLA
    instructions (:class:`~hlo_lsp.model.profile.OpEvent`, µs), the ``devices``
    (planes) they ran on, and ``skipped``: events that carried ``hlo_op`` but
    could not be read (a time that is not a number...). The joins of its
    events by module (:meth:`measure`) are kept with it."""

    path: str
    events: tuple[OpEvent, ...]
    devices: tuple[str, ...] = ()
    skipped: int = 0
    _joins: dict = field(default_factory=dict, compare=False, repr=False)

    def measure(self, module: str, program_id: int | None = None) -> ModuleProfile | None:
        """:func:`hlo_lsp.model.profile.measure` of these events, computed once
        per module and program id (a pass over every event: call it off the
        event loop the first time)."""
        key = (module, program_id)
        if key not in self._joins:
            self._joins[key] = measure(self.events, module, program_id)
        return self._joins[key]

    @property
    def modules(self) -> list[str]:
        """The modules measured, in order of first appearance."""
        if "modules" not in self._joins:
            self._joins["modules"] = module_names(self.events)
        return self._joins["modules"]


__all__ = ["MAX_PROFILE_BYTES", "ProfileError", "ProfileTrace"]
