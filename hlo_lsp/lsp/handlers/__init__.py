"""The LSP request handlers, one module per feature group, each with
``register(server: HloLanguageServer) -> None``:

- :mod:`.text`: lifecycle, hover, definition, references, outline, folding,
  ``hlo/inlineRegions``;
- :mod:`.readable`: inlay hints, semantic tokens, code lens, summary, readable
  view and comparison commands;
- :mod:`.workspace`: workspace indexing and symbols, counterparts, status;
- :mod:`.recompile`: the recompile code action and command, document links;
- :mod:`.graph`: ``hlo/graph``, the dataflow graph of a computation or of the
  neighbourhood of an instruction;
- :mod:`.profiles`: ``hlo/profileRuns`` and ``hlo.loadProfile``, the runs of
  ``jax.profiler`` near a dump and loading one;
- :mod:`.reports`: definition and links in XLA's buffer-assignment and
  memory-usage reports (used by the text and recompile handlers).

:func:`hlo_lsp.lsp.server.create_server` registers them in that order.
"""
