"""Issue 16: recompiling where the GPUs are, through launchers, tested against
the real ones: a single-node SLURM cluster (Debian's slurmctld, slurmd, munge)
and an OpenSSH sshd on a loopback port, both started by the tests in temporary
directories (tests/e2e/launch_infra.py). The JAX program is a tiny one, on the
CPU. Without the packages (or root) these tests skip, and fail when
HLO_LSP_REQUIRE_LAUNCHERS is set (.ci/run).

Container runtimes (docker, podman, apptainer) are not on the test machine: the
quoting test runs their presets through ``tests/e2e/fake-container``, which
does what their argument contract says (bind mounts must name existing paths,
``-w``/``--pwd`` is the working directory, the image is followed by the command)
and nothing else; see docs/recompile.md for what is and is not exercised.
"""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from hlo_lsp.dump import trust
from hlo_lsp.dump.launchers import make_launcher, preset_launcher
from hlo_lsp.dump.environment import new_recipe, plan_run
from hlo_lsp.dump.recipe import RECIPE_FILE, Recipe, load_recipe
from hlo_lsp.dump.recompile import hlo_files, recompile

from tests.e2e import launch_infra
from tests.helpers import alive, answer_message_requests, snapshot

jax = pytest.importorskip("jax")
pytestmark = pytest.mark.slow

HERE = pathlib.Path(__file__).resolve().parent
FAKE_CONTAINER = HERE / "fake-container"
SERVER = [sys.executable, "-m", "hlo_lsp"]
COMMAND_TIMEOUT_S = 180

PROGRAM_V1 = '''\
import jax
import jax.numpy as jnp


@jax.jit
def step(x):
    return jnp.sin(x) * 2.0 + 1.0


if __name__ == "__main__":
    print(step(jnp.ones((8,), jnp.float32)))
'''

PROGRAM_V2 = PROGRAM_V1.replace("jnp.sin(x) * 2.0 + 1.0", "jnp.cos(jnp.sin(x)) * 2.0")

PROGRAM_FAILS = 'import jax\nraise ValueError("boom from the remote program")\n'

# Writes its pid and a child's pid, then sleeps: cancelling must kill both.
PROGRAM_SLEEPS = '''\
import os, subprocess, sys, time
child = subprocess.Popen(["sleep", "300"])
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(f"{os.getpid()} {child.pid}")
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(300)
'''

# Shell metacharacters, quotes and spaces in every path. Not ':' or ',' (a
# container bind mount cannot hold them: refused with a message, tests/unit), and
# no double quote in the dump directory: XLA_FLAGS cannot hold one in a value
# (xla/parse_flags_from_env.cc: a value is double-quoted, without escapes).
NASTY_PROJECT = "proj dir 'q' $HOME; & (x) `y`"
NASTY_PROGRAM = 'my prog;$(touch pwned) "x" \\.py'
NASTY_DUMP = "dump dir 'd' * |z <w> #"


def _after(dump: pathlib.Path, module: str = "jit_step") -> pathlib.Path:
    [path] = [dump / n for n, d in hlo_files(dump).items()
              if d.module_name == module and d.stage == "after_optimizations"]
    return path


def _remote_leftovers() -> list[str]:
    """What the launchers leave in the remote /tmp: directories named by
    ``launchers.new_job_name`` (``hlo-lsp-`` and 8 hex digits) only, so that other
    programs' temporary files (a fuzz run beside the suite) cannot fail a test."""
    return sorted(p for p in os.listdir("/tmp") if re.fullmatch(r"hlo-lsp-[0-9a-f]{8}", p))


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    with launch_infra.slurm_cluster(tmp_path_factory.mktemp("slurm")) as cluster:
        before = os.environ.get("SLURM_CONF")
        os.environ["SLURM_CONF"] = cluster.env["SLURM_CONF"]
        try:
            yield cluster
        finally:
            if before is None:
                os.environ.pop("SLURM_CONF", None)
            else:
                os.environ["SLURM_CONF"] = before


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    with launch_infra.sshd_server(tmp_path_factory.mktemp("sshd")) as server:
        yield server


def _project(base: pathlib.Path, name: str = "proj", program: str = "prog.py",
             text: str = PROGRAM_V1) -> pathlib.Path:
    project = base / name
    project.mkdir(parents=True)
    (project / program).write_text(text)
    return project


def _dump_cli(project: pathlib.Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("JAX_PLATFORMS", None)
    return subprocess.run([sys.executable, "-m", "hlo_lsp", "dump", *args], cwd=project,
                          capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, env=env)


# ------------------------------------------------------------------ SLURM ---

@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient, slurm):
    answer_message_requests(lsp_client)

    yield
    if lsp_client.capabilities is not None:
        await lsp_client.shutdown_session()


async def test_slurm_dump_and_recompile_from_the_editor(client, slurm, tmp_path):
    """`hlo-lsp dump --launcher slurm` records the launcher; the editor's recompile
    runs through srun (the same launcher: confirmed by the dump) and, for a new
    launcher in the settings, asks first, showing the full command line."""
    project = _project(tmp_path)
    done = _dump_cli(project, "--launcher", "slurm", "--launcher-arg=--time=5",
                     "--platform", "cpu", "--out", "dump", "--", sys.executable, "prog.py")
    assert done.returncode == 0, done.stderr
    assert "running in SLURM (job " in done.stderr
    dump = project / "dump"
    recipe = json.loads((dump / RECIPE_FILE).read_text())
    assert recipe["launcher"]["argv"] == ["srun", "-v", "--job-name={jobname}", "--time=5",
                                          "{command}"]
    assert "sine(" in _after(dump).read_text()

    client.set_configuration({"platform": "cpu"}, section="hlo.recompile")
    await client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual_studio_code"),
        workspace_folders=[types.WorkspaceFolder(uri=project.as_uri(), name="proj")],
        initialization_options={"xlaDiagnostics": False}))
    old = _after(dump)
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=old.as_uri(), language_id="hlo", version=1,
                                             text=old.read_text())))
    text = old.read_text()
    at = types.Position(line=text[:text.index("HloModule")].count("\n"), character=3)
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=old.as_uri()),
        range=types.Range(start=at, end=at), context=types.CodeActionContext(diagnostics=[])))
    assert actions[0].title == "Recompile with JAX on CPU through slurm and refresh"
    (project / "prog.py").write_text(PROGRAM_V2)
    result = await asyncio.wait_for(client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="hlo.recompile", arguments=[old.as_uri()])),
        COMMAND_TIMEOUT_S)
    assert result["ok"], result
    assert client.message_requests == []  # the dump's own launcher: confirmed by `dump`
    assert result["launcher"] == "slurm" and result["jobId"].isdigit()
    assert result["launched"].startswith("srun -v --job-name=hlo-lsp-")
    assert f"running in SLURM (job {result['jobId']})" in result["stages"]
    assert "cosine(" in _after(dump).read_text()
    reports = [r for t, r in client.progress_reports.items() if str(t).startswith("hlo-recompile")]
    messages = [getattr(r, "message", None) or "" for r in reports[-1]]
    assert f"running in SLURM (job {result['jobId']})" in messages, messages
    assert "through slurm" in reports[-1][0].title
    assert f"(job {result['jobId']})" in result["summary"]

    # A new launcher (the settings' own, other srun options): asked first.
    client.set_configuration({"platform": "cpu", "launcher": {
        "preset": "slurm", "args": ["--time=6"]}}, section="hlo.recompile")
    client.answers = ["Run"]
    result = await asyncio.wait_for(client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="hlo.recompile",
                                   arguments=[_after(dump).as_uri()])), COMMAND_TIMEOUT_S)
    assert result["ok"], result
    [asked] = client.message_requests
    assert "Launcher (slurm): `srun -v '--job-name={jobname}' --time=6 '{command}'`" \
        in asked.message
    assert "Full command line: `srun -v --job-name=hlo-lsp-XXXXXXXX --time=6 env " in asked.message
    assert "JAX_PLATFORMS=cpu" in asked.message and sys.executable in asked.message
    assert slurm.jobs() == []


def test_slurm_queued_job_reports_queued_then_running(slurm, tmp_path):
    """The node's one CPU is taken: srun waits, the stages say so with the job id,
    then the job runs and the dump is refreshed."""
    project = _project(tmp_path)
    dump = project / "dump"
    blocker = subprocess.Popen(["srun", "--time=5", "--job-name=blocker", "sleep", "4"],
                               env={**os.environ, **slurm.env}, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            if any(line.endswith("blocker RUNNING") for line in slurm.jobs()):
                break
            time.sleep(0.1)
        recipe = new_recipe([sys.executable, "prog.py"], str(project), str(dump), "cpu",
                            launcher=preset_launcher("slurm", args=["--time=5"]))
        stages = []
        result = asyncio.run(recompile(recipe, dump, platform="cpu", on_stage=stages.append,
                                       probe=False))
    finally:
        blocker.wait(30)
    assert result.ok, result.summary
    job = result.job_id
    assert [s.message() for s in stages] == [f"queued in SLURM (job {job})",
                                             f"running in SLURM (job {job})"]
    assert result.stages == [s.message() for s in stages]
    assert "sine(" in _after(dump).read_text()


async def test_slurm_cancel_leaves_no_job(slurm, tmp_path):
    """A job that sleeps before the program is cancelled once it runs: scancel
    reaches it, squeue is empty, the old dump is unchanged."""
    project = _project(tmp_path)
    dump = project / "dump"
    dump.mkdir()
    (dump / "module_0001.jit_step.before_optimizations.txt").write_text("HloModule jit_step\n")
    before = snapshot(dump)
    recipe = new_recipe(["sh", "-c", f"sleep 300; exec {sys.executable} prog.py"],
                        str(project), str(dump), "cpu",
                        launcher=preset_launcher("slurm", args=["--time=5"]))
    cancel = asyncio.Event()
    stages = []

    def on_stage(stage):
        stages.append(stage)
        if stage.name == "running":
            asyncio.get_running_loop().call_later(1.0, cancel.set)

    task = asyncio.ensure_future(recompile(recipe, dump, platform="cpu", cancel=cancel,
                                           on_stage=on_stage, save=False, probe=False))
    for _ in range(200):
        if stages:
            break
        await asyncio.sleep(0.1)
    assert stages, "srun never said its job id"
    job = stages[0].job
    assert any(line.split()[0] == job for line in slurm.jobs())
    result = await asyncio.wait_for(task, 60)
    assert result.cancelled and not result.ok and result.job_id == job
    for _ in range(100):
        if not slurm.jobs():
            break
        await asyncio.sleep(0.1)
    assert slurm.jobs() == []
    assert snapshot(dump) == before


def test_slurm_timeout_cancels_the_job(slurm, tmp_path):
    """hlo.recompile.timeout / --timeout stops the job too, through scancel."""
    project = _project(tmp_path)
    dump = project / "dump"
    recipe = new_recipe(["sh", "-c", "sleep 300"], str(project), str(dump), "cpu",
                        launcher=preset_launcher("slurm", args=["--time=5"]))
    lines = []
    result = asyncio.run(recompile(recipe, dump, platform="cpu", timeout=3, save=False,
                                   on_output=lambda stream, line: lines.append(line)))
    assert result.timed_out and not result.ok and result.job_id
    assert f"hlo-lsp: stopping the remote side: scancel {result.job_id}" in lines
    for _ in range(100):
        if not slurm.jobs():
            break
        time.sleep(0.1)
    assert slurm.jobs() == []


async def test_slurm_cancel_from_the_editor_reaches_the_job(client, slurm, tmp_path):
    """The settings' own command through the settings' launcher: asked once (a new
    launcher); the progress names the job; its cancel button runs scancel."""
    project = _project(tmp_path)
    dump = project / "dump"
    dump.mkdir()
    old = dump / "module_0001.jit_step.cpu_after_optimizations.txt"
    old.write_text("HloModule jit_step\n")
    before = snapshot(dump)
    client.set_configuration({"platform": "cpu", "cwd": str(project),
                              "command": ["sh", "-c", f"sleep 300; exec {sys.executable} prog.py"],
                              "launcher": {"preset": "slurm", "args": ["--time=5"]}},
                             section="hlo.recompile")
    await client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual_studio_code"),
        workspace_folders=[types.WorkspaceFolder(uri=project.as_uri(), name="proj")],
        initialization_options={"xlaDiagnostics": False}))
    client.answers = ["Run"]
    task = asyncio.ensure_future(client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="hlo.recompile", arguments=[old.as_uri()])))
    token = job = None
    for _ in range(300):
        for t, reports in client.progress_reports.items():
            for r in reports:
                message = getattr(r, "message", None) or ""
                if str(t).startswith("hlo-recompile") and message.startswith("running in SLURM"):
                    token, job = t, message.split("job ")[1].rstrip(")")
        if token is not None:
            break
        await asyncio.sleep(0.1)
    assert token is not None, client.progress_reports
    [asked] = client.message_requests
    assert "first time" in asked.message and "Full command line: `srun -v " in asked.message
    assert any(line.split()[0] == job for line in slurm.jobs())
    client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    result = await asyncio.wait_for(task, 60)
    assert result["cancelled"] and not result["ok"] and result["jobId"] == job
    logs = [m.message for m in client.log_messages]
    assert any(f"stopping the remote side: scancel {job}" in m for m in logs), logs
    for _ in range(100):
        if not slurm.jobs():
            break
        await asyncio.sleep(0.1)
    assert slurm.jobs() == []
    assert snapshot(dump) == before


def test_slurm_ctrl_c_of_hlo_lsp_dump_cancels_the_job(slurm, tmp_path):
    project = _project(tmp_path)
    env = dict(os.environ)
    proc = subprocess.Popen([sys.executable, "-m", "hlo_lsp", "dump", "--launcher", "slurm",
                             "--launcher-arg=--time=5", "--platform", "cpu", "--out", "dump",
                             "--", "sh", "-c", "sleep 300"], cwd=project, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            # as a terminal's Ctrl-C finds it: a suite started in the
                            # background (`cmd &`) hands its children SIGINT ignored
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        for _ in range(300):
            if any(line.endswith(" RUNNING") for line in slurm.jobs()):
                break
            time.sleep(0.1)
        assert any(line.endswith(" RUNNING") for line in slurm.jobs())
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert "stopping the remote side: scancel " in err
    for _ in range(100):
        if not slurm.jobs():
            break
        time.sleep(0.1)
    assert slurm.jobs() == []


# -------------------------------------------------------------------- ssh ---

def _ssh_launcher(sshd, **kw):
    return preset_launcher("ssh", host=sshd.host, ssh_options=sshd.options, **kw)


def test_ssh_dump_copies_back_and_a_failure_keeps_the_old_dump(sshd, tmp_path):
    """`hlo-lsp dump --launcher ssh`: the remote side dumps into its own temporary
    directory, copied back with rsync over the same ssh options, then removed; a
    recompile of a failing remote program leaves the old dump byte-identical."""
    project = _project(tmp_path)
    leftovers = _remote_leftovers()
    done = _dump_cli(project, "--launcher", "ssh", "--host", sshd.host,
                     "--ssh-options", " ".join(sshd.options), "--platform", "cpu",
                     "--out", "dump", "--", sys.executable, "prog.py")
    assert done.returncode == 0, done.stderr
    assert "copying back" in done.stderr and "rsync -a -s -e 'ssh " in done.stderr
    assert "running over ssh (remote process group " in done.stderr
    dump = project / "dump"
    assert "sine(" in _after(dump).read_text()
    saved = load_recipe(dump)
    assert saved.launcher is not None and not saved.launcher.shared
    assert trust.is_confirmed(plan_run(saved, None, saved.launcher))
    # XLA wrote elsewhere (the remote temporary directory), not into a sibling here.
    assert f"--xla_dump_to={dump}" in saved.env["XLA_FLAGS"]
    assert _remote_leftovers() == leftovers

    before = snapshot(dump)
    (project / "prog.py").write_text(PROGRAM_FAILS)
    result = asyncio.run(recompile(saved, dump, platform="cpu", save=False))
    assert not result.ok and result.returncode == 1
    assert "boom from the remote program" in result.stderr_tail
    assert "ssh launcher" in result.error
    assert snapshot(dump) == before
    assert _remote_leftovers() == leftovers

    (project / "prog.py").write_text(PROGRAM_V2)
    result = asyncio.run(recompile(saved, dump, platform="cpu"))
    assert result.ok, result.summary
    assert result.stages[-1] == "copying back"
    assert "cosine(" in _after(dump).read_text()
    assert _remote_leftovers() == leftovers


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def ssh_client(lsp_client: LanguageClient, sshd):
    answer_message_requests(lsp_client)

    yield
    if lsp_client.capabilities is not None:
        await lsp_client.shutdown_session()


async def test_ssh_launcher_from_the_editor_settings(ssh_client, sshd, tmp_path):
    """The VS Code settings' ssh launcher (not shared): asked once with the full
    command line, the dump comes back and is swapped in; a failing remote
    program leaves the old dump."""
    client = ssh_client
    project = _project(tmp_path)
    done = _dump_cli(project, "--platform", "cpu", "--out", "dump", "--", sys.executable,
                     "prog.py")
    assert done.returncode == 0, done.stderr
    dump = project / "dump"
    client.set_configuration({"platform": "cpu", "launcher": {
        "preset": "ssh", "host": sshd.host, "sshOptions": sshd.options}},
        section="hlo.recompile")
    await client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual_studio_code"),
        workspace_folders=[types.WorkspaceFolder(uri=project.as_uri(), name="proj")],
        initialization_options={"xlaDiagnostics": False}))
    leftovers = _remote_leftovers()
    (project / "prog.py").write_text(PROGRAM_V2)
    client.answers = ["Run"]
    result = await asyncio.wait_for(client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="hlo.recompile",
                                   arguments=[_after(dump).as_uri()])), COMMAND_TIMEOUT_S)
    assert result["ok"], result
    [asked] = client.message_requests
    assert "Launcher (ssh): `ssh -o BatchMode=yes -p " in asked.message
    assert "copied back" in asked.message
    assert f"Full command line: `ssh -o BatchMode=yes {' '.join(sshd.options)} {sshd.host} " \
        in asked.message
    assert result["launcher"] == "ssh" and result["stages"][-1] == "copying back"
    assert result["launched"].startswith("ssh -o BatchMode=yes")
    assert "cosine(" in _after(dump).read_text()
    assert _remote_leftovers() == leftovers

    before = snapshot(dump)
    (project / "prog.py").write_text(PROGRAM_FAILS)
    result = await asyncio.wait_for(client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="hlo.recompile",
                                   arguments=[_after(dump).as_uri()])), COMMAND_TIMEOUT_S)
    assert not result["ok"] and "boom from the remote program" in result["stderrTail"]
    assert len(client.message_requests) == 1  # the same launcher: not asked again
    assert snapshot(dump) == before
    assert _remote_leftovers() == leftovers


def test_ssh_copy_back_with_scp_when_rsync_is_missing(sshd, tmp_path, monkeypatch):
    """Without rsync on this machine's PATH the dump comes back with scp, over the
    same options (ssh's -p PORT given to scp as -P PORT)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("ssh", "scp"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    monkeypatch.setenv("PATH", str(bin_dir))
    project = _project(tmp_path)
    dump = project / "dump"
    recipe = new_recipe([sys.executable, "prog.py"], str(project), str(dump), "cpu",
                        launcher=_ssh_launcher(sshd))
    lines = []
    result = asyncio.run(recompile(recipe, dump, platform="cpu", probe=False,
                                   on_output=lambda stream, line: lines.append(line)))
    assert result.ok, result.summary
    [copy] = [line for line in lines if "copying the dump back" in line]
    assert "copying the dump back: scp -r -q -o BatchMode=yes -P " in copy
    assert "sine(" in _after(dump).read_text()


def test_ssh_copy_back_falls_back_to_scp_when_rsync_fails(sshd, tmp_path, monkeypatch):
    """rsync is here but fails (as when the remote machine has none: status 127
    from its shell): the copy is made again with scp, which needs only sshd."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "rsync").write_text("#!/bin/sh\necho 'sh: 1: rsync: not found' >&2\nexit 127\n")
    (bin_dir / "rsync").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    project = _project(tmp_path)
    dump = project / "dump"
    recipe = new_recipe([sys.executable, "prog.py"], str(project), str(dump), "cpu",
                        launcher=_ssh_launcher(sshd))
    lines = []
    result = asyncio.run(recompile(recipe, dump, platform="cpu", probe=False,
                                   on_output=lambda stream, line: lines.append(line)))
    assert result.ok, result.summary
    assert any(line.startswith("hlo-lsp: copying the dump back: rsync ") for line in lines)
    assert any(line.startswith("hlo-lsp: rsync failed, copying with scp: scp -r -q ")
               for line in lines), lines
    assert "sine(" in _after(dump).read_text()


def test_ssh_cancel_kills_the_remote_process_group(sshd, tmp_path):
    project = _project(tmp_path, text=PROGRAM_SLEEPS)
    dump = project / "dump"
    dump.mkdir()
    (dump / "module_0001.jit_step.before_optimizations.txt").write_text("HloModule jit_step\n")
    before = snapshot(dump)
    pids_file = tmp_path / "pids"
    recipe = Recipe([sys.executable, "prog.py", str(pids_file)], str(project))

    async def main():
        cancel = asyncio.Event()
        task = asyncio.ensure_future(recompile(recipe, dump, platform="cpu", cancel=cancel,
                                               launcher=_ssh_launcher(sshd), save=False))
        for _ in range(300):
            if pids_file.exists():
                break
            await asyncio.sleep(0.1)
        pids = [int(p) for p in pids_file.read_text().split()]
        assert all(alive(p) for p in pids)
        cancel.set()
        return pids, await asyncio.wait_for(task, 60)

    pids, result = asyncio.run(main())
    assert result.cancelled and result.job_id
    for _ in range(100):
        if not any(alive(p) for p in pids):
            break
        time.sleep(0.1)
    assert not any(alive(p) for p in pids), "the remote program outlived the cancel"
    assert snapshot(dump) == before


# ---------------------------------------------------------------- quoting ---

def _fake_bin(tmp_path: pathlib.Path) -> pathlib.Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("docker", "podman", "apptainer"):
        (bin_dir / name).symlink_to(FAKE_CONTAINER)
    return bin_dir


@pytest.mark.parametrize("which", ["slurm", "ssh-not-shared", "ssh-shared", "custom-ssh",
                                   "docker", "podman", "apptainer"])
def test_paths_with_spaces_and_metacharacters_round_trip(which, tmp_path, request):
    """The program's path and the dump directory hold spaces, quotes, $, ;, &, |,
    *, backquotes and parentheses: every launcher runs the program itself (no
    shell runs a piece of a path) and the dump lands where it should."""
    base = tmp_path / NASTY_PROJECT
    project = _project(base, "p r", NASTY_PROGRAM)
    dump = base / NASTY_DUMP
    env = dict(os.environ)
    if which == "slurm":
        request.getfixturevalue("slurm")
        launcher = preset_launcher("slurm", args=["--time=5"])
    elif which.startswith("ssh") or which == "custom-ssh":
        sshd = request.getfixturevalue("sshd")
        if which == "custom-ssh":
            launcher = make_launcher(["ssh", *sshd.options, sshd.host,
                                      "cd {cwd} && {env} {command}"], shared=True)
        else:
            launcher = _ssh_launcher(sshd, shared=which == "ssh-shared")
    else:
        env["PATH"] = f"{_fake_bin(tmp_path)}{os.pathsep}{env['PATH']}"
        launcher = preset_launcher(which, image="jax-image", args=[])
    recipe = new_recipe([sys.executable, NASTY_PROGRAM], str(project), str(dump), "cpu",
                        launcher=launcher)
    result = asyncio.run(recompile(recipe, dump, platform="cpu", base_env=env, probe=False))
    assert result.ok, f"{result.launched}\n{result.summary}"
    assert "sine(" in _after(dump).read_text()
    assert not (project / "pwned").exists() and not pathlib.Path("pwned").exists()
    assert load_recipe(dump).launcher == launcher
    assert [p.name for p in base.iterdir() if ".hlo-lsp-" in p.name] == []
