"""Paths of the bundled real dumps and small helpers shared by the tests.

Import as ``from tests.helpers import ...`` (pytest puts the repository root on
``sys.path``; see ``pythonpath`` in pyproject.toml).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
CPU_DUMP = EXAMPLES / "cpu_dump"
GPU = EXAMPLES / "gpu"
FP8_DUMP = GPU / "jit_matmul_fn.fp8_cublaslt.sm90_gpu_after_optimizations.txt"
FP8_REGRESSION = GPU / "jit_matmul_fn_with_scale.fp8_gemm_fusion.gpu_after_optimizations.txt"
FP8_FUSED = GPU / "jit_matmul_fn_with_scale.fp8_cublaslt_fused.gpu_after_optimizations.txt"
TRAIN_AFTER = CPU_DUMP / "module_0028.jit_train_step.cpu_after_optimizations.txt"
TRAIN_BEFORE = CPU_DUMP / "module_0028.jit_train_step.before_optimizations.txt"
SHARDED_DUMP = EXAMPLES / "sharded" / "dump"
#: 8 virtual CPU devices: all-reduce, all-gather, reduce-scatter, all-to-all,
#: collective-permute with explicit replica groups (examples/sharded/).
COLLECTIVES_STEP = SHARDED_DUMP / "module_0008.jit_collectives_step.cpu_after_optimizations.txt"
#: all-reduce with mesh[...] replica groups: with device_ids (contracting over
#: "model"), without (over "data").
MESH_MATMUL_MODEL = SHARDED_DUMP / "module_0020.jit_sharded_matmul.cpu_after_optimizations.txt"
MESH_MATMUL_DATA = SHARDED_DUMP / "module_0026.jit_sharded_matmul.cpu_after_optimizations.txt"
#: COLLECTIVES_STEP with its explicit groups rewritten in XLA's iota form (JAX
#: 0.10.2 on the CPU writes none): see tests/data/README.md.
COLLECTIVES_STEP_IOTA = ROOT / "tests" / "data" / "collectives_step.iota.cpu_after_optimizations.txt"
SPMD_MESH8_GPU = (GPU / "deviceless" / "spmd_mesh8" /
                  "module_0001.jit_sharded_matmul.sm_9.0a_gpu_after_optimizations.txt")
CORPUS = ROOT.parent / "shared" / "corpus"
#: Why a test on the corpus skipped (the tests that only add corpus files to the
#: bundled examples run on the examples alone; the run's header says which).
CORPUS_ABSENT = (f"the shared corpus is not present: {CORPUS} (../shared/corpus beside "
                 "this checkout, real HLO files, read only); this test runs where it is")


#: Whether jax[cuda12] (hlo-lsp's ``cuda`` extra) is installed: XLA's GPU compiler,
#: for the deviceless H100 compiles of tests/e2e/test_gpu_*.py and the Neovim test.
HAS_CUDA = importlib.util.find_spec("jax_cuda12_plugin") is not None
#: .ci/run sets HLO_LSP_REQUIRE_GPU_COMPILE: then a missing extra is a failure.
GPU_COMPILE_REQUIRED = bool(os.environ.get("HLO_LSP_REQUIRE_GPU_COMPILE"))
NO_CUDA = ("needs the cuda extra: pip install -e '.[test,cuda]' (or set "
           "HLO_LSP_REQUIRE_GPU_COMPILE to make this a failure)")


def needs_gpu_compile():
    """The pytest marks of a test that compiles for a GPU here (deviceless): slow,
    and skipped without the ``cuda`` extra. Raises RuntimeError at import when
    HLO_LSP_REQUIRE_GPU_COMPILE is set and the extra is missing."""
    import pytest

    if not HAS_CUDA and GPU_COMPILE_REQUIRED:
        raise RuntimeError("HLO_LSP_REQUIRE_GPU_COMPILE is set but jax[cuda12] (the `cuda` "
                           f"extra of hlo-lsp) is not installed for {sys.executable}")
    return [pytest.mark.slow, pytest.mark.skipif(not HAS_CUDA, reason=NO_CUDA)]


def compile_env(xla_flags: str = "") -> dict[str, str]:
    """The environment of a deviceless compile in a child process: this
    environment with ``XLA_FLAGS`` set to ``xla_flags`` (XLA's defaults when
    empty), no ``JAX_PLATFORMS``, and this checkout first on ``PYTHONPATH``."""
    env = dict(os.environ)
    env["XLA_FLAGS"] = xla_flags
    env.pop("JAX_PLATFORMS", None)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def corpus_file(name: str) -> pathlib.Path:
    """The corpus file ``name``; skips the test (:data:`CORPUS_ABSENT`) where the
    corpus is absent, and fails it where the corpus lacks the file."""
    import pytest

    if not CORPUS.is_dir():
        pytest.skip(CORPUS_ABSENT)
    path = CORPUS / name
    assert path.is_file(), f"{name} is not in the corpus at {CORPUS}"
    return path


def cpu_seconds(fn, *args, **kwargs):
    """``(fn(*args, **kwargs), the processor time it took in this thread)``.

    For the tests that a pure function stays linear (or constant) in its input:
    the thread's processor time (``time.thread_time``) is what the work cost, not
    how long the machine took to get to it: other processes keeping the cores
    busy do not count (issue 42: no test fails because the machine is slow). The
    limits compared with it are an order of magnitude above what the function
    takes, and an order below what the quadratic version took."""
    import time

    t0 = time.thread_time()
    result = fn(*args, **kwargs)
    return result, time.thread_time() - t0


def read(path: pathlib.Path) -> str:
    return path.read_text(encoding="utf-8")


def offset_of(text: str, needle: str, delta: int = 0, occurrence: int = 0) -> int:
    """Offset of the ``occurrence``-th ``needle`` in ``text`` plus ``delta``;
    fails the test if absent."""
    pos = -1
    for _ in range(occurrence + 1):
        pos = text.find(needle, pos + 1)
        assert pos >= 0, f"{needle!r} not found"
    return pos + delta


def cursor(fixture: str) -> tuple[str, int, int]:
    """(text, line, character) of ``$0`` in ``fixture``: the cursor of an
    analysis-layer check (rust-analyzer's fixture style), removed from the text."""
    offset = fixture.index("$0")
    text = fixture.replace("$0", "", 1)
    line = text.count("\n", 0, offset)
    return text, line, offset - (text.rfind("\n", 0, offset) + 1)


def position_of(text: str, needle: str, delta: int = 0, start: int = 0):
    """The LSP position (0-based line, UTF-16 column; the test texts are ASCII) of
    the first ``needle`` at or after ``start``, plus ``delta`` characters."""
    from lsprotocol import types

    off = text.index(needle, start) + delta
    return types.Position(line=text.count("\n", 0, off),
                          character=off - (text.rfind("\n", 0, off) + 1))


def snapshot(directory: pathlib.Path) -> dict[str, bytes]:
    """Every file under ``directory`` (relative path -> bytes): compare two
    snapshots to check that nothing changed, byte for byte."""
    return {str(p.relative_to(directory)): p.read_bytes()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def alive(pid: int) -> bool:
    """A process that exists and is not a zombie (Linux /proc).

    The process may exit between opening its stat file and reading it; Linux
    then fails the read with ESRCH (ProcessLookupError), which means gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def chain_module(n: int, fusion_every: int = 0) -> str:
    """HLO text of a module whose ENTRY is a chain of ``n`` adds, each also using
    the parameter ``p`` (so ``p`` has ``n`` users); every ``fusion_every``-th
    step (0: none) is also a kLoop fusion calling the one fused computation
    ``%fc``. About 60 bytes per instruction: 30,000 make a 1.8 MB document."""
    lines = ["HloModule big, is_scheduled=true", ""]
    if fusion_every:
        lines += ["%fc (x: f32[8], y: f32[8]) -> f32[8] {", "  %x = f32[8]{0} parameter(0)",
                  "  %y = f32[8]{0} parameter(1)",
                  "  ROOT %m = f32[8]{0} multiply(f32[8]{0} %x, f32[8]{0} %y)", "}", ""]
    lines += ["ENTRY %main (p: f32[8]) -> f32[8] {", "  %p = f32[8]{0} parameter(0)"]
    prev = "p"
    for i in range(n):
        lines.append(f"  %a{i} = f32[8]{{0}} add(f32[8]{{0}} %{prev}, f32[8]{{0}} %p)")
        prev = f"a{i}"
        if fusion_every and i % fusion_every == 0:
            lines.append(f"  %f{i} = f32[8]{{0}} fusion(f32[8]{{0}} %{prev}, f32[8]{{0}} %p), "
                         "kind=kLoop, calls=%fc")
            prev = f"f{i}"
    lines += [f"  ROOT %r = f32[8]{{0}} negate(f32[8]{{0}} %{prev})", "}", ""]
    return "\n".join(lines)


def open_file(client, path: pathlib.Path, text: str | None = None,
              version: int = 1) -> tuple[str, str]:
    """``textDocument/didOpen`` of the HLO file ``path`` (its text read, unless
    ``text`` is given) by a pytest-lsp ``client``; its ``(uri, text)``."""
    from lsprotocol import types

    text = read(path) if text is None else text
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=path.as_uri(), language_id="hlo",
                                             version=version, text=text)))
    return path.as_uri(), text


async def open_in_session(client, path: pathlib.Path) -> tuple[str, str]:
    """Initialize a session as VS Code does (its capabilities, ``path``'s
    directory the workspace folder, XLA's diagnostics off), then
    :func:`open_file` ``path``."""
    from lsprotocol import types
    from pytest_lsp import client_capabilities

    await client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual_studio_code"),
        workspace_folders=[types.WorkspaceFolder(uri=path.parent.as_uri(), name="dump")],
        initialization_options={"xlaDiagnostics": False}))
    return open_file(client, path)


def uri_path(uri: str) -> pathlib.Path:
    """The path of a ``file:`` URI."""
    from urllib.parse import unquote, urlparse

    return pathlib.Path(unquote(urlparse(uri).path))


def answer_message_requests(client, always: str | None = None) -> None:
    """Make a pytest-lsp ``client`` answer ``window/showMessageRequest`` as a
    user would: with the titles queued in ``client.answers``, in order (none
    queued: ``always``, else the question is dismissed); every question is kept
    in ``client.message_requests``."""
    from lsprotocol import types

    client.answers = []
    client.message_requests = []

    @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def answer(params: types.ShowMessageRequestParams):
        client.message_requests.append(params)
        title = client.answers.pop(0) if client.answers else always
        return types.MessageActionItem(title=title) if title else None


def rss_bytes(pid: int) -> int:
    """Resident set size of process ``pid`` in bytes (Linux ``/proc``), 0 where
    that cannot be read."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def answered_kinds() -> set[str]:
    """Every request and command a new server registers, as the request kinds of
    the tests that ask one of each: the method, or ``workspace/executeCommand
    <command>`` for a command. Leaves out the lifecycle (initialize, shutdown),
    notifications (``$/``, ``did...``) and ``hlo.recompile``, which runs the
    user's program."""
    from hlo_lsp.lsp.server import create_server

    server = create_server()
    try:
        fm = server.protocol.fm
        methods = {m for m in fm.features if "/did" not in m and not m.startswith("$/")
                   and m not in ("initialize", "initialized", "shutdown", "exit")}
        commands = {f"workspace/executeCommand {c}" for c in fm.commands if c != "hlo.recompile"}
        return methods | commands
    finally:
        server.shut_down()


def _shape(s):
    if s is None:
        return None
    return (s.text, s.start, s.end, None if s.elements is None else [_shape(e) for e in s.elements])


def model_key(items: list) -> list:
    """Every field of the items of a ``start`` parse (hlo_lsp.syntax.parser),
    comparable with ==: the scanner, the grammar and the chunked parse are
    checked to build the same model."""
    from hlo_lsp.model.hlo import Computation

    out = []
    for it in items:
        if not isinstance(it, Computation):
            out.append(it)
            continue
        out.append((
            "computation", it.name, it.is_entry, [(p.ref, _shape(p.shape)) for p in it.params],
            _shape(it.result), it.start, it.body_start, it.end, it.execution_thread, it.closed,
            it.inline, model_key(it.nested),
            [(i.name, i.opcode, i.opcode_start, _shape(i.shape),
              [(o.ref, _shape(o.shape)) for o in i.operands], i.attributes, i.called,
              i.control_predecessors, i.start, i.end, i.is_root, i.parameter_number, i.literal,
              i.computation is it) for i in it.instructions]))
    return out


@dataclasses.dataclass(frozen=True)
class RealCpuProfile:
    """What :func:`real_cpu_profile` made: ``root`` (the directory), ``dump`` (XLA's
    dump directory), ``profile`` (``jax.profiler.trace``'s directory of 5
    executions of ``jit_net`` at the first shapes), ``other_profile`` (3
    executions of the other compile), ``module`` and ``other_module`` (the
    after-optimizations files of those two compiles), ``trace`` (the trace JSON
    of ``profile``), ``executions`` (5)."""

    root: pathlib.Path
    dump: pathlib.Path
    profile: pathlib.Path
    other_profile: pathlib.Path
    module: pathlib.Path
    other_module: pathlib.Path
    trace: pathlib.Path
    executions: int = 5
    module_name: str = "jit_net"


def real_cpu_profile(tmp_dir: pathlib.Path) -> RealCpuProfile:
    """The tests' JAX program (:func:`tests.profiled.run_profiled_program`) run on
    the CPU in ``tmp_dir`` (a directory outside the repository), XLA dumping its
    HLO text into ``tmp_dir/dump``: 5 executions at the first shapes profiled in
    ``tmp_dir/prof``, 3 of another compile (other shapes) in ``tmp_dir/prof_other``.
    Real profiles, made here. Slow (a JAX process, about 10 s); the session
    fixture ``real_cpu`` of tests/e2e/conftest.py runs it once."""
    from tests.profiled import SIZE, run_profiled_program

    tmp_dir = pathlib.Path(tmp_dir)
    run_profiled_program(tmp_dir, tmp_dir / "dump", [(tmp_dir / "prof", SIZE, 5),
                                                     (tmp_dir / "prof_other", 8, 3)])
    first, other = sorted((tmp_dir / "dump").glob("module_*.jit_net.cpu_after_optimizations.txt"))
    [trace] = (tmp_dir / "prof").glob("plugins/profile/*/*.trace.json.gz")
    return RealCpuProfile(tmp_dir, tmp_dir / "dump", tmp_dir / "prof", tmp_dir / "prof_other",
                          first, other, trace)


def trace_event_sums(trace: pathlib.Path, module: str) -> dict[str, tuple[int, float]]:
    """Per ``hlo_op`` of ``module``: (events, summed duration in µs), from a trace
    JSON's complete events (``"ph": "X"``), read with gzip and json alone: the
    expectation an acceptance test computes independently of hlo-lsp's reader."""
    import collections
    import gzip
    import json

    with gzip.open(trace, "rt", encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    sums: dict[str, list] = collections.defaultdict(lambda: [0, 0.0])
    for e in events:
        args = e.get("args") or {}
        if e.get("ph") == "X" and args.get("hlo_module") == module and "hlo_op" in args:
            sums[args["hlo_op"]][0] += 1
            sums[args["hlo_op"]][1] += e["dur"]
    return {op: (n, total) for op, (n, total) in sums.items()}


def make_profiled_dump(workdir: pathlib.Path, env: dict[str, str] | None = None
                       ) -> pathlib.Path:
    """A real profiled CPU dump made OUTSIDE the repository (issue 43): the program
    of ``examples/cpu_profiled/`` (``examples/profiled_net.py``: a convolution, a
    sort, a while loop, a conditional, an FFT) copied into ``workdir`` and run by
    ``hlo-lsp dump --platform cpu --profile 5 --out workdir/cpu_profiled``
    (``examples/make_profiled_dump.py``, pruned as the example is). Returns the
    dump directory: ``module_NNNN.jit_net.cpu_after_optimizations.txt`` (with its
    buffer assignment and memory report), ``hlo-lsp-recipe.json`` (``profile``: 5)
    and ``profile/plugins/profile/<run>/<host>.{xplane.pb,trace.json.gz}`` (the 5
    calls after the first). ``env``: the environment (default this process's; set
    ``HLO_LSP_STATE_DIR`` to keep ``hlo-lsp dump``'s confirmation out of the user's
    state). Needs jax; takes a few seconds."""
    spec = importlib.util.spec_from_file_location(
        "make_profiled_dump", EXAMPLES / "make_profiled_dump.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make(pathlib.Path(workdir), env=env)


async def hover_until(client, uri: str, text: str, needle: str, wanted: str,
                      timeout: float = 120.0) -> str:
    """Hover at ``needle`` in the opened document ``uri`` (its ``text``) through a
    pygls client until the answer holds ``wanted``, as a user hovers again: a
    profile is read in the background once its first hover has waited
    (``hlo_lsp.analysis.profiles.FIRST_READ_WAIT_S``). The last answer ("" for
    none) when ``timeout`` seconds pass: a hang guard, not a timing target."""
    import asyncio

    from lsprotocol import types

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        got = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=position_of(text, needle)))
        value = got.contents.value if got is not None else ""
        if wanted in value or loop.time() > deadline:
            return value
        await asyncio.sleep(0.2)
