#!/usr/bin/env bash
# Opt-in check in a real VS Code: code-server (VS Code 1.100 for the browser, from npm)
# driven by headless Chromium (Debian's package) through puppeteer-core. It installs the
# .vsix, opens real dumps from examples/ and asserts what a user would see:
# language mode, highlighting (the grammar's colours: semantic highlighting is
# off so the server's tokens do not mix in), hidden metadata with its marker, cursor-line reveal,
# the toggle, and that XLA's -buffer-assignment.txt stays Plain Text. Screenshots
# are left in the work directory.
#
#   editors/vscode/test-real-client/run.sh        # needs root for apt-get (chromium), node 20, ~400 MB
#
# Environment: HLO_LSP_PYTHON (python with hlo_lsp's dependencies, default python3),
# HLO_REAL_CLIENT_DIR (work directory, default /tmp/hlo-vscode-real-client).
# Only the npm registry and Debian's archive are used. Exits non-zero on failure.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
EXT_DIR="$(dirname "$HERE")"
REPO="$(cd "$EXT_DIR/../.." && pwd)"
WORK="${HLO_REAL_CLIENT_DIR:-/tmp/hlo-vscode-real-client}"
PYTHON="${HLO_LSP_PYTHON:-python3}"
CODE_SERVER_VERSION=4.100.3   # the last line that runs on node 20

node_major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$node_major" != 20 ]; then echo "code-server $CODE_SERVER_VERSION needs node 20 (have $node_major)"; exit 1; fi
if ! command -v chromium >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-dejavu-core >/dev/null
fi
mkdir -p "$WORK" && cd "$WORK"
[ -f package.json ] || npm init -y >/dev/null
CS="$WORK/node_modules/code-server"
if [ ! -x "$WORK/node_modules/.bin/code-server" ] || ! "$WORK/node_modules/.bin/code-server" --version >/dev/null 2>&1; then
  # --ignore-scripts: code-server's postinstall would fetch ripgrep from outside the registry;
  # do its steps by hand and build the native modules it needs from source.
  npm install --no-audit --no-fund --ignore-scripts "code-server@$CODE_SERVER_VERSION" puppeteer-core@23
  npm rebuild argon2 --build-from-source
  (cd "$CS/lib/vscode" && npm install --omit=dev --ignore-scripts --no-audit --no-fund \
    && for m in @parcel/watcher @vscode/spdlog native-watchdog node-pty; do npm rebuild "$m" || true; done \
    && ln -sfn node_modules node_modules.asar \
    && (cd bin/remote-cli && ln -sfn code-linux.sh code-server) \
    && (cd bin/helpers && ln -sfn browser-linux.sh browser.sh) \
    && (cd extensions && npm install --omit=dev --ignore-scripts --no-audit --no-fund))
fi
"$WORK/node_modules/.bin/code-server" --version | head -1

VSIX="$(ls -t "$EXT_DIR"/hlo-lsp-*.vsix 2>/dev/null | head -1 || true)"
if [ -z "$VSIX" ]; then "$EXT_DIR/build.sh" >/dev/null; VSIX="$(ls -t "$EXT_DIR"/hlo-lsp-*.vsix | head -1)"; fi
echo "extension: $VSIX"

rm -rf "$WORK/data" "$WORK/ext" "$WORK/ws" && mkdir -p "$WORK/data/User" "$WORK/ext" "$WORK/ws"
cp "$REPO"/examples/gpu/*.txt "$WORK/ws/"
cp "$REPO"/examples/cpu_dump/module_0028.* "$WORK/ws/" 2>/dev/null || true
cp "$REPO/examples/gpu/jit_matmul_fn.fp8_cublaslt.sm90_gpu_after_optimizations.txt" "$WORK/ws/my_module.txt"
cat > "$WORK/data/User/settings.json" <<JSON
{
  "hlo.server.pythonPath": "$PYTHON",
  "workbench.startupEditor": "none",
  "workbench.colorTheme": "Default Dark Modern",
  "security.workspace.trust.enabled": false,
  "editor.minimap.enabled": false,
  "editor.wordWrap": "on",
  "editor.semanticHighlighting.enabled": false,
  "workbench.tips.enabled": false
}
JSON
"$WORK/node_modules/.bin/code-server" --extensions-dir "$WORK/ext" --user-data-dir "$WORK/data" --install-extension "$VSIX" >/dev/null

PORT="$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}" "$WORK/node_modules/.bin/code-server" --bind-addr "127.0.0.1:$PORT" --auth none \
  --disable-telemetry --extensions-dir "$WORK/ext" --user-data-dir "$WORK/data" "$WORK/ws" > "$WORK/code-server.log" 2>&1 &
CS_PID=$!
trap 'kill $CS_PID 2>/dev/null || true' EXIT
for _ in $(seq 60); do curl -fs -o /dev/null "http://127.0.0.1:$PORT/healthz" && break; sleep 0.5; done
NODE_PATH="$WORK/node_modules" node "$HERE/check.mjs" "http://127.0.0.1:$PORT/?folder=$WORK/ws" "$WORK"
