"""hlo-lsp: a language server for XLA's HLO text.

Layers: ``grammar/hlo.lark`` -> :mod:`hlo_lsp.syntax.parser` -> :mod:`hlo_lsp.model`
(plain Python) -> :mod:`hlo_lsp.features` (pure functions) -> :mod:`hlo_lsp.lsp.server`
(pygls) and :mod:`hlo_lsp.cli`.
"""

__version__ = "0.1.0"
