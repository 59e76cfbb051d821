"""The document store (hlo_lsp.analysis.documents) without pygls: analyses never
change under a request that holds them, a request that read an old version is
told so, closing frees the model, files on disk are read again when they change."""

from __future__ import annotations

import asyncio
import os
import pathlib
import time
import weakref
from concurrent.futures import ThreadPoolExecutor

import pytest

from hlo_lsp.analysis.documents import DocumentChanged, DocumentStore
from hlo_lsp.syntax.parser import parse
from tests.helpers import TRAIN_AFTER, TRAIN_BEFORE, read


def _store() -> DocumentStore:
    return DocumentStore(lambda uri: uri[len("file://"):] if uri.startswith("file://") else None,
                         ThreadPoolExecutor(max_workers=2))


def _blockable_store():
    """(pool, store, event): a store whose one parse thread a test can keep busy
    with ``pool.submit(event.wait, 10)``, so an analysis waits until ``event.set()``."""
    import threading

    pool = ThreadPoolExecutor(max_workers=1)
    return pool, DocumentStore(_store().to_path, pool), threading.Event()


def _offsets(module) -> list[tuple[str, int, int]]:
    return [(ins.name.name, ins.name.start, ins.start)
            for comp in module.computations for ins in comp.instructions]


def _insert_at_top(text: str, what: str) -> list:
    """A didChange that inserts ``what`` on a new line after the module header."""
    line = text.count("\n", 0, text.index("\n\n")) + 1
    return [((line, 0, line, 0), what)]


class _HeldChecks:
    """Every analysis' semantic checks wait, once :meth:`hold` is called, until
    :meth:`release` (or a hang guard of 60 s): a test sees what is answered
    while they have not finished, whatever the machine's speed."""

    def __init__(self, monkeypatch) -> None:
        import threading

        import hlo_lsp.analysis.documents as documents

        self._held = False
        self._gate = threading.Event()
        #: checks that started waiting, and that have finished
        self.waiting = threading.Semaphore(0)
        self.finished = 0
        real = documents.diagnostics

        def held_diagnostics(module):
            if self._held:
                self.waiting.release()
                assert self._gate.wait(60), "the test never released the checks"
            try:
                return real(module)
            finally:
                self.finished += 1

        monkeypatch.setattr(documents, "diagnostics", held_diagnostics)

    def hold(self) -> None:
        self._held = True
        self._gate.clear()

    def release(self) -> None:
        self._gate.set()

    async def started(self) -> None:
        """Until held checks have started waiting (a hang guard of 60 s)."""
        assert await asyncio.to_thread(self.waiting.acquire, timeout=60)


async def _settled(store: DocumentStore, uri: str):
    return await store.analysis(uri)


def test_an_edit_never_changes_an_analysis_a_request_holds():
    text = read(TRAIN_AFTER)
    uri = TRAIN_AFTER.as_uri()

    async def run():
        store = _store()
        store.open(uri, 1, text)
        async with store.lease(uri) as held:
            before = _offsets(held.module)
            store.change(uri, 2, _insert_at_top(text, "// a comment line\n"))
            new = await store.analysis(uri)
            assert new.version == 2
            # The held analysis still pairs its offsets with its own text...
            assert _offsets(held.module) == before == _offsets(parse(text))
            assert held.module.text == text
        # ...and the new one is right for the new text, every instruction moved.
        fresh = parse(new.module.text)
        assert _offsets(new.module) == _offsets(fresh)
        delta = len("// a comment line\n")
        assert [o[1] + delta for o in before] == [o[1] for o in _offsets(new.module)]
        # Without a lease the next edit may move computations in place: still right.
        store.change(uri, 3, _insert_at_top(new.module.text, "// another\n"))
        third = await store.analysis(uri)
        assert _offsets(third.module) == _offsets(parse(third.module.text))

    asyncio.run(run())


def test_a_request_that_read_an_old_version_is_told_the_document_changed():
    text = read(TRAIN_AFTER)
    uri = TRAIN_AFTER.as_uri()

    async def run():
        store = _store()
        store.open(uri, 1, text)
        token = store.track_reads()
        try:
            async with store.lease(uri) as a:
                assert a.version == 1
            store.check_current()  # nothing changed yet
            store.change(uri, 2, _insert_at_top(text, "// x\n"))
            with pytest.raises(DocumentChanged):
                store.check_current()
        finally:
            store.untrack(token)
        token = store.track_reads()
        try:
            async with store.lease(uri) as a:
                assert a.version == 2
            store.check_current()
        finally:
            store.untrack(token)

    asyncio.run(run())


def test_closing_a_document_frees_its_model_and_wakes_waiters():
    text = read(TRAIN_AFTER)
    uri = TRAIN_AFTER.as_uri()

    async def run():
        pool, store, release = _blockable_store()
        store.open(uri, 1, text)
        a = await store.analysis(uri)
        a.derived["summary"] = object()   # what handlers keep beside an analysis
        module_ref = weakref.ref(a.module)
        analysis_ref = weakref.ref(a)
        del a
        pool.submit(release.wait, 10)     # the analysis of version 2 cannot start
        store.change(uri, 2, _insert_at_top(text, "// x\n"))
        waiting = asyncio.ensure_future(store.analysis(uri))
        await asyncio.sleep(0.05)         # the request now waits for version 2
        assert not waiting.done()
        store.close(uri)
        assert await asyncio.wait_for(waiting, 5) is None
        release.set()
        await asyncio.to_thread(pool.shutdown, True)  # the cancelled analysis ends too
        return module_ref, analysis_ref

    module_ref, analysis_ref = asyncio.run(run())
    # Freed by reference counting: an analysis freezes its model out of the
    # collector's scans, so a cycle through it (the cancelled task's traceback
    # holding the document, which held the task) would keep it until a full
    # collection.
    assert analysis_ref() is None and module_ref() is None


def test_a_file_rewritten_on_disk_is_read_again(tmp_path: pathlib.Path):
    path = tmp_path / TRAIN_BEFORE.name
    text = read(TRAIN_BEFORE)
    path.write_text(text)
    uri = "file://" + str(path)

    async def run():
        store = _store()
        first = await store.analysis(uri)
        assert first is not None and first.module.text == text
        assert await store.analysis(uri) is first  # cached while the file is unchanged
        path.write_text("// rewritten\n" + text)
        os.utime(path, ns=(time.time_ns(), time.time_ns() + 10**9))
        second = await store.analysis(uri)
        assert second is not first and second.module.text.startswith("// rewritten")
        path.unlink()
        assert await store.analysis(uri) is None

    asyncio.run(run())


def test_reports_are_not_handled():
    store = _store()
    assert not store.handles("file:///d/module_0001.jit_f.cpu_after_optimizations-buffer-assignment.txt")
    assert store.handles("file:///d/module_0001.jit_f.cpu_after_optimizations.txt")


def test_views_map_the_latest_analysis_but_never_one_being_moved():
    """While an edit is analysed, a view answers from the latest finished
    analysis mapped through the edit; never from one whose computations the
    running analysis moves in place."""
    text = read(TRAIN_AFTER)
    uri = TRAIN_AFTER.as_uri()

    async def run():
        pool, store, release = _blockable_store()
        store.open(uri, 1, text)
        first = await store.analysis(uri)
        pool.submit(release.wait, 10)
        store.change(uri, 2, _insert_at_top(text, "// x\n"))
        await asyncio.sleep(0.05)          # analysis 2 started: it moves analysis 1
        assert store.peek(uri) is None
        release.set()
        second = await store.analysis(uri)
        release.clear()
        pool.submit(release.wait, 10)
        store.change(uri, 3, _insert_at_top(second.module.text, "// y\n"))
        # Analysis 3 has not started (the next await would start it): analysis 2, mapped.
        view = store.peek(uri)
        assert view.analysis is second and view.window is not None
        name = next(i for i in second.module.computations[-1].instructions)
        new_text = store.snapshot(uri).text
        at = new_text.index(f"%{name.name.name} =")   # the range covers the "%"
        assert view.offset(*_position(new_text, at + 1)) == name.name.start + 1
        assert view.span(name.name.start, name.name.end) == (at, at + 1 + len(name.name.name))
        assert view.offset(*_position(new_text, new_text.index("// y"))) is None
        release.set()
        await store.analysis(uri)          # analysis 3 ends inside this test
        await asyncio.to_thread(pool.shutdown, True)
        assert first.module.text == text

    asyncio.run(run())


def _position(text: str, offset: int) -> tuple[int, int]:
    return text.count("\n", 0, offset), offset - text.rfind("\n", 0, offset) - 1


def test_a_request_is_about_the_version_it_arrived_with():
    """pygls runs a request's handler later, in a copy of the context the
    message was received in: an edit received in between makes the request's
    positions stale, and the handler is told so."""
    import contextvars

    text = read(TRAIN_AFTER)
    uri = TRAIN_AFTER.as_uri()

    async def run():
        store = _store()
        store.open(uri, 1, text)
        await store.analysis(uri)
        with store.arriving(uri):
            handler_context = contextvars.copy_context()   # as pygls does
        store.change(uri, 2, _insert_at_top(text, "// x\n"))

        def handler() -> str:
            token = store.track_reads(uri)
            try:
                store.check_current()
                return "answered"
            except DocumentChanged:
                return "refused"
            finally:
                store.untrack(token)

        assert handler_context.run(handler) == "refused"
        assert contextvars.copy_context().run(handler) == "answered"   # arrived now

    asyncio.run(run())


def test_requests_during_an_edit_never_wait_for_the_semantic_checks(monkeypatch):
    # Issue 12, typing storms: while an edit's analysis moves the previous model's
    # computations in place, requests are answered from the new model as soon as
    # it is built, not after the checks of the whole module.
    import hlo_lsp.analysis.documents as documents

    text = read(TRAIN_AFTER)   # 60 KB: parsed computation by computation
    assert len(text) >= documents.CHUNKED_PARSE_CHARS
    uri = TRAIN_AFTER.as_uri()
    checks = _HeldChecks(monkeypatch)

    async def run():
        store = _store()
        store.open(uri, 1, text)
        first = await store.analysis(uri)
        checks.hold()
        store.change(uri, 2, _insert_at_top(text, "// a comment line\n"))
        # Sent with the edit: the latest analysis, mapped through the edit.
        with_edit = store.peek(uri)
        assert with_edit.analysis is first and with_edit.window is not None
        views = store.views(uri, with_edit)
        finished = checks.finished
        # the new model arrives while the edit's checks wait (held until released)
        view = await asyncio.wait_for(views.__anext__(), 60)   # a hang guard
        assert checks.finished == finished
        assert view.analysis.version == 2 and view.window is None
        assert view.analysis is not store._docs[uri].latest  # the checks still run
        assert _offsets(view.analysis.module) == _offsets(parse(view.analysis.module.text))
        # The finished analysis is the next view, and the last.
        checks.release()
        last = await asyncio.wait_for(views.__anext__(), 60)
        assert last.analysis.version == 2 and last.analysis.problems is not None
        with pytest.raises(StopAsyncIteration):
            await views.__anext__()

    asyncio.run(run())


def test_a_lease_reads_the_model_before_the_checks_of_a_new_document_end(monkeypatch):
    # Outline, folding, semantic tokens... of a big document just opened need the
    # model, not its diagnostics: they no longer wait for the semantic checks, and
    # what they derive from the model is kept by the finished analysis.
    text = read(TRAIN_AFTER)
    uri = TRAIN_AFTER.as_uri()
    checks = _HeldChecks(monkeypatch)
    checks.hold()

    async def run():
        store = _store()
        store.open(uri, 1, text)
        async with store.lease(uri) as early:   # while the checks are held
            assert checks.finished == 0
            assert early.version == 1 and early.module.text == text
            counted = await store.derive(early, "count", len, early.module.computations)
        await checks.started()
        assert checks.finished == 0
        checks.release()
        final = await asyncio.wait_for(store.analysis(uri), 60)
        assert checks.finished >= 1
        assert final is not early and final.module is early.module
        assert final.derived["count"] == counted == len(parse(text).computations)

    asyncio.run(run())


def test_requests_deriving_one_value_together_compute_it_once():
    # A code lens, hlo.showSummary and hlo.compareDumps sent with the didOpen of
    # a big dump all ask for its kernel summary before any of them has it.
    import threading

    text = read(TRAIN_AFTER)
    uri = TRAIN_AFTER.as_uri()
    calls, started, release = [], threading.Event(), threading.Event()

    def summary(module):
        calls.append(threading.get_ident())
        started.set()
        release.wait(10)
        if len(calls) == 1 and failing:
            raise ValueError("broken model")
        return len(module.computations)

    async def run():
        store = _store()
        store.open(uri, 1, text)
        async with store.lease(uri) as a:
            waiters = [asyncio.ensure_future(store.derive(a, "summary", summary, a.module))
                       for _ in range(4)]
            await asyncio.get_running_loop().run_in_executor(None, started.wait, 10)
            waiters[0].cancel()   # a cancelled request does not cancel the others' value
            await asyncio.sleep(0.05)
            release.set()
            results = await asyncio.gather(*waiters, return_exceptions=True)
            again = await store.derive(a, "summary", summary, a.module)
        return results, again, store

    failing = False
    results, again, store = asyncio.run(run())
    assert len(calls) == 1
    assert isinstance(results[0], asyncio.CancelledError)
    assert results[1:] == [len(parse(text).computations)] * 3 == [again] * 3
    assert not store._deriving

    # An exception reaches every waiter, and the next request computes again.
    calls.clear(); started.clear(); release.clear()
    failing = True
    results, again, store = asyncio.run(run())
    assert [type(r) for r in results[1:]] == [ValueError] * 3
    assert again == len(parse(text).computations) and len(calls) == 2


def test_a_second_didopen_with_a_lower_version_is_a_fresh_open():
    """A client that restarts may open an open document again with a lower
    version (issue 41, item 6): the store answers about the new text at once,
    never ContentModified until the document is closed and opened again."""
    text = read(TRAIN_AFTER)
    uri = TRAIN_AFTER.as_uri()

    async def run():
        store = _store()
        store.open(uri, 7, text)
        first = await asyncio.wait_for(store.analysis(uri), 30)
        assert first.version == 7
        store.open(uri, 1, "// reopened\n" + text)
        token = store.track_reads(uri)
        try:
            async with store.lease(uri) as a:
                assert a is not None and a.version == 1
                assert a.module.text.startswith("// reopened")
            store.check_current()  # no DocumentChanged
            view = store.peek(uri)
            assert view is None or view.analysis.version == 1
        finally:
            store.untrack(token)
        assert (await asyncio.wait_for(store.analysis(uri), 30)).version == 1
        store.change(uri, 2, _insert_at_top("// reopened\n" + text, "// x\n"))
        assert (await asyncio.wait_for(store.analysis(uri), 30)).version == 2

    asyncio.run(asyncio.wait_for(run(), 120))


def test_an_analysis_is_published_with_its_index_of_calls_built():
    """The first hover on a matrix kernel after an edit traces operands across
    fusions (``module.callers``): built in the analysis' thread, not by that
    hover on the event loop (it made the typing storm's hover p99 30 ms instead
    of 20 ms on the 4 MB benchmark dump)."""
    text = read(TRAIN_AFTER)

    async def run():
        store = DocumentStore(lambda uri: None, ThreadPoolExecutor(max_workers=1))
        store.open("file:///m.txt", 1, text)
        first = await store.analysis("file:///m.txt")
        line = text.index("\n", text.index("ENTRY"))
        store.change("file:///m.txt", 2, [(None, text[:line] + " " + text[line:])])
        second = await store.analysis("file:///m.txt")
        return first, second

    for analysis in asyncio.run(run()):
        assert "callers" in vars(analysis.module)
        assert analysis.module.callers
