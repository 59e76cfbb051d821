"""Capture: profiling a JAX program while it dumps (``hlo-lsp dump --profile [N]``).

The program runs under hlo-lsp's profiling hook (:mod:`hlo_lsp.dump.profiling_hook`,
a script run by the program's own interpreter, like the deviceless runner), which
wraps ``jax.jit`` and traces ``N`` calls of the program's jitted functions with
``jax.profiler``, each function's first call (its compile) left out. The profile
is written with the new dump, into :data:`PROFILE_DIR` of the dump directory
(``DUMP/profile/plugins/profile/<run>/<host>.xplane.pb`` and
``<host>.trace.json.gz``, found by :func:`hlo_lsp.dump.profiles.find_runs`),
with the hook's record ``DUMP/profile/hlo-lsp-profile.json``
(:func:`read_record`). It is part of the dump: a successful run replaces it (or
removes it when the run was not profiled: it measured the previous compile), a
failed one leaves it as it was (:func:`hlo_lsp.dump.recompile.swap_dump`).

With a target GPU compiled for without it (``--target h100``), the program runs on
the CPU: the profile measures the CPU's compile of each function, never the
target's; :func:`statement` says so.
"""

from __future__ import annotations

import json
import os
import pathlib
from dataclasses import dataclass, field

from hlo_lsp.dump.profiles import find_runs, newest_run
from hlo_lsp.dump.untrusted import UntrustedFileError, read_text
from hlo_lsp.model.visible import visible

#: The hook, run as a file by the program's interpreter (never imported).
HOOK = pathlib.Path(__file__).with_name("profiling_hook.py")
#: The folder of a dump directory the profile is written into.
PROFILE_DIR = "profile"
#: The hook's record in :data:`PROFILE_DIR` (``profiling_hook.RECORD_FILE``).
RECORD_FILE = "hlo-lsp-profile.json"
RECORD_FORMAT = "hlo-lsp-profile/1"
#: Calls traced by ``hlo-lsp dump --profile`` without a number, and by the
#: "Recompile and profile" action of a recipe that does not profile.
DEFAULT_CALLS = 10
#: The largest record read (bytes); the hook writes well under 4 KiB.
MAX_RECORD_BYTES = 64 * 1024


@dataclass(frozen=True)
class ProfileRecord:
    """What the profiling hook traced in one run (its ``hlo-lsp-profile.json``):
    ``calls`` asked, ``traced`` calls traced (0: no jitted function was called
    twice), ``modules`` the traced calls per module name (``jit_<function>``),
    ``platform`` and ``devices`` the program ran on (JAX's names: ``cpu``,
    ``cpu:0``), ``errors`` what went wrong with the profiler (one line each)."""

    calls: int
    traced: int
    modules: dict[str, int] = field(default_factory=dict)
    platform: str = ""
    devices: tuple[str, ...] = ()
    jax_version: str = ""
    errors: tuple[str, ...] = ()


def read_record(profile_dir: str | os.PathLike) -> ProfileRecord | None:
    """The hook's record in ``profile_dir``; None when there is none or it cannot
    be used (the file is untrusted input: a regular file of at most
    :data:`MAX_RECORD_BYTES`, JSON of the hook's format, fields of their types).
    Blocking."""
    try:
        text = read_text(pathlib.Path(profile_dir) / RECORD_FILE, MAX_RECORD_BYTES)
        data = json.loads(text)
    except (UntrustedFileError, OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or data.get("format") != RECORD_FORMAT:
        return None

    def count(value: object) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) \
            and value >= 0 else None

    calls, traced = count(data.get("calls")), count(data.get("traced"))
    if calls is None or traced is None:
        return None
    modules = data.get("modules")
    modules = {k: v for k, v in modules.items() if isinstance(k, str) and count(v) is not None} \
        if isinstance(modules, dict) else {}

    def strings(value: object) -> tuple[str, ...]:
        return tuple(v for v in value if isinstance(v, str))[:16] \
            if isinstance(value, list) else ()

    def text_of(value: object) -> str:
        return value if isinstance(value, str) else ""

    return ProfileRecord(calls, traced, modules, text_of(data.get("platform")),
                         strings(data.get("devices")), text_of(data.get("jax_version")),
                         strings(data.get("errors")))


def statement(dump_dir: str | os.PathLike, target_label: str | None = None) -> str:
    """One or two lines for the user on the profile of a run that dumped into
    ``dump_dir`` with profiling on: what was traced (calls per module, read from
    the record), on which platform, and the run directory
    (``DUMP/profile/plugins/profile/<run>``); with ``target_label`` (a GPU compiled
    for without it, e.g. "H100 SXM"), that the profile is of the program's run on
    the CPU, not of the target. Says so when nothing was traced or no run was
    written. Names from the record are data: control characters escaped."""
    folder = os.path.join(os.fspath(dump_dir), PROFILE_DIR)
    record = read_record(folder)
    run = newest_run(find_runs(folder))
    if record is not None and record.traced == 0:
        head = ("Nothing was profiled: no jitted function was called twice (the first "
                "call of each compiles it and is not traced).")
    elif run is None:
        why = f" ({visible(record.errors[0])})" if record and record.errors else ""
        head = f"No profile was written{why}."
    else:
        where = (f" on {visible(record.platform.upper())}"
                 if record is not None and record.platform else "")
        if record is not None:
            per = ", ".join(f"{visible(m)} x{n}" for m, n in sorted(record.modules.items()))
            head = (f"Profiled {record.traced} call{'s' if record.traced != 1 else ''} "
                    f"({per}){where}, each function's first call left out: {run.path}")
        else:
            head = f"Profiled: {run.path}"
    if target_label:
        head += (f"\nThe program ran on the CPU: the profile measures the CPU's compile "
                 f"of each function, not the {target_label} compile in this dump.")
    return head


def run_directory(dump_dir: str | os.PathLike) -> str | None:
    """The newest profile run under ``DUMP/profile`` (its directory), or None."""
    run = newest_run(find_runs(os.path.join(os.fspath(dump_dir), PROFILE_DIR)))
    return run.path if run is not None else None
