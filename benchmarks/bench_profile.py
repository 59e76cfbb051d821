"""What profiles cost (issue 43): reading a real large ``jax.profiler`` capture,
joining it to a module, and the hover that shows it, each against a reference
measured in the same run.

At bench time, ``hlo-lsp dump --platform cpu --profile CALLS`` runs a JAX program
(:data:`PROGRAM`: a ``fori_loop`` of ``--steps`` iterations of a matrix product, a
sort and a conditional; about 8 instruction events per iteration on the CPU, so
the default 60 calls of 250 steps give about 120,000 events, a 14 MB xplane
and a 2.8 MB trace JSON) into a temporary directory. Then ``--rounds`` rounds,
each measurement in a fresh process, interleaved (ours, then its reference):

1. the trace JSON: :func:`hlo_lsp.dump.profiles.read_trace_json` against plain
   ``json.load(gzip.open(trace))`` (time of the call; the process's peak RSS,
   ``VmHWM``, over its RSS before the call);
2. the xplane: :func:`hlo_lsp.dump.xplane.read_xplane` (all of it: the worker
   process's start, its jax import and parse, its JSON answer read back into
   events) against a process that imports jax, reads the file with
   ``jax.profiler.ProfileData.from_file`` and visits every event of every line
   and every stat of each, which any reader of the xplane must at least do
   (timed from before the jax import, so the reference's interpreter start,
   about 20 ms, is left out of it and counted in ours); peak RSS of the
   worker against the reference process's. Also the worker's own pass
   (``hlo_lsp.dump.xplane._answer``, jax already imported) against
   ``from_file`` and the visit alone;
3. the join: :func:`hlo_lsp.model.profile.measure` of the run's events for the
   module, µs per event, against a plain pass summing the durations per
   instruction (in this process, ``--rounds`` times each, interleaved);
4. through the real server (pygls' client over stdio, the dump directory as the
   workspace folder, a fresh server per measurement): ``didOpen`` of the
   ``*after_optimizations.txt`` file -> the first hover of an instruction in
   the loop that shows the **Measured** paragraph (the profile's read
   included; a hover without it is sent again 20 ms later), then ``--hovers``
   hovers over every instruction of the file in turn (p50 / p99) and the
   server's RSS; against the same with the ``profile`` setting pointing at an
   empty directory;
5. as an editor and a user do it: ``didOpen``, a code lens request and
   ``--burst`` hovers on different instructions 0.2 s apart, the time until all
   are answered and how many xplane readers the server ran at once, against
   the same without a profile;
6. the first hover of the same module's before-optimizations file, which no
   profile measures, with the profile set and without.

Medians (and best) of the rounds; the machine's cores and load average before
and after are printed with the table, and the command that regenerates it.
Timing targets are read from these figures, never asserted in tests.

    python benchmarks/bench_profile.py [--calls 60] [--steps 250] [--rounds 4]
        [--hovers 200] [--burst 4] [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import pathlib
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: The JAX program profiled: ``python prog.py CALLS STEPS`` calls the jitted
#: ``net`` CALLS + 1 times (the first compiles; ``hlo-lsp dump --profile CALLS``
#: traces the others).
PROGRAM = '''\
import sys

import jax
import jax.numpy as jnp
from jax import lax

CALLS, STEPS = int(sys.argv[1]), int(sys.argv[2])


def net(x, w):
    def body(i, v):
        h = jnp.sort(jnp.tanh(v @ w) * 1.01, axis=-1)
        return h + lax.cond(h.sum() > 0, lambda a: a * 0.5, lambda a: a - 1.0, h)

    return lax.fori_loop(0, STEPS, body, x).sum()


f = jax.jit(net)
x, w = jnp.ones((8, 32)), jnp.ones((32, 32)) * 0.01
for _ in range(CALLS + 1):
    f(x, w).block_until_ready()
'''
MODULE = "jit_net"


def make_profile(workdir: pathlib.Path, calls: int, steps: int) -> dict:
    """Run :data:`PROGRAM` under ``hlo-lsp dump --platform cpu --profile CALLS``
    into ``workdir/dump``; ``{"dump", "module", "run", "xplane", "trace"}``
    (paths) and the seconds it took. Raises CalledProcessError."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "prog.py").write_text(PROGRAM)
    env = dict(os.environ)
    env.pop("JAX_PLATFORMS", None)
    env.pop("XLA_FLAGS", None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "hlo_lsp", "dump", "--platform", "cpu",
                    "--profile", str(calls), "--out", "dump", "--", sys.executable, "prog.py",
                    str(calls), str(steps)],
                   cwd=workdir, env=env, check=True, capture_output=True, text=True, timeout=900)
    seconds = time.perf_counter() - t0
    dump = workdir / "dump"
    [module] = sorted(dump.glob(f"module_*.{MODULE}.cpu_after_optimizations.txt"))
    [run] = sorted((dump / "profile" / "plugins" / "profile").iterdir())
    [xplane] = sorted(run.glob("*.xplane.pb"))
    [trace] = sorted(run.glob("*.trace.json.gz"))
    return {"dump": dump, "module": module, "run": run, "xplane": xplane, "trace": trace,
            "seconds": seconds}


# --- one measurement in a process of its own ----------------------------------------

def _status(field: str) -> int:
    """A size of this process from ``/proc/self/status`` (``VmRSS``, ``VmHWM``), bytes.
    (``VmHWM``, not ``ru_maxrss``: a process started by ``vfork`` + ``exec``
    inherits its parent's peak in ``ru_maxrss``.)"""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def visit_xplane(path: str) -> tuple[int, int]:
    """The reference reader of an xplane: ``ProfileData.from_file`` and every
    event of every line of every plane, with its name, times and every stat
    read; ``(events, stats)``."""
    from jax.profiler import ProfileData

    events = stats = 0
    for plane in ProfileData.from_file(path).planes:
        for line in plane.lines:
            for event in line.events:
                event.name, event.start_ns, event.duration_ns
                events += 1
                for _key, _value in event.stats:
                    stats += 1
    return events, stats


def one(kind: str, path: str) -> dict:
    """``kind`` on the file ``path``, in this (fresh) process: seconds of the
    call, peak RSS over the RSS before it (bytes), and for the xplane reader the
    worker's peak RSS."""
    if kind in ("answer", "visit"):
        import jax.profiler  # noqa: F401 - the import is not what these measure
    from hlo_lsp.dump.profiles import read_trace_json
    from hlo_lsp.dump.xplane import _answer, read_xplane
    from hlo_lsp.dump.profile_data import MAX_PROFILE_BYTES

    base = _status("VmRSS")
    t0 = time.perf_counter()
    if kind == "trace":
        n = len(read_trace_json(path).events)
    elif kind == "json":
        with gzip.open(path) as f:
            n = len(json.load(f)["traceEvents"])
    elif kind == "xplane":
        n = len(read_xplane(path).events)
    elif kind == "answer":
        n = len(_answer(path, MAX_PROFILE_BYTES)["events"])
    elif kind in ("visit", "import+visit"):
        n = visit_xplane(path)[0]
    else:
        raise ValueError(kind)
    seconds = time.perf_counter() - t0
    peak = _status("VmHWM")
    # the worker's peak (ru_maxrss of the children waited for: the worker,
    # started from this small process)
    child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    return {"s": seconds, "items": n, "rss_growth": max(peak - base, 0), "peak_rss": peak,
            "child_peak_rss": child}


def one_in_process(kind: str, path: pathlib.Path) -> dict:
    """:func:`one` in a fresh Python process (``JAX_PLATFORMS=cpu``)."""
    env = dict(os.environ, JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="3",
               PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", ""))
                                          if p))
    done = subprocess.run([sys.executable, __file__, "--one", kind, str(path)], env=env,
                          capture_output=True, text=True, check=False, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"{kind} of {path} failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- the join -------------------------------------------------------------------------

def plain_sums(events, module: str) -> dict[str, float]:
    """The reference of the join: the durations summed per instruction of
    ``module`` in one pass."""
    sums: dict[str, float] = defaultdict(float)
    for e in events:
        if e.module == module:
            sums[e.op] += e.duration_us
    return sums


def time_join(events, program_id: int | None, rounds: int) -> dict:
    """:func:`hlo_lsp.model.profile.measure` of ``events`` for :data:`MODULE`
    (with ``program_id`` when given) against :func:`plain_sums`, interleaved;
    seconds per round."""
    from hlo_lsp.model.profile import measure

    ours, ref = [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        measured = measure(events, MODULE, program_id)
        ours.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        plain_sums(events, MODULE)
        ref.append(time.perf_counter() - t0)
    assert measured is not None and measured.executions > 0
    return {"ours": ours, "ref": ref}


# --- through the server ---------------------------------------------------------------

def instruction_needles(text: str) -> list[str]:
    """``%name =`` of every instruction of the module text."""
    out = []
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("ROOT "):
            s = s[5:]
        if s.startswith("%") and " = " in s:
            out.append(s.split(" = ", 1)[0] + " =")
    return out


async def _start(module: pathlib.Path, profile_dir: pathlib.Path):
    """A fresh server over stdio, initialized with the dump directory as the
    workspace folder and the ``profile`` setting ``profile_dir``."""
    from lsprotocol import types
    from pygls.lsp.client import LanguageClient

    client = LanguageClient("bench-profile", "0")

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def _diagnostics(params) -> None:  # not measured here
        pass

    # this checkout's hlo_lsp, wherever the benchmark is run from
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p))
    await client.start_io(sys.executable, "-m", "hlo_lsp", env=env)
    dump = module.parent
    await client.initialize_async(types.InitializeParams(
        capabilities=types.ClientCapabilities(), root_uri=dump.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=dump.as_uri(), name="dump")],
        initialization_options={"xlaDiagnostics": False, "profile": str(profile_dir)}))
    client.initialized(types.InitializedParams())
    return client


async def _stop(client) -> None:
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()


def _open(client, module: pathlib.Path, text: str) -> None:
    from lsprotocol import types

    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=module.as_uri(), language_id="hlo",
                                             version=1, text=text)))


async def _hover(client, module: pathlib.Path, text: str, at: str) -> str:
    from lsprotocol import types

    from tests.helpers import position_of

    got = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=module.as_uri()),
        position=position_of(text, at)))
    return got.contents.value if got is not None else ""


async def server_session(module: pathlib.Path, profile_dir: pathlib.Path, needle: str,
                         hovers: int) -> dict:
    """A fresh server with the ``profile`` setting ``profile_dir``: didOpen of
    ``module`` -> the first hover at ``needle`` that shows **Measured** (when
    ``profile_dir`` holds a run; else the first hover), then ``hovers`` hovers
    over every instruction in turn, and the server's RSS."""
    from tests.helpers import rss_bytes

    client = await _start(module, profile_dir)
    try:
        text = module.read_text(encoding="utf-8")
        want_measured = any(profile_dir.rglob("*.xplane.pb"))
        t0 = time.perf_counter()
        _open(client, module, text)
        sent = 0
        while True:
            markdown = await _hover(client, module, text, needle)
            sent += 1
            if not want_measured or "**Measured**" in markdown:
                break
            if time.perf_counter() - t0 > 300:
                raise RuntimeError(f"no Measured paragraph after 300 s: {markdown[:300]}")
            await asyncio.sleep(0.02)
        first = time.perf_counter() - t0
        shown = "**Measured**" in markdown
        needles = instruction_needles(text)
        latencies = []
        for i in range(hovers):
            h0 = time.perf_counter()
            await _hover(client, module, text, needles[i % len(needles)])
            latencies.append(time.perf_counter() - h0)
        rss = rss_bytes(client._server.pid)
        return {"first_hover_s": first, "first_hover_sent": sent, "measured_shown": shown,
                "hover_s": latencies, "rss": rss}
    finally:
        await _stop(client)


async def first_hover(module: pathlib.Path, profile_dir: pathlib.Path) -> float:
    """A fresh server with the ``profile`` setting ``profile_dir``: seconds from
    didOpen of ``module`` to the answer of a hover on an instruction (the
    before-optimizations file, which no profile measures, in the benchmark)."""
    client = await _start(module, profile_dir)
    try:
        text = module.read_text(encoding="utf-8")
        needles = instruction_needles(text)
        t0 = time.perf_counter()
        _open(client, module, text)
        await _hover(client, module, text, needles[len(needles) // 2])
        return time.perf_counter() - t0
    finally:
        await _stop(client)


def xplane_workers(server_pid: int) -> int:
    """How many xplane readers (``python -m hlo_lsp.dump.xplane``) the server
    ``server_pid`` runs now (Linux ``/proc``)."""
    n = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
            with open(f"/proc/{entry}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if parent == server_pid and b"hlo_lsp.dump.xplane" in cmdline:
            n += 1
    return n


async def burst_session(module: pathlib.Path, profile_dir: pathlib.Path, hovers: int,
                        gap: float = 0.2) -> dict:
    """A fresh server: didOpen, a code lens request at once (an editor asks for
    one on opening) and ``hovers`` hovers on different instructions ``gap``
    seconds apart (the mouse moving) while the profile is read: the seconds
    until every one is answered, and the most xplane readers the server ran at
    once."""
    from lsprotocol import types

    client = await _start(module, profile_dir)
    try:
        text = module.read_text(encoding="utf-8")
        needles = instruction_needles(text)
        needles = needles[len(needles) // 2:][:hovers]
        pid = client._server.pid
        t0 = time.perf_counter()
        _open(client, module, text)
        tasks = [asyncio.ensure_future(client.text_document_code_lens_async(
            types.CodeLensParams(text_document=types.TextDocumentIdentifier(
                uri=module.as_uri()))))]
        peak = 0
        for at in needles:
            tasks.append(asyncio.ensure_future(_hover(client, module, text, at)))
            until = time.perf_counter() + gap
            while time.perf_counter() < until:
                peak = max(peak, xplane_workers(pid))
                await asyncio.sleep(0.02)
        while not all(t.done() for t in tasks):
            peak = max(peak, xplane_workers(pid))
            await asyncio.sleep(0.02)
        answered = time.perf_counter() - t0
        await asyncio.gather(*tasks)
        return {"all_answered_s": answered, "peak_workers": peak}
    finally:
        await _stop(client)


def p99(values: list[float]) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(0.99 * (len(s) - 1))))]


# --- the run --------------------------------------------------------------------------

def busiest_op(events) -> str:
    """The instruction of :data:`MODULE` with the most events (one in the loop)."""
    counts: dict[str, int] = defaultdict(int)
    for e in events:
        if e.module == MODULE:
            counts[e.op] += 1
    return max(sorted(counts), key=counts.get)


def run(calls: int, steps: int, rounds: int, hovers: int, burst: int = 4, out=print) -> dict:
    """Make the profile, then ``rounds`` interleaved rounds of every
    measurement; the figures (seconds, bytes)."""
    from hlo_lsp.dump.profiles import read_trace_json
    from hlo_lsp.dump.xplane import read_xplane

    with tempfile.TemporaryDirectory(prefix="bench-profile-") as tmp:
        tmp = pathlib.Path(tmp)
        made = make_profile(tmp / "work", calls, steps)
        empty = tmp / "no-profile"
        empty.mkdir()
        events = read_trace_json(str(made["trace"])).events
        x_events = read_xplane(str(made["xplane"])).events
        program_ids = {e.program_id for e in x_events if e.module == MODULE} - {None}
        program_id = min(program_ids) if program_ids else None
        needle = f"%{busiest_op(events)} ="
        out(f"profile: {len(events)} instruction events of {MODULE} ({calls} calls of {steps} "
            f"steps) in {made['seconds']:.1f} s; "
            f"xplane {made['xplane'].stat().st_size / 1e6:.1f} MB, "
            f"trace JSON {made['trace'].stat().st_size / 1e6:.1f} MB gzipped; "
            f"module {made['module'].name}, hover at {needle}", flush=True)
        kinds = [("trace", made["trace"]), ("json", made["trace"]),
                 ("xplane", made["xplane"]), ("import+visit", made["xplane"]),
                 ("answer", made["xplane"]), ("visit", made["xplane"])]
        procs: dict[str, list[dict]] = {k: [] for k, _ in kinds}
        servers: dict[str, list] = {"with": [], "without": [], "burst": [],
                                    "burst_without": [], "before": [], "before_without": []}
        for r in range(rounds):
            for kind, path in kinds:
                procs[kind].append(one_in_process(kind, path))
            servers["with"].append(asyncio.run(server_session(
                made["module"], made["dump"] / "profile", needle, hovers)))
            servers["without"].append(asyncio.run(server_session(
                made["module"], empty, needle, hovers)))
            before = made["module"].with_name(made["module"].name.replace(
                "cpu_after_optimizations", "before_optimizations"))
            servers["before"].append(asyncio.run(first_hover(before, made["dump"] / "profile")))
            servers["before_without"].append(asyncio.run(first_hover(before, empty)))
            if burst:
                servers["burst"].append(asyncio.run(burst_session(
                    made["module"], made["dump"] / "profile", burst)))
                servers["burst_without"].append(asyncio.run(burst_session(
                    made["module"], empty, burst)))
            out(f"round {r + 1}/{rounds}: read_xplane {procs['xplane'][-1]['s']:.2f} s, "
                f"first hover with the profile {servers['with'][-1]['first_hover_s']:.2f} s",
                flush=True)
        join = time_join(events, None, rounds)
        join_program = time_join(x_events, program_id, rounds) if program_id is not None else None
        return {"events": len(events), "calls": calls, "steps": steps, "rounds": rounds,
                "hovers": hovers, "burst": burst, "profile_seconds": made["seconds"],
                "xplane_bytes": made["xplane"].stat().st_size,
                "trace_bytes": made["trace"].stat().st_size, "needle": needle,
                "procs": procs, "servers": servers, "join": join, "join_program": join_program}


def _med(values: list[float]) -> float:
    return statistics.median(values)


def table(f: dict) -> list[str]:
    """The figures as a Markdown table."""
    p, s = f["procs"], f["servers"]

    def secs(kind: str, key: str = "s") -> list[float]:
        return [r[key] for r in p[kind]]

    def cell(values: list[float], unit: str = "s", scale: float = 1.0, digits: int = 2) -> str:
        return f"{_med(values) * scale:.{digits}f} {unit} ({min(values) * scale:.{digits}f})"

    def ratio(a: list[float], b: list[float]) -> str:
        return f"{_med(a) / _med(b):.1f}x" if _med(b) > 0 else ""

    mb = 1 / 2**20
    n = f["events"]
    rows = ["| figure | ours median (best) | reference median (best) | ratio |",
            "|---|---:|---:|---:|"]
    rows.append(f"| trace JSON ({f['trace_bytes'] / 1e6:.1f} MB gz): `read_trace_json` vs "
                f"`json.load(gzip.open(...))`, time | {cell(secs('trace'))} | "
                f"{cell(secs('json'))} | {ratio(secs('trace'), secs('json'))} |")
    rows.append(f"| the same, peak RSS (VmHWM) over the process's RSS before | "
                f"{cell(secs('trace', 'rss_growth'), 'MB', mb, 0)} | "
                f"{cell(secs('json', 'rss_growth'), 'MB', mb, 0)} | "
                f"{ratio(secs('trace', 'rss_growth'), secs('json', 'rss_growth'))} |")
    rows.append(f"| xplane ({f['xplane_bytes'] / 1e6:.1f} MB): `read_xplane` (worker process, all "
                f"of it) vs a process's jax import + `ProfileData.from_file` + every event's "
                f"stats, "
                f"time | {cell(secs('xplane'))} | {cell(secs('import+visit'))} | "
                f"{ratio(secs('xplane'), secs('import+visit'))} |")
    rows.append(f"| the same, peak RSS: the worker's vs the reference process's | "
                f"{cell(secs('xplane', 'child_peak_rss'), 'MB', mb, 0)} | "
                f"{cell(secs('import+visit', 'peak_rss'), 'MB', mb, 0)} | "
                f"{ratio(secs('xplane', 'child_peak_rss'), secs('import+visit', 'peak_rss'))} |")
    rows.append(f"| the same, the caller's peak RSS (the events read back) | "
                f"{cell(secs('xplane', 'rss_growth'), 'MB', mb, 0)} | | |")
    rows.append(f"| the worker's own pass (`xplane._answer`, jax imported) vs `from_file` + every "
                f"event's stats | {cell(secs('answer'))} | {cell(secs('visit'))} | "
                f"{ratio(secs('answer'), secs('visit'))} |")
    us = 1e6 / n
    j = f["join"]
    rows.append(f"| join: `measure(events, module)`, µs per event ({n} events) | "
                f"{cell(j['ours'], 'µs', us)} | {cell(j['ref'], 'µs', us)} (a pass summing "
                f"durations per op) | {ratio(j['ours'], j['ref'])} |")
    if f["join_program"]:
        jp = f["join_program"]
        rows.append(f"| join with the xplane's program_id, µs per event | "
                    f"{cell(jp['ours'], 'µs', us)} | {cell(jp['ref'], 'µs', us)} | "
                    f"{ratio(jp['ours'], jp['ref'])} |")
    w = [r["first_hover_s"] for r in s["with"]]
    wo = [r["first_hover_s"] for r in s["without"]]
    sent = [r["first_hover_sent"] for r in s["with"]]
    rows.append(f"| server: didOpen -> first hover showing **Measured** (profile read included; "
                f"hovers sent: {min(sent)}-{max(sent)}) vs the first hover without a profile | "
                f"{cell(w, 's', 1, 3)} | {cell(wo, 's', 1, 3)} | {ratio(w, wo)} |")
    for label, fn in (("p50", _med), ("p99", p99)):
        a = [fn(r["hover_s"]) for r in s["with"]]
        b = [fn(r["hover_s"]) for r in s["without"]]
        rows.append(f"| server: hover {label} afterwards ({f['hovers']} hovers, every "
                    f"instruction in turn), median of the rounds' | {cell(a, 'ms', 1e3, 1)} | "
                    f"{cell(b, 'ms', 1e3, 1)} | {ratio(a, b)} |")
    if s.get("before"):
        rows.append(f"| server: didOpen -> first hover of the before-optimizations file "
                    f"(no profile measures it) with the profile set vs with an empty directory | "
                    f"{cell(s['before'], 's', 1, 3)} | {cell(s['before_without'], 's', 1, 3)} | "
                    f"{ratio(s['before'], s['before_without'])} |")
    if s.get("burst"):
        a = [r["all_answered_s"] for r in s["burst"]]
        b = [r["all_answered_s"] for r in s["burst_without"]]
        peaks = [r["peak_workers"] for r in s["burst"]]
        rows.append(f"| server: didOpen, a code lens and {f['burst']} hovers 0.2 s apart at once: "
                    f"all answered (xplane readers at once: {min(peaks)}-{max(peaks)}) vs the "
                    f"same without a profile | {cell(a, 's', 1, 3)} | {cell(b, 's', 1, 3)} | "
                    f"{ratio(a, b)} |")
    a = [r["rss"] for r in s["with"]]
    b = [r["rss"] for r in s["without"]]
    rows.append(f"| server RSS after the hovers | {cell(a, 'MB', mb, 0)} | {cell(b, 'MB', mb, 0)} "
                f"| {ratio(a, b)} |")
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=60, help="calls traced (hlo-lsp dump --profile)")
    ap.add_argument("--steps", type=int, default=250, help="loop iterations per call")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--hovers", type=int, default=200, help="hovers per server after the first")
    ap.add_argument("--burst", type=int, default=4,
                    help="hovers sent 0.2 s apart with a code lens right after didOpen (0: none)")
    ap.add_argument("--json", type=pathlib.Path, help="also write the figures here")
    ap.add_argument("--one", nargs=2, metavar=("KIND", "FILE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(*args.one)))
        return 0
    command = ("python benchmarks/bench_profile.py "
               + shlex.join(a for a in sys.argv[1:]))
    load = os.getloadavg()
    print(f"{os.cpu_count()} cores; load average before the run "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}", flush=True)
    figures = run(args.calls, args.steps, args.rounds, args.hovers, args.burst)
    print("\n".join(table(figures)))
    load = os.getloadavg()
    print(f"load average after the run {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"regenerate with: {command.strip()}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
