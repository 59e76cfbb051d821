"""Measured time in hover through the real server (issue 43's acceptance), on a
real CPU trace of a JAX program made outside the repository at test time
(tests.helpers.real_cpu_profile: a convolution, a sort, a while loop, a
conditional): for every instruction of the module the trace measures, hover
gives the count and the total the test sums from the trace's events itself;
a profile of another compile of the same module name is refused naming both;
unreadable profile files are one window/showMessage each and nothing else."""

from __future__ import annotations

import re
import shutil
import sys

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from hlo_lsp.model.units import format_seconds
from tests.helpers import hover_until, position_of, trace_event_sums

pytest.importorskip("jax")
pytestmark = pytest.mark.slow

SERVER = [sys.executable, "-m", "hlo_lsp"]


@pytest.fixture(scope="module")
def real(real_cpu):
    return real_cpu  # made once per session (tests/e2e/conftest.py)


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient):
    yield
    if lsp_client.capabilities is not None:
        await lsp_client.shutdown_session()


async def open_dump(client, path, options: dict) -> str:
    await client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual_studio_code"),
        initialization_options={"xlaDiagnostics": False, **options}))
    text = path.read_text()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=path.as_uri(), language_id="hlo", version=1,
                                             text=text)))
    return text


async def hover_at(client, path, text: str, needle: str) -> str:
    got = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
        position=position_of(text, needle)))
    return got.contents.value if got is not None else ""


async def test_hover_gives_every_measured_instruction_the_traces_count_and_total(client, real):
    sums = trace_event_sums(real.trace, real.module_name)
    assert {"while.9", "cond.1.clone", "sort.0", "convolution"} <= set(sums)
    text = await open_dump(client, real.module, {"profile": str(real.profile)})
    # the profile is read in the background once a first hover has waited for it
    await hover_until(client, real.module.as_uri(), text, "%convolution =", "**Measured**")
    for name, (count, total) in sums.items():
        markdown = await hover_at(client, real.module, text, f"%{name} =")
        [measured] = [p for p in markdown.split("\n\n") if p.startswith("**Measured**")]
        shown = re.search(r"\): (\d+) runs?\b.*?, (\S+ \S+) in all", measured)
        assert shown, measured
        assert int(shown.group(1)) == count, name
        # the total as hover writes it (3 significant digits) is within 1%
        value, unit = shown.group(2).split()
        scale = {"s": 1e6, "ms": 1e3, "µs": 1.0, "ns": 1e-3}[unit]
        assert float(value) * scale == pytest.approx(total, rel=0.01), name
        assert shown.group(2) == format_seconds(total * 1e-6)
    assert not [m for m in client.messages if m.type == types.MessageType.Warning]


async def test_the_newest_profile_beside_the_dump_of_another_compile_is_refused(client, real):
    # real.root holds dump/, prof/ and prof_other/: the newest run beside the
    # dump directory is prof_other's, of the other shapes' compile of jit_net
    text = await open_dump(client, real.module, {})
    markdown = await hover_until(client, real.module.as_uri(), text, "%convolution =",
                                 "No measured time")
    assert "**Measured**" not in markdown
    assert "No measured time" in markdown and "another compile" in markdown
    number = re.search(r"module_(\d+)", real.module.name).group(1)
    other = re.search(r"module_(\d+)", real.other_module.name).group(1)
    assert f"module_{number}" in markdown and f"module_{other}" in markdown


async def test_each_unreadable_profile_file_is_one_message(client, real, tmp_path):
    dump = tmp_path / "dump"
    shutil.copytree(real.dump, dump)
    module = dump / real.module.name
    run = dump / "plugins" / "profile" / "2030_01_01_00_00_00"
    run.mkdir(parents=True)
    # made by the test from the real files: the xplane cut in half, the trace
    # overwritten with bytes that are not gzip
    [xplane] = real.trace.parent.glob("*.xplane.pb")
    (run / "vm.xplane.pb").write_bytes(xplane.read_bytes()[:xplane.stat().st_size // 2])
    (run / "vm.trace.json.gz").write_bytes(b"\x1f\x8b not really gzip")
    text = await open_dump(client, module, {})
    for needle in ("%convolution =", "%sort.0 =", "%while.9 ="):
        markdown = await hover_at(client, module, text, needle)
        assert "**Measured**" not in markdown and "No measured time" not in markdown
    warnings = [m.message for m in client.messages if m.type == types.MessageType.Warning]
    assert len(warnings) == 2, warnings
    assert any("vm.xplane.pb" in w for w in warnings)
    assert any("vm.trace.json.gz" in w for w in warnings)
    assert all(w.startswith("Profile not read: ") and "Traceback" not in w for w in warnings)
