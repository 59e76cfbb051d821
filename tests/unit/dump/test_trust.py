"""Confirmed recompile commands (hlo_lsp.dump.trust): kept in the user's state
directory, keyed by what runs; nothing in a dump directory decides."""

from __future__ import annotations

import json
import stat
import sys

from hlo_lsp.dump import trust
from hlo_lsp.dump.environment import RunPlan


def test_state_dir_follows_the_override_then_xdg_then_home(tmp_path):
    home = str(tmp_path / "home")
    assert trust.state_dir({"HOME": home}) == tmp_path / "home/.local/state/hlo-lsp"
    assert trust.state_dir({"HOME": home, "XDG_STATE_HOME": str(tmp_path / "xdg")}) == \
        tmp_path / "xdg/hlo-lsp"
    # A relative XDG_STATE_HOME is invalid (XDG spec) and ignored.
    assert trust.state_dir({"HOME": home, "XDG_STATE_HOME": "rel"}) == \
        tmp_path / "home/.local/state/hlo-lsp"
    assert trust.state_dir({"HOME": home, "XDG_STATE_HOME": str(tmp_path / "xdg"),
                            trust.STATE_DIR_ENV: str(tmp_path / "t")}) == tmp_path / "t"


def test_a_confirmation_is_remembered_for_exactly_that_plan(tmp_path):
    state = tmp_path / "state"
    plan = RunPlan((sys.executable, "train.py"), "/work/p", sys.executable,
                   (("JAX_ENABLE_X64", "1"),), (("JAX_ENABLE_X64", "1"),))
    assert not trust.is_confirmed(plan, state)
    path = trust.remember(plan, state)
    assert trust.is_confirmed(plan, state)
    assert path.parent == state / trust.CONFIRMED and path.stem == plan.fingerprint()
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    record = json.loads(path.read_text())
    assert record["argv"] == list(plan.argv) and record["cwd"] == "/work/p"
    # Only what runs counts: the displayed changes are derived, not keyed.
    assert trust.is_confirmed(RunPlan(plan.argv, plan.cwd, plan.interpreter, plan.env), state)
    for other in (RunPlan((sys.executable, "train.py", "--x"), "/work/p", sys.executable,
                          plan.env),
                  RunPlan(plan.argv, "/work/q", sys.executable, plan.env),
                  RunPlan(plan.argv, "/work/p", "/usr/bin/python3", plan.env),
                  RunPlan(plan.argv, "/work/p", sys.executable, (("JAX_ENABLE_X64", "0"),))):
        assert not trust.is_confirmed(other, state)
    assert not trust.is_confirmed(plan, tmp_path / "another-state")
