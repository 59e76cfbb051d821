#!/usr/bin/env bash
# Installs the test dependencies from package-lock.json and runs the grammar and
# extension tests with node's test runner. Exits non-zero on failure.
#   HLO_TM_FULL_CORPUS=1 editors/vscode/test/run.sh   # also tokenize every file of /work/shared/corpus
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund
node --test --test-reporter=spec *.test.mjs
