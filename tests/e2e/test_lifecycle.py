"""The server process as the LSP specification and an operating system expect
it to behave, driven over raw stdio: exit codes, an error reply for unreadable
params, and no orphans left behind after SIGTERM."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest

from tests.helpers import CPU_DUMP, ROOT

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and /proc")


def _frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _initialize(root: pathlib.Path | None = None) -> bytes:
    params: dict = {"capabilities": {}, "initializationOptions": {"xlaDiagnostics": False}}
    if root is not None:
        params["rootUri"] = root.as_uri()
        params["workspaceFolders"] = [{"uri": root.as_uri(), "name": root.name}]
    return (_frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
            + _frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))


def _server() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "hlo_lsp"], cwd=ROOT, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _read_reply(stream, msg_id: int) -> dict:
    """Read messages from the server's stdout until the response to ``msg_id``."""
    while True:
        message = _read_message(stream)
        if message.get("id") == msg_id and "method" not in message:
            return message


def _read_replies(stream, ids: set[int], timeout: float = 60) -> dict[int, dict]:
    """The responses to ``ids``, in whatever order they come; each message must
    be whole JSON. Fails after ``timeout`` seconds (the caller then ends the
    server, which ends the reading thread)."""
    replies: dict[int, dict] = {}
    failed: list[BaseException] = []

    def read() -> None:
        try:
            while not ids <= set(replies):
                message = _read_message(stream)
                if message.get("id") in ids and "method" not in message:
                    replies[message["id"]] = message
        except BaseException as exc:  # noqa: BLE001 - reported below
            failed.append(exc)
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout)
    if failed:
        raise failed[0]
    assert ids <= set(replies), f"no answer to {ids - set(replies)} in {timeout} s"
    return replies


def _read_message(stream) -> dict:
    length = 0
    while (line := stream.readline().strip()):
        name, _, value = line.partition(b":")
        if name.lower() == b"content-length":
            length = int(value)
    assert length, "the server closed its output"
    return json.loads(stream.read(length))


@pytest.mark.parametrize("shutdown, code", [(True, 0), (False, 1)])
def test_exit_code_follows_shutdown(shutdown, code):
    proc = _server()
    data = _initialize()
    if shutdown:
        data += _frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
    data += _frame({"jsonrpc": "2.0", "method": "exit"})
    proc.communicate(data, timeout=60)
    assert proc.returncode == code


def test_unreadable_params_get_an_invalid_params_reply_and_the_server_goes_on():
    proc = _server()
    uri = (ROOT / "examples" / "gpu" /
           "jit_matmul_fn.fp8_cublaslt.sm90_gpu_after_optimizations.txt").as_uri()
    proc.stdin.write(_initialize() + b"".join(_frame(m) for m in [
        {"jsonrpc": "2.0", "id": 3, "method": "textDocument/hover",
         "params": {"textDocument": {"uri": uri}, "position": {"line": -1}}},
        {"jsonrpc": "2.0", "id": 4, "method": "textDocument/definition",
         "params": {"textDocument": {"uri": uri}}},
        {"jsonrpc": "2.0", "id": 5, "method": "textDocument/hover",
         "params": {"textDocument": {"uri": uri}, "position": {"line": 3, "character": 4}}}]))
    proc.stdin.flush()
    assert _read_reply(proc.stdout, 3)["error"]["code"] == -32602
    assert _read_reply(proc.stdout, 4)["error"]["code"] == -32602
    hover = _read_reply(proc.stdout, 5)
    assert "error" not in hover and "**" in hover["result"]["contents"]["value"]
    _, err = proc.communicate(_frame({"jsonrpc": "2.0", "id": 6, "method": "shutdown"})
                              + _frame({"jsonrpc": "2.0", "method": "exit"}), timeout=60)
    assert b"Traceback" not in err
    assert proc.returncode == 0


def _children(pid: int) -> set[int]:
    """Every descendant process of ``pid`` (from /proc)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = pathlib.Path(f"/proc/{entry}/stat").read_text()
            except OSError:  # gone meanwhile (ENOENT, ESRCH)
                continue
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    out, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, parent in parents.items() if parent in frontier} - out
        out |= frontier
    return out


def _alive(pid: int) -> bool:
    try:
        state = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_sigterm_ends_the_index_workers_too(tmp_path):
    root = tmp_path / "ws"
    for i in range(40):   # enough files that indexing is still running
        shutil.copytree(CPU_DUMP, root / f"run{i:02d}")
    proc = _server()
    proc.stdin.write(_initialize(root))
    proc.stdin.flush()
    deadline = time.monotonic() + 60
    children: set[int] = set()
    while time.monotonic() < deadline and len(children) < 2:
        children = _children(proc.pid)
        time.sleep(0.1)
    assert children, "the workspace index started no worker process"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=20) == 128 + signal.SIGTERM
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(p) for p in children):
        time.sleep(0.1)
    assert not [p for p in children if _alive(p)], "orphaned processes after SIGTERM"
    proc.stdin.close()


def test_answers_stay_whole_when_a_signal_interrupts_a_write_into_a_full_pipe():
    """Under ``PYTHONUNBUFFERED=1`` (which editors' launchers set) the raw
    ``sys.stdout.buffer`` makes one ``write(2)`` per message; a signal that
    arrives while the client is not reading returns it short, and the rest of
    the message used to be lost, misframing every message after it (seen with a
    profiler attached to a fuzzed server). The server's writer retries short
    writes: every answer here reads as whole JSON."""
    body = "\n".join(f"  %a.{i} = f32[8]{{0}} add(f32[8]{{0}} %p, f32[8]{{0}} %p)"
                     for i in range(6000))
    text = (f"HloModule big\n\nENTRY %main (p: f32[8]) -> f32[8] {{\n"
            f"  %p = f32[8]{{0}} parameter(0)\n{body}\n  ROOT %r = f32[8]{{0}} copy(%a.0)\n}}\n")
    uri = "file:///tmp/hlo-lsp-test/big.hlo"
    doc = {"uri": uri}
    # a handler for SIGUSR1 makes the signal interrupt a blocked write
    launcher = ("import signal; signal.signal(signal.SIGUSR1, lambda *_: None); "
                "from hlo_lsp.cli.main import main; raise SystemExit(main([]))")
    proc = subprocess.Popen([sys.executable, "-c", launcher], cwd=ROOT, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))
    try:
        proc.stdin.write(_initialize() + b"".join(_frame(m) for m in [
            {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
                "uri": uri, "languageId": "hlo", "version": 1, "text": text}}},
            {"jsonrpc": "2.0", "id": 2, "method": "textDocument/documentSymbol",
             "params": {"textDocument": doc}},
            {"jsonrpc": "2.0", "id": 3, "method": "textDocument/foldingRange",
             "params": {"textDocument": doc}},
            {"jsonrpc": "2.0", "id": 4, "method": "textDocument/semanticTokens/full",
             "params": {"textDocument": doc}}]))
        proc.stdin.flush()
        assert "result" in _read_reply(proc.stdout, 1)
        time.sleep(4)  # the answers (megabytes) fill the pipe; the server blocks in a write
        for _ in range(30):
            os.kill(proc.pid, signal.SIGUSR1)
            time.sleep(0.02)
        replies = _read_replies(proc.stdout, {2, 3, 4})
        entry = replies[2]["result"][0]["children"][0]
        assert entry["name"] == "main" and len(entry["children"]) > 6000
        assert len(replies[3]["result"]) >= 1
        assert len(replies[4]["result"]["data"]) > 5 * 6000
    finally:
        proc.kill()
        proc.wait()
