"""Running a program as the recompile does: in its own session (process group),
its output read line by line as it comes, the tail of its stderr kept, and on
cancel or timeout a launcher's remote side stopped first, then the whole local
process tree killed (``os.killpg``: POSIX only). Also the probe of the jax and
jaxlib versions a Python interpreter has. Used by :mod:`hlo_lsp.dump.recompile`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections import deque
from dataclasses import dataclass
from typing import Awaitable, Callable, Mapping

from hlo_lsp.dump.environment import PROBE_CODE, parse_probe_output, probe_env
from hlo_lsp.dump.recipe import PROBE_TIMEOUT_S

TERMINATE_GRACE_S = 3.0
#: How long a launcher's remote stop (scancel, a kill over ssh) may take.
REMOTE_STOP_TIMEOUT_S = 15.0
STDERR_TAIL_LINES = 40
_READ_CHUNK = 64 * 1024

OutputCallback = Callable[[str, str], None]


@dataclass
class RunResult:
    """How a program run ended. ``returncode`` is None when it was killed by us
    (``cancelled`` or ``timed_out``); a negative code is a signal. ``stderr_tail``
    holds the last :data:`STDERR_TAIL_LINES` lines of stderr."""

    returncode: int | None
    cancelled: bool = False
    timed_out: bool = False
    stderr_tail: str = ""
    seconds: float = 0.0
    error: str = ""


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def kill_process_tree(proc: asyncio.subprocess.Process,
                            grace: float = TERMINATE_GRACE_S) -> None:
    """SIGTERM the process group of ``proc`` (started with ``start_new_session=True``,
    so its group id is its pid), wait up to ``grace`` seconds, then SIGKILL the
    group, which also ends children that outlived the leader."""
    _signal_group(proc.pid, signal.SIGTERM)
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(proc.wait(), grace)
    _signal_group(proc.pid, signal.SIGKILL)
    await proc.wait()


async def _pump(stream: asyncio.StreamReader | None, name: str,
                on_output: OutputCallback | None, tail: deque | None) -> None:
    if stream is None:
        return
    pending = b""
    while True:
        chunk = await stream.read(_READ_CHUNK)
        if not chunk:
            break
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for raw in lines:
            line = raw.decode("utf-8", errors="replace").rstrip("\r")
            if tail is not None:
                tail.append(line)
            if on_output is not None:
                on_output(name, line)
    if pending:
        line = pending.decode("utf-8", errors="replace")
        if tail is not None:
            tail.append(line)
        if on_output is not None:
            on_output(name, line)


async def run_program(argv: list[str], cwd: str, env: Mapping[str, str], *,
                      on_output: OutputCallback | None = None,
                      cancel: asyncio.Event | None = None,
                      timeout: float | None = None,
                      on_stop: Callable[[], Awaitable[None]] | None = None) -> RunResult:
    """Run ``argv`` in ``cwd`` with exactly ``env``; stdin is /dev/null, each line of
    stdout/stderr goes to ``on_output(stream_name, line)`` as it arrives.

    Setting ``cancel`` or passing ``timeout`` seconds kills the process tree
    (:func:`kill_process_tree`) and returns with ``cancelled``/``timed_out``. If the
    awaiting task itself is cancelled, the tree is SIGKILLed before
    CancelledError propagates. ``on_stop`` (a launcher's remote cancel: scancel,
    a kill over ssh) is awaited first in each of these cases, for at most
    :data:`REMOTE_STOP_TIMEOUT_S` seconds. A command that cannot be started gives
    ``returncode=None`` and ``error``; it never raises OSError.
    """
    t0 = time.monotonic()
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, cwd=cwd, env=dict(env), stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            start_new_session=True)
    except OSError as exc:
        return RunResult(None, error=f"cannot run {argv[0]!r} in {cwd}: "
                                     f"{exc.strerror or exc}")
    tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
    readers = [asyncio.create_task(_pump(proc.stdout, "stdout", on_output, None)),
               asyncio.create_task(_pump(proc.stderr, "stderr", on_output, tail))]
    waiter = asyncio.create_task(proc.wait())
    stopper = asyncio.create_task(cancel.wait()) if cancel is not None else None
    cancelled = timed_out = False
    try:
        done, _ = await asyncio.wait({waiter} | ({stopper} if stopper else set()),
                                     timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        if waiter not in done:
            cancelled = stopper is not None and stopper in done
            timed_out = not cancelled
            await _stop_remote(on_stop)
            await kill_process_tree(proc)
    except asyncio.CancelledError:
        if proc.returncode is None:
            await _stop_remote(on_stop)
        _signal_group(proc.pid, signal.SIGKILL)
        raise
    finally:
        if stopper is not None:
            stopper.cancel()
        # Children that keep the pipes open must not keep us waiting.
        _, pending = await asyncio.wait(readers, timeout=2.0)
        for task in pending:
            task.cancel()
        if not waiter.done():
            waiter.cancel()
    return RunResult(None if (cancelled or timed_out) else proc.returncode, cancelled,
                     timed_out, "\n".join(tail), time.monotonic() - t0)


async def _stop_remote(on_stop: Callable[[], Awaitable[None]] | None) -> None:
    """Await ``on_stop`` for at most :data:`REMOTE_STOP_TIMEOUT_S`; its errors are
    swallowed (the local process tree is killed next in any case)."""
    if on_stop is None:
        return
    with contextlib.suppress(Exception, asyncio.TimeoutError):
        await asyncio.wait_for(on_stop(), REMOTE_STOP_TIMEOUT_S)


async def probe_versions_async(python: str, cwd: str, env: Mapping[str, str],
                               timeout: float = PROBE_TIMEOUT_S
                               ) -> tuple[str | None, str | None]:
    """``(jax, jaxlib)`` versions as ``python -c`` :data:`~hlo_lsp.dump.environment.PROBE_CODE`
    reports them, ``(None, None)`` on any failure or after ``timeout`` seconds.
    Cancelling the awaiting task kills the probe."""
    try:
        proc = await asyncio.create_subprocess_exec(
            python, "-c", PROBE_CODE, cwd=cwd, env=probe_env(env),
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL, start_new_session=True)
    except OSError:
        return None, None
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except asyncio.TimeoutError:
        await kill_process_tree(proc, 0)
        return None, None
    except asyncio.CancelledError:
        _signal_group(proc.pid, signal.SIGKILL)
        raise
    return parse_probe_output(proc.returncode or 0,
                              out.decode("utf-8", errors="replace"))
