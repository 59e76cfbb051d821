"""Recompile a dump from its JAX program, and links from metadata to Python.

- ``textDocument/codeAction``: anywhere in an XLA dump file (an instruction, a
  header, a ``}``, a blank line), first what a plain recompile does: "Recompile with JAX on GPU and
  refresh" (CPU/TPU when that is the platform it would run on; "Compile for H100
  here, no GPU needed" when the recipe or the setting names a target GPU), kind
  ``source.hlo.recompile``, running the command ``hlo.recompile`` with arguments
  ``[uri]``; then the other choices, with arguments ``[uri, {"platform": "gpu"}]``
  ("Run on this machine's GPU and refresh", when it has one), ``[uri, {"target":
  "h100"}]`` ("Compile for H100 here, no GPU needed": the target of
  ``hlo.recompile.target``, else the recipe's, else H100) and ``[uri,
  {"platform": "cpu"}]`` ("Run on the CPU and refresh").
- ``workspace/executeCommand`` ``hlo.recompile``: resolve the recipe (the
  ``hlo-lsp-recipe.json`` of the dump directory; else the setting
  ``hlo.recompile.command``; else one inferred from the stack frames). What a
  recipe or an inference would run (:class:`hlo_lsp.dump.environment.RunPlan`: the
  command line, working directory, interpreter and environment changes) runs
  only when the user confirmed that exact plan: answered "Run" to the
  ``window/showMessageRequest`` that shows it, now or before (remembered in the
  user's state directory, :mod:`hlo_lsp.dump.trust`); the setting's command
  runs without asking. Then it runs in a
  subprocess with ``window/workDoneProgress`` (cancellable: the progress cancel
  notification and ``$/cancelRequest`` both kill the process tree), stream its
  output as ``window/logMessage``, then refresh: ``window/showDocument`` for
  each open file whose module was renumbered, fresh diagnostics for every open
  file, and a ``window/showMessage`` saying what changed. Returns
  :meth:`hlo_lsp.dump.recompile.RecompileResult.to_json` (plus ``shownDocuments``).
- A recipe that cannot be used (not a regular file, too large, not UTF-8 or
  JSON, too deep, wrong field types) is said once per file version in a
  ``window/showMessage`` warning (when links or code actions are asked for a
  file of its dump); links, definitions, hover and the code action work without
  it, and ``hlo.recompile`` answers with the reason.
- ``textDocument/documentLink``: every ``stack_frame_id=N`` and
  ``source_file=".." source_line=N`` links to ``file:///...py#L<line>`` with the
  call stack as tooltip; relative paths are resolved in
  :meth:`hlo_lsp.lsp.protocol.HloLanguageServer.source_dirs`. In XLA's reports,
  the links of :mod:`hlo_lsp.lsp.handlers.reports`.

Launchers (issue 16): the program runs through the launcher of the setting
``hlo.recompile.launcher``, else of the recipe (:mod:`hlo_lsp.dump.launchers`:
SLURM, ssh, containers); it is part of the confirmed plan, so its first run
asks, showing the full command line that starts here (:func:`launched_preview`);
its stages (queued in SLURM with the job id, running, copying back) are
progress reports, and a cancel reaches the remote side.

Settings: :class:`hlo_lsp.lsp.settings.RecompileSettings`, from the
initialization options and, when the client supports it, the
``workspace/configuration`` section ``hlo.recompile`` (which wins).
"""

from __future__ import annotations

import asyncio
import logging
import os
import shlex
import time
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path

from hlo_lsp.analysis.work import in_thread, in_pool
from hlo_lsp.dump.names import parse_dump_name
from hlo_lsp.dump import trust
from hlo_lsp.dump.launchers import Launcher, LauncherError, Stage, launched_argv
from hlo_lsp.dump.environment import RunPlan, plan_run, travelling_env
from hlo_lsp.dump.inference import configured_recipe, infer_recipe
from hlo_lsp.dump.platforms import (choose_platform, default_platform, launch_platform,
                                    platform_label)
from hlo_lsp.dump.recipe import PlatformError, Recipe, RecipeError, load_recipe, recipe_path
from hlo_lsp.dump.recompile import recompile
from hlo_lsp.dump.sources import outside_note, resolve_source_path
from hlo_lsp.dump.targets import Target, TargetError, resolve_target
from hlo_lsp.dump.untrusted import read_text
from hlo_lsp.model.visible import visible
from hlo_lsp.features.links import source_links
from hlo_lsp.lsp.pygls_adapter import current_request_future, progress_cancel_future
from hlo_lsp.lsp.convert import to_diagnostic
from hlo_lsp.lsp import wire
from hlo_lsp.analysis.documents import Analysis, analyze
from hlo_lsp.lsp.handlers import reports
from hlo_lsp.lsp.messages import RECOMPILE as COMMAND, recompile_reply
from hlo_lsp.lsp.protocol import HloLanguageServer
from hlo_lsp.lsp.requests import guarded
from hlo_lsp.lsp.settings import RecompileSettings

log = logging.getLogger("hlo_lsp.recompile")

ACTION_KIND = "source.hlo.recompile"
RUN, CANCEL = "Run", "Cancel"
MAX_LOG_LINES = 5000
PROGRESS_EVERY_S = 0.25
CONFIG_TIMEOUT_S = 5.0



# ---------------------------------------------------------------- helpers ---

def _links_answer(a: Analysis, dirs: list[str], roots: list[str] = ()) -> wire.Encoded:
    """The ``textDocument/documentLink`` answer for ``a``: each metadata source
    location whose file exists (looked for in ``dirs``,
    :func:`hlo_lsp.dump.sources.resolve_source_path`) as an LSP ``DocumentLink``
    to ``file.py#L<line>``, its tooltip the Python call stack, after a sentence
    when the file lies outside ``roots`` (:func:`hlo_lsp.dump.sources.outside_note`)."""
    at = wire.converter(a.lines)
    out = []
    for link in source_links(a.module, lambda p: resolve_source_path(p, dirs),
                             lambda p: outside_note(p, roots)):
        target = _file_uri(link.path)
        if target is None:
            continue
        out.append({"range": {"start": at(link.start), "end": at(max(link.start, link.end))},
                    "target": f"{target}#L{link.line}", "tooltip": link.tooltip})
    return wire.encode(out)


def _file_uri(path: str) -> str | None:
    """The ``file:`` URI of the absolute ``path``; None for a relative path or
    one a URI cannot hold (a lone surrogate, from an undecodable byte in a file
    name or from the dump's text): that link alone is left out."""
    if not os.path.isabs(path):
        return None
    try:
        return from_fs_path(path)
    except UnicodeEncodeError:
        return None


def _dump_file(uri: str | None) -> str | None:
    """The absolute path of ``uri`` when it is an XLA dump file, else None."""
    if not isinstance(uri, str):
        return None
    path = to_fs_path(uri)
    if not path or parse_dump_name(os.path.basename(path)) is None:
        return None
    return os.path.abspath(path)


async def recompile_settings(ls: HloLanguageServer, uri: str) -> RecompileSettings:
    """``hlo.recompile`` settings: the initialization options, overridden by the
    client's ``workspace/configuration`` answer for section ``hlo.recompile``
    (asked only when the client supports it; empty values are ignored)."""
    settings = ls.settings.recompile
    caps = ls.client_capabilities
    if caps.workspace is not None and caps.workspace.configuration:
        try:
            answer = await asyncio.wait_for(ls.workspace_configuration_async(
                types.ConfigurationParams(items=[types.ConfigurationItem(
                    scope_uri=uri, section="hlo.recompile")])), CONFIG_TIMEOUT_S)
        except Exception:  # noqa: BLE001 - a client that cannot answer has no settings
            log.info("workspace/configuration for hlo.recompile failed", exc_info=True)
            answer = None
        if answer:
            settings = settings.overridden_by(answer[0])
    return settings


DEFAULT_TARGET = "h100"


def _target_spec(options: dict, settings: RecompileSettings,
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


def _launcher(settings: RecompileSettings, recipe: Recipe | None) -> Launcher | None:
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


def _action_title(platform: str | None, target: str | None) -> str:
    if target:
        name = os.path.basename(target) if os.sep in target else target.upper()
        return f"Compile for {name} here, no GPU needed"
    return f"Recompile with JAX on {platform_label(platform or 'cpu')} and refresh"


def _planned_actions(settings: RecompileSettings,
                     recipe: Recipe | None) -> list[tuple[str, list]]:
    """(title, extra command arguments) of the recompile actions, the plain
    recompile first (see the module docstring). May start ``nvidia-smi`` once
    (:func:`hlo_lsp.dump.platforms.default_platform`): call it off the event loop."""
    target = _target_spec({}, settings, recipe)
    try:
        launcher = _launcher(settings, recipe)
    except LauncherError:
        launcher = None
    if target:
        first = _action_title(None, target)
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
        first = _action_title(platform, None)
    out = [(first, [])]
    gpu = default_platform()
    choices = [("Run on this machine's GPU and refresh", {"platform": "gpu"})] if gpu else []
    other = settings.target or (recipe.target if recipe else None) or DEFAULT_TARGET
    choices += [(_action_title(None, other), {"target": other}),
                ("Run on the CPU and refresh", {"platform": "cpu"})]
    for title, options in choices:
        if title != first and not (options.get("platform") == "cpu"
                                   and first == _action_title("cpu", None)):
            out.append((title, [options]))
    return out


def _read_recipe(dump_dir: str) -> tuple[Recipe | None, str, tuple]:
    """The recipe of ``dump_dir`` (None without one), why it cannot be used (""
    when it can) and the identity of the unusable file. Blocking."""
    try:
        return load_recipe(dump_dir), "", ()
    except RecipeError as exc:
        path = str(recipe_path(dump_dir))
        try:
            st = os.stat(path)
            return None, str(exc), (path, st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)
        except OSError:
            return None, str(exc), (path,)


async def dump_recipe(ls: HloLanguageServer, dump_dir: str,
                      report: bool = True) -> tuple[Recipe | None, str]:
    """The recipe of ``dump_dir`` read off the event loop
    (:func:`hlo_lsp.dump.recipe.load_recipe`: a FIFO, a device or a huge file
    never blocks the server) and why it cannot be used ("" when it can, or when
    there is none). With ``report``, an unusable recipe is said once per file
    version in a ``window/showMessage`` warning; the features that do not need
    it keep working."""
    recipe, problem, key = await in_thread(_read_recipe, dump_dir)
    if problem and report and key not in ls.recipes_reported:
        ls.recipes_reported.add(key)
        _say(ls, types.MessageType.Warning,
             f"hlo-lsp does not use this dump's recipe: {problem}. Links, definitions "
             "and hover work without it; to recompile, fix or remove the file (or set "
             "hlo.recompile.command).")
    return recipe, problem


def _say(ls, kind: types.MessageType, message: str) -> None:
    ls.window_show_message(types.ShowMessageParams(type=kind, message=message))


def _fail(ls, message: str, **extra) -> dict:
    _say(ls, types.MessageType.Error, message)
    return recompile_reply(error=message, summary=message, **extra)


# ------------------------------------------------------------- the command ---

async def _resolve_recipe(ls: HloLanguageServer, uri: str, path: str,
                          settings: RecompileSettings) -> tuple[Recipe | None, str, str]:
    """The recipe to run, why not ("" when there is one) and, for a command the
    user did not give (a recipe file, an inferred command), the sentence that
    opens the confirmation ("" for the setting's command)."""
    dump_dir = os.path.dirname(path)
    workspace = next(iter(ls.workspace_folders()), None)
    recipe, problem = await dump_recipe(ls, dump_dir, report=False)
    if problem:
        return None, f"Cannot recompile: {problem}", ""
    if recipe is not None:
        return recipe, "", (f"The recipe {recipe_path(dump_dir)} asks to run a command "
                            "you have not confirmed.")
    if settings.command:
        try:
            recipe = configured_recipe(settings.command, settings.cwd, workspace or dump_dir)
        except (RecipeError, ValueError) as exc:
            return None, f"Cannot recompile: hlo.recompile.command: {exc}", ""
        return recipe, "", ""
    analysis = await ls.analysis(uri)
    dirs = await ls.source_dirs(uri)
    recipe = await in_thread(infer_recipe, dump_dir,
                             analysis.module if analysis else None, workspace, dirs=dirs)
    if recipe is None:
        return None, ("Cannot recompile: this dump names no Python file and has no "
                      "recipe. Make it with `hlo-lsp dump -- python your_program.py`, "
                      "or set hlo.recompile.command."), ""
    return recipe, "", (f"No recipe for this dump; {recipe.note}. (Set "
                        "hlo.recompile.command to choose the command.)")


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
                         target: Target | None, state: str, launched: str = "") -> str:
    """The text of the confirmation: ``reason``, then exactly what runs (the
    command line as :func:`shlex.join` writes it, the working directory, the
    interpreter, the environment changes, the variables hlo-lsp sets, the
    deviceless runner when compiling for ``target``; with a launcher, the
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
    lines.append(f"Run is remembered for exactly this command, directory, interpreter, "
                 f"environment{' and launcher' if plan.launcher else ''} (in {state}); a "
                 f"changed recipe{' or launcher' if plan.launcher else ''} asks again.")
    return "\n".join(lines)


async def _confirmed(ls: HloLanguageServer, reason: str, plan: RunPlan, platform: str,
                     target: Target | None, launched: str = "") -> bool:
    """Whether ``plan`` may run: confirmed before, or the user answers Run now
    (then remembered). Any other answer, or none, is a no."""
    if await in_thread(trust.is_confirmed, plan):
        return True
    answer = await ls.window_show_message_request_async(types.ShowMessageRequestParams(
        type=types.MessageType.Warning,
        message=confirmation_message(reason, plan, platform, target, str(trust.state_dir()),
                                     launched),
        actions=[types.MessageActionItem(title=RUN),
                 types.MessageActionItem(title=CANCEL)]))
    if answer is None or answer.title != RUN:
        return False
    try:
        await in_thread(trust.remember, plan)
    except OSError as exc:
        _say(ls, types.MessageType.Warning,
             f"Could not remember the confirmation in {trust.state_dir()}: "
             f"{exc.strerror or exc}; the next recompile will ask again.")
    return True


def _watch_request_cancel(ls, cancel: asyncio.Event) -> None:
    """Set ``cancel`` when the client sends ``$/cancelRequest`` for the running
    ``workspace/executeCommand`` request. pygls answers the request as cancelled
    but keeps running the command's coroutine, so the request's future is
    watched (:func:`hlo_lsp.lsp.pygls_adapter.current_request_future`)."""
    loop = asyncio.get_running_loop()
    outer = current_request_future(ls.protocol)
    if outer is not None:
        outer.add_done_callback(
            lambda f: f.cancelled() and loop.call_soon_threadsafe(cancel.set))


async def _start_progress(ls, title: str, message: str,
                          cancel: asyncio.Event) -> str | None:
    """Begin a cancellable progress report whose cancel button sets ``cancel``."""
    token = await ls.begin_progress(title, message, cancellable=True, kind="recompile")
    if token is None:
        return None
    loop = asyncio.get_running_loop()
    future = progress_cancel_future(ls, token)
    if future is not None:
        future.add_done_callback(
            lambda f: f.cancelled() and loop.call_soon_threadsafe(cancel.set))
    return token


async def _refresh(ls, result, command_uri: str) -> list[str]:
    """Fresh diagnostics for the open files of the dump, showDocument for the
    renumbered ones; returns the URIs shown."""
    caps = ls.client_capabilities
    can_show = bool(caps.window and caps.window.show_document
                    and caps.window.show_document.support)
    shown = []
    for old_path, new_path in result.mapping.items():
        old_uri = from_fs_path(old_path)
        if new_path is None:
            ls.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=old_uri, diagnostics=[]))
            continue
        new_uri = from_fs_path(new_path)
        try:
            text = await in_thread(read_text, new_path)
        except OSError:  # UntrustedFileError
            continue
        a = await in_pool(ls.parse_pool, analyze, new_uri, 0, text, ls.position_encoding())
        diags = [to_diagnostic(p, a.lines) for p in a.problems]
        if new_uri != old_uri:
            ls.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=old_uri, diagnostics=[]))
            if can_show:
                try:
                    await ls.window_show_document_async(types.ShowDocumentParams(
                        uri=new_uri, take_focus=old_uri == command_uri))
                    shown.append(new_uri)
                except Exception:  # noqa: BLE001
                    log.info("window/showDocument failed", exc_info=True)
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=new_uri, diagnostics=diags))
    return shown


async def run_recompile(ls, uri: str, options: dict | None = None) -> dict:
    """The ``hlo.recompile`` command for the dump file ``uri``; ``options``:
    ``{"platform": P}`` (a device platform, as ``hlo.recompile.platform``) or
    ``{"target": T}`` (a target GPU, as ``hlo.recompile.target``); see the module
    docstring. Never raises (errors are shown and returned)."""
    options = options if isinstance(options, dict) else {}
    path = _dump_file(uri)
    if path is None:
        return _fail(ls, f"hlo.recompile: {uri!r} is not a file of an XLA dump directory.")
    dump_dir = os.path.dirname(path)
    if dump_dir in ls.recompiles_running:
        return _fail(ls, f"A recompile of {dump_dir} is already running.")
    ls.recompiles_running.add(dump_dir)
    try:
        return await _run_locked(ls, uri, path, dump_dir, options)
    finally:
        ls.recompiles_running.discard(dump_dir)


async def _run_locked(ls, uri: str, path: str, dump_dir: str, options: dict) -> dict:
    settings = await recompile_settings(ls, uri)
    recipe, why, reason = await _resolve_recipe(ls, uri, path, settings)
    if recipe is None:
        return _fail(ls, why)
    try:
        launcher = _launcher(settings, recipe)
    except LauncherError as exc:
        return _fail(ls, f"Cannot recompile: hlo.recompile.launcher: {exc}")
    target: Target | None = None
    spec = _target_spec(options, settings, recipe)
    if launcher is not None and not spec:
        try:
            platform, note = launch_platform(
                options.get("platform") or settings.platform,
                recipe.platform if recipe.origin == "recipe" and not recipe.target else None), ""
        except PlatformError as exc:
            return _fail(ls, f"Cannot recompile: {exc}")
    elif spec:
        try:
            target = await in_thread(resolve_target, spec, recipe.cwd)
        except TargetError as exc:
            return _fail(ls, f"Cannot recompile: {exc}")
        platform, note = "cpu", ""
    else:
        try:
            # May start nvidia-smi once: off the event loop.
            platform, note = await in_thread(
                choose_platform, options.get("platform") or settings.platform,
                recipe.platform if recipe.origin == "recipe" and not recipe.target else None,
                hint="Set hlo.recompile.platform to cpu (or auto) to compile on the CPU.")
        except PlatformError as exc:
            return _fail(ls, f"Cannot recompile: {exc}")
    timeout = settings.timeout
    try:
        plan = await in_thread(plan_run, recipe, None, launcher)
        launched = launched_preview(plan, recipe, platform)
    except (RecipeError, LauncherError) as exc:
        return _fail(ls, f"Cannot recompile: {exc}")
    if launcher is not None and not reason:
        # The user's own command, but a launcher runs it elsewhere: the first run of
        # each new launcher shows the full command line.
        reason = (f"The recompile runs through the {launcher.name} launcher of your settings "
                  "for the first time with this command.")
    if reason and not await _confirmed(ls, reason, plan, platform, target, launched):
        _say(ls, types.MessageType.Info, "Recompile cancelled; nothing was run.")
        return recompile_reply(cancelled=True, error="not confirmed",
                               summary="Recompile cancelled; nothing was run.",
                               command=plan.display_command(), launched=launched)

    cancel = asyncio.Event()
    _watch_request_cancel(ls, cancel)
    name = parse_dump_name(os.path.basename(path))
    where = (f"for {target.name.upper()} (no GPU needed)" if target is not None
             else f"on {platform_label(platform)}")
    if launcher is not None:
        where += f" through {launcher.name}"
    title = f"Recompiling {name.module_name if name else 'dump'} {where}"
    token = await _start_progress(ls, title, plan.display_command(), cancel)
    log_lines = 0
    last_report = 0.0

    def log_message(message: str, kind=types.MessageType.Log) -> None:
        ls.window_log_message(types.LogMessageParams(type=kind, message=message))

    def on_output(stream: str, line: str) -> None:
        nonlocal log_lines, last_report
        log_lines += 1
        if log_lines <= MAX_LOG_LINES:
            log_message(f"[hlo.recompile {stream}] {line}")
        elif log_lines == MAX_LOG_LINES + 1:
            log_message("[hlo.recompile] ... more output not shown")
        now = time.monotonic()
        if token is not None and line.strip() and now - last_report >= PROGRESS_EVERY_S:
            last_report = now
            # Through a launcher, the stage stays in view: "running in SLURM (job 12): ..."
            ls.work_done_progress.report(token, types.WorkDoneProgressReport(
                message=(f"{stage_now}: {line}" if stage_now else line)[:120]))

    stage_now = ""

    def on_stage(stage: Stage) -> None:
        nonlocal stage_now
        stage_now = stage.message()
        log_message(f"[hlo.recompile] {stage.message()}", types.MessageType.Info)
        if token is not None:
            ls.work_done_progress.report(token, types.WorkDoneProgressReport(
                message=stage.message()))

    if note:
        log_message(f"[hlo.recompile] {note}", types.MessageType.Info)
    if launched:
        log_message(f"[hlo.recompile] through the {launcher.name} launcher: `{launched}`",
                    types.MessageType.Info)
    log_message(f"[hlo.recompile] running `{plan.display_command()}` in {plan.cwd} "
                f"(JAX_PLATFORMS={platform})"
                + (f", compiling what it jits for {target.label}" if target else ""),
                types.MessageType.Info)
    open_files = [p for u in ls.store.open_uris()
                  if (p := _dump_file(u)) is not None and os.path.dirname(p) == dump_dir]
    if path not in open_files:
        open_files.append(path)
    try:
        result = await recompile(recipe, dump_dir, platform=platform, open_files=open_files,
                                 on_output=on_output, cancel=cancel, timeout=timeout,
                                 save=recipe.origin != "setting", target=target,
                                 plan=plan, on_stage=on_stage, device=ls.settings.device)
    finally:
        if token is not None:
            ls.end_progress(token, "done")
    shown: list[str] = []
    if result.ok:
        shown = await _refresh(ls, result, uri)
        summary = result.summary + (f"\n{note}" if note else "")
        _say(ls, types.MessageType.Info, summary)
    elif result.cancelled:
        _say(ls, types.MessageType.Info, result.summary)
    else:
        _say(ls, types.MessageType.Error, result.summary)
    # The report itself is the reply's (each editor shows it, VS Code in the same
    # output channel as this log): logging it too showed it twice there.
    return recompile_reply(
        ok=result.ok, cancelled=result.cancelled, error=result.error,
        summary=result.summary + (f"\n{note}" if note and result.ok else ""),
        timed_out=result.timed_out, returncode=result.returncode, platform=result.platform,
        command=result.command, dump_dir=result.dump_dir, seconds=round(result.seconds, 3),
        stderr_tail=result.stderr_tail,
        mapping={from_fs_path(k): (from_fs_path(v) if v else None)
                 for k, v in result.mapping.items()},
        changes=[c.to_json() for c in result.changes], recipe_file=result.recipe_file,
        shown_documents=shown, target=result.target, deviceless=result.deviceless,
        launcher=result.launcher, launched=result.launched, job_id=result.job_id,
        stages=list(result.stages))


# --------------------------------------------------------------- register ---

def register(server: HloLanguageServer) -> None:
    """Register the code action, the ``hlo.recompile`` command and documentLink."""

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                    types.CodeActionOptions(code_action_kinds=[ACTION_KIND]))
    @guarded(default=None)
    async def code_actions(ls: HloLanguageServer, params: types.CodeActionParams):
        """The recompile actions anywhere in an XLA dump file (see the module
        docstring); none for other files or when ``only`` asks for other kinds."""
        uri = params.text_document.uri
        path = _dump_file(uri)
        if path is None:
            return None
        only = params.context.only if params.context else None
        if only and not any(ACTION_KIND == str(getattr(k, "value", k)) or
                            ACTION_KIND.startswith(str(getattr(k, "value", k)) + ".")
                            for k in only):
            return None
        # Anywhere in the file: on an instruction, a header, a `}`, a blank line or
        # the stack-frame tables (issue 40: "No code actions available" on `}`).
        recipe, _ = await dump_recipe(ls, os.path.dirname(path))
        planned = await in_thread(_planned_actions, ls.settings.recompile, recipe)
        return [types.CodeAction(title=title, kind=ACTION_KIND, is_preferred=not extra or None,
                                 command=types.Command(title=title, command=COMMAND,
                                                       arguments=[uri, *extra]))
                for title, extra in planned]

    @server.command(COMMAND)
    async def recompile_command(ls: HloLanguageServer, *args: Any) -> dict:
        """``hlo.recompile``, arguments ``[uri]`` (the plain recompile), ``[uri,
        {"target": T}]`` (compile for the target GPU ``T`` without one: a name of
        :func:`hlo_lsp.dump.targets.builtin_targets` or a GpuTargetConfig file),
        ``[uri, {"platform": P}]`` (run on the device platform ``P``: ``cpu``,
        ``gpu``, ...) or ``[{"uri": uri}]``; exactly the arguments of the code
        actions, which every client must pass on whole. See :func:`run_recompile`."""
        uri = args[0] if args else None
        if isinstance(uri, dict):
            uri = uri.get("uri")
        options = args[1] if len(args) > 1 and isinstance(args[1], dict) else {}
        try:
            return await run_recompile(ls, uri, options)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - report, never crash the server
            log.exception("hlo.recompile failed")
            return _fail(ls, f"hlo.recompile failed: {exc!r}")

    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_LINK,
                    types.DocumentLinkOptions(resolve_provider=False))
    @guarded(default=[])
    async def document_links(ls: HloLanguageServer, params: types.DocumentLinkParams):
        """Metadata source locations as links to ``file.py#L<line>``; in buffer
        assignment reports, instruction names as links to the HLO dump."""
        uri = params.text_document.uri
        if reports.is_report_uri(uri):
            return await reports.report_document_links(ls, uri)
        path = _dump_file(uri)
        if path is not None:
            await dump_recipe(ls, os.path.dirname(path))  # says once if it is unusable
        async with ls.lease(uri) as a:
            if a is None:
                return []
            dirs = await ls.source_dirs(uri)
            # every instruction's metadata, and the disk for each file it names:
            # on a dump of megabytes, not on the event loop
            return await ls.work(_links_answer, a, dirs, ls.source_roots(uri))
