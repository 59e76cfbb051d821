"""Recompiling a dump from its JAX program, as the editor asks it: which
recompiles to offer, and the ``hlo.recompile`` command from the recipe to the
refreshed documents. No pygls: the protocol adapter
(:mod:`hlo_lsp.lsp.handlers.recompile`) converts its params to the plain inputs
here (a dump file's path, the command's options, the settings) and implements
:class:`RecompileUI` with LSP messages.

- :func:`planned_actions`: what a plain recompile does first ("Recompile with JAX
  on GPU and refresh"; CPU/TPU when that is the platform it would run on;
  "Compile for H100 here, no GPU needed" when the recipe or the setting names a
  target GPU), then the other choices: ``{"platform": "gpu"}`` ("Run on this
  machine's GPU and refresh", when it has one), ``{"target": "h100"}`` ("Compile
  for H100 here, no GPU needed": the target of ``hlo.recompile.target``, else the
  recipe's, else H100) and ``{"platform": "cpu"}`` ("Run on the CPU and refresh").
  When the plain recompile runs on a device, "Recompile and profile" second
  (``{"profile": N}``: the same run under ``jax.profiler``,
  :mod:`hlo_lsp.dump.capture`); when the recipe profiles already, the plain
  recompile does ("..., profile and refresh") and "Recompile without profiling"
  (``{"profile": 0}``) is second. A run that profiles records it in the recipe it
  saves, so the next plain recompile profiles again.
- :meth:`Recompiles.run`: resolve the recipe (the ``hlo-lsp-recipe.json`` of the
  dump directory; else the setting ``hlo.recompile.command``; else one inferred
  from the stack frames). What a recipe or an inference would run
  (:class:`hlo_lsp.dump.environment.RunPlan`: the command line, working
  directory, interpreter and environment changes) runs only when the user
  confirmed that exact plan: answered "Run" to the confirmation that shows it,
  now or before (remembered in the user's state directory,
  :mod:`hlo_lsp.dump.trust`); the setting's command runs without asking. Then it
  runs in a subprocess (:func:`hlo_lsp.dump.recompile.recompile`) with a
  cancellable progress report, its output logged line by line, then refreshes:
  each open file of the dump whose module was renumbered is shown, every open
  file gets fresh diagnostics, and a message says what changed. One recompile
  at a time per dump directory.
- A recipe that cannot be used (not a regular file, too large, not UTF-8 or
  JSON, too deep, wrong field types) is said once per file version
  (:meth:`Recompiles.recipe`, when links or code actions are asked for a file of
  its dump); links, definitions, hover and the code action work without it, and
  the command answers with the reason.

Experiments with XLA flags (issue 44): at an instruction, the actions also
offer "Recompile with Triton GEMM off (--xla_gpu_enable_triton_gemm=false)" and
the other entries of the table that apply to it
(:func:`hlo_lsp.dump.experiments.experiments_at`), with the extra argument
``{"experiment": KEY, "line": LINE}`` (the command also takes a list of keys,
``{"experiment": [KEY, ...], ...}``: those flags set together,
:func:`hlo_lsp.model.flag_experiments.combine_named`). The command then runs the dump's recipe
with the flags added to its ``XLA_FLAGS`` (:func:`hlo_lsp.dump.experiments.variant_recipe`:
confirmed like any recipe, the flag part of what is confirmed) into the variant
directory beside the dump (:func:`hlo_lsp.dump.experiments.run_experiment`; the
dump is not touched), shows the instruction's counterpart in the variant's file
and says what it became.

Launchers (issue 16): the program runs through the launcher of the setting
``hlo.recompile.launcher``, else of the recipe (:mod:`hlo_lsp.dump.launchers`:
SLURM, ssh, containers); it is part of the confirmed plan, so its first run
asks, showing the full command line that starts here (:func:`launched_preview`);
its stages (queued in SLURM with the job id, running, copying back) are
progress reports, and a cancel reaches the remote side.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import time
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol

from hlo_lsp.analysis.documents import Analysis, DocumentStore, analyze
from hlo_lsp.analysis.inputs import DumpInputs
from hlo_lsp.analysis.work import in_pool, in_thread
from hlo_lsp.dump import trust
from hlo_lsp.dump.capture import DEFAULT_CALLS
from hlo_lsp.dump.environment import RunPlan, plan_run, travelling_env
from hlo_lsp.dump.experiments import (ExperimentResult, experiments_at, run_experiment,
                                      variant_dir, variant_recipe)
from hlo_lsp.dump.inference import configured_recipe, infer_recipe
from hlo_lsp.dump.launchers import Launcher, LauncherError, Stage, launched_argv
from hlo_lsp.dump.names import parse_dump_name
from hlo_lsp.dump.platforms import (choose_platform, default_platform, launch_platform,
                                    platform_label)
from hlo_lsp.dump.recipe import (MAX_PROFILE_CALLS, PlatformError, Recipe, RecipeError,
                                 load_recipe, recipe_path)
from hlo_lsp.dump.recompile import RecompileResult, recompile
from hlo_lsp.dump.targets import Target, TargetError, resolve_target
from hlo_lsp.dump.untrusted import read_text
from hlo_lsp.model.flag_experiments import FlagConflict, FlagSet, combine_named
from hlo_lsp.model.hlo import Problem
from hlo_lsp.model.visible import visible
from hlo_lsp.syntax.lines import LineIndex

#: The answers of the confirmation.
RUN, CANCEL = "Run", "Cancel"
#: Lines of the program's output logged; past them, one line says there is more.
MAX_LOG_LINES = 5000
#: At most one progress report of the program's output this often (seconds).
PROGRESS_EVERY_S = 0.25
#: The GPU the code action compiles for when neither the setting nor the recipe names one.
DEFAULT_TARGET = "h100"
#: The title of the action that runs the plain recompile under ``jax.profiler``.
PROFILE_TITLE = "Recompile and profile"
#: ... and the one that runs it without, when the recipe profiles.
UNPROFILED_TITLE = "Recompile without profiling"
#: What the command answers when the user did not confirm.
NOT_CONFIRMED = "Recompile cancelled; nothing was run."

#: ``say(kind, message)``: a message for the user, ``kind`` "info", "warning" or "error".
Say = Callable[[str, str], None]


class RecompileSettingsLike(Protocol):
    """The settings ``hlo.recompile`` as :class:`hlo_lsp.lsp.settings.RecompileSettings`
    holds them: ``command`` (shell words or an argument list, or None), ``cwd``,
    ``platform`` ("auto", "gpu", "cuda", "rocm", "cpu", "tpu" or None),
    ``timeout`` (seconds or None), ``target`` (a GPU name or a GpuTargetConfig
    file, or None) and ``launcher`` (``preset``, ``argv`` and ``launcher()`` ->
    :class:`~hlo_lsp.dump.launchers.Launcher` or None, raising LauncherError)."""

    command: str | list[str] | None
    cwd: str | None
    platform: str | None
    timeout: float | None
    target: str | None
    launcher: Any


class RecompileUI(Protocol):
    """What a recompile shows the user, implemented by the protocol adapter
    (LSP messages) or a test. ``cancel`` is set when the user cancels (the
    progress report's button, or the request cancelled): the program's process
    tree is then killed."""

    cancel: asyncio.Event

    def say(self, kind: str, message: str) -> None:
        """A message: ``kind`` "info", "warning" or "error"."""

    async def confirm(self, message: str, choices: list[str]) -> str | None:
        """The choice the user answered ``message`` with; None without one."""

    async def begin_progress(self, title: str, message: str) -> None:
        """Begin the (cancellable) progress report; without one, the reports are dropped."""

    def report_progress(self, message: str) -> None:
        """A progress report of the running program."""

    def end_progress(self, message: str) -> None:
        """End the progress report."""

    def log(self, line: str, kind: str = "log") -> None:
        """A line of the log: the program's output ("log") or what hlo-lsp does ("info")."""

    def publish(self, path: str, problems: list[Problem], lines: LineIndex | None) -> None:
        """The diagnostics of the dump file ``path`` (none: ``lines`` may be None)."""

    async def show(self, path: str, take_focus: bool, line: int | None = None) -> bool:
        """Show the dump file ``path`` in the editor (at the 0-based ``line``
        when given); whether it was shown."""


@dataclass(frozen=True)
class RecompileRequest:
    """One ``hlo.recompile``: ``uri`` the document it was asked on (its analysis,
    for a recipe inferred from its stack frames), ``path`` its absolute path, a
    file of an XLA dump directory; ``options`` ``{"platform": P}`` (a device
    platform, as ``hlo.recompile.platform``) or ``{"target": T}`` (a target GPU,
    as ``hlo.recompile.target``) or ``{}``, each possibly with ``"profile": N``
    (trace N calls with ``jax.profiler``; 0: do not profile); ``settings`` ``hlo.recompile``;
    ``workspace`` the first workspace folder (None without one: the dump
    directory stands for it); ``source_dirs`` where the metadata's relative
    Python paths are looked for (:func:`hlo_lsp.dump.sources.source_dirs`);
    ``device`` the setting ``hlo.device``."""

    uri: str
    path: str
    options: dict
    settings: RecompileSettingsLike
    workspace: str | None = None
    source_dirs: list[str] = field(default_factory=list)
    device: str | None = None


# ------------------------------------------------------ what would run ---

def target_spec(options: dict, settings: RecompileSettingsLike,
                recipe: Recipe | None) -> str | None:
    """The target GPU a recompile compiles for without it, or None for a run on a
    device: the command's ``{"target": ...}``; none for ``{"platform": ...}`` or an
    explicit device in ``hlo.recompile.platform``; else ``hlo.recompile.target``;
    else the target of the dump's own recipe."""
    if isinstance(options.get("target"), str) and options["target"]:
        return options["target"]
    if options.get("platform") or (settings.platform or "auto") != "auto":
        return None
    if settings.target:
        return settings.target
    return recipe.target if recipe is not None and recipe.origin == "recipe" else None


def profile_calls(options: dict, recipe: Recipe | None) -> int | None:
    """How many calls a recompile traces with ``jax.profiler`` (None: it does not
    profile): the command's ``{"profile": N}`` (0: none; a number out of 1 to
    :data:`~hlo_lsp.dump.recipe.MAX_PROFILE_CALLS` is taken as the default,
    :data:`~hlo_lsp.dump.capture.DEFAULT_CALLS`), else what the dump's own recipe
    records (``hlo-lsp dump --profile N``)."""
    asked = options.get("profile")
    if asked is not None:
        if isinstance(asked, bool) or not isinstance(asked, int):
            return DEFAULT_CALLS if asked is True else None
        return asked if 1 <= asked <= MAX_PROFILE_CALLS else (None if asked == 0
                                                             else DEFAULT_CALLS)
    return recipe.profile if recipe is not None and recipe.origin == "recipe" else None


def launcher_for(settings: RecompileSettingsLike, recipe: Recipe | None) -> Launcher | None:
    """The launcher a recompile runs through: the setting ``hlo.recompile.launcher``
    when it names one (``preset: "local"`` runs here whatever the recipe says),
    else the launcher a recipe file records (``hlo-lsp dump --launcher``; confirmed
    like the rest of the recipe), else None (here). Raises LauncherError for a
    setting that cannot be used."""
    mine = settings.launcher
    if mine.preset or mine.argv:
        return mine.launcher()
    if recipe is not None and recipe.origin == "recipe":
        return recipe.launcher
    return None


def action_title(platform: str | None, target: str | None) -> str:
    """The title of the action that compiles for ``target`` without it, else runs
    on ``platform``."""
    if target:
        name = os.path.basename(target) if os.sep in target else target.upper()
        return f"Compile for {name} here, no GPU needed"
    return f"Recompile with JAX on {platform_label(platform or 'cpu')} and refresh"


def planned_actions(settings: RecompileSettingsLike,
                    recipe: Recipe | None) -> list[tuple[str, list]]:
    """(title, extra command arguments) of the recompile actions, the plain
    recompile first (see the module docstring). May start ``nvidia-smi`` once
    (:func:`hlo_lsp.dump.platforms.default_platform`): call it off the event loop."""
    target = target_spec({}, settings, recipe)
    try:
        launcher = launcher_for(settings, recipe)
    except LauncherError:
        launcher = None
    if target:
        first = action_title(None, target)
    elif launcher is not None:
        try:
            platform = launch_platform(settings.platform, recipe.platform if recipe else None)
        except PlatformError:
            platform = "cuda"
        first = (f"Recompile with JAX on {platform_label(platform)} through "
                 f"{launcher.name} and refresh")
    else:
        try:
            platform = choose_platform(settings.platform,
                                       recipe.platform if recipe else None)[0]
        except PlatformError:
            platform = str(settings.platform or "cuda")
        first = action_title(platform, None)
    profiled = profile_calls({}, recipe)
    out = [(first, [])]
    if profiled:
        title = (first.replace(" and refresh", ", profile and refresh")
                 if first.endswith(" and refresh") else f"{first}, profiled on the CPU")
        out = [(title, []), (UNPROFILED_TITLE, [{"profile": 0}])]
    elif not target:
        out.append((PROFILE_TITLE, [{"profile": DEFAULT_CALLS}]))
    gpu = default_platform()
    choices = [("Run on this machine's GPU and refresh", {"platform": "gpu"})] if gpu else []
    other = settings.target or (recipe.target if recipe else None) or DEFAULT_TARGET
    choices += [(action_title(None, other), {"target": other}),
                ("Run on the CPU and refresh", {"platform": "cpu"})]
    for title, options in choices:
        if title != first and not (options.get("platform") == "cpu"
                                   and first == action_title("cpu", None)):
            out.append((title, [options]))
    return out


def read_recipe(dump_dir: str) -> tuple[Recipe | None, str, tuple]:
    """The recipe of ``dump_dir`` (None without one), why it cannot be used (""
    when it can) and the identity of the unusable file (path, device, inode,
    mtime, size). Blocking."""
    try:
        return load_recipe(dump_dir), "", ()
    except RecipeError as exc:
        path = str(recipe_path(dump_dir))
        try:
            st = os.stat(path)
            return None, str(exc), (path, st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)
        except OSError:
            return None, str(exc), (path,)


def launched_preview(plan: RunPlan, recipe: Recipe, platform: str) -> str:
    """The full command line a run of ``plan`` through its launcher starts here
    (:func:`hlo_lsp.dump.launchers.launched_argv`, :func:`shlex.join`), with
    ``<new dump directory>`` and ``hlo-lsp-XXXXXXXX`` standing for the directory and
    the job name each run makes anew; "" without a launcher."""
    if plan.launcher is None:
        return ""
    dump = "<new dump directory>"
    env = travelling_env(os.environ, recipe, dump, platform)
    return shlex.join(launched_argv(plan.launcher, plan.argv, env, plan.cwd, dump,
                                    "hlo-lsp-XXXXXXXX"))


def confirmation_message(reason: str, plan: RunPlan, platform: str,
                         target: Target | None, state: str, launched: str = "",
                         profile: int | None = None) -> str:
    """The text of the confirmation: ``reason``, then exactly what runs (the
    command line as :func:`shlex.join` writes it, the working directory, the
    interpreter, the environment changes, the variables hlo-lsp sets, the
    deviceless runner when compiling for ``target``, the profiling hook when
    tracing ``profile`` calls; with a launcher, the
    launcher and the full command line ``launched`` that starts here,
    :func:`launched_preview`) and where a Run is remembered (``state``, the
    state directory). Each of these is one line whatever the recipe holds:
    newlines, control characters and bidirectional overrides (U+202E) are
    shown escaped (``\\n``, ``\\x1b``, ``\\u202e``; :func:`hlo_lsp.model.visible.visible`),
    so a recipe cannot print a line of its own."""
    lines = [reason]
    if plan.launcher is not None:
        copy = ("" if plan.launcher.shared else
                "; the dump is written in a remote temporary directory and copied back")
        lines += [f"Launcher ({visible(plan.launcher.name)}): "
                  f"`{visible(plan.launcher.display())}`{copy}",
                  f"Full command line: `{visible(launched)}`"]
    lines += [f"Command: `{visible(plan.display_command())}`",
              f"Directory: {visible(plan.cwd)}",
              f"Interpreter: "
              f"{visible(plan.interpreter or 'none (the command does not start Python)')}",
              f"Environment changes: {visible(plan.display_env())} (and hlo-lsp's "
              f"JAX_PLATFORMS={platform} and XLA dump flags)"]
    if target is not None:
        lines.append(f"Runner: hlo-lsp's deviceless runner, compiling what it jits for "
                     f"{target.label}")
    if profile:
        lines.append(f"Profiler: hlo-lsp's profiling hook, tracing {profile} calls of what "
                     f"it jits with jax.profiler")
    lines.append(f"Run is remembered for exactly this command, directory, interpreter, "
                 f"environment{' and launcher' if plan.launcher else ''} (in {state}); a "
                 f"changed recipe{' or launcher' if plan.launcher else ''} asks again.")
    return "\n".join(lines)


def failed(ui: RecompileUI, message: str) -> dict:
    """Say ``message`` as an error; the command's answer for it."""
    ui.say("error", message)
    return {"error": message, "summary": message}


@dataclass
class _Run:
    """What a recompile will run, once chosen: the recipe, the plan the user
    confirms, where it runs and what opens its confirmation ("" when it needs
    none)."""

    recipe: Recipe
    plan: RunPlan
    platform: str
    note: str
    target: Target | None
    launcher: Launcher | None
    launched: str
    reason: str
    profile: int | None = None
    experiment: FlagSet | None = None


def experiment_actions(path: str, line: int, deviceless: bool,
                       analysis: Analysis | None = None,
                       debug_options: Mapping[str, str] | None = None
                       ) -> list[tuple[str, list]]:
    """(title, extra command arguments) of the experiments with flags for the
    instruction on ``line`` (0-based) of the dump file ``path``: one per entry of
    the table that applies (:func:`hlo_lsp.dump.experiments.experiments_at`;
    those needing a GPU left out for a dump compiled ``deviceless``), each
    ``[{"experiment": KEY, "line": line}]``. The model is ``analysis``'s (the
    open document's) when it has a whole one, else the file is read and parsed;
    the module's flags are ``debug_options`` (:meth:`DumpInputs.debug_options`)
    when given, else read: call it off the event loop."""
    whole = analysis is not None and not analysis.lazy_only
    _, offered = experiments_at(path, line, deviceless,
                                analysis.module if whole else None,
                                analysis.lines.text if whole else None, debug_options)
    return [(e.action_title, [{"experiment": e.key, "line": line}]) for e in offered]


# ---------------------------------------------------------------- state ---

class Recompiles:
    """The recompiles of one server (held by
    :class:`~hlo_lsp.analysis.host.AnalysisHost` as ``recompiles``): the dump
    directories a recompile runs in now (:attr:`running`, one at a time per
    directory) and the unusable recipe files already reported
    (:attr:`reported`: (path, device, inode, mtime, size)). ``store`` gives the
    open documents (refreshed after a recompile), their analyses (a recipe
    inferred from the stack frames) and the position encoding; ``parse_pool``
    analyses the new dump's files."""

    def __init__(self, store: DocumentStore, parse_pool: Executor,
                 inputs: DumpInputs | None = None) -> None:
        self.store = store
        self.parse_pool = parse_pool
        #: the files beside a dump, cached (the host's): whether it was compiled
        #: without a GPU
        self.inputs = inputs if inputs is not None else DumpInputs()
        self.running: set[str] = set()
        self.reported: set[tuple] = set()

    async def recipe(self, dump_dir: str, say: Say | None = None
                     ) -> tuple[Recipe | None, str]:
        """The recipe of ``dump_dir`` read off the event loop
        (:func:`hlo_lsp.dump.recipe.load_recipe`: a FIFO, a device or a huge file
        never blocks the server) and why it cannot be used ("" when it can, or
        when there is none). With ``say``, an unusable recipe is said once per
        file version, a warning; the features that do not need it keep working."""
        recipe, problem, key = await in_thread(read_recipe, dump_dir)
        if problem and say is not None and key not in self.reported:
            self.reported.add(key)
            say("warning",
                f"hlo-lsp does not use this dump's recipe: {problem}. Links, definitions "
                "and hover work without it; to recompile, fix or remove the file (or set "
                "hlo.recompile.command).")
        return recipe, problem

    async def actions(self, path: str, settings: RecompileSettingsLike,
                      say: Say, line: int | None = None,
                      uri: str | None = None) -> list[tuple[str, list]]:
        """The recompile actions of the dump file ``path`` (:func:`planned_actions`:
        (title, extra command arguments), the plain recompile first), its recipe
        read (an unusable one said once, :meth:`recipe`); with ``line`` (0-based,
        the cursor's), then the experiments with flags for the instruction there
        (:func:`experiment_actions`), on the model of the open document ``uri``
        (``path``'s) when given, with the module's flags of its ``*.debug_options``
        (:meth:`DumpInputs.debug_options`, cached). Compiled without a GPU: the
        recipe's target, or the dump's deviceless record
        (:meth:`DumpInputs.deviceless`, cached)."""
        recipe, _ = await self.recipe(os.path.dirname(path), say)
        planned = await in_thread(planned_actions, settings, recipe)
        if line is not None:
            deviceless = bool(recipe is not None and recipe.target) or \
                await self.inputs.deviceless(path) is not None
            analysis = await self.store.analysis(uri) if uri is not None else None
            options = await self.inputs.debug_options(path)
            planned += await in_thread(experiment_actions, path, line, deviceless, analysis,
                                       options)
        return planned

    async def run(self, request: RecompileRequest, ui: RecompileUI) -> dict:
        """Recompile the dump of ``request.path`` (see the module docstring),
        showing it through ``ui``; refused while another recompile of the same
        directory runs. Returns the fields of the command's answer
        (:class:`hlo_lsp.lsp.messages.RecompileReply`, snake_case, with paths
        where it holds URIs: ``mapping`` and ``shown_documents``). Raises only
        what the steps did not expect (the caller reports it)."""
        dump_dir = os.path.dirname(request.path)
        if dump_dir in self.running:
            return failed(ui, f"A recompile of {dump_dir} is already running.")
        self.running.add(dump_dir)
        try:
            chosen = await self._choose(request, ui)
            if isinstance(chosen, dict):
                return chosen
            if chosen.reason and not await self._confirmed(chosen, ui):
                ui.say("info", NOT_CONFIRMED)
                return {"cancelled": True, "error": "not confirmed", "summary": NOT_CONFIRMED,
                        "command": chosen.plan.display_command(), "launched": chosen.launched}
            if chosen.experiment is not None:
                return await self._execute_experiment(request, chosen, ui)
            return await self._execute(request, chosen, ui)
        finally:
            self.running.discard(dump_dir)

    # -- the steps --------------------------------------------------------------
    async def _resolve_recipe(self, request: RecompileRequest
                              ) -> tuple[Recipe | None, str, str]:
        """The recipe to run, why not ("" when there is one) and, for a command the
        user did not give (a recipe file, an inferred command), the sentence that
        opens the confirmation ("" for the setting's command)."""
        dump_dir = os.path.dirname(request.path)
        settings, workspace = request.settings, request.workspace
        recipe, problem = await self.recipe(dump_dir)
        if problem:
            return None, f"Cannot recompile: {problem}", ""
        if recipe is not None:
            return recipe, "", (f"The recipe {recipe_path(dump_dir)} asks to run a command "
                                "you have not confirmed.")
        if settings.command:
            try:
                recipe = configured_recipe(settings.command, settings.cwd,
                                           workspace or dump_dir)
            except (RecipeError, ValueError) as exc:
                return None, f"Cannot recompile: hlo.recompile.command: {exc}", ""
            return recipe, "", ""
        analysis = await self.store.analysis(request.uri)
        recipe = await in_thread(infer_recipe, dump_dir,
                                 analysis.module if analysis else None, workspace,
                                 dirs=request.source_dirs)
        if recipe is None:
            return None, ("Cannot recompile: this dump names no Python file and has no "
                          "recipe. Make it with `hlo-lsp dump -- python your_program.py`, "
                          "or set hlo.recompile.command."), ""
        return recipe, "", (f"No recipe for this dump; {recipe.note}. (Set "
                            "hlo.recompile.command to choose the command.)")

    async def _choose(self, request: RecompileRequest, ui: RecompileUI) -> _Run | dict:
        """What runs where (the recipe, the launcher, the target or the platform,
        the plan), or the failed answer (said) when it cannot run."""
        settings, options = request.settings, request.options
        recipe, why, reason = await self._resolve_recipe(request)
        if recipe is None:
            return failed(ui, why)
        experiment = None
        if "experiment" in options:
            keys = options.get("experiment")
            if isinstance(options.get("line"), int):
                try:
                    experiment = combine_named(
                        str(k) for k in (keys if isinstance(keys, list) else [keys]))
                except FlagConflict as exc:
                    return failed(ui, f"Cannot run the experiment: {exc}.")
                except ValueError:  # UnknownExperiment, or no key
                    pass
            if experiment is None:
                return failed(ui, f"Cannot run the experiment {keys!r}: "
                                  "not an entry of hlo-lsp's table of XLA flags at a line.")
            recipe = variant_recipe(recipe, experiment)
            if reason:
                reason += (f" The experiment adds {experiment.argument} to its XLA_FLAGS and "
                           f"compiles into {variant_dir(os.path.dirname(request.path), experiment)}"
                           " (your dump is not changed).")
        try:
            launcher = launcher_for(settings, recipe)
        except LauncherError as exc:
            return failed(ui, f"Cannot recompile: hlo.recompile.launcher: {exc}")
        target: Target | None = None
        spec = target_spec(options, settings, recipe)
        own = recipe.platform if recipe.origin == "recipe" and not recipe.target else None
        if launcher is not None and not spec:
            try:
                platform, note = launch_platform(
                    options.get("platform") or settings.platform, own), ""
            except PlatformError as exc:
                return failed(ui, f"Cannot recompile: {exc}")
        elif spec:
            try:
                target = await in_thread(resolve_target, spec, recipe.cwd)
            except TargetError as exc:
                return failed(ui, f"Cannot recompile: {exc}")
            platform, note = "cpu", ""
        else:
            try:
                # May start nvidia-smi once: off the event loop.
                platform, note = await in_thread(
                    choose_platform, options.get("platform") or settings.platform, own,
                    hint="Set hlo.recompile.platform to cpu (or auto) to compile on the CPU.")
            except PlatformError as exc:
                return failed(ui, f"Cannot recompile: {exc}")
        try:
            plan = await in_thread(plan_run, recipe, None, launcher)
            launched = launched_preview(plan, recipe, platform)
        except (RecipeError, LauncherError) as exc:
            return failed(ui, f"Cannot recompile: {exc}")
        if launcher is not None and not reason:
            # The user's own command, but a launcher runs it elsewhere: the first run of
            # each new launcher shows the full command line.
            reason = (f"The recompile runs through the {launcher.name} launcher of your "
                      "settings for the first time with this command.")
        return _Run(recipe, plan, platform, note, target, launcher, launched, reason,
                    None if experiment else profile_calls(options, recipe), experiment)

    async def _confirmed(self, run: _Run, ui: RecompileUI) -> bool:
        """Whether ``run.plan`` may run: confirmed before, or the user answers Run
        now (then remembered). Any other answer, or none, is a no."""
        if await in_thread(trust.is_confirmed, run.plan):
            return True
        answer = await ui.confirm(confirmation_message(
            run.reason, run.plan, run.platform, run.target, str(trust.state_dir()),
            run.launched, run.profile), [RUN, CANCEL])
        if answer != RUN:
            return False
        try:
            await in_thread(trust.remember, run.plan)
        except OSError as exc:
            ui.say("warning", f"Could not remember the confirmation in {trust.state_dir()}: "
                              f"{exc.strerror or exc}; the next recompile will ask again.")
        return True

    async def _execute(self, request: RecompileRequest, run: _Run, ui: RecompileUI) -> dict:
        """Run ``run`` with progress and its output logged, then refresh the open
        files and say what changed; the command's answer."""
        path, dump_dir = request.path, os.path.dirname(request.path)
        name = parse_dump_name(os.path.basename(path))
        where = (f"for {run.target.name.upper()} (no GPU needed)" if run.target is not None
                 else f"on {platform_label(run.platform)}")
        if run.launcher is not None:
            where += f" through {run.launcher.name}"
        if run.profile:
            where += ", profiled"
        await ui.begin_progress(f"Recompiling {name.module_name if name else 'dump'} {where}",
                                run.plan.display_command())
        output = _OutputLog(ui)
        if run.note:
            ui.log(f"[hlo.recompile] {run.note}", "info")
        if run.launched:
            ui.log(f"[hlo.recompile] through the {run.launcher.name} launcher: "
                   f"`{run.launched}`", "info")
        ui.log(f"[hlo.recompile] running `{run.plan.display_command()}` in {run.plan.cwd} "
               f"(JAX_PLATFORMS={run.platform})"
               + (f", compiling what it jits for {run.target.label}" if run.target else "")
               + (f", tracing {run.profile} calls with jax.profiler" if run.profile else ""),
               "info")
        open_files = [p for u in self.store.open_uris()
                      if (p := self._dump_path(u)) is not None
                      and os.path.dirname(p) == dump_dir]
        if path not in open_files:
            open_files.append(path)
        try:
            result = await recompile(
                run.recipe, dump_dir, platform=run.platform, open_files=open_files,
                on_output=output.line, cancel=ui.cancel, timeout=request.settings.timeout,
                save=run.recipe.origin != "setting", target=run.target, plan=run.plan,
                on_stage=output.stage, device=request.device, profile=run.profile)
        finally:
            ui.end_progress("done")
        shown: list[str] = []
        note = f"\n{run.note}" if run.note else ""
        if result.ok:
            shown = await self._refresh(result, path, ui)
            ui.say("info", result.summary + note)
        else:
            ui.say("info" if result.cancelled else "error", result.summary)
        # The report itself is the reply's (each editor shows it, VS Code in the same
        # output channel as this log): logging it too showed it twice there.
        return _answer(result, result.summary + (note if result.ok else ""), shown)

    async def _execute_experiment(self, request: RecompileRequest, run: _Run,
                                  ui: RecompileUI) -> dict:
        """Run the experiment ``run.experiment`` into its variant directory with
        progress and its output logged, show the instruction's counterpart in the
        variant's file and say what it became; the command's answer."""
        experiment = run.experiment
        assert experiment is not None
        where = (f"for {run.target.name.upper()} (no GPU needed)" if run.target is not None
                 else f"on {platform_label(run.platform)}")
        await ui.begin_progress(f"Experiment: {experiment.title} {where}",
                                run.plan.display_command())
        output = _OutputLog(ui)
        ui.log(f"[hlo.recompile] experiment {experiment.argument}: running "
               f"`{run.plan.display_command()}` in {run.plan.cwd}", "info")
        try:
            result = await run_experiment(
                run.recipe, request.path, request.options["line"], experiment,
                platform=run.platform, target=run.target, plan=run.plan,
                on_output=output.line, on_stage=output.stage, cancel=ui.cancel,
                timeout=request.settings.timeout, device=request.device)
        finally:
            ui.end_progress("done")
        shown = []
        if result.ok and result.variant_file is not None:
            if await ui.show(result.variant_file, True, result.line):
                shown.append(result.variant_file)
        ui.say("info" if result.ok or result.cancelled else "error", result.message)
        return _experiment_answer(result, shown)

    def _dump_path(self, uri: str) -> str | None:
        """The absolute path of the open document ``uri`` when it is a dump file."""
        p = self.store.to_path(uri)
        if not p or parse_dump_name(os.path.basename(p)) is None:
            return None
        return os.path.abspath(p)

    async def _refresh(self, result: RecompileResult, command_path: str,
                       ui: RecompileUI) -> list[str]:
        """Fresh diagnostics for the open files of the dump, each renumbered one
        shown (focused when it is the command's); returns the paths shown."""
        shown = []
        for old_path, new_path in result.mapping.items():
            if new_path is None:
                ui.publish(old_path, [], None)
                continue
            try:
                text = await in_thread(read_text, new_path)
            except OSError:  # UntrustedFileError
                continue
            a = await in_pool(self.parse_pool, analyze, new_path, 0, text, self.store.encoding)
            if new_path != old_path:
                ui.publish(old_path, [], None)
                if await ui.show(new_path, old_path == command_path):
                    shown.append(new_path)
            ui.publish(new_path, list(a.problems), a.lines)
        return shown


class _OutputLog:
    """The program's output and a launcher's stages, as log lines and progress
    reports (at most :data:`MAX_LOG_LINES` lines; one report of the output per
    :data:`PROGRESS_EVERY_S`, the stage kept in view)."""

    def __init__(self, ui: RecompileUI) -> None:
        self.ui = ui
        self.lines = 0
        self.last_report = 0.0
        self.stage_now = ""

    def line(self, stream: str, line: str) -> None:
        self.lines += 1
        if self.lines <= MAX_LOG_LINES:
            self.ui.log(f"[hlo.recompile {stream}] {line}")
        elif self.lines == MAX_LOG_LINES + 1:
            self.ui.log("[hlo.recompile] ... more output not shown")
        now = time.monotonic()
        if line.strip() and now - self.last_report >= PROGRESS_EVERY_S:
            self.last_report = now
            # Through a launcher, the stage stays in view: "running in SLURM (job 12): ..."
            self.ui.report_progress(
                (f"{self.stage_now}: {line}" if self.stage_now else line)[:120])

    def stage(self, stage: Stage) -> None:
        self.stage_now = stage.message()
        self.ui.log(f"[hlo.recompile] {stage.message()}", "info")
        self.ui.report_progress(stage.message())


def _experiment_answer(result: ExperimentResult, shown: list[str]) -> dict:
    """The command's answer for an experiment (paths, not URIs): the run's fields
    (``dump_dir`` the variant's), ``summary`` the report, ``experiment``
    :meth:`hlo_lsp.dump.experiments.ExperimentResult.to_json`."""
    if result.run is None:
        return {"error": result.error, "summary": result.message,
                "experiment": result.to_json()}
    out = _answer(result.run, result.message, shown)
    out.update(ok=result.ok, cancelled=result.cancelled, error=result.error,
               experiment=result.to_json())
    return out


def _answer(result: RecompileResult, summary: str, shown: list[str]) -> dict:
    """The command's answer for a recompile that ran (paths, not URIs)."""
    return dict(
        ok=result.ok, cancelled=result.cancelled, error=result.error, summary=summary,
        timed_out=result.timed_out, returncode=result.returncode, platform=result.platform,
        command=result.command, dump_dir=result.dump_dir, seconds=round(result.seconds, 3),
        stderr_tail=result.stderr_tail, mapping=dict(result.mapping),
        changes=[c.to_json() for c in result.changes], recipe_file=result.recipe_file,
        shown_documents=shown, target=result.target, deviceless=result.deviceless,
        launcher=result.launcher, launched=result.launched, job_id=result.job_id,
        stages=list(result.stages), profile=result.profile, profile_run=result.profile_run)
