"""Text -> model: the HLO grammar, the parser, positions and edits.

- :mod:`.parser`: ``parse(text) -> HloModule``, never raises; error recovery per
  computation, then per line. The grammar is ``grammar/hlo.lark`` (package data
  ``hlo_lsp/grammar/hlo.lark`` in a wheel). Its parts: :mod:`.builder` (the
  grammar's model builder), :mod:`.driver` (running the grammar and the
  scanner), :mod:`.recovery` (error recovery). A plain parser: the garbage
  collector's policy is the analysis layer's (:mod:`hlo_lsp.analysis.collector`).
- :mod:`.lark_compat`: the one place that touches lark's internals.
- :mod:`.chunks`: big documents computation by computation (skeleton, chunked
  and incremental parse, quick answers before the full parse).
- :mod:`.lines`: ``LineIndex``, offsets (code points) <-> LSP positions.
- :mod:`.edits`: applying ``didChange`` edits as slices; :mod:`.window`:
  ``EditWindow``, the text an edit touched.
- :mod:`.xla`: XLA's own parser (jaxlib) in a worker process, the oracle; the one
  place that touches ``jax._src``.
- :mod:`.versions`: the version checks that guard lark's and jax's internals.

Imports :mod:`hlo_lsp.model` and lark only.
"""
