"""The caches of what the analysis reads beside a dump (hlo_lsp.analysis.inputs):
the first read awaited, later ones answered at once, an old answer given while
it is read again in the background, a forgotten one read again."""

from __future__ import annotations

import asyncio
import threading

from hlo_lsp.analysis.inputs import DumpInputs
from hlo_lsp.analysis.refreshed import Refreshed


def test_an_old_answer_is_given_at_once_and_read_again_in_the_background():
    reads = []
    release = threading.Event()

    def read(key):
        reads.append(key)
        if len(reads) == 2:  # the background read waits until the test lets it go
            release.wait(10)
        return f"{key}#{len(reads)}"

    async def run():
        cache = Refreshed(ttl=0.0)
        first = await cache.get("k", read, "k")
        stale = await cache.get("k", read, "k")  # expired: old answer, read started
        await asyncio.sleep(0.05)
        still = await cache.get("k", read, "k")  # one background read at a time
        release.set()
        for _ in range(200):
            if "k" not in cache._refreshing:
                break
            await asyncio.sleep(0.01)
        fresh = await cache.get("k", read, "k")
        return first, stale, still, fresh

    first, stale, still, fresh = asyncio.run(run())
    assert (first, stale, still) == ("k#1", "k#1", "k#1")
    assert fresh == "k#2"
    assert reads[:2] == ["k", "k"]


def test_a_forgotten_answer_is_read_again_before_it_is_given():
    reads = []

    def read(key):
        reads.append(key)
        return len(reads)

    async def run():
        cache = Refreshed(ttl=3600)
        a = await cache.get(("d", 1), read, "d")
        b = await cache.get(("d", 1), read, "d")
        cache.forget(lambda key: key[0] == "d")
        c = await cache.get(("d", 1), read, "d")
        return a, b, c

    assert asyncio.run(run()) == (1, 1, 2)


def test_the_deviceless_statement_of_a_device_dump_is_none(tmp_path):
    dump = tmp_path / "module_0001.jit_f.cpu_after_optimizations.txt"
    dump.write_text("HloModule jit_f\n")

    async def run():
        inputs = DumpInputs(deviceless_ttl=0.0)
        return await inputs.deviceless(str(dump)), await inputs.deviceless(str(dump))

    assert asyncio.run(run()) == (None, None)


def test_askers_of_a_first_read_under_way_share_it():
    reads = []
    release = threading.Event()

    def read(key):
        reads.append(key)
        release.wait(10)
        return "answer"

    async def run():
        cache = Refreshed(ttl=3600)
        askers = [asyncio.ensure_future(cache.get("k", read, "k")) for _ in range(5)]
        await asyncio.sleep(0.05)
        release.set()
        return await asyncio.gather(*askers)

    assert asyncio.run(run()) == ["answer"] * 5
    assert reads == ["k"]


def test_a_first_read_past_its_wait_answers_the_default_and_goes_on():
    release = threading.Event()

    def read(key):
        release.wait(10)
        return "late"

    async def run():
        cache = Refreshed(ttl=3600)
        early = await cache.get("k", read, "k", wait=0.05, default="none yet")
        under_way = cache.reading("k")
        release.set()
        await under_way
        return early, under_way is not None, await cache.get("k", read, "k", wait=0.05)

    assert asyncio.run(run()) == ("none yet", True, "late")


def test_the_fusion_log_and_kernels_are_kept_until_a_file_beside_them_changes(tmp_path):
    import shutil

    from tests.helpers import EXAMPLES

    for f in (EXAMPLES / "gpu" / "deviceless" / "fp8_fusion_log").iterdir():
        shutil.copy(f, tmp_path / f.name)
    after = str(next(tmp_path.glob("*gpu_after_optimizations.txt")))
    [log] = tmp_path.glob("*.priority_fusion_dump.txt")
    [ptx] = tmp_path.glob("*.ptx")

    async def run():
        inputs = DumpInputs()
        first = await inputs.fusion_dump(after)
        kernels = await inputs.kernels(after)
        log.write_text("fusion_steps {")  # rewritten: a file-change event follows
        ptx.unlink()
        kept = await inputs.fusion_dump(after), await inputs.kernels(after)
        inputs.forget(str(log))
        return first, kernels, kept, await inputs.fusion_dump(after), \
            await inputs.kernels(after)

    first, kernels, kept, again, kernels_again = asyncio.run(run())
    assert first.about("gemm_fusion_dot").reasons == ("the producer is not fusible",)
    assert [s.kind for s in kernels.for_instruction("gemm_fusion_dot")] == ["ptx", "llvm"]
    assert kept == (first, kernels)
    assert again.steps == () and "ends inside a message" in again.problem
    assert [s.kind for s in kernels_again.for_instruction("gemm_fusion_dot")] == ["llvm"]


def test_the_matchers_names_are_found_once_per_version_of_the_files(tmp_path, monkeypatch):
    import shutil

    from hlo_lsp.analysis import inputs as inputs_module
    from hlo_lsp.dump import fusion_dump
    from tests.helpers import EXAMPLES

    for f in (EXAMPLES / "gpu" / "deviceless" / "multi_output_fusion_log").iterdir():
        shutil.copy(f, tmp_path / f.name)
    after = str(next(tmp_path.glob("*gpu_after_optimizations.txt")))
    calls = []

    def counted(path, dump):
        calls.append(path)
        return fusion_dump.names_at_fusion(path, dump)

    monkeypatch.setattr(inputs_module, "names_at_fusion", counted)

    async def run():
        inputs = DumpInputs()
        first = await inputs.fusion_dump(after)
        again = await inputs.fusion_dump(after)
        with open(after, "a") as f:  # the file changed: matched again
            f.write("\n")
        inputs.forget(after)
        return first, again, await inputs.fusion_dump(after)

    first, again, changed = asyncio.run(run())
    assert first is again
    assert first.renamed["loop_exponential_multiply_fusion"] == "fusion.1"
    assert changed.renamed == first.renamed
    assert calls == [after, after]
