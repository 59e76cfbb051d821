"""Typed settings (hlo_lsp.lsp.settings): every spelling editors use, defaults,
malformed values ignored one by one, and docs/protocol.md generated from the
same definitions."""

from __future__ import annotations

import logging

from hlo_lsp.lsp.settings import (InlayHintSettings, LauncherSettings, RecompileSettings,
                                  Settings, WorkspaceSettings, markdown_table, normalise,
                                  parse_settings)
from tests.helpers import ROOT


def test_defaults_without_options():
    assert parse_settings(None) == Settings()
    assert parse_settings({}).inlay_hints.categories() == ("operandShape", "source",
                                                           "tupleElement", "collective")


def test_inlay_hint_categories_turn_off():
    s = parse_settings({"inlayHints": {"pythonSource": False}})
    assert s.inlay_hints.categories() == ("operandShape", "tupleElement", "collective")
    s = parse_settings({"inlayHints": {"collectives": False}})
    assert s.inlay_hints.categories() == ("operandShape", "source", "tupleElement")


def test_every_spelling_of_a_section_is_read_and_flat_keys_win():
    nested = parse_settings({"hlo": {"recompile": {"command": ["python", "x.py"]}}})
    top = parse_settings({"recompile": {"command": ["python", "x.py"]}})
    flat = parse_settings({"hlo.recompile.command": ["python", "x.py"]})
    assert nested.recompile == top.recompile == flat.recompile
    assert nested.recompile.command == ["python", "x.py"]
    both = parse_settings({"hlo": {"workspace": {"maxFiles": 10}},
                           "hlo.workspace.maxFiles": 20, "hlo.workspace.index": False})
    assert both.workspace.max_files == 20 and both.workspace.index is False
    assert normalise({"hlo.workspace.exclude": ["a"], "xlaDiagnostics": False}) == {
        "workspace": {"exclude": ["a"]}, "xlaDiagnostics": False}


def test_a_malformed_value_is_logged_and_the_rest_still_apply(caplog):
    with caplog.at_level(logging.WARNING, logger="hlo_lsp"):
        s = parse_settings({"xlaDiagnostics": "no", "sourceRoot": 3,
                            "hlo.workspace.maxFiles": -1, "hlo.workspace.maxFileSizeMB": 8,
                            "hlo.recompile.platform": "quantum", "hlo.recompile.timeout": 30,
                            "hlo.workspace.exclude": ["a", 1], "inlayHints": "off"})
    assert s.xla_diagnostics is True and s.source_root is None
    assert s.workspace.max_files == WorkspaceSettings().max_files
    assert s.workspace.max_file_size_mb == 8.0 and s.workspace.exclude == ()
    assert s.recompile.platform is None and s.recompile.timeout == 30.0
    assert s.inlay_hints == InlayHintSettings()
    for key in ("xlaDiagnostics", "sourceRoot", "maxFiles", "platform", "exclude", "inlayHints"):
        assert f"setting {key} ignored" in caplog.text


def test_workers_are_one_or_two():
    assert parse_settings({"hlo.workspace.workers": 7}).workspace.workers == 2
    assert parse_settings({"hlo.workspace.workers": 1}).workspace.workers == 1


def test_workspace_configuration_answer_overrides_non_empty_values():
    base = parse_settings({"hlo.recompile.command": "python a.py",
                           "hlo.recompile.cwd": "/w"}).recompile
    got = base.overridden_by({"command": "", "platform": "cpu", "timeout": None})
    assert got == RecompileSettings(command="python a.py", cwd="/w", platform="cpu")
    assert base.overridden_by(None) is base


def test_protocol_doc_tables_are_generated_from_the_classes():
    doc = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    for cls in (Settings, InlayHintSettings, RecompileSettings, LauncherSettings,
                WorkspaceSettings):
        assert markdown_table(cls) in doc, f"docs/protocol.md: table of {cls.__name__} is stale"


def test_launcher_settings_describe_a_launcher():
    s = parse_settings({"hlo.recompile.launcher": {
        "preset": "ssh", "host": "gpu-box", "sshOptions": ["-p", "2222"]}}).recompile
    launcher = s.launcher.launcher()
    assert launcher.argv == ("ssh", "-o", "BatchMode=yes", "-p", "2222", "gpu-box",
                             "cd {cwd} && {env} {command}")
    assert not launcher.shared
    custom = parse_settings({"hlo": {"recompile": {"launcher": {
        "argv": ["srun", "--gpus=1", "{command}"]}}}}).recompile.launcher.launcher()
    assert custom.argv == ("srun", "--gpus=1", "{command}") and custom.shared
    assert parse_settings({}).recompile.launcher.launcher() is None


def test_a_launcher_in_the_configuration_answer_replaces_the_whole_launcher():
    base = parse_settings({"hlo.recompile.launcher": {"argv": ["srun", "{command}"]}}).recompile
    got = base.overridden_by({"launcher": {"preset": "slurm", "args": ["--time=5"]}})
    assert got.launcher == LauncherSettings(preset="slurm", args=("--time=5",))
    assert base.overridden_by({"launcher": {}}).launcher == base.launcher


def test_a_bad_launcher_setting_is_ignored(caplog):
    caplog.set_level(logging.WARNING)
    s = parse_settings({"hlo.recompile.launcher": {"preset": "kubernetes", "host": 3}})
    assert s.recompile.launcher == LauncherSettings()
    assert "setting preset ignored" in caplog.text and "setting host ignored" in caplog.text


def test_vscode_contributes_the_launcher_setting_as_the_server_reads_it():
    import json

    import attrs

    from hlo_lsp.dump.launchers import PRESETS
    from hlo_lsp.lsp.settings import camel
    pkg = json.loads((ROOT / "editors/vscode/package.json").read_text(encoding="utf-8"))
    launcher = pkg["contributes"]["configuration"]["properties"]["hlo.recompile.launcher"]
    assert launcher["type"] == "object" and launcher["default"] == {}
    assert set(launcher["properties"]) == {camel(f.name) for f in attrs.fields(LauncherSettings)}
    assert tuple(launcher["properties"]["preset"]["enum"]) == PRESETS


def test_vscode_contributes_the_device_setting_as_the_server_reads_it():
    import json

    from hlo_lsp.model.accelerators import ACCELERATORS
    pkg = json.loads((ROOT / "editors/vscode/package.json").read_text(encoding="utf-8"))
    device = pkg["contributes"]["configuration"]["properties"]["hlo.device"]
    assert device["enum"] == ["", *ACCELERATORS]
    assert device["enumDescriptions"][1:] == [a.name for a in ACCELERATORS.values()]
    for key in ACCELERATORS:
        assert parse_settings({"device": key}).device == key
    assert parse_settings({"device": "h200"}).device is None  # unknown: the default
