"""A relay between the fuzz harness and one server, which times its answers.

``python -m tests.fuzz.relay [--nice N] STAMPS -- COMMAND...`` starts ``COMMAND``
(the server; with ``--nice``, at niceness N: see below) and copies its own
stdin to the server's stdin and the server's stdout to its own stdout, message
by message (LSP framing: ``Content-Length`` headers). The server's stderr is
the relay's.

Why: the harness is one asyncio loop that also checks what the servers answer,
mutates texts of megabytes and decodes answers of megabytes; while it does, it
reads no answer, so an answer it stamps on reading waits for the harness
(:class:`tests.fuzz.harness.LoopWatch` measured up to 0.75 s at a time, 30% of
a run with half the documents large). The relay is a process of its own that
does nothing else: for each message it has read whole from the server it
writes ``"<id> <time>\\n"`` to the file ``STAMPS`` (the JSON-RPC id when it is
a string in the message's first or last 256 bytes, as the harness's request ids
are; ``time.monotonic()``, which on Linux is one clock for every process), then
queues the message for the harness. It reads the server's stdout on its own
thread and writes to its stdout from another, so a harness that is busy never
holds the server back on a full pipe. The first line of ``STAMPS`` is
``"pid <server's process id>"`` (the harness measures the server's memory).

``--nice N`` sets the server's niceness to N (``setpriority``, an absolute
value, not an increment), while the relay itself keeps its own: the fuzz
harness runs its reference server (the fresh one it compares final answers
with) below the servers it times. A niceness below the relay's own needs the
privilege to raise a priority (root, or ``RLIMIT_NICE``); without it the server
keeps the relay's, and the relay says so on stderr.

The relay exits with the server's exit status (killed by a signal, it kills
itself with the same signal) once the server's stdout has ended and everything
read has been written; when its own stdin ends it closes
the server's. Killed, it leaves the server to end its input: the server exits
when its stdin closes (issue 12's lifecycle).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time

#: A string JSON-RPC id (the harness's are UUIDs), searched in a message's first
#: and last 256 bytes: the relay stamps by it, the harness sets answers aside by it.
ANSWER_ID = re.compile(rb'"id"\s*:\s*"([^"\\]{1,100})"')
_LENGTH = re.compile(rb"content-length\s*:\s*(\d+)", re.IGNORECASE)


def _copy_input(source: int, server) -> None:
    """Our stdin (file descriptor ``source``) to the server's, as it comes;
    closes the server's at its end. It reads the descriptor itself, not
    ``sys.stdin.buffer``: this thread is a daemon, still reading when the relay
    exits after the server did, and a daemon thread inside a buffered reader
    holds its lock, which the interpreter's shutdown then waits for and aborts
    on ("could not acquire lock for <_io.BufferedReader name='<stdin>'> at
    interpreter shutdown"): the relay died of SIGABRT instead of exiting with
    the server's status whenever its stdin was still open."""
    try:
        while chunk := os.read(source, 1 << 16):
            view = memoryview(chunk)
            while view:
                view = view[os.write(server.fileno(), view):]
    except (BrokenPipeError, OSError, ValueError):
        pass
    finally:
        try:
            server.close()
        except (BrokenPipeError, OSError):
            pass


def _read_messages(server, stamps, out: queue.Queue) -> None:
    """The server's stdout, message by message: each stamped, then queued."""
    try:
        while True:
            header = bytearray()
            while not header.endswith(b"\r\n\r\n"):
                byte = server.read(1)
                if not byte:
                    if header:
                        out.put(bytes(header))
                    return
                header += byte
            found = _LENGTH.search(header)
            length = int(found.group(1)) if found else 0
            body = server.read(length)
            now = time.monotonic()
            ids = {m.group(1) for part in (body[:256], body[-256:])
                   for m in ANSWER_ID.finditer(part)}
            for msg_id in ids:
                stamps.write(f"{msg_id.decode('ascii', 'replace')} {now:.6f}\n")
            if ids:
                stamps.flush()
            out.put(bytes(header) + body)
            if len(body) < length:
                return  # the server ended mid-message
    finally:
        out.put(None)


def _write_messages(out: queue.Queue, sink) -> None:
    """Queued messages to our stdout, in order, until the reader is done."""
    broken = False
    while (message := out.get()) is not None:
        if broken:
            continue
        try:
            sink.write(message)
            sink.flush()
        except (BrokenPipeError, OSError):
            broken = True  # keep draining: the server must never block on us


def _at_niceness(nice: int) -> None:
    """In the server's process, before it runs: niceness ``nice`` (best effort)."""
    try:
        os.setpriority(os.PRIO_PROCESS, 0, nice)
    except OSError as exc:
        os.write(2, f"relay: the server keeps niceness {os.getpriority(os.PRIO_PROCESS, 0)}, "
                    f"not {nice}: {exc}\n".encode())


def main(argv: list[str]) -> int:
    # the relay's own arguments, then "--" and the server's command line
    own, command = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) \
        if "--" in argv else (argv, [])
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz.relay",
                                     usage="%(prog)s [--nice N] STAMPS -- COMMAND...",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--nice", type=int)
    parser.add_argument("stamps")
    args = parser.parse_args(own)     # (exits 2 on a usage error)
    if not command:
        parser.error("no server command after --")
    nice = args.nice
    # (the relay has no thread yet: a function run between fork and exec is safe)
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            preexec_fn=None if nice is None else lambda: _at_niceness(nice))
    with open(args.stamps, "w", encoding="ascii") as stamps:
        stamps.write(f"pid {proc.pid}\n")
        stamps.flush()
        messages: queue.Queue = queue.Queue()
        threads = [
            threading.Thread(target=_copy_input, args=(sys.stdin.fileno(), proc.stdin),
                             daemon=True),
            threading.Thread(target=_read_messages, args=(proc.stdout, stamps, messages)),
            threading.Thread(target=_write_messages, args=(messages, sys.stdout.buffer)),
        ]
        for t in threads:
            t.start()
        threads[1].join()
        threads[2].join()
    status = proc.wait()
    if status < 0:  # killed by a signal: so is the relay, for the harness to see
        with contextlib.suppress(OSError, ValueError):  # SIGKILL has no handler to reset
            signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
