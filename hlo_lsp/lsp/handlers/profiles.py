"""Measured profiles over LSP (docs/protocol.md, "Profiles"): which runs of
``jax.profiler`` lie near a dump, and loading one.

- request ``hlo/profileRuns`` ``{textDocument, path?}`` ->
  :class:`~hlo_lsp.lsp.messages.ProfileRunsReply`: the runs in ``path`` (else in
  the setting ``profile``, else beside the document's dump), oldest first, the
  run loaded now and a sentence for the user
  (:meth:`hlo_lsp.analysis.profiles.Profiles.runs`).
- command ``hlo.loadProfile`` ``[{uri, path?}]`` (or ``[uri, path?]``) ->
  :class:`~hlo_lsp.lsp.messages.LoadProfileReply`: the run loaded for the
  document's dump (``path`` a run or a directory holding runs, its newest; none:
  the newest run near the document), its message shown with
  ``window/showMessage`` (Info when a run was loaded, Warning otherwise), and the
  client asked to refresh its code lenses (``workspace/codeLens/refresh``, when
  it supports it): they show measured times
  (:meth:`hlo_lsp.analysis.profiles.Profiles.load`).

Each handler converts; finding, reading and caching profiles is the analysis
layer's (:class:`hlo_lsp.analysis.profiles.Profiles`, the host's ``profiles``).
The setting: :attr:`hlo_lsp.lsp.settings.Settings.profile`.
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types
from pygls.uris import to_fs_path

from hlo_lsp.lsp import messages
from hlo_lsp.lsp.dispatch import route
from hlo_lsp.lsp.messages import LOAD_PROFILE, PROFILE_RUNS
from hlo_lsp.lsp.protocol import HloLanguageServer


# ------------------------------------------------------------ conversions ---

def runs_reply(runs: list, loaded: str | None, message: str) -> messages.ProfileRunsReply:
    """What :meth:`Profiles.runs` answers (``ProfileRun`` objects with ``path``
    and ``name``) as the ``hlo/profileRuns`` result."""
    return messages.ProfileRunsReply(
        runs=[messages.ProfileRunInfo(path=r.path, name=r.name) for r in runs],
        loaded=loaded, message=message)


def load_arguments(args: Any) -> messages.LoadProfileArgs | None:
    """``hlo.loadProfile``'s arguments: ``[{uri, path?}]``, or ``[uri]`` and
    ``[uri, path]`` as plain strings; None when there is no document URI or they
    are malformed. An empty ``path`` is none."""
    args = list(args or [])
    if args and isinstance(args[0], str):
        args = [{"uri": args[0], "path": args[1] if len(args) > 1 else None}]
    parsed = messages.parse_arguments(args, messages.LoadProfileArgs)
    found = parsed[0] if parsed else None
    if found is None or not found.uri:
        return None
    return messages.LoadProfileArgs(uri=found.uri, path=found.path or None)


def tell(ls: HloLanguageServer, loaded: bool, message: str) -> None:
    """``window/showMessage``: Info when a run was loaded, else Warning."""
    kind = types.MessageType.Info if loaded else types.MessageType.Warning
    ls.window_show_message(types.ShowMessageParams(type=kind, message=message))


# --------------------------------------------------------------- register ---

def register(server: HloLanguageServer) -> None:
    """Register the profile handlers on ``server``, each as its row of
    :data:`hlo_lsp.lsp.dispatch.ROUTES` says."""

    @route(server, PROFILE_RUNS)
    async def on_profile_runs(ls: HloLanguageServer, params: Any) -> dict | None:
        parsed = messages.parse_params(messages.ProfileRunsParams, params)
        doc = to_fs_path(parsed.text_document.uri) if parsed else None
        if doc is None:
            return None
        runs, loaded, message = await ls.host.profiles.runs(doc, parsed.path or None,
                                                            ls.settings.profile)
        return messages.to_json(runs_reply(runs, loaded, message))

    @route(server, LOAD_PROFILE)
    async def load_profile(ls: HloLanguageServer, *args: Any) -> dict | None:
        """[{uri, path?}] -> {run, message}."""
        found = load_arguments(args)
        doc = to_fs_path(found.uri) if found else None
        if doc is None:
            return None
        run, message = await ls.host.profiles.load(doc, found.path, ls.settings.profile)
        tell(ls, run is not None, message)
        ls.refresh_code_lenses()
        return messages.to_json(messages.LoadProfileReply(run=run, message=message))
