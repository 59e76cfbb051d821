"""The dump directory as a workspace in the analysis layer, without a server or
pygls (hlo_lsp.analysis.workspace, the host's snapshot, DumpInputs' source
directories, hlo_lsp.analysis.xla_check), in the style of rust-analyzer's
``check(fixture, expect)``: the fixture is a real dump file of examples/ with
``$0`` at the cursor; the expectation is what the editor would be shown (the
file and the text of each place, the files offered, the messages told)."""

from __future__ import annotations

import asyncio
import os
import pathlib
import shutil
import sys
import threading
import urllib.parse

from hlo_lsp.analysis import workspace as workspace_mod
from hlo_lsp.analysis.host import AnalysisHost
from hlo_lsp.analysis.inputs import DumpInputs
from hlo_lsp.analysis.workspace import IndexStatus, Reporter
from hlo_lsp.dump.index import WorkspaceIndex, summary_of
from hlo_lsp.dump.recipe import Recipe, save_recipe
from hlo_lsp.syntax.xla import XlaVerdict
from tests.helpers import CPU_DUMP, TRAIN_AFTER, TRAIN_BEFORE, read


def to_path(uri: str) -> str | None:
    parsed = urllib.parse.urlparse(uri)
    return urllib.parse.unquote(parsed.path) if parsed.scheme == "file" else None


def to_uri(path: str) -> str:
    return pathlib.Path(path).as_uri()


def _cursor(fixture: str) -> tuple[str, int, int]:
    """(text, line, character) of ``$0`` in ``fixture``."""
    offset = fixture.index("$0")
    text = fixture.replace("$0", "", 1)
    line = text.count("\n", 0, offset)
    return text, line, offset - (text.rfind("\n", 0, offset) + 1)


def _with_cursor(path: pathlib.Path, before: str, shift: int) -> str:
    """The text of ``path`` with ``$0`` ``shift`` characters into ``before``."""
    text = read(path)
    at = text.index(before) + shift
    return text[:at] + "$0" + text[at:]


def run(question, *opened: tuple[pathlib.Path, str]):
    """``await question(host)`` on a host (no listener) with the documents
    ``(path, text)`` opened and analysed."""

    async def go():
        host = AnalysisHost(to_path, to_uri=to_uri)
        try:
            for path, text in opened:
                host.store.open(to_uri(str(path)), 1, text)
                await host.store.analysis(to_uri(str(path)))
            return await question(host)
        finally:
            host.close()

    return asyncio.run(go())


def check_counterparts(path: pathlib.Path, fixture: str, expected: list[tuple[str, str]]):
    """The counterparts of the cursor's name: (file name, text of the place)."""
    text, line, character = _cursor(fixture)
    got = run(lambda host: host.snapshot().counterparts(to_uri(str(path)), line, character),
              (path, text))
    shown = []
    for uri, place in got:
        other = read(pathlib.Path(to_path(uri)))
        shown.append((os.path.basename(to_path(uri)), other[place.start:place.end]))
    assert shown == expected


# -- counterparts ---------------------------------------------------------------

def test_counterpart_of_a_fusion_is_the_before_files_dot():
    check_counterparts(TRAIN_AFTER, _with_cursor(TRAIN_AFTER, "%ynn_fusion.5 =", 3),
                       [(TRAIN_BEFORE.name, "%dot_general.12")])


def test_counterpart_of_a_use_in_the_before_file_is_the_after_files_fusion():
    check_counterparts(TRAIN_BEFORE, _with_cursor(TRAIN_BEFORE, "%dot_general.12, %add.36)", 2),
                       [(TRAIN_AFTER.name, "%ynn_fusion.5")])


def test_counterpart_of_a_computation_is_the_computation_of_the_same_name():
    check_counterparts(TRAIN_AFTER, _with_cursor(TRAIN_AFTER, "ENTRY %main.29", 8),
                       [(TRAIN_BEFORE.name, "%main.29")])


def test_an_instruction_without_a_counterpart_has_none():
    check_counterparts(TRAIN_AFTER, _with_cursor(TRAIN_AFTER, "%copy.31 =", 2), [])


def test_counterpart_files_best_first_wherever_the_cursor_is(tmp_path):
    """Same module number first, then the nearest number; another module's
    files are not offered, and the way back is the after file."""
    after = tmp_path / TRAIN_AFTER.name
    shutil.copy(TRAIN_AFTER, after)
    names = ["module_0031.jit_train_step.before_optimizations.txt",
             "module_0029.jit_train_step.before_optimizations.txt", TRAIN_BEFORE.name]
    for name in names:
        shutil.copy(TRAIN_BEFORE, tmp_path / name)
    other_module = tmp_path / "module_0028.jit_stage.before_optimizations.txt"
    shutil.copy(CPU_DUMP / "module_0000.jit_stage.before_optimizations.txt", other_module)

    async def ask(host):
        snapshot = host.snapshot()
        return [[os.path.basename(p) for p in await snapshot.counterpart_files(to_uri(str(f)))]
                for f in (after, tmp_path / names[0], other_module)]

    got = run(ask, (after, read(after)))
    assert got == [[TRAIN_BEFORE.name, names[1], names[0]], [after.name], []]


def test_counterparts_of_a_document_that_is_no_file_are_none():
    async def ask(host):
        snapshot = host.snapshot()
        return (await snapshot.counterpart_files("untitled:Untitled-1"),
                await snapshot.counterparts("untitled:Untitled-1", 0, 0))

    assert run(ask) == ([], [])


# -- indexing, workspace symbols, watched files --------------------------------------

class _Editor:
    """A :class:`Reporter` that notes what the editor would be shown."""

    def __init__(self) -> None:
        self.shown: list[tuple] = []

    def reporter(self) -> Reporter:
        async def begin(title, message):
            self.shown.append(("begin", title, message))
            return "token"

        return Reporter(begin, lambda token, message, pct: self.shown.append(
            ("report", token, message, pct)), lambda token, message: self.shown.append(
            ("end", token, message.split(" in ")[0])), self.tell)

    def tell(self, message: str) -> None:
        self.shown.append(("tell", message))


def test_indexing_with_progress_then_symbols_status_and_a_watched_fifo(tmp_path, monkeypatch):
    """The folders are indexed once the (no) opened documents are analysed,
    with progress (shown for any number of files here); the symbols are then
    answered from the index; a file named like a dump that is a FIFO is not
    read and the user told once; a deleted file leaves the index."""
    monkeypatch.setattr(workspace_mod, "PROGRESS_MIN_FILES", 0)
    monkeypatch.setattr(workspace_mod, "PROGRESS_DELAY_S", 0.0)
    root = tmp_path / "dump"
    shutil.copytree(CPU_DUMP, root)
    editor = _Editor()

    async def go(host):
        ws = host.workspace
        assert ws.status() == IndexStatus() and await ws.symbols("kLoop") == []
        ws.open(WorkspaceIndex(workers=1), [str(root)], editor.reporter())
        await asyncio.wait_for(ws.finished.wait(), 300)   # a hang guard
        snapshot = host.snapshot()
        fusions = [(h.label, os.path.basename(h.summary.path))
                   for h in await snapshot.workspace_symbols("kLoop")]
        status = ws.status()
        fifo = root / "module_0099.jit_f.before_optimizations.txt"
        os.mkfifo(fifo)
        for _ in range(2):
            await host.files_changed([str(fifo)], [], editor.tell)
        await host.files_changed([], [str(root / TRAIN_AFTER.name)], editor.tell)
        left = {os.path.basename(h.summary.path)
                for h in await snapshot.workspace_symbols("jit_train_step")}
        return fusions, status, left

    fusions, status, left = run(go)
    assert ("add_tanh_fusion.1 [kLoop]", TRAIN_AFTER.name) in fusions
    assert (status.indexing, status.done, status.total, status.files) == (False, 6, 6, 6)
    assert status.symbols > 6
    assert editor.shown[0] == ("begin", "Indexing HLO files", "looking for HLO files")
    assert editor.shown[-3:-1] == [("report", "token", "indexed 6/6 files", 100),
                                   ("end", "token", "indexed 6 files")]
    fifo_path = str(tmp_path / "dump" / "module_0099.jit_f.before_optimizations.txt")
    assert editor.shown[-1] == ("tell", f"hlo-lsp did not read 1 file of the workspace: "
                                        f"{fifo_path}: not a regular file (a FIFO).")
    assert left == {TRAIN_BEFORE.name}


def test_a_folder_removed_leaves_the_index():
    async def go(host):
        ws = host.workspace
        ws.folders_changed([str(CPU_DUMP)], [], Reporter(None, None, None, None))  # off: nothing
        index = WorkspaceIndex(workers=1)
        for path in (TRAIN_AFTER, TRAIN_BEFORE):
            index.add(summary_of(str(path)))
        ws.index = index
        ws.folders_changed([str(CPU_DUMP)], [], Reporter(None, None, None, None))
        await asyncio.wait_for(ws.finished.wait(), 60)
        return len(index)

    assert run(go) == 0


# -- the source directories of a dump ----------------------------------------------

def test_source_dirs_are_kept_until_a_file_of_the_dump_changes(tmp_path):
    """A recipe written meanwhile is not seen while the answer is kept; a file
    of the dump directory changing (``forget``) drops it, and only it."""
    dump, project, other = tmp_path / "dump", tmp_path / "project", tmp_path / "other"
    for d in (dump, project, other):
        d.mkdir()
    doc, elsewhere = str(dump / TRAIN_AFTER.name), str(other / TRAIN_AFTER.name)
    inputs = DumpInputs(source_dirs_ttl=3600)

    async def go():
        first = await inputs.source_dirs(doc, [str(tmp_path)], None)
        kept = await inputs.source_dirs(elsewhere, [str(tmp_path)], None)
        save_recipe(Recipe([sys.executable, "prog.py"], str(project)), dump)
        again = await inputs.source_dirs(doc, [str(tmp_path)], None)
        inputs.forget(str(dump / TRAIN_BEFORE.name))
        after = await inputs.source_dirs(doc, [str(tmp_path)], None)
        return first, again, after, kept is await inputs.source_dirs(elsewhere,
                                                                     [str(tmp_path)], None)

    first, again, after, other_kept = asyncio.run(go())
    assert first[0] == str(dump) and again == first
    assert after[0] == str(project) and after[1:] == first
    assert other_kept
    assert DumpInputs.source_roots(doc, [str(tmp_path)], None) == [
        os.path.realpath(dump), os.path.realpath(tmp_path)]


# -- XLA's check -----------------------------------------------------------------

class _Oracle:
    """XLA's parser, rejecting every text at line 1, held until released."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.release = threading.Event()

    def check(self, text: str) -> XlaVerdict:
        self.texts.append(text)
        self.release.wait(60)   # a hang guard
        return XlaVerdict(False, "rejected for the test", 1, 1)


class _Listener:
    """The server's side: what was published, by version."""

    def __init__(self) -> None:
        self.published: list[tuple[int, list[str]]] = []

    def analysed(self, analysis, current) -> None:
        pass

    def edited(self, uri, version, problems, lines) -> None:
        pass

    async def begin_progress(self, title):
        return None

    def end_progress(self, token, message) -> None:
        pass

    def publish(self, analysis) -> None:
        self.published.append((analysis.version, [p.message for p in analysis.xla_problems]))


def test_xla_checks_only_the_analysis_still_current_at_its_turn():
    """Edits while XLA's parser is busy: the analyses no longer current by
    their turn are not given to it, the busy one's verdict is not published,
    the latest's is."""
    text = read(TRAIN_BEFORE)
    uri = to_uri(str(TRAIN_BEFORE))
    oracle, listener = _Oracle(), _Listener()

    async def go():
        host = AnalysisHost(to_path, listener, to_uri)
        host.xla.oracle = lambda: oracle
        try:
            host.store.open(uri, 1, text)
            for _ in range(3000):   # a hang guard: the check of version 1 has begun
                if oracle.texts:
                    break
                await asyncio.sleep(0.01)
            for version in (2, 3):
                host.store.replace(uri, version, "\n" * (version - 1) + text)
                await host.store.analysis(uri)
            oracle.release.set()
            for _ in range(3000):
                if listener.published:
                    break
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.2)   # a check still queued would have begun
        finally:
            host.close()

    asyncio.run(go())
    assert oracle.texts == [text, "\n\n" + text]
    assert listener.published == [(3, ["XLA: rejected for the test"])]


def test_no_check_without_the_setting():
    host = AnalysisHost(to_path, _Listener(), to_uri)
    try:
        host.xla.enabled = False
        assert host.xla.oracle() is None
    finally:
        host.close()
