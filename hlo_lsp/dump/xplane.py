"""A profile's ``<host>.xplane.pb`` (the XSpace proto ``jax.profiler`` writes),
read through JAX's public ``jax.profiler.ProfileData`` in a worker process.

The xplane is the better of a run's two files: it keeps ``program_id``, XLA's
unique id of the compiled module (the ``NNNN`` of the dump's ``module_NNNN``
file names), which the trace JSON drops (see :mod:`hlo_lsp.dump.profile_layout`).

It is untrusted input parsed by C++ (protobuf, then jaxlib's walk of it): the
language server never parses it itself. :func:`read_xplane` checks the file
(:mod:`hlo_lsp.dump.untrusted`: a regular file, at most ``limit`` bytes) and
runs ``python -m hlo_lsp.dump.xplane FILE`` with a timeout, an address-space
limit, no core file and an output size limit; the worker reads the file again
the same way, parses it, picks the executions of instructions with
:func:`~hlo_lsp.dump.profile_layout.instruction_events` and prints them as one
JSON object. Whatever happens in the worker (a crash in C++, memory exhausted, a
hang, jax missing) the caller gets a :class:`~hlo_lsp.dump.profile_data.ProfileError`
with one line, never a traceback; without jax it says the xplane needs jax, and
:func:`hlo_lsp.dump.profiles.read_run` reads the run's trace JSON instead.

Only the worker imports jax (``tests/unit/test_layers.py``); the caller blocks
on the worker: run it off the event loop.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
from collections import Counter

from hlo_lsp.dump.profile_layout import RawEvent, instruction_events, is_derived_line
from hlo_lsp.dump.profile_data import MAX_PROFILE_BYTES, ProfileError, ProfileTrace
from hlo_lsp.dump.untrusted import UntrustedFileError, open_regular, read_bytes
from hlo_lsp.model.profile import OpEvent

#: Seconds the worker may take (importing jax takes about one on this machine,
#: parsing a 3 MB xplane under one more); a hang guard, not a measure.
XPLANE_TIMEOUT_S = 120.0

#: The worker's address-space limit (``RLIMIT_AS``): jax's import and the
#: parse of a 3 MB xplane fit in 1 GiB; a 256 MiB one needs several times its
#: size.
XPLANE_MEMORY_BYTES = 6 << 30

#: The stats the worker keeps of an event (those
#: :func:`~hlo_lsp.dump.profile_layout.instruction_events` reads).
_STATS = ("hlo_op", "hlo_module", "program_id", "run_id", "scope_range_id",
          "cuda_graph_exec_id", "cuda_graph_id", "correlation_id")

#: The most characters of the worker's stderr quoted in an error.
_STDERR_CHARS = 160

#: The worker's exit status when its answer is past its output limit.
_TOO_LARGE = 3


def _output_limit(limit: int) -> int:
    """The most bytes of JSON the worker may print for an xplane of at most
    ``limit`` bytes (each event it keeps is one line of about 150 bytes)."""
    return 4 * limit + (1 << 20)


def _package_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _size_words(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit} bytes"


def read_xplane(path: str, limit: int = MAX_PROFILE_BYTES, *,
                timeout: float = XPLANE_TIMEOUT_S, memory: int = XPLANE_MEMORY_BYTES,
                python: str = sys.executable) -> ProfileTrace:
    """The XLA instructions measured in the xplane ``path`` (events in µs from
    the profile's start, as the trace JSON gives them, with ``program_id``).

    ``limit``: the largest file read (bytes); ``timeout``: seconds before the
    worker is killed; ``memory``: its address-space limit in bytes (0: none);
    ``python``: the interpreter that runs it (the one running hlo-lsp).

    Raises :class:`~hlo_lsp.dump.profile_data.ProfileError` (one line naming the
    file): not a regular file, larger than ``limit``, jax not installed, not an
    XSpace proto, no planes, the worker crashed, ran out of memory or time.
    Blocking: run it in a thread.
    """
    try:
        with open_regular(path) as f:
            size = os.fstat(f.fileno()).st_size
    except UntrustedFileError as exc:
        raise ProfileError(path, exc.reason) from None
    if size > limit:
        raise ProfileError(path, f"larger than {_size_words(limit)}")
    root = _package_root()
    env = dict(os.environ, JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="3",
               PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH"))
                                          if p))
    cap = _output_limit(limit)
    argv = [python, "-m", "hlo_lsp.dump.xplane", "--limit", str(limit), "--memory",
            str(memory), "--output-limit", str(cap), os.path.abspath(path)]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                  env=env, cwd=root, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            raise ProfileError(path, f"reading the xplane took longer than {timeout:g} s; "
                                     "stopped") from None
        except OSError as exc:
            raise ProfileError(path, f"could not start the xplane reader ({exc.strerror or exc})"
                               ) from None
        if proc.returncode == _TOO_LARGE or os.fstat(out.fileno()).st_size >= cap:
            raise ProfileError(path, "the xplane reader's answer is too large")
        if proc.returncode != 0:
            raise ProfileError(path, _failure(proc.returncode, _tail(err)))
        out.seek(0)
        data = out.read(cap + 1)
    return _trace(path, data)


def _tail(f) -> str:
    """The last line of the worker's stderr, printable characters only."""
    try:
        f.seek(max(0, f.seek(0, os.SEEK_END) - 4096))
        text = f.read().decode("utf-8", "replace")
    except (OSError, ValueError):
        return ""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    last = lines[-1] if lines else ""
    return "".join(c if c.isprintable() else "?" for c in last)[:_STDERR_CHARS]


def _failure(returncode: int, stderr: str) -> str:
    if returncode < 0:
        try:
            how = f"signal {signal.Signals(-returncode).name}"
        except ValueError:
            how = f"signal {-returncode}"
    else:
        how = f"exit {returncode}"
    said = f": {stderr}" if stderr else ""
    return f"the xplane reader failed ({how}; out of memory, or not an xplane){said}"


def _trace(path: str, data: bytes) -> ProfileTrace:
    """The worker's answer (one JSON object) as a ProfileTrace; every field
    checked, as it comes from a file that is untrusted input."""
    try:
        reply = json.loads(data)
    except ValueError:
        reply = None
    if not isinstance(reply, dict):
        raise ProfileError(path, "the xplane reader gave no answer")
    for key in ("error", "unavailable"):
        if isinstance(reply.get(key), str):
            raise ProfileError(path, reply[key])
    rows, skipped = reply.get("events"), reply.get("skipped")
    if not isinstance(rows, list) or not isinstance(skipped, int):
        raise ProfileError(path, "the xplane reader gave an answer that cannot be read")
    events = []
    for row in rows:
        event = _event(row)
        if event is None:
            raise ProfileError(path, "the xplane reader gave an answer that cannot be read")
        events.append(event)
    devices = tuple(dict.fromkeys(e.device for e in events if e.device))
    return ProfileTrace(path, tuple(events), devices, skipped)


_ROW_TYPES = (str, str, float, float, str, (str, type(None)), (int, type(None)), str, str,
              list)


def _event(row: object) -> OpEvent | None:
    if not isinstance(row, list) or len(row) != len(_ROW_TYPES):
        return None
    row = [float(v) if t is float and isinstance(v, int) and not isinstance(v, bool) else v
           for v, t in zip(row, _ROW_TYPES)]
    if not all(isinstance(v, t) and not isinstance(v, bool) for v, t in zip(row, _ROW_TYPES)):
        return None
    covers = row[9]
    if not all(isinstance(c, str) for c in covers):
        return None
    # The same few names (module, track, run, device) repeat in every event:
    # one string each (about 850 bytes per event without, bench_profile.py).
    intern = sys.intern
    return OpEvent(module=intern(row[0]), op=intern(row[1]), start_us=row[2],
                   duration_us=row[3], track=intern(row[4]),
                   run=None if row[5] is None else intern(row[5]), program_id=row[6],
                   device=intern(row[7]), kernel=intern(row[8]),
                   covers=tuple(map(intern, covers)) if covers else ())


# --- the worker ---------------------------------------------------------------------

def _limit_resources(memory: int, output: int) -> None:
    """No core file; at most ``memory`` bytes of address space (0: as is) and
    ``output`` bytes written to a file (the answer). Where the system has no
    such limits (no ``resource`` module), the timeout alone guards."""
    try:
        import resource
    except ImportError:
        return
    limits = [(resource.RLIMIT_CORE, 0), (resource.RLIMIT_FSIZE, output)]
    if memory > 0:
        limits.append((resource.RLIMIT_AS, memory))
    for kind, value in limits:
        try:
            _soft, hard = resource.getrlimit(kind)
            if hard != resource.RLIM_INFINITY:
                value = min(value, hard)
            resource.setrlimit(kind, (value, hard))
        except (ValueError, OSError):
            pass


def _raw_events(space) -> tuple[list[str], list[RawEvent]]:
    """The planes of a ``jax.profiler.ProfileData`` and the events carrying
    ``hlo_op`` on its lines that are not derived (times in µs)."""
    planes: list[str] = []
    raw: list[RawEvent] = []
    for plane in space.planes:
        device = str(plane.name)
        planes.append(device)
        seen: Counter[str] = Counter()
        for line in plane.lines:
            name = str(line.name)
            seen[name] += 1
            track = f"{device}/{name}" + (f"#{seen[name]}" if seen[name] > 1 else "")
            if is_derived_line(name):
                continue
            for event in line.events:
                stats = {}
                for key, value in event.stats:
                    if key in _STATS and not isinstance(value, bytes):
                        stats[key] = value
                if "hlo_op" not in stats:
                    continue
                raw.append(RawEvent(device, name, track, str(event.name),
                                    event.start_ns / 1000.0, event.duration_ns / 1000.0,
                                    stats))
    return planes, raw


def _answer(path: str, limit: int) -> dict:
    """The worker's answer for the xplane ``path``."""
    try:
        data = read_bytes(path, limit)
    except UntrustedFileError as exc:
        return {"error": exc.reason}
    try:
        from jax.profiler import ProfileData
    except MemoryError:
        return {"error": "out of memory importing jax to read the xplane"}
    except Exception as exc:  # noqa: BLE001 - jax missing, or broken
        return {"unavailable": "reading an xplane needs jax, which "
                               + ("is not installed" if isinstance(exc, ModuleNotFoundError)
                                  else f"cannot be imported ({type(exc).__name__})")}
    try:
        space = ProfileData.from_serialized_xspace(data)
    except MemoryError:
        return {"error": "out of memory reading the xplane"}
    except Exception:  # noqa: BLE001 - jaxlib raises RuntimeError("Failed to parse XSpace")
        return {"error": "not a profile: not an XSpace proto that can be read"}
    del data
    planes, raw = _raw_events(space)
    if not planes:
        return {"error": "not a profile: no planes"}
    events, skipped = instruction_events(raw)
    return {"planes": planes, "skipped": skipped,
            "events": [[e.module, e.op, e.start_us, e.duration_us, e.track, e.run,
                        e.program_id, e.device, e.kernel, list(e.covers)] for e in events]}


def _worker(argv: list[str] | None = None) -> int:
    """``python -m hlo_lsp.dump.xplane [--limit B] [--memory B] [--output-limit B]
    FILE``: one JSON object on stdout (``events``, ``skipped``, ``planes``; or
    ``error``/``unavailable`` and a one-line reason)."""
    parser = argparse.ArgumentParser(
        prog="python -m hlo_lsp.dump.xplane",
        description="Read a jax.profiler xplane.pb for hlo-lsp (a worker process: "
                    "the XLA instructions it measured, as JSON on stdout)")
    parser.add_argument("file")
    parser.add_argument("--limit", type=int, default=MAX_PROFILE_BYTES,
                        help="the largest file read, bytes")
    parser.add_argument("--memory", type=int, default=XPLANE_MEMORY_BYTES,
                        help="address-space limit, bytes (0: none)")
    parser.add_argument("--output-limit", type=int, default=_output_limit(MAX_PROFILE_BYTES),
                        help="the most bytes of JSON written")
    args = parser.parse_args(argv)
    _limit_resources(args.memory, args.output_limit)
    answer = json.dumps(_answer(args.file, args.limit), separators=(",", ":")).encode()
    if len(answer) > args.output_limit:
        print(f"the answer ({len(answer)} bytes) is larger than the output limit "
              f"({args.output_limit} bytes)", file=sys.stderr)
        return _TOO_LARGE
    try:
        sys.stdout.buffer.write(answer)
        sys.stdout.flush()
    except OSError as exc:   # RLIMIT_FSIZE (Python ignores SIGXFSZ), a full disk
        print(f"the answer could not be written: {exc}", file=sys.stderr)
        return _TOO_LARGE
    return 0


if __name__ == "__main__":
    raise SystemExit(_worker())
