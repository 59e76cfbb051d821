"""The pass histories the server keeps (hlo_lsp.analysis.pass_history), on a
copy of examples/cpu_passes: one walk per version of the dump directory
however many ask, forgotten when a file of the directory changes (the
file-change event, or a new snapshot seen when the answer is looked at again),
and nothing but a listing for a dump without pass snapshots."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import threading
import time

import pytest

from hlo_lsp.analysis import pass_history
from hlo_lsp.analysis.pass_history import PassHistories
from hlo_lsp.dump.passes import FileHistory

from tests.helpers import EXAMPLES

AFTER = "module_0008.jit_layer.cpu_after_optimizations.txt"
SNAPSHOT = ("module_0008.jit_layer.0017.HLO_passes_after_layout_assignment.after_fusion."
            "before_fusion-wrapper.txt")


@pytest.fixture
def dump(tmp_path):
    out = tmp_path / "dump"
    shutil.copytree(EXAMPLES / "cpu_passes", out)
    return out


@pytest.fixture
def walks(monkeypatch):
    """The paths :func:`file_history` walked, in order."""
    done: list[str] = []
    real = pass_history.file_history

    def counted(path, *args):
        done.append(os.path.basename(path))
        return real(path, *args)

    monkeypatch.setattr(pass_history, "file_history", counted)
    return done


def test_one_walk_answers_hover_the_view_and_blame_of_every_instruction(dump, walks):
    async def run():
        histories = PassHistories(store=None)
        path = str(dump / AFTER)
        together = await asyncio.gather(*(histories.for_hover(path) for _ in range(5)),
                                        histories.of_module(str(dump / SNAPSHOT)))
        again = await histories.for_hover(path)
        return together, again

    together, again = asyncio.run(run())
    assert walks == [AFTER]  # one walk, to the module's last file
    first = together[0]
    assert isinstance(first, FileHistory) and all(t is first for t in together)
    assert again is first
    assert first.blame("ynn_fusion").created_by.index == 14


def test_a_change_in_the_directory_is_walked_again(dump, walks):
    async def run():
        histories = PassHistories(store=None, ttl=0.0)
        path = str(dump / AFTER)
        one = await histories.of_file(path)
        histories.forget(str(dump / SNAPSHOT))  # the file-change event of a file beside it
        two = await histories.of_file(path)
        # unchanged directory: looked at again (ttl 0), not walked again
        three = await histories.of_file(path)
        await asyncio.sleep(0.2)
        # a snapshot removed (a recompile with other flags): seen by the next look
        os.remove(dump / SNAPSHOT)
        os.utime(dump, ns=(1, 1))  # another version even where mtimes are coarse
        await histories.of_file(path)
        for _ in range(200):
            four = await histories.of_file(path)
            if four is not three:
                break
            await asyncio.sleep(0.02)
        return one, two, three, four

    one, two, three, four = asyncio.run(run())
    assert walks == [AFTER, AFTER, AFTER]
    assert one is not two and three is two
    assert len(four.history.stages) == len(one.history.stages) - 1


def test_no_snapshots_no_history_and_no_walk(tmp_path, walks):
    shutil.copy(EXAMPLES / "cpu_passes" / AFTER, tmp_path / AFTER)

    async def run():
        histories = PassHistories(store=None)
        return (await histories.for_hover(str(tmp_path / AFTER)),
                await histories.of_module(str(tmp_path / AFTER)),
                # not an after-optimizations file: hover asks nothing
                await histories.for_hover(str(EXAMPLES / "cpu_passes" / SNAPSHOT)))

    hover, module, snapshot = asyncio.run(run())
    assert hover is None and snapshot is None
    assert "no pass snapshots" in module
    assert walks == [AFTER]  # the listing said so (file_history raised at once)


# ------------------------------------------- the shown histories, followed ---

BEFORE = "module_0008.jit_layer.before_optimizations.txt"


def _held_back(dump) -> list:
    """The files XLA writes after snapshot 0014 (0015-0023 and the
    after-optimizations file), moved out of ``dump``: a compile caught while XLA
    writes its snapshots. Their real contents, returned to copy back."""
    held = sorted(p for p in dump.iterdir() if p.name == AFTER or (
        p.name[len("module_0008.jit_layer."):][:4].isdigit()
        and int(p.name[len("module_0008.jit_layer."):][:4]) >= 15))
    out = dump.parent / "held"
    out.mkdir()
    for p in held:
        p.rename(out / p.name)
    return sorted(out.iterdir())


def _following(histories: PassHistories, quiet=0.05, max_wait=60.0, look=0.05) -> list[str]:
    told: list[str] = []
    histories.changed = told.append
    histories.watch.quiet, histories.watch.max_wait, histories.watch.look = quiet, max_wait, look
    return told


@contextlib.contextmanager
def _counting_looks():
    """A list that grows by one at each look at the shown directories
    (``pass_history._versions``) while the block runs."""
    looks: list[int] = []
    real = pass_history._versions
    pass_history._versions = lambda files: looks.append(1) or real(files)
    try:
        yield looks
    finally:
        pass_history._versions = real


async def _until(what, cond):
    for _ in range(3000):  # a hang guard, not a time limit the test asserts
        if cond():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never: {what}")


def test_a_burst_of_file_changes_is_told_once_and_only_for_a_shown_history(dump, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(EXAMPLES / "cpu_passes", other)

    async def run():
        histories = PassHistories(store=None, ttl=60.0)
        told = _following(histories, look=3600.0)  # the events alone
        await histories.of_module(str(dump / AFTER))
        await histories.of_file(str(other / AFTER))  # hover or blame: not a shown history
        # a recompile rewrote every file: one event each, in a burst
        for p in sorted(dump.iterdir()):
            histories.forget(str(p))
        for p in sorted(other.iterdir()):
            histories.forget(str(p))
        await _until("told", lambda: told)
        await asyncio.sleep(5 * histories.watch.quiet)  # room for a second telling of it
        # one more change later: told again, and the first burst was told once
        histories.forget(str(dump / SNAPSHOT))
        await _until("told again", lambda: len(told) > 1)
        histories.close()
        return told

    assert asyncio.run(run()) == [str(dump), str(dump)]


def test_a_change_no_event_reports_is_seen_and_told_once(dump):
    held = _held_back(dump)

    async def run():
        histories = PassHistories(store=None, ttl=60.0)
        told = _following(histories)
        with _counting_looks() as looks:
            first = await histories.of_module(str(dump / BEFORE))
            for p in held:  # XLA writes the rest of its snapshots
                shutil.copy(p, dump / p.name)
            await _until("told", lambda: told)
            second = await histories.of_module(str(dump / BEFORE))
            # the view asked again: nothing more to tell however often it looks
            seen = len(looks)
            await _until("three more looks", lambda: len(looks) > seen + 3)
        histories.close()
        return told, first, second

    told, first, second = asyncio.run(run())
    assert told == [str(dump)]
    # not the answer kept for the TTL: the directory was read again
    assert first.history.stages[-1].file.startswith("module_0008.jit_layer.0014.")
    assert second.history.stages[-1].file == AFTER


def test_told_once_even_when_the_editor_does_not_ask_again(dump):
    held = _held_back(dump)

    async def run():
        histories = PassHistories(store=None, ttl=60.0)
        told = _following(histories)
        with _counting_looks() as looks:
            await histories.of_module(str(dump / BEFORE))
            shutil.copy(held[0], dump / held[0].name)
            histories.forget(str(dump / held[0].name))  # the event, and the look sees it too
            await _until("told", lambda: told)
            seen = len(looks)
            await _until("three more looks", lambda: len(looks) > seen + 3)
            shutil.copy(held[1], dump / held[1].name)  # a new change: told again
            await _until("told again", lambda: len(told) > 1)
        histories.close()
        return told

    assert asyncio.run(run()) == [str(dump), str(dump)]


def test_a_change_told_while_a_look_runs_is_not_told_again(dump):
    """A look that began before a change and ends after it was told (the
    event's burst over while the look's stats ran) records the change
    silently: one telling."""
    held = _held_back(dump)

    async def run():
        histories = PassHistories(store=None, ttl=60.0)
        told = _following(histories)
        real, began = pass_history._versions, threading.Event()

        def slow(files):  # the look's stats, taken late (a slow disk, a busy machine)
            began.set()
            time.sleep(0.5)
            return real(files)

        pass_history._versions = slow
        try:
            await histories.of_module(str(dump / BEFORE))
            await _until("a look begins", began.is_set)
            shutil.copy(held[0], dump / held[0].name)
            histories.forget(str(dump / held[0].name))  # the event: told while the look runs
            await _until("told", lambda: told)
            pass_history._versions = real
            await asyncio.sleep(1.0)  # the slow look ends; more looks
        finally:
            pass_history._versions = real
            histories.close()
        return told

    assert asyncio.run(run()) == [str(dump)]

def test_a_long_burst_is_told_while_it_lasts(dump):
    async def run():
        histories = PassHistories(store=None, ttl=60.0)
        told = _following(histories, quiet=3600.0, max_wait=0.05, look=3600.0)
        await histories.of_module(str(dump / AFTER))
        files = sorted(dump.iterdir())
        for i in range(100_000):  # files keep changing: never a quiet second
            histories.forget(str(files[i % len(files)]))
            if told:
                break
            await asyncio.sleep(0.005)
        histories.close()
        return told

    assert asyncio.run(run()) == [str(dump)]


MOF = EXAMPLES / "gpu" / "deviceless" / "multi_output_fusion_log"
MOF_AFTER = "module_0001.jit_stats.sm_9.0a_gpu_after_optimizations.txt"


class _NoDocuments:
    """A store with no open document: blame_at takes the instruction defined on the line."""

    @contextlib.asynccontextmanager
    async def lease(self, uri):
        yield None


def test_a_blame_carries_the_priority_fusion_decisions_from_the_hovers_log(tmp_path):
    # Issue 44: the editors' blame says why the instruction was or was not fused, as
    # `hlo-lsp blame` does: fusion.1 in the log, renamed loop_exponential_multiply_fusion
    # after priority fusion (multi_output_fusion, rename_fusions).
    from hlo_lsp.analysis.inputs import DumpInputs
    from hlo_lsp.lsp.handlers.passes import blame_reply
    from hlo_lsp.lsp.messages import PassFusionInfo

    dump = tmp_path / "dump"
    shutil.copytree(MOF, dump)
    path = str(dump / MOF_AFTER)
    lines = (dump / MOF_AFTER).read_text().splitlines()
    row = next(i for i, t in enumerate(lines) if "%loop_exponential_multiply_fusion = " in t)
    other = next(i for i, t in enumerate(lines) if "%input_reduce_fusion = " in t)

    async def run():
        inputs = DumpInputs()
        histories = PassHistories(store=_NoDocuments(), inputs=inputs)
        found = await histories.blame_at(path, "file:///x", row, 0)
        log = await inputs.fusion_dump(path)
        quiet = await histories.blame_at(path, "file:///x", other, 0)
        alone = await PassHistories(store=_NoDocuments()).blame_at(path, "file:///x", row, 0)
        return found, log, quiet, alone

    found, log, quiet, alone = asyncio.run(run())
    assert found.blame.instruction == "loop_exponential_multiply_fusion"
    assert found.fusion is log  # the log the hover reads, not read again
    assert found.decisions == log.about("fusion.1")
    reply = blame_reply(found)
    assert reply.fusion == PassFusionInfo(
        file="module_0001.jit_stats.priority_fusion_dump.txt", name="fusion.1",
        decisions=["fused into %reduce_sum.14.0, %fusion: estimated 9.83 µs fused against "
                   "8.03 µs unfused", "took in %tanh.1.0"])
    # the log names neither fusion.2 nor input_reduce_fusion: no decisions
    assert quiet.blame is not None and quiet.decisions is None
    assert blame_reply(quiet).fusion is None
    # without the dump's inputs (a bare PassHistories): the blame alone
    assert alone.blame == found.blame and alone.fusion is None and alone.decisions is None


def test_the_blames_fusion_lines_are_plain_visible_text():
    # Text from the log is data: a reason with a terminal escape and a newline comes
    # to the editor escaped, one line.
    from hlo_lsp.analysis.pass_history import BlameAt
    from hlo_lsp.dump.fusion_dump import FusionDump, ProducerDecisions
    from hlo_lsp.dump.passes import file_history
    from hlo_lsp.lsp.handlers.passes import blame_reply

    found = file_history(str(MOF / MOF_AFTER))
    blame = found.blame("loop_exponential_multiply_fusion")
    log = FusionDump(str(MOF / "log\x1b[31m.txt"), ())
    odd = ProducerDecisions("fusion.1\n", reasons=("\x1b[2Jcleared\nsecond line",))
    fusion = blame_reply(BlameAt(found, blame, fusion=log, decisions=odd)).fusion
    assert fusion.file == "log\\x1b[31m.txt" and fusion.name == "fusion.1\\n"
    assert fusion.decisions == ["not fused into its users: \\x1b[2Jcleared\\nsecond line"]
