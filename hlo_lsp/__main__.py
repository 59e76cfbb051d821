"""``python -m hlo_lsp``: same as the ``hlo-lsp`` console script."""

from .cli import main

raise SystemExit(main())
