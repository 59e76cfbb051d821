#!/usr/bin/env bash
# Builds the VS Code extension: install (from package-lock.json), bundle, type-check,
# package. Produces editors/vscode/hlo-lsp-<version>.vsix. Exits non-zero on failure.
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund
npm run compile
npm run typecheck
npm run package
ls -l ./*.vsix
