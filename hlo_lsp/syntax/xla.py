"""XLA's own verdict on a document: jaxlib's HLO parser, in a worker process.

``jax._src.lib.xla_client.hlo.hlo_module_from_text`` is the parser XLA itself
uses. hlo-lsp reports its first error as a diagnostic (source ``xla``) beside
its own, so the editor agrees with XLA on every file: our grammar tolerates
attributes it does not model yet, XLA knows which ones each opcode accepts.

The parser runs in a separate process (``python -m hlo_lsp.syntax.xla``): a
CHECK failure inside XLA aborts that process, never the language server; the
verdict then says that XLA's parser crashed on the text (with XLA's own CHECK
message from the worker's stderr, and the place when XLA printed one). A hung
parse is killed after a timeout. Without jaxlib the oracle is unavailable
and nothing is reported.

The same worker answers XLA's cost analysis of a module (:meth:`XlaOracle.cost`,
:func:`load_cost_analysis`): ``HloCostAnalysis`` as jaxlib's CPU client
configures it (xla/service/hlo_cost_analysis.cc with
``cpu::CpuExecutable::ShapeSizeBytes``), the reference that
:mod:`hlo_lsp.model.cost` is checked against.

``jax._src`` is JAX's private API: it is touched here only (:func:`load_parser`,
:func:`load_cost_analysis`),
for the jaxlib versions of :data:`JAXLIB_VERSIONS` (checked on 0.10.2) and when
``xla_client.hlo.hlo_module_from_text`` exists. Any other jaxlib makes the
oracle unavailable (logged once), never a crash or a false diagnostic.
"""

from __future__ import annotations

import argparse
import functools
import importlib.metadata
import importlib.util
import json
import logging
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from typing import Callable

from hlo_lsp.syntax.split import blank_outside, blanked, split_parts
from hlo_lsp.syntax.versions import in_range

log = logging.getLogger("hlo_lsp.xla")

#: jaxlib versions ``[low, high)`` whose private ``jax._src.lib.xla_client``
#: the oracle uses.
JAXLIB_VERSIONS = ((0, 4, 30), (0, 11))

_WAS_PARSING = re.compile(r"was parsing (\d+):(\d+): error: ([^\n]*)")
#: A glog line's prefix: ``F1123 08:28:02.321920     307 hlo_computation.cc:188] ``.
_GLOG_PREFIX = re.compile(r"^[FEWI]\d{4} [\d:.]+\s+\d+ [^\]]*\] ")
#: How every crash verdict's message begins.
CRASHED = "XLA's parser crashed on this text"
#: The niceness the language server's worker adds to its own (:class:`XlaOracle`).
SERVER_WORKER_NICE = 10
#: At most this many characters of the worker's stderr are read after a crash.
MAX_CRASH_LOG = 64 * 1024


@dataclass(frozen=True, slots=True)
class XlaVerdict:
    """XLA's answer: ``ok`` and counts, or the error at 1-based ``line``/``column``
    (0 when XLA did not say where); ``crashed``: the parser aborted on the text
    instead of answering (``message`` starts with :data:`CRASHED`)."""

    ok: bool
    message: str = ""
    line: int = 0
    column: int = 0
    computations: int = 0
    instructions: int = 0
    crashed: bool = False


@functools.cache
def jaxlib_version() -> str | None:
    """The installed jaxlib's version (package metadata; nothing is imported),
    None when jaxlib is not installed. Read once per process (reading it walks
    ``sys.path``, and leaves a reference cycle each time): a jaxlib installed
    or upgraded later counts from the server's next start."""
    if importlib.util.find_spec("jaxlib") is None:
        return None
    try:
        return importlib.metadata.version("jaxlib")
    except importlib.metadata.PackageNotFoundError:
        return ""


_said: set[str] = set()


def _unavailable(reason: str) -> None:
    if reason not in _said:
        _said.add(reason)
        log.info("XLA's parser is not used: %s", reason)


def available() -> bool:
    """True when jaxlib (XLA's parser) is installed in a version of
    :data:`JAXLIB_VERSIONS`; logs why not otherwise."""
    version = jaxlib_version()
    if version is None:
        return False
    if not in_range(version, JAXLIB_VERSIONS):
        _unavailable(f"jaxlib {version or '(unknown version)'} is not one of the versions "
                     f"{JAXLIB_VERSIONS} whose private jax._src API hlo-lsp uses")
        return False
    return True


def load_parser() -> tuple[Callable | None, str]:
    """``(hlo_module_from_text, "")``: XLA's HLO text parser from
    ``jax._src.lib.xla_client.hlo`` (the only use of ``jax._src``), or
    ``(None, why)`` when jaxlib is missing, outside :data:`JAXLIB_VERSIONS`,
    or lacks it. Imports jax: call it in the worker process. Never raises."""
    if not available():
        version = jaxlib_version()
        return None, ("jaxlib is not installed" if version is None else
                      f"jaxlib {version} is not a version hlo-lsp checked")
    try:
        from jax._src.lib import xla_client as xc
    except Exception as exc:  # noqa: BLE001 - any import failure: no oracle
        return None, f"cannot import jax._src.lib.xla_client: {exc!r}"
    parse = getattr(getattr(xc, "hlo", None), "hlo_module_from_text", None)
    if not callable(parse):
        return None, "jax._src.lib.xla_client.hlo.hlo_module_from_text is missing"
    return parse, ""


@dataclass(frozen=True, slots=True)
class XlaCost:
    """XLA's ``HloCostAnalysis`` totals of a module's ENTRY computation (FLOPs,
    transcendental operations, bytes accessed), or ``ok`` False and XLA's
    ``message`` when it rejected the text. Each custom-call counts -1 FLOPs and
    -1 bytes (XLA's "unknown")."""

    ok: bool
    flops: float = 0.0
    transcendentals: float = 0.0
    bytes_accessed: float = 0.0
    message: str = ""


def load_cost_analysis() -> tuple[Callable[[str], dict[str, float]] | None, str]:
    """``(analyse, "")``: ``analyse(text)`` parses HLO text with XLA's parser and
    returns the module properties of XLA's ``HloCostAnalysis`` over the ENTRY
    computation as jaxlib computes them (``xla_client._xla.hlo_module_cost_analysis``
    with a CPU client: keys ``flops``, ``transcendentals``, ``bytes accessed``,
    absent when zero; raises XLA's error for text it rejects); or ``(None, why)``
    as :func:`load_parser`. Imports jax: call it in the worker process or a test."""
    parse, missing = load_parser()
    if parse is None:
        return None, missing
    try:
        from jax._src.lib import xla_client as xc
        analysis = xc._xla.hlo_module_cost_analysis
        client = xc.make_cpu_client()
    except Exception as exc:  # noqa: BLE001 - any failure: no cost oracle
        return None, f"no CPU client or hlo_module_cost_analysis in jaxlib: {exc!r}"

    def analyse(text: str) -> dict[str, float]:
        return {str(k): float(v) for k, v in analysis(client, parse(text)).items()}
    return analyse, ""


def verdict_from_error(error: str) -> XlaVerdict:
    """Turn XLA's error text into a verdict at the innermost ``was parsing L:C``."""
    found = _WAS_PARSING.findall(error)
    if not found:
        first = error.strip().splitlines()[0] if error.strip() else "XLA rejected the text"
        return XlaVerdict(False, first, 1, 1)
    line, col, msg = found[-1]
    return XlaVerdict(False, msg.strip(), int(line), int(col))


def verdict_from_crash(returncode: int | None, log: str) -> XlaVerdict:
    """The verdict when the worker died parsing a text: :data:`CRASHED`, how it
    ended (signal or exit code), XLA's CHECK message from ``log`` (the worker's
    stderr) and the place when the log names one (``was parsing L:C``)."""
    how = ""
    if returncode is not None and returncode < 0:
        try:
            how = f" ({signal.Signals(-returncode).name})"
        except ValueError:
            how = f" (signal {-returncode})"
    elif returncode:
        how = f" (exit code {returncode})"
    said: list[str] = []
    for line in log.splitlines():
        if line.startswith("*** ") or line.lstrip().startswith("@ "):
            break  # the stack trace of XLA's CHECK failure
        line = _GLOG_PREFIX.sub("", line).strip()
        if line and ("Check failed" in line or "ERROR" in line or said):
            said.append(line)
    detail = "; ".join(said)[:300]
    message = CRASHED + how + (f": {detail}" if detail else "")
    where = _WAS_PARSING.findall(log)
    line, column = (int(where[-1][0]), int(where[-1][1])) if where else (0, 0)
    return XlaVerdict(False, message, line, column, crashed=True)


class XlaOracle:
    """A persistent worker process running XLA's parser; thread-safe, blocking.

    ``check(text)`` returns an XlaVerdict (a crash verdict when XLA's parser
    aborted on the text), or None when the worker could not answer (jaxlib
    missing, timeout after ``timeout`` seconds).

    ``nice``: the worker adds this to its scheduling niceness when it starts
    (``os.nice``; 0 leaves it as it is). The language server's worker runs at
    :data:`SERVER_WORKER_NICE`: XLA's verdict is a second opinion the editor
    can wait for, and its parse of a large dump takes a processor for about
    half a second (0.43 s for the 3 MB Llama dump of ../shared/corpus), which
    must not slow the answers the user is waiting for.
    """

    def __init__(self, python: str = sys.executable, timeout: float = 60.0,
                 nice: int = 0) -> None:
        self.python = python
        self.timeout = timeout
        self.nice = nice
        self._proc: subprocess.Popen | None = None
        self._stderr = None   # the worker's stderr: a temporary file, read after a crash
        self._lock = threading.Lock()

    def _start(self) -> subprocess.Popen:
        env = dict(os.environ, JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="3")
        if self._stderr is not None:
            self._stderr.close()
        self._stderr = tempfile.TemporaryFile()
        return subprocess.Popen([self.python, "-m", "hlo_lsp.syntax.xla",
                                 "--nice", str(self.nice)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=self._stderr, env=env)

    def _crash_log(self) -> str:
        """The end of the worker's stderr (after it died)."""
        f = self._stderr
        if f is None:
            return ""
        try:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - MAX_CRASH_LOG))
            return f.read().decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""

    def check(self, text: str) -> XlaVerdict | None:
        """XLA's verdict on the HLO ``text``; None when the worker could not
        answer (no usable jaxlib, or no answer within ``timeout`` seconds). When
        a worker started for this text dies parsing it, the verdict says XLA's
        parser crashed (:func:`verdict_from_crash`); a worker that had parsed
        other texts before is given one more try in a fresh process first.
        Blocking: run it in a thread.

        A split file (``// -----`` lines, :func:`hlo_lsp.syntax.split.split_parts`)
        is judged part by part, as XLA's tools read it: the first part XLA
        rejects gives the verdict, its line counted in the whole file (each
        part is sent with the rest of the text blanked, line breaks kept)."""
        parts = split_parts(text)
        if not parts:
            return self._check_one(text)
        total = XlaVerdict(True, computations=0, instructions=0)
        blank = blanked(text)
        for start, end in parts:
            verdict = self._check_one(blank_outside(text, start, end, blank))
            if verdict is None or not verdict.ok:
                return verdict
            total = XlaVerdict(True, computations=total.computations + verdict.computations,
                               instructions=total.instructions + verdict.instructions)
        return total

    def _check_one(self, text: str) -> XlaVerdict | None:
        reply = self._ask("", text)
        if reply is None:
            return None
        if "crashed" in reply:
            return verdict_from_crash(reply["crashed"], reply["log"])
        if reply.get("ok"):
            return XlaVerdict(True, computations=reply["computations"],
                              instructions=reply["instructions"])
        return verdict_from_error(reply["error"])

    def cost(self, text: str) -> XlaCost | None:
        """XLA's cost analysis of the module ``text`` (:func:`load_cost_analysis`):
        FLOPs, transcendentals and bytes accessed of its ENTRY computation; None
        when the worker could not answer (as :meth:`check`). Blocking."""
        reply = self._ask("cost ", text)
        if reply is None:
            return None
        if "crashed" in reply:
            return XlaCost(False, message=verdict_from_crash(reply["crashed"],
                                                             reply["log"]).message)
        if not reply.get("ok"):
            return XlaCost(False, message=str(reply.get("error", "")))
        props = reply["cost"]
        return XlaCost(True, props.get("flops", 0.0), props.get("transcendentals", 0.0),
                       props.get("bytes accessed", 0.0))

    def _ask(self, kind: str, text: str) -> dict | None:
        """Send one request (``kind`` "" to parse, "cost " for the cost analysis)
        and return the worker's reply with ``ok`` or ``error``, or
        ``{"crashed": returncode, "log": its stderr}`` when a worker started for
        this text died on it; None when it could not answer."""
        data = text.encode("utf-8", "surrogatepass")
        with self._lock:
            for _attempt in range(2):
                fresh = self._proc is None or self._proc.poll() is not None
                if fresh:
                    self._proc = self._start()
                proc = self._proc
                timed_out = threading.Event()

                def kill(proc=proc, timed_out=timed_out):
                    timed_out.set()
                    proc.kill()

                timer = threading.Timer(self.timeout, kill)
                timer.start()
                try:
                    proc.stdin.write(f"{kind}{len(data)}\n".encode() + data)
                    proc.stdin.flush()
                    line = proc.stdout.readline()
                except OSError:
                    line = b""
                finally:
                    timer.cancel()
                if line:
                    reply = json.loads(line)
                    if "ok" in reply or "error" in reply:
                        return reply
                    _unavailable(str(reply.get("unavailable", "no answer")))
                    return None  # no usable jaxlib in the worker
                returncode = proc.wait()
                self._proc = None
                if timed_out.is_set():
                    log.warning("XLA's parser gave no answer within %s s; killed", self.timeout)
                    return None
                if fresh:
                    return {"crashed": returncode, "log": self._crash_log()}
                log.warning("XLA parser worker died (exit %s); restarting", returncode)
            return None

    def close(self) -> None:
        """Kill the worker process (a later :meth:`check` starts another)."""
        with self._lock:
            if self._proc is not None and self._proc.poll() is None:
                self._proc.kill()
                self._proc.wait()
            self._proc = None
            if self._stderr is not None:
                self._stderr.close()
                self._stderr = None


def _worker(argv: list[str] | None = None) -> int:
    """Worker loop: read ``[cost ]<n bytes>\\n<text>`` requests, answer one JSON
    line each (the parser's verdict, or with ``cost`` XLA's cost analysis).
    ``argv``: ``--nice N`` adds N to the process' niceness first."""
    args = _worker_arguments().parse_args(argv)
    if args.nice:
        try:
            os.nice(args.nice)
        except OSError as exc:  # lowering one's own priority is always allowed; if not, as is
            log.warning("could not lower the XLA worker's priority: %s", exc)
    parse, missing = load_parser()
    analyse = None
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        header = stdin.readline()
        if not header:
            return 0
        kind, _, size = header.decode().strip().rpartition(" ")
        text = stdin.read(int(size)).decode("utf-8", "replace")
        if kind == "cost" and parse is not None and analyse is None:
            analyse, missing = load_cost_analysis()
        if parse is None or (kind == "cost" and analyse is None):
            reply = {"unavailable": missing}
        elif kind == "cost":
            try:
                reply = {"ok": True, "cost": analyse(text)}
            except Exception as exc:  # noqa: BLE001 - XLA raises XlaRuntimeError
                reply = {"ok": False, "error": str(exc)}
        else:
            try:
                module = parse(text)
                comps = module.computations()
                reply = {"ok": True, "computations": len(comps),
                         "instructions": sum(len(c.instructions()) for c in comps)}
            except Exception as exc:  # noqa: BLE001 - XLA raises XlaRuntimeError
                reply = {"ok": False, "error": str(exc)}
        stdout.write(json.dumps(reply).encode() + b"\n")
        stdout.flush()


def _worker_arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m hlo_lsp.syntax.xla",
                                     description="XLA's HLO parser for hlo-lsp (a worker "
                                                 "process: requests on stdin, JSON on stdout)")
    parser.add_argument("--nice", type=int, default=0,
                        help="add this to the process' niceness before reading requests")
    return parser


if __name__ == "__main__":
    raise SystemExit(_worker())
