"""Text -> model: the HLO grammar, the parser, positions and edits.

- :mod:`.parser`: ``parse(text) -> HloModule``, never raises; error recovery per
  computation, then per line. The grammar is ``grammar/hlo.lark`` (package data
  ``hlo_lsp/grammar/hlo.lark`` in a wheel).
- :mod:`.lark_compat`: the one place that touches lark's internals.
- :mod:`.chunks`: big documents computation by computation (skeleton, chunked
  and incremental parse, quick answers before the full parse).
- :mod:`.lines`: ``LineIndex``, offsets (code points) <-> LSP positions.
- :mod:`.edits`: ``EditWindow`` and applying ``didChange`` edits as slices.
- :mod:`.xla`: XLA's own parser (jaxlib) in a worker process, the oracle; the one
  place that touches ``jax._src``.
- :mod:`.versions`: the version checks that guard lark's and jax's internals.

Imports :mod:`hlo_lsp.model` and lark only.
"""
