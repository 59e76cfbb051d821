"""The XLA dump directory on disk.

- :mod:`.names`: what a dump file is called, and what its name says (the one
  place for XLA's naming: HLO files, reports, stages, module ids).
- :mod:`.reports`: buffer-assignment and memory-usage reports, parsed and loaded.
- :mod:`.sources`: where the Python files named in a dump are (``source_dirs``).
- :mod:`.index`: the index of the HLO files of the workspace
  (:mod:`.file_summary`: one file's symbols; :mod:`.counterparts`: the
  before/after counterparts of a file and of an instruction).
- :mod:`.loading`: pick and load a module from a file or directory (CLI).
- :mod:`.recipe`, :mod:`.recompile`: how a dump was made, and making it again
  (:mod:`.xla_flags`; :mod:`.platforms`; :mod:`.environment`: the program and its
  environment; :mod:`.inference`: recipes proposed for a dump; :mod:`.processes`:
  running the program; :mod:`.changes`: what changed).

Imports :mod:`hlo_lsp.model` and :mod:`hlo_lsp.syntax`; never pygls or lsprotocol.
"""
