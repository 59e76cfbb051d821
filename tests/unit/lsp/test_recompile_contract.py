"""The hlo.recompile reply: one contract (hlo_lsp.lsp.messages.RecompileReply),
and the fields each editor declares it reads are in it. The editors' own tests
(editors/nvim/tests/test_first_hour.lua, editors/vscode/test/extension-smoke.test.mjs)
check the same names against the real server's reply."""

from __future__ import annotations

import re

import pytest

from hlo_lsp.lsp.messages import RECOMPILE_REPLY_KEYS, recompile_reply
from tests.helpers import ROOT

EDITORS = {
    "nvim": (ROOT / "editors/nvim/lua/hlo_lsp/init.lua", r"M\.RECOMPILE_FIELDS = \{([^}]*)\}"),
    "vscode": (ROOT / "editors/vscode/src/serverCommand.ts", r"RECOMPILE_FIELDS = \[([^\]]*)\]"),
}


@pytest.mark.parametrize("editor", sorted(EDITORS))
def test_each_editor_reads_only_fields_of_the_reply(editor):
    path, pattern = EDITORS[editor]
    m = re.search(pattern, path.read_text(encoding="utf-8"))
    assert m, f"{path}: no RECOMPILE_FIELDS"
    fields = re.findall(r"'([A-Za-z]+)'", m.group(1))
    assert "summary" in fields and "error" in fields
    assert set(fields) <= set(RECOMPILE_REPLY_KEYS), set(fields) - set(RECOMPILE_REPLY_KEYS)


def test_the_reply_is_built_only_from_its_fields():
    reply = recompile_reply(ok=True, summary="a\nb", shown_documents=["file:///x"])
    assert list(reply) == list(RECOMPILE_REPLY_KEYS)
    assert reply["summary"] == "a\nb" and reply["shownDocuments"] == ["file:///x"]
    with pytest.raises(TypeError):
        recompile_reply(message="a field no editor knows")
