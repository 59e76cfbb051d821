"""An edit's first diagnostics (hlo_lsp.features.diagnostics.edited_diagnostics,
through hlo_lsp.analysis.documents.analyze's ``on_edited``): known after parsing the
edited computation alone, and equal to the full analysis' diagnostics for every
edit whose problems lie in that computation; what needs the whole module (a
callee that no longer exists) comes with the full analysis only."""

from __future__ import annotations

from hlo_lsp.analysis.documents import Snapshot, analyze
from hlo_lsp.syntax.edits import EditWindow
from tests.helpers import TRAIN_AFTER, read

URI = "file:///train.txt"


class _Editor:
    """A document edited the way the server's store edits it: each version's
    snapshot derived from the one before, the previous analysis reused."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.snapshot = Snapshot(1, text, "utf-16")
        self.analysis = analyze(URI, 1, text, snapshot=self.snapshot)
        assert self.analysis.module.chunks, "a chunked parse (the edit path)"

    def edit(self, start: int, end: int, new: str):
        """Replace ``text[start:end]`` by ``new``: (first diagnostics or None,
        the analysis' diagnostics)."""
        text = self.text[:start] + new + self.text[end:]
        window = EditWindow(start, end, start + len(new))
        self.snapshot.skeleton  # noqa: B018 - derived from, as the store does
        self.snapshot = self.snapshot.successor(self.snapshot.version + 1, text,
                                                self.snapshot.lines.edited(text, window), window)
        first: list = []
        self.analysis = analyze(URI, self.snapshot.version, text, "utf-16",
                                self.analysis.module, window, self.snapshot, False,
                                previous_problems=self.analysis.problems,
                                on_edited=first.append)
        self.text = text
        return (first[0] if first else None), list(self.analysis.problems)


def _messages(problems):
    return [(p.start, p.message) for p in problems]


def test_first_diagnostics_of_local_edits_are_the_final_ones():
    ed = _Editor(read(TRAIN_AFTER))
    assert ed.analysis.problems == ()

    # An unknown opcode in one fused computation.
    at = ed.text.index("multiply(", ed.text.index("%fused_computation.7 "))
    first, final = ed.edit(at, at + len("multiply"), "multiplyy")
    assert first is not None and _messages(first) == _messages(final)
    assert len(final) == 1 and "multiplyy" in final[0].message

    # A syntax error in another computation (and what it breaks there); the
    # problem in the other computation is kept.
    head = ed.text.index("%fused_computation.9 ")
    paren = ed.text.index(")", ed.text.index(" = ", ed.text.index("\n", head)))
    first, final = ed.edit(paren, paren + 1, "")
    assert first is not None and _messages(first) == _messages(final)
    assert len(final) == 3 and any("multiplyy" in p.message for p in final)

    # Undone: the syntax error goes, the unknown opcode stays.
    first, final = ed.edit(paren, paren, ")")
    assert first is not None and _messages(first) == _messages(final)
    assert len(final) == 1 and "multiplyy" in final[0].message

    # An edit before the problem moves it.
    first, final = ed.edit(head - 1, head - 1, "\n")
    assert first is not None and _messages(first) == _messages(final)
    assert first[0].start == final[0].start


def test_what_needs_the_module_comes_with_the_full_analysis():
    ed = _Editor(read(TRAIN_AFTER))
    call = ed.text.index("calls=%fused_computation.8") + len("calls=%")
    first, final = ed.edit(call, call, "no_such_")
    assert first == []  # the edited computation alone has no problem ...
    assert [p.message for p in final] == [
        "computation does not exist: no_such_fused_computation.8"]  # ... the module has
