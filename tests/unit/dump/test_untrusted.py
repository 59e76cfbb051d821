"""Special files in a dump directory (issue 41, items 1, 2, 3, 5): a FIFO never
blocks and a link to /dev/zero is never read, whoever reads (hlo_lsp.dump.untrusted,
the workspace index, the reports, the CLI); dump text reaches the terminal and
the recompile confirmation escaped. Real FIFOs (os.mkfifo) and links to
/dev/zero in temporary directories. Every read runs in a thread or a process
with a timeout: a regression fails instead of hanging the suite."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import threading

import pytest

from hlo_lsp.dump import untrusted
from hlo_lsp.dump.untrusted import UntrustedFileError
from tests.helpers import GPU, ROOT, TRAIN_AFTER

HANG_S = 20
AFTER = TRAIN_AFTER.name
REPORT = AFTER[:-4] + "-buffer-assignment.txt"


def _bounded(fn, *args):
    """``fn(*args)`` in a daemon thread: (returned, raised); fails when it has
    not ended after :data:`HANG_S` (a FIFO it blocks on is opened for writing
    first, so the thread ends)."""
    out: dict = {}

    def run():
        try:
            out["value"] = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - the test looks at it
            out["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(HANG_S)
    if worker.is_alive():
        for p in args:
            if isinstance(p, (str, pathlib.Path)) and os.path.exists(p) and \
                    pathlib.Path(p).is_fifo():
                os.close(os.open(p, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail(f"{fn.__name__} blocked for {HANG_S} s")
    return out.get("value"), out.get("error")


@pytest.fixture
def hostile(tmp_path):
    """A dump directory: the real CPU dump of examples/ plus a FIFO and a link
    to /dev/zero named like a dump and like a buffer-assignment report."""
    d = tmp_path / "dump"
    d.mkdir()
    shutil.copy(TRAIN_AFTER, d / AFTER)
    os.mkfifo(d / "module_0001.jit_fifo.cpu_after_optimizations.txt")
    os.symlink("/dev/zero", d / "module_0002.jit_zero.cpu_after_optimizations.txt")
    os.mkfifo(d / "module_0001.jit_fifo.cpu_after_optimizations-buffer-assignment.txt")
    os.symlink("/dev/zero", d / REPORT)
    os.mkfifo(d / "notes.txt")  # read for its first line by discovery
    return d


# ------------------------------------------------------------- the reader ---

def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "module_0001.f.before_optimizations.txt"
    os.mkfifo(fifo)
    _, error = _bounded(untrusted.read_text, fifo)
    assert isinstance(error, UntrustedFileError)
    assert str(error) == f"{fifo}: not a regular file (a FIFO)" and error.errno is None


def test_a_link_to_dev_zero_is_refused_without_reading(tmp_path):
    zero = tmp_path / "zero.hlo"
    os.symlink("/dev/zero", zero)
    _, error = _bounded(untrusted.read_bytes, zero)
    assert isinstance(error, UntrustedFileError)
    assert error.reason == "not a regular file (a character device)"
    assert untrusted.special_file_problem(zero) == error.reason


def test_the_limit_is_the_bytes_read_not_st_size(tmp_path):
    path = tmp_path / "x.txt"
    path.write_bytes(b"a" * 1025)
    with pytest.raises(UntrustedFileError, match="larger than 1 KiB") as caught:
        untrusted.read_text(path, 1024)
    assert caught.value.too_large
    assert untrusted.read_text(path, 2048) == "a" * 1025
    assert untrusted.read_text(path, 10, whole=False) == "a" * 10
    path.write_bytes("é".encode() * 3)  # a character cut at the limit is dropped
    assert untrusted.read_text(path, 3, whole=False) == "é"
    with pytest.raises(UntrustedFileError) as missing:
        untrusted.read_text(tmp_path / "nothing")
    assert missing.value.missing and "No such file" in str(missing.value)
    with pytest.raises(UntrustedFileError, match="a directory"):
        untrusted.read_text(tmp_path)


# ------------------------------------------------------ the workspace index ---

def test_the_index_skips_special_files_and_says_why(hostile):
    from hlo_lsp.dump.index import discover, special_reports, summarize_file

    paths, error = _bounded(discover, [str(hostile)])
    assert error is None
    names = sorted(os.path.basename(p) for p in paths)
    assert names == sorted([AFTER, "module_0001.jit_fifo.cpu_after_optimizations.txt",
                            "module_0002.jit_zero.cpu_after_optimizations.txt"])
    fifo, _ = _bounded(summarize_file, str(hostile / names[0]))
    zero, _ = _bounded(summarize_file, str(hostile / names[1]))
    assert (fifo.skipped, fifo.error) == (True, "not a regular file (a FIFO)")
    assert (zero.skipped, zero.error) == (True, "not a regular file (a character device)")
    real, _ = _bounded(summarize_file, str(hostile / AFTER))
    assert not real.skipped and not real.error and real.computations
    assert sorted(special_reports([str(hostile)])) == [
        (str(hostile / "module_0001.jit_fifo.cpu_after_optimizations-buffer-assignment.txt"),
         "not a regular file (a FIFO)"),
        (str(hostile / REPORT), "not a regular file (a character device)")]


def test_the_index_workers_finish_with_the_real_dumps(hostile):
    """Through the worker processes, as the server indexes (the FIFO blocked a
    worker for good, /dev/zero took it to 4 GB)."""
    from hlo_lsp.dump.index import WorkspaceIndex

    index = WorkspaceIndex(workers=1)
    try:
        def run():
            return index.index(index.scan([str(hostile)]))
        summaries, error = _bounded(run)
        assert error is None
        assert sorted(os.path.basename(s.path) for s in summaries if s.skipped) == [
            "module_0001.jit_fifo.cpu_after_optimizations.txt",
            "module_0002.jit_zero.cpu_after_optimizations.txt"]
        assert any(h.summary.path.endswith(AFTER) for h in index.symbols("add"))
    finally:
        index.close()


# ----------------------------------------------------------------- reports ---

def test_reports_that_are_special_files_are_not_read(hostile):
    from hlo_lsp.dump.reports import load_buffer_assignment_for, load_live_range_for
    from hlo_lsp.features.memory import timeline_for
    from hlo_lsp.syntax.parser import parse

    fifo_dump = str(hostile / "module_0001.jit_fifo.cpu_after_optimizations.txt")
    assert _bounded(load_buffer_assignment_for, fifo_dump) == (None, None)
    assert _bounded(load_buffer_assignment_for, str(hostile / AFTER)) == (None, None)
    os.mkfifo(hostile / (AFTER[:-4] + "-live-range.txt"))
    assert _bounded(load_live_range_for, str(hostile / AFTER)) == (None, None)
    module = parse(TRAIN_AFTER.read_text())
    assert _bounded(timeline_for, str(hostile / AFTER), module) == (None, None)


def test_a_recipe_is_read_by_the_same_reader(tmp_path):
    from hlo_lsp.dump.recipe import RECIPE_FILE, RecipeError, load_recipe

    os.symlink("/dev/zero", tmp_path / RECIPE_FILE)
    _, error = _bounded(load_recipe, tmp_path)
    assert isinstance(error, RecipeError)
    assert str(error) == f"{tmp_path / RECIPE_FILE} is not a regular file (a character device)"


# --------------------------------------------------------------------- CLI ---

def _cli(*args: str, cwd=None) -> subprocess.CompletedProcess:
    """``hlo-lsp ARGS`` in a process of its own, its address space capped at
    1 GiB (the link to /dev/zero read to MemoryError at 2.5 GB), killed after
    :data:`HANG_S` (a FIFO blocked it)."""
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30)); "
            "from hlo_lsp.cli.main import main; sys.exit(main(sys.argv[1:]))")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                          text=True, timeout=HANG_S * 3, env=env, cwd=cwd)


@pytest.mark.parametrize("command", ["check", "show", "summary", "memory", "graph"])
def test_cli_commands_refuse_a_fifo_and_dev_zero(tmp_path, command):
    fifo = tmp_path / "fifo.hlo"
    zero = tmp_path / "zero.hlo"
    os.mkfifo(fifo)
    os.symlink("/dev/zero", zero)
    for path, kind in ((fifo, "a FIFO"), (zero, "a character device")):
        done = _cli(command, str(path))
        assert done.returncode != 0
        assert "Traceback" not in done.stderr and "Error" not in done.stderr
        assert f"{path}: " in done.stderr and f"not a regular file ({kind})" in done.stderr
        assert done.stderr.count("\n") == 1, done.stderr


HOSTILE_HLO = (
    'HloModule m\n\n'
    'ENTRY %main (p: f32[4]) -> f32[4] {\n'
    '  %p = f32[4]{0} parameter(0), metadata={op_name="a\x1b]0;TITLE\x07b" '
    'source_file="s\x1b[2Jx.py" source_line=3}\n'
    '  ROOT %c = f32[4]{0} custom-call(%p), custom_call_target="t\x1b[31mred\u202e", '
    'metadata={op_name="zz\x1b[1m\\nfake line"}\n'
    '}\n')


@pytest.mark.parametrize("command", [["show"], ["show", "--keep-metadata"], ["summary"],
                                     ["graph"], ["graph", "-f", "json"], ["check"]])
def test_no_cli_output_copies_a_control_character_from_the_dump(tmp_path, command):
    path = tmp_path / "esc.hlo"
    path.write_text(HOSTILE_HLO)
    done = _cli(*command, str(path))
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert not [line for line in out.splitlines() if line.lstrip(' "').startswith("fake line")]
    if command[0] == "show":
        assert "\\x1b[2Jx.py" in out and "\\x1b]0;TITLE\\x07b" in out
        assert '"t\\x1b[31mred\\u202e"' in out


def test_cli_memory_with_a_buffer_the_assignment_does_not_name(tmp_path):
    """Issue 41, item 5: the live-range report of spmd_mesh8 names buffers that
    the buffer assignment (missing here) does not: their sizes come from the HLO
    shapes (ArrayShape.byte_size is a field; calling it raised TypeError)."""
    src = GPU / "deviceless" / "spmd_mesh8"
    for p in src.iterdir():
        if p.name.endswith(("_after_optimizations.txt", "-live-range.txt")):
            shutil.copy(p, tmp_path / p.name)
    done = _cli("memory", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("peak: ")
    from hlo_lsp.dump.loading import load
    from hlo_lsp.features.memory import timeline_for
    loaded = load(str(tmp_path))
    t = timeline_for(loaded.path, loaded.module)
    assert any(b.size_source == "HLO shape" and b.size > 0 for b in t.buffers)


# ------------------------------------------------------- the confirmation ---

def test_the_confirmation_shows_each_field_on_one_escaped_line():
    """Issue 41, item 3: recipe arguments with newlines printed fake "Command:"
    and "Directory:" lines before the real ones; U+202E passed unescaped."""
    from hlo_lsp.dump.environment import RunPlan
    from hlo_lsp.analysis.recompile import confirmation_message

    plan = RunPlan(("python", "train.py", "x\nCommand: `python safe.py`\nDirectory: /home",
                    "\x1b[2J", "evil\u202eyp.txt"), "/w/run\u202e\n", "/usr/bin/python3",
                   env_changes=(("XLA_FLAGS", "--a\n--b"),))
    text = confirmation_message("Recompile?", plan, "cpu", None, "/state")
    lines = text.split("\n")
    assert [line.split(":")[0] for line in lines if line.startswith(("Command", "Directory"))] \
        == ["Command", "Directory"]
    assert "\x1b" not in text and "\u202e" not in text
    command = next(line for line in lines if line.startswith("Command: "))
    assert "x\\nCommand: `python safe.py`\\nDirectory: /home" in command
    assert "\\x1b[2J" in command and "evil\\u202eyp.txt" in command
    assert "Directory: /w/run\\u202e\\n" in lines
    assert any(line.startswith("Environment changes: XLA_FLAGS='--a\\n--b'") for line in lines)
