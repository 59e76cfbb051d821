"""``python -m hlo_lsp``: same as the ``hlo-lsp`` console script."""

from hlo_lsp.cli.main import main

raise SystemExit(main())
