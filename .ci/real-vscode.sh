# --- editors: VS Code for real (code-server from npm, Debian's Chromium) ------
# Sourced by .ci/run after the pictures block (which installs chromium). Installs
# Debian's ripgrep (Quick Open and search in code-server run it) and, once into
# the cache, code-server 4.100.3 and puppeteer-core from npm; the check itself runs
# in the tests (editors/vscode/test/test_code_server.py runs
# editors/vscode/test-real-client/run.sh; screenshots in .ci/artifacts/vscode).
# Also runs on its own: bash .ci/real-vscode.sh
_hlo_repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_hlo_cache="${cache:-${HLO_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hlo-lsp-ci}}"
if ! command -v rg >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ripgrep >/dev/null
fi
export HLO_REAL_CLIENT_DIR="$_hlo_cache/code-server-4.100.3"
export HLO_LSP_ARTIFACTS="${HLO_LSP_ARTIFACTS:-$_hlo_repo/.ci/artifacts}"
bash "$_hlo_repo/editors/vscode/test-real-client/run.sh" --install
unset _hlo_repo _hlo_cache
# --- end VS Code ---------------------------------------------------------------
