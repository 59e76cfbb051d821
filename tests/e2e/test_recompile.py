"""Issue 4 end to end: `hlo-lsp dump`, recompiling a dump from its JAX program,
and links from metadata to the Python source.

Real JAX programs (CPU) are written into temporary directories; the server is the
real one over stdio, driven by pytest-lsp with VS Code's capabilities. One dump
is made per session with the real CLI (`hlo-lsp dump`) and copied per test. The
recipe and recompile machinery without JAX or a server is tested in
tests/unit/dump/test_recipe.py and tests/unit/dump/test_recompile.py.
"""

from __future__ import annotations

import ast
import asyncio
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from hlo_lsp.dump import platforms
from hlo_lsp.dump import recipe as recipe_mod
from hlo_lsp.dump import trust
from hlo_lsp.dump.names import parse_dump_name
from hlo_lsp.dump.environment import plan_run
from hlo_lsp.dump.recipe import RECIPE_FILE, Recipe
from hlo_lsp.dump.recompile import hlo_files

from tests.helpers import alive, answer_message_requests, open_file, position_of as _pos, snapshot

jax = pytest.importorskip("jax")
pytestmark = pytest.mark.slow  # runs JAX programs

SERVER = [sys.executable, "-m", "hlo_lsp"]
USER_FLAG = "--xla_dump_disable_metadata=false"
COMMAND_TIMEOUT_S = 180

PROGRAM_V1 = '''\
import jax
import jax.numpy as jnp


@jax.jit
def step(x):
    y = jnp.sin(x)  # the sin line
    return y * 2.0 + 1.0


if __name__ == "__main__":
    print(step(jnp.ones((8,), jnp.float32)))
'''

# Compiles an extra jitted function first (the module numbers shift) and adds ops.
PROGRAM_V2 = '''\
import jax
import jax.numpy as jnp


@jax.jit
def warmup(x):
    return x @ x.T


@jax.jit
def step(x):
    y = jnp.sin(x)  # the sin line
    return jnp.cos(y) * 2.0 + jnp.sum(jnp.exp(y))


if __name__ == "__main__":
    print(warmup(jnp.ones((4, 4), jnp.float32)))
    print(step(jnp.ones((8,), jnp.float32)))
'''

PROGRAM_FAILS = '''\
import jax
raise ValueError("boom from the test program")
'''

# Writes its pid and a child's pid, then sleeps: cancelling must kill both.
PROGRAM_SLEEPS = '''\
import os, subprocess, time
child = subprocess.Popen(["sleep", "300"])
with open("pids.tmp", "w") as f:
    f.write(f"{os.getpid()} {child.pid}")
os.replace("pids.tmp", "pids")
time.sleep(300)
'''


def _line_of(text: str, needle: str) -> int:
    """1-based line of ``needle`` in ``text``."""
    return text[:text.index(needle)].count("\n") + 1


def _dump_cli(project: pathlib.Path, *args: str, env: dict | None = None,
              timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hlo_lsp", "dump", *args],
                          cwd=project, capture_output=True, text=True, timeout=timeout,
                          env=env)


def _after(dump: pathlib.Path, module: str = "jit_step") -> pathlib.Path:
    [path] = [dump / n for n, d in hlo_files(dump).items()
              if d.module_name == module and d.stage == "after_optimizations"]
    return path


def _leftovers(project: pathlib.Path) -> list[str]:
    return [p.name for p in project.iterdir() if ".hlo-lsp-" in p.name]


@pytest.fixture(scope="session")
def made(tmp_path_factory) -> tuple[pathlib.Path, subprocess.CompletedProcess]:
    """A project with PROGRAM_V1 and its dump made by the real `hlo-lsp dump`,
    with a user flag and a stale --xla_dump_to in XLA_FLAGS."""
    project = tmp_path_factory.mktemp("proj")
    (project / "prog.py").write_text(PROGRAM_V1)
    env = dict(os.environ, XLA_FLAGS=f"{USER_FLAG} --xla_dump_to=/nonexistent/elsewhere")
    env.pop("JAX_PLATFORMS", None)
    done = _dump_cli(project, "--platform", "cpu", "--out", "dump", "--", sys.executable,
                     "prog.py", env=env)
    assert done.returncode == 0, done.stderr
    return project, done


@pytest.fixture
def project(made, tmp_path) -> pathlib.Path:
    """A private copy of the session's project, its recipe and stack-frame paths
    pointing at the copy; its command is confirmed, as `hlo-lsp dump` run there
    would have recorded it (tests/e2e/conftest.py: the session's state directory)."""
    base, _ = made
    copy = tmp_path / "proj"
    shutil.copytree(base, copy)
    for p in (copy / "dump").iterdir():
        if p.is_file() and p.suffix in (".txt", ".json"):
            p.write_text(p.read_text().replace(str(base), str(copy)))
    trust.remember(plan_run(recipe_mod.load_recipe(copy / "dump")))
    return copy


# ----------------------------------------------------------------- CLI ---

def test_dump_cli_writes_dump_and_recipe(made):
    project, done = made
    dump = project / "dump"
    after = _after(dump)
    assert "sine(" in after.read_text()
    assert (dump / after.name.replace("cpu_after", "before")).is_file()
    data = json.loads((dump / RECIPE_FILE).read_text())
    assert data["format"] == "hlo-lsp-recipe/1"
    assert data["command"] == [sys.executable, "prog.py"]
    assert data["cwd"] == str(project)
    assert data["platform"] == "cpu" and data["env"]["JAX_PLATFORMS"] == "cpu"
    flags = data["env"]["XLA_FLAGS"]
    assert USER_FLAG in flags and "/nonexistent/elsewhere" not in flags
    assert f"--xla_dump_to={dump}" in flags and "--xla_dump_hlo_as_text" in flags
    assert data["jax_version"] == jax.__version__
    assert data["jaxlib_version"] == jax.__version__ or data["jaxlib_version"]
    assert data["python"] == os.path.realpath(sys.executable) or data["python"] == \
        sys.executable
    assert data["created"].endswith("Z") and data["host"]
    # The user's own command line: the editor will not ask about it.
    assert trust.is_confirmed(plan_run(recipe_mod.load_recipe(dump)))
    assert "recipe:" in done.stderr and "jit_step" in done.stderr
    assert not _leftovers(project)


def test_dump_cli_lists_each_module_on_a_short_line(made):
    """Issue 40: one line per module, its stages by name (not its file names);
    the count is of HLO text files only (the CPU dump also holds LLVM IR and
    objects, and XLA's debug options)."""
    project, done = made
    dump = project / "dump"
    lines = [line.removeprefix("hlo-lsp dump: ") for line in done.stderr.splitlines()]
    [at] = [i for i, line in enumerate(lines) if " HLO text file" in line]
    modules = sorted({(d.number, d.module_name) for d in hlo_files(dump).values()})
    assert lines[at].startswith(
        f"{len(modules)} module{'s' if len(modules) != 1 else ''}, "
        f"{2 * len(modules)} HLO text files in {dump} ("), done.stderr
    assert lines[at + 1:at + 1 + len(modules)] == [
        f"  module_{number:04d}.{name}: before_optimizations, cpu_after_optimizations"
        for number, name in modules], done.stderr
    assert any(n.endswith((".ll", ".o", ".debug_options")) for n in os.listdir(dump))


@pytest.mark.skipif(platforms.accelerator_visible("cuda"), reason="this machine has a GPU")
def test_gpu_request_without_gpu_is_a_clear_error(tmp_path):
    (tmp_path / "prog.py").write_text(PROGRAM_V1)
    for args in (["--platform", "cuda"], []):
        done = _dump_cli(tmp_path, *args, "--", sys.executable, "prog.py", timeout=60)
        assert done.returncode == 2
        assert "no NVIDIA GPU is visible" in done.stderr.replace("No NVIDIA", "no NVIDIA")
        assert "--platform cpu" in done.stderr
        assert "Traceback" not in done.stderr
    assert not (tmp_path / "xla_dump").exists()


# ---------------------------------------------------------- the server ---

@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient):
    answer_message_requests(lsp_client)

    yield
    if lsp_client.capabilities is not None:
        await lsp_client.shutdown_session()


async def _start(client: LanguageClient, workspace: pathlib.Path,
                 settings: dict | None = None) -> None:
    if settings is not None:
        client.set_configuration(settings, section="hlo.recompile")
    await client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual_studio_code"),
        workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name="proj")],
        initialization_options={"xlaDiagnostics": False}))


def _ours(token) -> bool:
    """A progress token of hlo.recompile (other features report progress too)."""
    return str(token).startswith("hlo-recompile-")


def _command_of(action) -> dict:
    """The command of a code action. lsprotocol's client-side hook turns every
    CodeAction that has a ``command`` into a Command whose ``command`` is the
    str() of the nested object; undo that."""
    if isinstance(action, types.Command):
        return ast.literal_eval(action.command)
    return {"title": action.command.title, "command": action.command.command,
            "arguments": action.command.arguments}


def _execute(client: LanguageClient, uri: str):
    return asyncio.wait_for(client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="hlo.recompile", arguments=[uri])), COMMAND_TIMEOUT_S)


async def test_recompile_after_change_follows_renumbered_module(client, project):
    await _start(client, project)
    dump = project / "dump"
    old_after, old_before = _after(dump), None
    old_before = dump / old_after.name.replace("cpu_after", "before")
    uri, text = open_file(client, old_after)
    before_uri, _ = open_file(client, old_before)
    old_recipe = json.loads((dump / RECIPE_FILE).read_text())

    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(start=_pos(text, "sine("), end=_pos(text, "sine(")),
        context=types.CodeActionContext(diagnostics=[])))
    action, *others = actions
    assert action.title == "Recompile with JAX on CPU and refresh"
    assert _command_of(action) == {"title": action.title, "command": "hlo.recompile",
                                   "arguments": [uri]}
    # Beside it (no GPU here), the same under jax.profiler (issue 43) and the deviceless
    # compile for a target GPU (issue 10).
    assert [(a.title, _command_of(a)["arguments"]) for a in others] == [
        ("Recompile and profile", [uri, {"profile": 10}]),
        ("Compile for H100 here, no GPU needed", [uri, {"target": "h100"}])]
    header = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(start=_pos(text, "HloModule", 3), end=_pos(text, "HloModule", 3)),
        context=types.CodeActionContext(diagnostics=[])))
    assert [a.title for a in header] == [a.title for a in actions]

    (project / "prog.py").write_text(PROGRAM_V2)
    result = await _execute(client, uri)

    assert result["ok"], result
    new_after = pathlib.Path(result["mapping"][uri][len("file://"):])
    new_before = pathlib.Path(result["mapping"][before_uri][len("file://"):])
    assert parse_dump_name(new_after.name).module_name == "jit_step"
    assert parse_dump_name(new_after.name).number != parse_dump_name(old_after.name).number
    assert new_before.name.replace("before", "cpu_after") == new_after.name
    assert not old_after.exists() and not old_before.exists()
    new_text = new_after.read_text()
    assert "cosine(" in new_text and "jit_warmup" in " ".join(os.listdir(dump))
    assert result["shownDocuments"] == [new_after.as_uri(), new_before.as_uri()]
    assert [d.uri for d in client.shown_documents] == result["shownDocuments"]
    assert client.shown_documents[0].take_focus and not client.shown_documents[1].take_focus
    for _ in range(20):
        if new_after.as_uri() in client.diagnostics:
            break
        await asyncio.sleep(0.1)
    assert list(client.diagnostics[new_after.as_uri()]) == []
    assert list(client.diagnostics[uri]) == []
    # What changed: counted per module, said in a message.
    [step] = [c for c in result["changes"] if c["module"] == "jit_step"]
    assert step["fileBefore"] == old_after.name and step["fileAfter"] == new_after.name
    assert step["totals"]["fusions"][0] >= 1 and \
        step["totals"]["fusions"] != [0, 0]
    # ... and in cost terms (V2 adds an exp and a sum: more transcendentals and FLOPs)
    costs = step["costs"]
    assert costs["device"] == "cpu"
    assert costs["transcendentals"][1] > costs["transcendentals"][0] > 0
    assert costs["flops"][1] > costs["flops"][0]
    [warm] = [c for c in result["changes"] if c["module"] == "jit_warmup"]
    assert warm["fileBefore"] is None and warm["costs"] is None
    info = [m.message for m in client.messages if m.type == types.MessageType.Info]
    assert any(f"{old_after.name} is now {new_after.name}" in m and "jit_step (" in m
               for m in info), info
    assert "Cost (ENTRY as XLA's cost analysis counts it; time: roofline on CPU" \
        in result["summary"]
    # Progress and streamed output.
    [reports] = [r for t, r in client.progress_reports.items() if _ours(t)]
    assert reports[0].kind == "begin" and reports[0].cancellable
    assert "on CPU" in reports[0].title and reports[-1].kind == "end"
    logs = [m.message for m in client.log_messages]
    assert any("[hlo.recompile stdout] [" in m for m in logs), logs
    # The recipe was refreshed, not lost.
    new_recipe = json.loads((dump / RECIPE_FILE).read_text())
    assert new_recipe["command"] == old_recipe["command"]
    assert new_recipe["env"]["XLA_FLAGS"] == old_recipe["env"]["XLA_FLAGS"]
    assert not _leftovers(project)


async def test_failing_program_leaves_old_dump_intact(client, project):
    await _start(client, project)
    dump = project / "dump"
    before = snapshot(dump)
    uri, _ = open_file(client, _after(dump))
    (project / "prog.py").write_text(PROGRAM_FAILS)
    result = await _execute(client, uri)
    assert not result["ok"] and not result["cancelled"]
    assert result["returncode"] == 1 and "exited with status 1" in result["error"]
    assert "ValueError: boom from the test program" in result["stderrTail"]
    errors = [m.message for m in client.messages if m.type == types.MessageType.Error]
    assert any("boom from the test program" in m and "unchanged" in m for m in errors)
    assert snapshot(dump) == before
    assert not _leftovers(project)


async def _wait_for_pids(project: pathlib.Path) -> list[int]:
    for _ in range(300):
        if (project / "pids").exists():
            return [int(p) for p in (project / "pids").read_text().split()]
        await asyncio.sleep(0.1)
    raise AssertionError("the program did not start")


async def _gone(pids: list[int]) -> bool:
    for _ in range(100):
        if not any(alive(p) for p in pids):
            return True
        await asyncio.sleep(0.1)
    return False


async def test_cancel_from_progress_kills_process_tree(client, project):
    await _start(client, project)
    dump = project / "dump"
    before = snapshot(dump)
    uri, _ = open_file(client, _after(dump))
    (project / "prog.py").write_text(PROGRAM_SLEEPS)
    task = asyncio.ensure_future(_execute(client, uri))
    pids = await _wait_for_pids(project)
    assert all(alive(p) for p in pids)
    [token] = [t for t in client.progress_reports if _ours(t)]
    client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    result = await asyncio.wait_for(task, 30)
    assert result["cancelled"] and not result["ok"]
    assert await _gone(pids)
    assert snapshot(dump) == before
    assert not _leftovers(project)
    assert any("cancelled" in m.message for m in client.messages)


async def test_cancel_request_kills_process_tree(client, project):
    await _start(client, project)
    dump = project / "dump"
    before = snapshot(dump)
    uri, text = open_file(client, _after(dump))
    (project / "prog.py").write_text(PROGRAM_SLEEPS)
    future = client.protocol.send_request(types.WORKSPACE_EXECUTE_COMMAND,
                                          types.ExecuteCommandParams(command="hlo.recompile",
                                                                     arguments=[uri]),
                                          msg_id="recompile-1")
    pids = await _wait_for_pids(project)
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="recompile-1"))
    with pytest.raises(Exception, match="cancel"):
        await asyncio.wait_for(asyncio.wrap_future(future), 30)
    assert await _gone(pids)
    for _ in range(50):
        if not _leftovers(project):
            break
        await asyncio.sleep(0.1)
    assert snapshot(dump) == before and not _leftovers(project)
    # The server still answers.
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=_pos(text, "sine(")))
    assert hover is not None


async def test_links_definition_and_hover_reach_the_jnp_line(client, made):
    project, _ = made
    await _start(client, project)
    uri, text = open_file(client, _after(project / "dump"))
    prog = project / "prog.py"
    sin_line = _line_of(prog.read_text(), "jnp.sin(x)")
    # The instruction XLA made of jnp.sin, and its metadata on the same line.
    sine_at = text.index("sine(")
    line_no = text.count("\n", 0, sine_at)
    line = text.splitlines()[line_no]
    assert "stack_frame_id=" in line.split("metadata=")[1]

    links = await client.text_document_document_link_async(
        types.DocumentLinkParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    [link] = [lk for lk in links if lk.range.start.line == line_no]
    assert link.target == f"{prog.as_uri()}#L{sin_line}"
    assert link.range.start.character == line.index("stack_frame_id=")
    assert link.range.end.character == line.index("}", line.index("stack_frame_id="))
    assert "(step)" in link.tooltip and "(<module>)" in link.tooltip
    assert all(lk.target.startswith(prog.as_uri() + "#L") for lk in links)

    # Definition on the metadata: the same file and line.
    [loc] = await client.text_document_definition_async(types.DefinitionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=line_no, character=line.index("metadata=") + 2)))
    assert loc.uri == prog.as_uri() and loc.range.start.line == sin_line - 1

    # Hover: the whole Python call stack, down to the script's <module> frame.
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=line_no, character=line.index("sine("))))
    md = hover.contents.value
    assert f"**Python** `{prog}:{sin_line}:" in md and "(<module>)`" in md


async def test_relative_source_file_resolves_against_recipe_cwd(client, made, tmp_path):
    project, _ = made
    dump = tmp_path / "dump"
    dump.mkdir()
    recipe_mod.save_recipe(Recipe([sys.executable, "prog.py"], str(project)), dump)
    text = ('HloModule m\n\nENTRY %e (p: f32[8]) -> f32[8] {\n'
            '  %p = f32[8]{0} parameter(0)\n'
            '  ROOT %s = f32[8]{0} sine(%p), metadata={op_type="sin" op_name="jit(step)/sin" '
            'source_file="prog.py" source_line=7}\n}\n')
    path = dump / "module_0001.jit_step.before_optimizations.txt"
    path.write_text(text)
    await _start(client, tmp_path)
    uri, _ = open_file(client, path)
    [link] = await client.text_document_document_link_async(
        types.DocumentLinkParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    assert link.target == f"{(project / 'prog.py').as_uri()}#L7"
    assert link.range.start == _pos(text, 'source_file=')
    assert link.range.end == _pos(text, "source_line=7", len("source_line=7"))


async def test_inferred_recipe_runs_only_after_confirmation(client, project):
    dump = project / "dump"
    (dump / RECIPE_FILE).unlink()
    before = snapshot(dump)
    await _start(client, project)
    uri, _ = open_file(client, _after(dump))
    client.answers = ["Cancel"]
    result = await _execute(client, uri)
    assert result["cancelled"] and not result["ok"]
    [asked] = client.message_requests
    assert [a.title for a in asked.actions] == ["Run", "Cancel"]
    assert "prog.py is the outermost Python file" in asked.message
    assert "prog.py`" in asked.message and str(project) in asked.message
    assert snapshot(dump) == before
    (project / "prog.py").write_text(PROGRAM_V2)
    client.answers = ["Run"]
    result = await _execute(client, uri)
    assert result["ok"], result
    assert len(client.message_requests) == 2
    assert "cosine(" in _after(dump).read_text()
    saved = json.loads((dump / RECIPE_FILE).read_text())
    assert saved["command"][-1] == "prog.py" and saved["cwd"] == str(project)


# Not JAX: writes one dump file where XLA_FLAGS says, as XLA would.
FAKE_PROGRAM = '''\
import os, re, sys
where = re.search(r"--xla_dump_to=(\\S+)", os.environ["XLA_FLAGS"]).group(1)
name = "module_0042.jit_step.cpu_after_optimizations.txt"
with open(os.path.join(where, name), "w") as f:
    f.write("HloModule jit_step\\n\\nENTRY %main (p: f32[]) -> f32[] {\\n"
            "  ROOT %p = f32[] parameter(0)\\n}\\n")
print("platform", os.environ["JAX_PLATFORMS"], "cwd", os.path.basename(os.getcwd()))
'''


async def test_configured_command_runs_without_asking(client, project, tmp_path):
    dump = project / "dump"
    (dump / RECIPE_FILE).unlink()
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "fake.py").write_text(FAKE_PROGRAM)
    await _start(client, project, settings={"command": [sys.executable, "fake.py"],
                                            "cwd": str(tools), "platform": "cpu"})
    old = _after(dump)
    uri, _ = open_file(client, old)
    result = await _execute(client, uri)
    assert result["ok"], result
    assert client.message_requests == []
    new = dump / "module_0042.jit_step.cpu_after_optimizations.txt"
    assert result["mapping"] == {uri: new.as_uri()} and not old.exists()
    assert any("platform cpu cwd tools" in m.message for m in client.log_messages)
    # A command from the settings stays in the settings: no recipe is written.
    assert not (dump / RECIPE_FILE).exists()
    [step] = [c for c in result["changes"] if c["module"] == "jit_step"]
    assert step["totals"]["fusions"][1] == 0 and step["fileAfter"] == new.name


async def test_gpu_setting_without_gpu_is_a_clear_message(client, project):
    if platforms.accelerator_visible("cuda"):
        pytest.skip("this machine has a GPU")
    await _start(client, project, settings={"platform": "cuda"})
    dump = project / "dump"
    before = snapshot(dump)
    uri, _ = open_file(client, _after(dump))
    result = await _execute(client, uri)
    assert not result["ok"]
    [msg] = [m for m in client.messages if m.type == types.MessageType.Error]
    assert "no NVIDIA GPU is visible" in msg.message
    assert "hlo.recompile.platform" in msg.message and "Traceback" not in msg.message
    assert snapshot(dump) == before
