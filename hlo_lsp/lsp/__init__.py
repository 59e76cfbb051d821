"""The language server: the only package that imports pygls and lsprotocol.

- :mod:`.server`: ``create_server()``, the pygls server and protocol.
- :mod:`.documents`: the document store (no pygls): opened documents, their
  analyses (immutable snapshots), and files read from disk.
- :mod:`.convert`: offsets and model data -> LSP types.
- :mod:`.settings`, :mod:`.messages`: typed settings and custom messages.
- :mod:`.handlers`: the request handlers, one module per feature group.
"""
