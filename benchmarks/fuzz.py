"""The long fuzz run: the harness of ``tests/fuzz/harness.py`` for a few minutes.

    python benchmarks/fuzz.py [--seconds 600] [--seed N] [--out fuzz-out]

Same options and environment variables (``HLO_LSP_FUZZ_SECONDS``,
``HLO_LSP_FUZZ_SEED``, ``HLO_LSP_FUZZ_OUT``, ``HLO_LSP_FUZZ_LANES``,
``HLO_LSP_FUZZ_SERVER_LOG``) as ``python -m tests.fuzz.harness``;
the default here is 600 seconds. Prints the counts (documents, edits,
requests, crashes, slow, unanswered, errors, tracebacks, error popups,
off-document ranges, mismatches) and writes a minimized reproducer per failure
kind to ``--out``; exits 1 on any failure.
"""

from __future__ import annotations

import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fuzz.harness import main  # noqa: E402

if __name__ == "__main__":
    os.environ.setdefault("HLO_LSP_FUZZ_SECONDS", "600")
    raise SystemExit(main())
