"""Experiments with XLA flags on a dump (issue 44): the dump's program compiled
again with one or more flags of the table (:mod:`hlo_lsp.model.flag_experiments`,
a :class:`~hlo_lsp.model.flag_experiments.FlagSet`) into a *variant*
directory, and what the instruction under the cursor became there.

Where a variant goes: ``<dump>.experiments/<flag>=<value>/`` beside the dump
directory (``/x/dump.experiments/xla_gpu_enable_triton_gemm=false/``; several
flags: each ``<flag>=<value>`` in the set's order joined by ``+``, bounded in
length, :func:`variant_dir`), never into the dump itself: the user's dump is
not touched. The variant is made by
:func:`hlo_lsp.dump.recompile.recompile` with the variant's recipe
(:func:`variant_recipe`: the dump's recipe with the flags added to its
``XLA_FLAGS``; deviceless for the recipe's target GPU, on this machine or
through the launcher, as the recompile runs), so the variant directory gets
its own ``hlo-lsp-recipe.json`` recording the flags and can itself be
recompiled. Running it again replaces the previous variant the same way a
recompile replaces a dump. When the run fails or is cancelled, a variant
directory it created is removed again: everything is as it was.

What is read of the dump: the HLO file under the cursor, its counterpart in
the variant (:func:`hlo_lsp.dump.changes.map_files`: the same module, stage and
platform), and the module's ``*.debug_options`` file (the flags of its compile
that differ from XLA's defaults, :func:`read_debug_options`), all untrusted
input read with :mod:`hlo_lsp.dump.untrusted`'s limits.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import pathlib
import re
import shutil
from dataclasses import dataclass, field, replace
from typing import Callable, Mapping

from hlo_lsp.dump import text_proto
from hlo_lsp.dump.changes import ModuleChange, map_files, module_change, read_hlo
from hlo_lsp.dump.launchers import Launcher, Stage
from hlo_lsp.dump.names import (AFTER_OPTIMIZATIONS, BEFORE_OPTIMIZATIONS, device_for,
                                parse_dump_name)
from hlo_lsp.dump.platforms import platform_label
from hlo_lsp.dump.processes import OutputCallback
from hlo_lsp.dump.recipe import Recipe
from hlo_lsp.dump.recompile import RecompileResult, hlo_files, recompile
from hlo_lsp.dump.environment import RunPlan
from hlo_lsp.dump.targets import Target
from hlo_lsp.dump.untrusted import read_text
from hlo_lsp.dump.xla_flags import xla_flag_words
from hlo_lsp.model.flag_experiments import (FlagExperiment, FlagSet, Outcome, applicable,
                                            dump_platform, outcome)
from hlo_lsp.model.cost_change import change_text
from hlo_lsp.model.hlo import HloModule, Instruction
from hlo_lsp.model.units import format_seconds
from hlo_lsp.model.visible import visible

#: The folder beside a dump directory that holds its variants: ``<dump>`` + this.
EXPERIMENTS_SUFFIX = ".experiments"
#: The largest ``*.debug_options`` file read (bytes); XLA writes a few hundred.
MAX_DEBUG_OPTIONS_BYTES = 1 << 20
#: What XLA prints before aborting on a flag it does not know, and the flags
#: (xla/parse_flags_from_env.cc: "Unknown flag in XLA_FLAGS: --a", for several
#: "Unknown flags in XLA_FLAGS: --a --b").
_UNKNOWN = re.compile(r"(?P<said>Unknown flags? in XLA_FLAGS):?(?P<words>.*)")
#: How an unknown flag's failure starts (:func:`_why`).
_NOT_KNOWN = "this XLA does not know the flag"
#: The longest name of a variant directory (characters, all ASCII): past it, the
#: name is cut and a digest of the whole name added (file systems allow 255 bytes).
MAX_VARIANT_NAME = 160
#: What a variant directory's name keeps; any other character becomes ``_``.
_UNSAFE = re.compile(r"[^A-Za-z0-9_.,=+-]")


def variant_name(experiment: FlagSet) -> str:
    """The name of the variant directory of ``experiment``: its
    :attr:`~hlo_lsp.model.flag_experiments.FlagSet.name` (``flag=value``, several
    joined by ``+`` in the set's order: the same for the same flags in any
    order), a character other than letters, digits and ``_.,=+-`` made ``_``,
    never starting with ``.`` or ``-``; when that changed it, or it is longer
    than :data:`MAX_VARIANT_NAME`: its first characters, ``~`` and 16 hex digits
    of the SHA-256 of the whole name (distinct combinations keep distinct
    names, at most :data:`MAX_VARIANT_NAME` characters)."""
    name = _UNSAFE.sub("_", experiment.name)
    if not name or name[0] in ".-":
        name = "_" + name
    if name != experiment.name or len(name) > MAX_VARIANT_NAME:
        digest = hashlib.sha256(experiment.name.encode()).hexdigest()[:16]
        name = f"{name[:MAX_VARIANT_NAME - 17]}~{digest}"
    return name


def variant_dir(dump_dir: str | os.PathLike, experiment: FlagSet) -> pathlib.Path:
    """``<dump_dir>.experiments/<name>``: where the variant of ``experiment`` is
    compiled (absolute; the name, :func:`variant_name`, from the table's flags
    and values, never from the dump): ``/x/dump.experiments/xla_gpu_enable_triton_gemm=false``."""
    dump = pathlib.Path(os.path.abspath(dump_dir))
    return dump.parent / (dump.name + EXPERIMENTS_SUFFIX) / variant_name(experiment)


def with_flag(xla_flags: str | None, experiment: FlagExperiment) -> str:
    """``xla_flags`` with ``experiment``'s flag set: an earlier setting of the
    same flag removed (XLA takes the last anyway), a list flag's values kept
    and the experiment's added (``--xla_disable_hlo_passes=a,priority-fusion``)."""
    words = xla_flag_words(xla_flags)
    prefix = f"--{experiment.flag}="
    kept, values = [], []
    for w in words:
        if w.startswith(prefix) or w == f"--{experiment.flag}":
            values += [v for v in w[len(prefix):].strip('"').split(",") if v]
            continue
        kept.append(w)
    value = experiment.value
    if experiment.list_flag and values:
        value = ",".join([*values, *([value] if value not in values else [])])
    return " ".join([*kept, f"--{experiment.flag}={value}"])


def variant_recipe(recipe: Recipe, experiment: FlagSet) -> Recipe:
    """``recipe`` with each flag of ``experiment`` in its ``XLA_FLAGS``
    (:func:`with_flag`, in the set's order): what runs, and what the user
    confirms."""
    env = dict(recipe.env)
    flags = env.get("XLA_FLAGS")
    for entry in experiment.entries:
        flags = with_flag(flags, entry)
    env["XLA_FLAGS"] = flags or ""  # a FlagSet has at least one entry
    return replace(recipe, env=env)


def debug_options_path(hlo_file: str | os.PathLike) -> str | None:
    """The ``[ts.]module_NNNN.<name>.debug_options`` file of ``hlo_file``'s module
    beside it (absolute; it may not exist), None for a file whose name is not
    a dump file's. Pure (names only)."""
    name = parse_dump_name(os.path.basename(hlo_file))
    if name is None:
        return None
    stem = (f"{name.timestamp}." if name.timestamp else "") + \
        f"module_{name.number:04d}.{name.module_name}.debug_options"
    return os.path.join(os.path.dirname(os.path.abspath(hlo_file)), stem)


def read_debug_options(hlo_file: str | os.PathLike) -> dict[str, str]:
    """The flags the compile of ``hlo_file``'s module had that differ from XLA's
    defaults: its ``*.debug_options`` file (:func:`debug_options_path`; a
    text proto of ``DebugOptions``, xla/service/dump.cc), field -> value as
    written (strings unquoted; a repeated field's values joined by ``,``).
    Empty when there is none or it cannot be read or parsed (untrusted input).
    Blocking; the server keeps it (:meth:`hlo_lsp.analysis.inputs.DumpInputs.debug_options`)."""
    path = debug_options_path(hlo_file)
    if path is None:
        return {}
    try:
        message = text_proto.parse(read_text(path, MAX_DEBUG_OPTIONS_BYTES))
    except (OSError, text_proto.TextProtoError):
        return {}
    out: dict[str, str] = {}
    for key, value in message:
        if isinstance(value, list):
            continue
        text = str(value)
        out[key] = f"{out[key]},{text}" if key in out else text
    return out


def instruction_on_line(module: HloModule, text: str, line: int) -> Instruction | None:
    """The instruction written on ``line`` (0-based) of ``text``, the text of
    ``module``: the innermost one at the line's first non-blank character;
    None on a line without one."""
    lines = text.split("\n")
    if not 0 <= line < len(lines):
        return None
    offset = sum(len(s) + 1 for s in lines[:line])
    body = lines[line]
    return module.instruction_at(offset + len(body) - len(body.lstrip()))


def experiments_at(path: str | os.PathLike, line: int, deviceless: bool,
                   module: HloModule | None = None, text: str | None = None,
                   debug_options: Mapping[str, str] | None = None
                   ) -> tuple[Instruction | None, list[FlagExperiment]]:
    """The instruction on ``line`` (0-based) of the dump file ``path`` and the
    experiments of the table for it (:func:`hlo_lsp.model.flag_experiments.applicable`:
    its kind, the file's platform, the flags of its ``*.debug_options``; without
    those needing a device when the dump was compiled ``deviceless``).
    ``module`` and ``text``: the file's model and text when the caller has them
    (the editor's open document), else the file is read and parsed;
    ``debug_options`` the module's flags (:func:`read_debug_options`) when the
    caller has them, else they are read. Blocking: call it off the event loop."""
    name = parse_dump_name(os.path.basename(path))
    if name is None:
        return None, []
    if module is None or text is None:
        got = read_hlo(path)
        if got is None:
            return None, []
        text, module = got
    ins = instruction_on_line(module, text, line)
    if ins is None:
        return None, []
    if debug_options is None:
        debug_options = read_debug_options(path)
    return ins, applicable(module, ins, dump_platform(name.platform), debug_options,
                           deviceless)


@dataclass
class ExperimentResult:
    """What :func:`run_experiment` did. ``ok``: the variant was compiled and
    compared; ``error``: why not, one sentence; ``cancelled``. ``variant_dir``:
    where the variant is; ``variant_file``: the counterpart of the file the
    experiment was asked on (None when the variant has none); ``line``: the
    0-based line of the instruction's counterpart there (None without one);
    ``outcome``: :class:`hlo_lsp.model.flag_experiments.Outcome`; ``change``:
    the module's counts before and after (:class:`hlo_lsp.dump.changes.ModuleChange`);
    ``run``: the recompile's own result; ``message``: the report for the user;
    ``experiment``: the flags set (:class:`~hlo_lsp.model.flag_experiments.FlagSet`)."""

    experiment: FlagSet
    dump_dir: str
    variant_dir: str
    ok: bool = False
    cancelled: bool = False
    error: str = ""
    variant_file: str | None = None
    line: int | None = None
    outcome: Outcome | None = None
    change: ModuleChange | None = None
    run: RecompileResult | None = None
    message: str = ""
    extra: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        """JSON-ready (``hlo-lsp experiment --json``; the ``experiment`` field of
        the ``hlo.recompile`` reply): ``experiments`` each entry set,
        ``experiment`` the first of them (the only one for one flag),
        ``argument`` what was added to ``XLA_FLAGS``."""
        return {"ok": self.ok, "cancelled": self.cancelled, "error": self.error,
                **self.experiment.to_dict(), "argument": self.experiment.argument,
                "dumpDir": self.dump_dir,
                "variantDir": self.variant_dir, "variantFile": self.variant_file,
                "line": self.line,
                "outcome": self.outcome.to_dict() if self.outcome else None,
                "change": self.change.to_json() if self.change else None,
                "message": self.message}


async def run_experiment(recipe: Recipe, path: str | os.PathLike, line: int,
                         experiment: FlagSet, *, platform: str,
                         target: Target | None = None, plan: RunPlan | None = None,
                         launcher: Launcher | None = None,
                         on_output: OutputCallback | None = None,
                         on_stage: Callable[[Stage], None] | None = None,
                         cancel: asyncio.Event | None = None, timeout: float | None = None,
                         device: str | None = None, probe: bool = True) -> ExperimentResult:
    """Compile the variant of the dump of ``path`` with the flags of ``experiment`` and report
    what the instruction on ``line`` (0-based) of ``path`` became.

    ``recipe`` is the variant's (:func:`variant_recipe`), ``plan`` what the user
    confirmed of it; ``platform``, ``target``, ``launcher``, ``on_output``,
    ``on_stage``, ``cancel``, ``timeout`` as :func:`hlo_lsp.dump.recompile.recompile`
    takes them. The variant goes into :func:`variant_dir`; the dump of ``path``
    is never written. The estimate is on ``device`` (a key or name of
    :data:`hlo_lsp.model.accelerators.ACCELERATORS`), else the one the dump
    file's name implies. Never raises for a failed run: ``error`` says it."""
    path = os.path.abspath(path)
    dump_dir = os.path.dirname(path)
    where = variant_dir(dump_dir, experiment)
    result = ExperimentResult(experiment, dump_dir, str(where))
    created = [p for p in (where.parent, where) if not p.exists()]
    try:
        where.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        result.error = f"cannot make the variant directory {where}: {exc.strerror or exc}"
        result.message = _failure(result)
        return result
    run = await recompile(recipe, where, platform=platform, on_output=on_output,
                          cancel=cancel, timeout=timeout, target=target, plan=plan,
                          launcher=launcher, on_stage=on_stage, device=device, probe=probe)
    result.run = run
    if not run.ok:
        result.cancelled = run.cancelled
        result.error = _why(run, experiment)
        for p in reversed(created):  # leave everything as it was
            shutil.rmtree(p, ignore_errors=True)
        result.message = _failure(result)
        return result
    await asyncio.to_thread(_report, result, path, line, device)
    return result


def _why(run: RecompileResult, experiment: FlagSet) -> str:
    """The failure of the variant's run in one sentence: a flag this XLA does not
    know is said so (XLA aborts on it), the experiment's flags XLA named (all of
    them when it named none of them)."""
    if run.cancelled:
        return "cancelled"
    found = _UNKNOWN.search(run.stderr_tail)
    if found is not None:
        named = found["words"].split()
        unknown = [a for a in experiment.arguments if a in named] or list(experiment.arguments)
        return (f"{_NOT_KNOWN}{'' if len(unknown) == 1 else 's'} {' '.join(unknown)} (it "
                f"aborted with '{found['said']}')")
    return run.error or "the program failed"


def _failure(result: ExperimentResult) -> str:
    arg = result.experiment.argument
    if result.cancelled:
        return f"Experiment with `{arg}` cancelled; nothing was changed."
    tail = ""
    if result.run is not None and result.run.stderr_tail and \
            not result.error.startswith(_NOT_KNOWN):
        tail = "\n" + "\n".join(visible(t) for t in result.run.stderr_tail.splitlines()[-8:])
    return (f"Experiment with `{arg}` failed: {visible(result.error)}. Your dump in "
            f"{visible(result.dump_dir)} is unchanged.{tail}")


def _report(result: ExperimentResult, path: str, line: int, device: str | None) -> None:
    """After a good run: the counterpart file, the outcome, the counts, the
    message (blocking: parses files)."""
    run = result.run
    assert run is not None
    base = os.path.basename(path)
    old_files = {n: d for n, d in hlo_files(result.dump_dir).items() if n == base}
    new_files = hlo_files(result.variant_dir)
    counterpart = map_files(old_files, new_files).get(base)
    where = (f"{run.target.upper()} without a GPU" if run.target
             else platform_label(run.platform))
    head = f"Experiment compiled for {where} in {run.seconds:.1f} s"
    result.ok = True
    if counterpart is None:
        result.message = (f"{head}: the variant has no counterpart of {visible(base)}; see "
                          f"{visible(result.variant_dir)}.")
        return
    result.variant_file = os.path.join(result.variant_dir, counterpart)
    old, new = read_hlo(path), read_hlo(result.variant_file)  # (text, module) or None
    lines = [head + "."]
    if old is not None and new is not None:
        ins = instruction_on_line(old[1], old[0], line)
        if ins is not None:
            result.outcome = outcome(result.experiment, old[1], ins, new[1],
                                     device_for(result.variant_file, device))
            lines[0] = f"{head}: {result.outcome.sentence()}"
            result.line = _line_of(new[1], new[0], result.outcome.counterpart)
        else:
            lines.append(f"(no instruction on line {line + 1} of {visible(base)})")
    if new_files[counterpart].stage in (BEFORE_OPTIMIZATIONS, AFTER_OPTIMIZATIONS):
        # the module's counts, as the recompile report compares them (dump/changes.py)
        result.change = module_change(new_files[counterpart].module_name, base, counterpart,
                                      old[1] if old is not None else None,
                                      new[1] if new is not None else None, device)
        lines.append(result.change.describe())
        costs = result.change.costs
        if costs is not None and costs.changed:
            lines.append(f"The module's kernels: estimated "
                         f"{change_text(costs.old_seconds, costs.new_seconds, format_seconds)}"
                         f" on {costs.device.name}.")
    lines.append(f"The variant: {visible(result.variant_file)} (your dump is unchanged).")
    result.message = "\n".join(lines)


def _line_of(module: HloModule, text: str, name: str | None) -> int | None:
    """The 0-based line of the instruction ``name`` in ``text`` (``module`` its model)."""
    ins = module.instruction_named(name) if name is not None else None
    return text.count("\n", 0, ins.start) if ins is not None else None
