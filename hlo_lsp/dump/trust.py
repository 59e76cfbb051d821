"""Which recompile commands the user has confirmed, remembered outside any dump.

A recipe (``hlo-lsp-recipe.json``) is written by whoever made the dump directory,
so it is input to check, not a setting: a recompile runs what a recipe says only
after the user confirmed that exact :class:`~hlo_lsp.dump.environment.RunPlan` (the
command line as executed, the absolute working directory, the interpreter and
the recorded environment variables). A confirmation is remembered as one file
named by :meth:`RunPlan.fingerprint` (SHA-256) in the user's state directory,
never in the dump directory, so editing a recipe, or shipping another one,
asks again, and nothing in a recipe (its ``host`` field included) can skip the
question. Commands the user gave (the ``hlo.recompile.command`` setting, the
command line of ``hlo-lsp dump``) need no confirmation.

The state directory: ``$HLO_LSP_STATE_DIR`` when set (tests), else
``$XDG_STATE_HOME/hlo-lsp`` (XDG Base Directory Specification 0.8: "user-specific
state data"), else ``~/.local/state/hlo-lsp``. Everything here blocks on the
disk: call it off the event loop.
"""

from __future__ import annotations

import json
import os
import pathlib
from typing import Mapping

from hlo_lsp.dump.environment import RunPlan
from hlo_lsp.dump.recipe import now_iso

STATE_DIR_ENV = "HLO_LSP_STATE_DIR"
CONFIRMED = "confirmed-commands"


def state_dir(env: Mapping[str, str] | None = None) -> pathlib.Path:
    """hlo-lsp's state directory for the environment ``env`` (default: this
    process's); see the module docstring. Not created here."""
    env = os.environ if env is None else env
    if env.get(STATE_DIR_ENV):
        return pathlib.Path(env[STATE_DIR_ENV]).expanduser()
    xdg = env.get("XDG_STATE_HOME")
    if xdg and os.path.isabs(xdg):  # the spec: a relative path is invalid, ignore it
        return pathlib.Path(xdg) / "hlo-lsp"
    return pathlib.Path(env.get("HOME") or os.path.expanduser("~")) / ".local" / "state" \
        / "hlo-lsp"


def confirmation_path(plan: RunPlan, state: pathlib.Path | None = None) -> pathlib.Path:
    """Where the confirmation of ``plan`` is kept:
    ``<state>/confirmed-commands/<fingerprint>.json``."""
    return (state or state_dir()) / CONFIRMED / f"{plan.fingerprint()}.json"


def is_confirmed(plan: RunPlan, state: pathlib.Path | None = None) -> bool:
    """Whether the user confirmed ``plan`` before (its file exists in the state
    directory ``state``, default :func:`state_dir`). False when the state
    directory cannot be read."""
    try:
        return confirmation_path(plan, state).is_file()
    except OSError:
        return False


def remember(plan: RunPlan, state: pathlib.Path | None = None) -> pathlib.Path:
    """Record that the user confirmed ``plan``: a JSON file (the plan and the
    time, for the user to read; only its name is checked) written atomically in
    the state directory, created private (mode 0700) when missing. Returns its
    path; OSError propagates (then the user is asked again next time)."""
    path = confirmation_path(plan, state)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    record = {"fingerprint": plan.fingerprint(), "argv": list(plan.argv), "cwd": plan.cwd,
              "interpreter": plan.interpreter, "env": dict(plan.env),
              "confirmed": now_iso()}
    if plan.launcher is not None:
        record["launcher"] = plan.launcher.to_json()
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


__all__ = ["CONFIRMED", "STATE_DIR_ENV", "confirmation_path", "is_confirmed", "remember",
           "state_dir"]
