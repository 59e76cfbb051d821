"""The language server: the only package that imports pygls and lsprotocol.

- :mod:`.server`: ``create_server()``, the pygls server and protocol.
- The opened documents, their analyses and the work queue are below, in
  :mod:`hlo_lsp.analysis` (no pygls).
- :mod:`.convert`: offsets and model data -> LSP types.
- :mod:`.settings`, :mod:`.messages`: typed settings and custom messages.
- :mod:`.handlers`: the request handlers, one module per feature group.
"""
