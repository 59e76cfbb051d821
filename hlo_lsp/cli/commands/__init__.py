"""Optional ``hlo-lsp`` subcommands, one module per command.

Each module here defines ``add_subcommand(subparsers) -> None``, which adds an
argparse subparser and sets ``run=callable(args) -> int`` as its default. They
are discovered by :func:`hlo_lsp.cli.build_parser` in name order.
"""
