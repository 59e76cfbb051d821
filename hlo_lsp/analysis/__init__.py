"""The analysis layer, between features/dump and the protocol adapter (lsp).

It owns what the server must keep between requests, without pygls or lsprotocol
(``tests/unit/test_layers.py`` checks): the host that owns it all and answers
through immutable snapshots (:mod:`.host`), the opened documents and their
incremental analyses (:mod:`.documents`), the answers at a position with the
fallbacks for answering while edits are analysed (:mod:`.answers`), the
whole-document answers of readable HLO (:mod:`.readable`) and of pictures
(:mod:`.pictures`), XLA's reports beside a dump (:mod:`.reports`), the files
read beside a dump, cached (:mod:`.inputs`), the workspace index and
counterparts (:mod:`.workspace`), XLA's verdict on each analysis
(:mod:`.xla_check`), recompiles (:mod:`.recompile`), the work queue that runs
whole-document answers off the event loop and the calls that leave it
(:mod:`.work`), and the garbage collector's policy for the large models the
analyses hold (:mod:`.collector`). The protocol adapter converts LSP params to
positions, asks here, and converts the plain data back.
"""
