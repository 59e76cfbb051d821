"""LSP features as pure functions of the model: offsets in, plain data out.

One module per question (hover, definition, references, outline, folding,
diagnostics, inline regions, inlay hints, semantic tokens, links, the reports
of the kernel summary and its comparison, the readable view, collectives worded
for hover and inlay hints); the facts they share (kernels, frames, collectives,
the summary itself) are queries of :mod:`hlo_lsp.model`. None imports pygls or
lsprotocol; :mod:`hlo_lsp.lsp` converts offsets to LSP positions. Features may
read the model (:mod:`hlo_lsp.model`), the syntax layer (:mod:`hlo_lsp.syntax`)
and the dump directory (:mod:`hlo_lsp.dump`).
"""

from hlo_lsp.model.spans import FileTarget, Span

__all__ = ["FileTarget", "Span"]
