#!/usr/bin/env bash
# Installs the test dependencies from package-lock.json and runs the grammar and
# extension tests with node's test runner. Exits non-zero on failure.
#   HLO_TM_FULL_CORPUS=1 editors/vscode/test/run.sh   # also tokenize every file of /work/shared/corpus
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund
# A test that fails or hangs must not keep the run waiting for the 900 s of
# test_vscode.py: each test has 240 s, and the runner exits when the tests are
# done even if a failed one left a server running (node >= 20.14).
flags=()
if node --help | grep -q -- '--test-force-exit'; then
  flags=(--test-force-exit --test-timeout=240000)
fi
node --test --test-reporter=spec "${flags[@]}" *.test.mjs
