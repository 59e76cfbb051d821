"""The ``hlo-lsp`` command line: the server on stdio and the subcommands."""

from hlo_lsp.cli.main import main

__all__ = ["main"]
