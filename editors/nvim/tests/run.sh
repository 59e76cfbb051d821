#!/usr/bin/env bash
# Headless Neovim tests for editors/nvim.
#   editors/nvim/tests/run.sh            # unit checks, then the real-server test
#   editors/nvim/tests/run.sh unit       # only the checks that need no server
#   editors/nvim/tests/run.sh lsp        # only the real-server test
# Environment:
#   HLO_LSP_CMD  server command (default: "python -m hlo_lsp", the python on PATH)
#   NVIM         Neovim binary (default: nvim; installed with apt-get when missing)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
nvim_bin="${NVIM:-nvim}"

if ! command -v "$nvim_bin" >/dev/null 2>&1; then
  echo "nvim not found: installing Debian's neovim" >&2
  if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
  $sudo apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq neovim >/dev/null
  nvim_bin=nvim
fi

export HLO_LSP_CMD="${HLO_LSP_CMD:-python -m hlo_lsp}"
export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}"
cd "$repo"

what="${1:-all}"
status=0
run() {
  # -i NONE: no shada; --headless: no UI. The test quits with :cquit 1 on failure.
  timeout 120 "$nvim_bin" --headless -i NONE -u "$here/minimal_init.lua" -c "luafile $1" || status=$?
}
if [ "$what" = all ] || [ "$what" = unit ]; then
  HLO_TEST_SETUP=0 run "$here/test_unit.lua"
fi
if [ "$what" = all ] || [ "$what" = lsp ]; then
  run "$here/test_lsp.lua"
fi
exit "$status"
