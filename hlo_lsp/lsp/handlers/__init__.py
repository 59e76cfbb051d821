"""Optional groups of LSP handlers, one module per feature group.

Each module here defines ``register(server: HloLanguageServer) -> None`` and is
discovered and registered by :func:`hlo_lsp.lsp.server.register_handlers` in name
order. A module that fails to import or register is logged and skipped: one
broken feature never takes the server down.
"""
