"""The server factory: :func:`create_server` builds a server and registers the
handlers of :data:`HANDLERS`, explicitly and in this order.

No discovery and no swallowed exception: a handler module that fails to import
or register fails :func:`create_server`, so a broken feature is found by the
tests, not silently missing in an editor. Handler modules import the server
class (:mod:`hlo_lsp.lsp.protocol`), never this module, so they can be imported
in any order.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from types import ModuleType
from typing import BinaryIO

from hlo_lsp.analysis.collector import limit_malloc_arenas
from hlo_lsp.lsp.dispatch import unrouted
from hlo_lsp.lsp.handlers import graph, profiles, readable, recompile, text, workspace
from hlo_lsp.lsp.handlers import passes
from hlo_lsp.lsp.protocol import HloLanguageServer

#: The handler modules, each with ``register(server)``: the lifecycle and core
#: requests, readable HLO, the dump directory as a workspace, recompile and links,
#: the pictures, measured profiles.
HANDLERS: tuple[ModuleType, ...] = (text, readable, workspace, recompile, graph, profiles)
#: ... and the pass history.
HANDLERS += (passes,)


def create_server() -> HloLanguageServer:
    """A new hlo-lsp server with every handler registered (start it with
    ``start_io()``). Raises whatever a handler's registration raises, and
    RuntimeError for a method or command without a row in
    :data:`hlo_lsp.lsp.dispatch.ROUTES`."""
    server = HloLanguageServer()
    for module in HANDLERS:
        module.register(server)
    if missing := unrouted(server):
        raise RuntimeError(f"no row in lsp.dispatch.ROUTES for {', '.join(missing)}")
    return server


#: The longest a SIGTERM / SIGINT shutdown may take before the process just ends (s).
STOP_TIMEOUT_S = 5.0


def message_stream() -> BinaryIO:
    """The binary stream the server writes its messages to: a buffered writer
    over file descriptor 1, whatever ``sys.stdout`` is.

    Under ``PYTHONUNBUFFERED=1`` (or ``python -u``), which editors' launchers
    and this project's harness set, ``sys.stdout.buffer`` is the raw ``FileIO``:
    one ``write(2)`` per call, no lock. A write into a full pipe that a signal
    or a debugger's attach interrupts (py-spy, strace, gdb) then returns short,
    pygls ignores the count, and the rest of the message is lost: the client
    reads the next message's header inside the body ("Invalid control
    character"), and every message after it is misframed. ``io.BufferedWriter``
    writes the whole buffer, retrying short writes, under a lock that also
    keeps two threads' messages apart."""
    return open(sys.stdout.fileno(), "wb", closefd=False)  # noqa: SIM115 - the process's


def serve_stdio() -> int:
    """Run a new server over stdin/stdout until ``exit``; returns the exit code
    (0 after ``shutdown``, else 1). SIGTERM and SIGINT shut the server down first
    (the workspace index's worker processes and XLA's parser process end with
    it), then end the process with 128 + the signal number. The C allocator
    keeps one arena for all of the server's threads
    (:func:`hlo_lsp.analysis.collector.limit_malloc_arenas`)."""
    limit_malloc_arenas()
    server = create_server()
    stdout = message_stream()

    def stop(signum: int, _frame) -> None:
        logging.getLogger("hlo_lsp").info("signal %d: shutting down", signum)
        # The handler runs in the main thread between two of its bytecodes: should
        # the shutdown wait for a lock that the interrupted code holds, the process
        # still ends, STOP_TIMEOUT_S later.
        threading.Timer(STOP_TIMEOUT_S, os._exit, (128 + signum,)).start()
        try:
            server.shut_down()
        finally:
            stdout.flush()
            # The stdin reader thread may be blocked in a read: do not wait for it.
            os._exit(128 + signum)

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, stop)
    server.start_io(stdout=stdout)
    server.shut_down()
    return server.exit_code
