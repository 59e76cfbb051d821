"""The pass histories the server keeps (hlo_lsp.analysis.pass_history), on a
copy of examples/cpu_passes: one walk per version of the dump directory
however many ask, forgotten when a file of the directory changes (the
file-change event, or a new snapshot seen when the answer is looked at again),
and nothing but a listing for a dump without pass snapshots."""

from __future__ import annotations

import asyncio
import os
import shutil

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
