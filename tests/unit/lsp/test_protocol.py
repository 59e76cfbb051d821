"""The protocol in process: what the server keeps after the messages it handled."""

from __future__ import annotations

import asyncio
import gc
import json
import weakref

from hlo_lsp.lsp.server import create_server
from tests.helpers import ROOT, answered_kinds

DUMP = ROOT / "examples" / "cpu_dump" / "module_0028.jit_train_step.cpu_after_optimizations.txt"


class _View:
    """A readable view that can be watched with a weak reference."""

    def __init__(self, view) -> None:
        self.text, self.line_offsets = view.text, view.line_offsets


class _Client:
    """A client in process: hands messages to ``server``'s protocol and, as its
    writer, collects what the server writes (bodies of the framed messages)."""

    def __init__(self, server) -> None:
        self.protocol = server.protocol
        self.messages: list[dict] = []
        self.protocol.set_writer(self, include_headers=True)

    def write(self, data: bytes) -> None:
        self.messages.append(json.loads(data.decode().split("\r\n\r\n", 1)[1]))

    def close(self) -> None:
        pass

    def send(self, message: dict) -> None:
        """Hand ``message`` (without ``jsonrpc``) to the server."""
        self.protocol.handle_message(
            self.protocol.structure_message({"jsonrpc": "2.0", **message}))

    def break_first_line(self, uri: str, version: int) -> None:
        """``didChange`` to ``version``: a line break put before the text."""
        self.send({"method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"range": {"start": {"line": 0, "character": 0},
                                          "end": {"line": 0, "character": 0}},
                                "text": "\n"}]}})

    def initialize(self) -> None:
        """``initialize`` (id 1) and ``initialized``."""
        self.send({"id": 1, "method": "initialize", "params": {"capabilities": {}}})
        self.send({"method": "initialized", "params": {}})


def test_finished_notifications_and_commands_leave_nothing_behind(monkeypatch):
    """pygls keeps the future of every notification, and of every command a
    ``workspace/executeCommand`` runs, with its result, for the life of the
    server: a server open for a day kept every readable view it had sent. They
    are dropped once done (``pygls_adapter.forget_when_done``), and the results with
    them."""
    server = create_server()
    client = _Client(server)
    uri = DUMP.as_uri()
    text = DUMP.read_text()
    views: list[weakref.ref] = []

    from hlo_lsp.analysis import readable  # where the readable view is rendered
    render = readable.render

    def kept_render(*args):
        view = _View(render(*args))
        views.append(weakref.ref(view))
        return view
    monkeypatch.setattr(readable, "render", kept_render)

    async def drive() -> None:
        try:
            client.initialize()
            client.send({"method": "textDocument/didOpen", "params": {"textDocument": {
                "uri": uri, "languageId": "hlo", "version": 1, "text": text}}})
            for i in range(3):
                client.break_first_line(uri, 2 + i)
                client.send({"id": 10 + i, "method": "workspace/executeCommand", "params": {
                    "command": "hlo.readableView", "arguments": [uri, {}]}})
                client.send({"id": 20 + i, "method": "workspace/executeCommand", "params": {
                    "command": "hlo.showSummary", "arguments": [uri]}})
            for _ in range(600):
                answered = {m.get("id") for m in client.messages if "result" in m}
                if {10, 11, 12, 20, 21, 22} <= answered:
                    break
                await asyncio.sleep(0.05)
            client.send({"method": "textDocument/didClose", "params": {"textDocument": {"uri": uri}}})
            await asyncio.sleep(0.2)
        finally:
            server.shut_down()

    asyncio.run(drive())
    answers = {m["id"]: m for m in client.messages if "id" in m and "method" not in m}
    assert all("result" in answers[i] and answers[i]["result"] for i in (10, 11, 12, 20, 21, 22))
    # each request reads the analysis current when it runs, and a view is
    # rendered once per analysis: the three may share one
    assert 1 <= len(views) <= 3
    # nothing of the notifications, commands or requests is kept
    assert client.protocol._request_futures == {}
    gc.collect()
    assert [v for v in views if v() is not None] == []


def test_custom_requests_reach_their_handlers_as_plain_json():
    """pygls reads the params of a method it has no type for into a new
    ``namedtuple`` class per JSON object: a class per request, each a cycle only
    a full collection frees (a thousand in a server after 250 fuzzed documents).
    The server's custom requests get plain JSON, answer as before, and leave no
    class behind."""
    server = create_server()
    client = _Client(server)
    uri = DUMP.as_uri()

    def classes() -> int:
        # with the collector off, a class made and dropped is still counted;
        # the server freezes what exists after each analysis: count that too
        gc.unfreeze()
        return sum(isinstance(o, type) for o in gc.get_objects())

    async def drive() -> int:
        try:
            client.initialize()
            client.send({"method": "textDocument/didOpen", "params": {"textDocument": {
                "uri": uri, "languageId": "hlo", "version": 1, "text": DUMP.read_text()}}})
            before = classes()
            for i in range(20):
                client.send({"id": 100 + i, "method": "hlo/inlineRegions",
                      "params": {"textDocument": {"uri": uri}}})
                client.send({"id": 200 + i, "method": "hlo/counterpart",
                      "params": {"textDocument": {"uri": uri},
                                 "position": {"line": 3, "character": 4}}})
            for _ in range(600):
                if sum("result" in m for m in client.messages) >= 41:
                    break
                await asyncio.sleep(0.05)
            return classes() - before
        finally:
            server.shut_down()

    gc.unfreeze()  # the server freezes its models: count every object
    gc.collect()
    gc.disable()
    try:
        new_classes = asyncio.run(drive())
    finally:
        gc.enable()
    answers = {m["id"]: m for m in client.messages if "id" in m and "method" not in m}
    regions = [answers[100 + i]["result"] for i in range(20)]
    assert regions[0] and all(r == regions[0] for r in regions)
    assert {"range", "kind"} <= set(regions[0][0])
    assert all(isinstance(answers[200 + i]["result"], list) for i in range(20))
    assert new_classes < 5


GPU_DUMP = ROOT / "examples" / "gpu" / "jit_matmul_fn.fp8_cublaslt.sm90_gpu_after_optimizations.txt"


def _every_request(uri: str, text: str, first_id: int) -> list[dict]:
    """One request of every kind the server answers about ``uri``, at a fusion's
    name (hover, definition, references, counterpart, graph) and over the whole
    document."""
    at = text.index("%", text.index("fusion("))
    line = text.count("\n", 0, at)
    pos = {"line": line, "character": at - (text.rfind("\n", 0, at) + 1)}
    doc = {"uri": uri}
    end = {"line": text.count("\n"), "character": 0}
    whole = {"start": {"line": 0, "character": 0}, "end": end}
    command = "workspace/executeCommand"
    requests = [
        ("textDocument/hover", {"textDocument": doc, "position": pos}),
        ("textDocument/definition", {"textDocument": doc, "position": pos}),
        ("textDocument/references", {"textDocument": doc, "position": pos,
                                     "context": {"includeDeclaration": True}}),
        ("textDocument/documentSymbol", {"textDocument": doc}),
        ("textDocument/foldingRange", {"textDocument": doc}),
        ("textDocument/semanticTokens/full", {"textDocument": doc}),
        ("textDocument/semanticTokens/range", {"textDocument": doc, "range": whole}),
        ("textDocument/inlayHint", {"textDocument": doc, "range": whole}),
        ("textDocument/codeLens", {"textDocument": doc}),
        ("textDocument/documentLink", {"textDocument": doc}),
        ("textDocument/codeAction", {"textDocument": doc, "range": whole,
                                     "context": {"diagnostics": []}}),
        ("workspace/symbol", {"query": "fusion"}),
        ("hlo/inlineRegions", {"textDocument": doc}),
        ("hlo/counterpart", {"textDocument": doc, "position": pos}),
        ("hlo/counterpartFiles", {"textDocument": doc}),
        ("hlo/workspaceStatus", None),
        ("hlo/graph", {"textDocument": doc, "position": pos, "page": True}),
        ("hlo/memory", {"textDocument": doc}),
        (command, {"command": "hlo.showSummary", "arguments": [uri, {"format": "markdown"}]}),
        (command, {"command": "hlo.readableView", "arguments": [uri, {"inlineFusions": True}]}),
        (command, {"command": "hlo.compareDumps", "arguments": [uri, uri]}),
        (command, {"command": "hlo.gotoCounterpart", "arguments": [uri, pos]}),
        ("hlo/profileRuns", {"textDocument": doc}),
        (command, {"command": "hlo.loadProfile", "arguments": [{"uri": uri}]}),
        ("hlo/passHistory", {"textDocument": doc}),
        ("hlo/passBlame", {"textDocument": doc, "position": pos}),
    ]
    return [{"id": first_id + i, "method": method, "params": params}
            for i, (method, params) in enumerate(requests)]


def test_answering_every_request_kind_leaves_no_cyclic_garbage():
    """The server freezes every object that exists after an analysis out of the
    collector's sight (``collector.ModelCollector``): a reference cycle made
    while answering is kept until the next full collection, which a busy server
    reaches late. Self-calling closures (the outline's encoder, the cost model's
    tuple walks, the graph's clusters) made such cycles, each holding a
    document's text: a fuzzed server kept 570 of them, 600 MB, after 5 minutes.
    Every request kind, after an edit, on a CPU and a GPU dump, then a close,
    leaves no garbage that only the cyclic collector could free."""
    server = create_server()
    client = _Client(server)
    docs = [(p.as_uri(), p.read_text()) for p in (DUMP, GPU_DUMP)]

    async def answered(ids: set[int]) -> None:
        for _ in range(1200):
            if ids <= {m.get("id") for m in client.messages if "method" not in m}:
                return
            await asyncio.sleep(0.05)
        raise AssertionError(f"unanswered: {ids - {m.get('id') for m in client.messages}}")

    async def round_trip(first_id: int) -> set[int]:
        ids = set()
        for k, (uri, text) in enumerate(docs):
            client.send({"method": "textDocument/didOpen", "params": {"textDocument": {
                "uri": uri, "languageId": "hlo", "version": 1, "text": text}}})
            client.break_first_line(uri, 2)
            requests = _every_request(uri, "\n" + text, first_id + 100 * k)
            for r in requests:
                client.send(r)
            ids |= {r["id"] for r in requests}
        await answered(ids)
        for uri, _ in docs:
            client.send({"method": "textDocument/didClose", "params": {"textDocument": {"uri": uri}}})
        await asyncio.sleep(0.3)
        return ids

    async def drive() -> list:
        try:
            client.initialize()
            # the first round builds what a server makes once (parsers, caches)
            await round_trip(1000)
            gc.unfreeze()
            gc.collect()
            gc.disable()
            ids = await round_trip(2000)
            gc.unfreeze()
            gc.set_debug(gc.DEBUG_SAVEALL)
            gc.collect()
            garbage = list(gc.garbage)
            gc.garbage.clear()
            gc.set_debug(0)
            answers = {m["id"]: m for m in client.messages if m.get("id") in ids}
            assert all("result" in a for a in answers.values()), \
                [a for a in answers.values() if "result" not in a]
            return garbage
        finally:
            gc.set_debug(0)
            gc.enable()
            server.shut_down()

    asked = {r["method"] if r["method"] != "workspace/executeCommand"
             else f"{r['method']} {r['params']['command']}" for r in _every_request(*docs[0], 0)}
    assert answered_kinds() <= asked
    garbage = asyncio.run(drive())
    kinds = sorted({getattr(o, "__qualname__", type(o).__qualname__) if callable(o) else type(o).__qualname__ for o in garbage})
    assert garbage == [], f"{len(garbage)} objects in cycles: {kinds}"


def test_whole_document_work_runs_one_at_a_time_in_arrival_order():
    """``HloLanguageServer.work``: pieces of work that hold the interpreter lock,
    asked for together, run one after the other in arrival order: each starts
    after the one before it has finished (threads sharing the lock would
    interleave them and finish all at the end)."""
    import time

    server = create_server()
    events: list[str] = []

    def busy(name: str) -> str:
        events.append(f"start {name}")
        end = time.perf_counter() + 0.15
        while time.perf_counter() < end:   # holds the interpreter lock meanwhile
            pass
        events.append(f"end {name}")
        return name

    async def drive() -> list[str]:
        return await asyncio.gather(*(server.work(busy, n) for n in "abcd"))

    try:
        finished = asyncio.run(drive())
    finally:
        server.shut_down()
    assert finished == list("abcd")
    assert events == [f"{e} {n}" for n in "abcd" for e in ("start", "end")]


def test_xla_checks_only_the_versions_still_current_at_their_turn():
    """Edits that arrive while XLA's parser is busy queue a check each; by its
    turn only the latest version's is run (the others' verdicts could never be
    published), and its verdict is published for that version. A closed
    document's pending check is not run, nor is it when the document was opened
    again at the same version with another text."""
    import threading
    import time

    from hlo_lsp.syntax.xla import XlaVerdict

    class Oracle:
        """XLA's parser, slow, rejecting every text at line 1."""

        def __init__(self) -> None:
            self.texts: list[str] = []
            self.lock = threading.Lock()

        def check(self, text: str) -> XlaVerdict:
            with self.lock:
                self.texts.append(text)
            time.sleep(0.4)
            return XlaVerdict(False, "rejected for the test", 1, 1)

    server = create_server()
    oracle = Oracle()
    server.host.xla.oracle = lambda: oracle
    client = _Client(server)
    text = DUMP.read_text()
    uri, other = DUMP.as_uri(), DUMP.as_uri() + ".closed.hlo"

    def published(u: str) -> list[dict]:
        return [m["params"] for m in client.messages
                if m.get("method") == "textDocument/publishDiagnostics"
                and m["params"]["uri"] == u]

    async def drive() -> None:
        try:
            client.initialize()
            client.send({"method": "textDocument/didOpen", "params": {"textDocument": {
                "uri": uri, "languageId": "hlo", "version": 1, "text": text}}})
            for _ in range(100):   # XLA's check of version 1 has begun
                if oracle.texts:
                    break
                await asyncio.sleep(0.02)
            for i in range(4):
                client.break_first_line(uri, 2 + i)
                await asyncio.sleep(0.05)   # each edit analysed on its own
            client.send({"method": "textDocument/didOpen", "params": {"textDocument": {
                "uri": other, "languageId": "hlo", "version": 1, "text": text + "\n\n"}}})
            for _ in range(100):   # analysed: its check waits for its turn
                if published(other):
                    break
                await asyncio.sleep(0.02)
            client.send({"method": "textDocument/didClose", "params": {"textDocument": {"uri": other}}})
            client.send({"method": "textDocument/didOpen", "params": {"textDocument": {
                "uri": other, "languageId": "hlo", "version": 1, "text": text + "\n\n\n"}}})
            for _ in range(200):
                if any(p["version"] == 5 and any(d["source"] == "xla" for d in p["diagnostics"])
                       for p in published(uri)):
                    break
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.6)   # any check still queued would have begun
        finally:
            server.shut_down()

    asyncio.run(drive())
    # the first text of `other` was closed, and opened again at version 1 with
    # another text: its check is not run
    assert oracle.texts == [text, "\n" * 4 + text, text + "\n\n\n"]
    last = [p for p in published(uri) if p["version"] == 5][-1]
    assert [d["message"] for d in last["diagnostics"] if d["source"] == "xla"] == [
        "XLA: rejected for the test"]
