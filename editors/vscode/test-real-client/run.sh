#!/usr/bin/env bash
# The extension in a real VS Code: code-server (VS Code 1.100 for the browser, from
# npm) driven by Debian's Chromium through puppeteer-core (npm). Run by CI
# (.ci/real-vscode.sh, then tests via editors/vscode/test/test_code_server.py).
#
# 1. A user's first hour (check.mjs "first-hour"): a tiny JAX MLP <tmp>/proj/model.py
#    (outside any git repository) dumped by `hlo-lsp dump` into <tmp>/proj/runs/dump
#    (two levels below the program; relative file names in the stack frames), that
#    folder opened in code-server. Hover text, hidden metadata, F12 on
#    stack_frame_id= landing in model.py at the frame's line, then the layer size
#    changed on disk and the recompile code action run: the confirmation's Run
#    clicked (the editor's state directory has not seen the command), the report
#    names the changed shapes and the editor shows the new dump. Then *HLO: Recompile*
#    from the palette offers the code actions' titles, "Recompile and profile" (the
#    program now calling mlp 3 times) writes a profile of the new dump beside it
#    (issue 43), and the "Compile for H100 here,
#    no GPU needed" action picked in Source Action... on a `}` writes an sm_9.0a dump
#    (the program's Python needs jax[cuda12]) and the report says H100 (issue 40).
# 2. Real dumps of examples/ (check.mjs "examples"): language mode, highlighting,
#    the metadata toggle, cursor-line reveal, Plain Text side files.
# 3. Measured times (check.mjs "profile", issue 43): the real profiled dump of
#    tests/profiled.py (a JAX program dumped by XLA and run under jax.profiler.trace
#    twice), its folder opened: the hover's Measured line (the README's screenshot),
#    *HLO: Load Profile...* picking the older run, and a folder without a profile.
# 3b. Experiments with flags (check.mjs "experiment", issue 44): a deviceless H100 dump of
#    examples/gpu/programs/fp8_matmul_bias.py made by `hlo-lsp dump --target h100` (the
#    dot a Triton GEMM fusion), its folder opened; "Recompile with Triton GEMM off" picked
#    in Source Action... on %gemm_fusion_dot, Run clicked: the notification says it became
#    one cuBLASLt FP8 call with a BIAS epilogue and the variant's file is shown at the call.
# 4. No server (check.mjs "no-server"): a second code-server whose
#    hlo.server.pythonPath is a Python without the package shows exactly one
#    notification, naming the cause; and (check.mjs "broken-server") the same
#    when hlo_lsp imports (PYTHONPATH) but its dependencies do not.
# 5. The kernel that runs (check.mjs "kernels", issue 44): a copy of
#    examples/gpu/deviceless/fp8_fusion_log, F12 from the GEMM fusion to its PTX .entry
#    and back, the PTX staying Plain Text.
# 6. The pass history (check.mjs "passes", issue 44): a copy of examples/cpu_passes in a
#    code-server of its own: hover names the creating pass, the Pass History view's row
#    opens the step's diff, Go to First Appearance opens the creating snapshot; the view
#    follows the folder when the snapshots after 0014 are moved out and back; and with a
#    copy of examples/gpu/deviceless/multi_output_fusion_log in it, Go to First Appearance
#    says why priority fusion fused the instruction.
# Screenshots of every step: $HLO_LSP_ARTIFACTS/vscode (default <repo>/.ci/artifacts/vscode).
#
#   editors/vscode/test-real-client/run.sh             # install (cached) and check
#   editors/vscode/test-real-client/run.sh --install   # only install code-server + puppeteer-core
#
# Environment: HLO_LSP_PYTHON (Python with hlo_lsp's dependencies and jax, default
# python3), HLO_REAL_CLIENT_DIR (install cache, default
# ${XDG_CACHE_HOME:-~/.cache}/hlo-lsp-ci/code-server-4.100.3), HLO_REAL_CLIENT_VSIX (a
# built .vsix; default: editors/vscode/build.sh when the .vsix is older than the
# sources), HLO_REAL_CLIENT_KEEP=1 (keep the temp scenario). Only the npm registry and
# Debian's archive are used. Exits non-zero on failure.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
EXT_DIR="$(dirname "$HERE")"
REPO="$(cd "$EXT_DIR/../.." && pwd)"
CODE_SERVER_VERSION=4.100.3   # the last line that runs on node 20
WORK="${HLO_REAL_CLIENT_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/hlo-lsp-ci/code-server-$CODE_SERVER_VERSION}"
PYTHON="${HLO_LSP_PYTHON:-python3}"
# code-server writes a config, logs and a heartbeat under XDG_CONFIG_HOME / XDG_DATA_HOME
# (Chromium its crash reports under XDG_CONFIG_HOME): not in the user's home.
export XDG_CONFIG_HOME="$WORK/xdg/config" XDG_DATA_HOME="$WORK/xdg/data"
ART="${HLO_LSP_ARTIFACTS:-$REPO/.ci/artifacts}/vscode"
CHROMIUM="${HLO_CHROMIUM:-$(command -v chromium || true)}"
t_start=$SECONDS

node_major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$node_major" != 20 ]; then echo "code-server $CODE_SERVER_VERSION needs node 20 (have $node_major)"; exit 1; fi
# Debian's ripgrep stands in for the one code-server's postinstall would download
# (Quick Open and search run it).
if [ -z "$CHROMIUM" ] || ! command -v rg >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-dejavu-core ripgrep >/dev/null
  CHROMIUM="$(command -v chromium)"
fi

# --- install (cached in $WORK) ---------------------------------------------------
CS_BIN="$WORK/node_modules/.bin/code-server"
if [ ! -f "$WORK/.installed-$CODE_SERVER_VERSION" ] || ! "$CS_BIN" --version >/dev/null 2>&1; then
  echo "installing code-server $CODE_SERVER_VERSION and puppeteer-core into $WORK"
  mkdir -p "$WORK" && rm -rf "$WORK/node_modules" "$WORK/package.json" "$WORK/package-lock.json"
  (cd "$WORK" && npm init -y >/dev/null
   # --ignore-scripts: code-server's postinstall would fetch ripgrep from outside the
   # registry; do its steps by hand and build the native modules it needs from source.
   npm install --no-audit --no-fund --ignore-scripts "code-server@$CODE_SERVER_VERSION" puppeteer-core@23
   npm rebuild argon2 --build-from-source
   cd node_modules/code-server/lib/vscode
   npm install --omit=dev --ignore-scripts --no-audit --no-fund
   # node-pty (terminals) may fail to build; nothing here needs a terminal
   for m in @parcel/watcher @vscode/spdlog native-watchdog node-pty; do npm rebuild "$m" >/dev/null 2>&1 || echo "(rebuild of $m failed)"; done
   ln -sfn node_modules node_modules.asar
   (cd bin/remote-cli && ln -sfn code-linux.sh code-server)
   (cd bin/helpers && ln -sfn browser-linux.sh browser.sh)
   (cd extensions && npm install --omit=dev --ignore-scripts --no-audit --no-fund))
  touch "$WORK/.installed-$CODE_SERVER_VERSION"
fi
RG_DIR="$WORK/node_modules/code-server/lib/vscode/node_modules/@vscode/ripgrep/bin"
mkdir -p "$RG_DIR" && ln -sfn "$(command -v rg)" "$RG_DIR/rg"
"$CS_BIN" --config /dev/null --version | head -1
echo "install: $((SECONDS - t_start)) s"
[ "${1:-}" = --install ] && exit 0

# --- the extension ------------------------------------------------------------
VSIX="${HLO_REAL_CLIENT_VSIX:-}"
if [ -z "$VSIX" ]; then
  VSIX="$(ls -t "$EXT_DIR"/hlo-lsp-*.vsix 2>/dev/null | head -1 || true)"
  if [ -z "$VSIX" ] || [ -n "$(find "$EXT_DIR/src" "$EXT_DIR/package.json" "$EXT_DIR/syntaxes" \
       "$EXT_DIR/language-configuration.json" -newer "$VSIX" -print -quit 2>/dev/null)" ]; then
    "$EXT_DIR/build.sh" >/dev/null
    VSIX="$(ls -t "$EXT_DIR"/hlo-lsp-*.vsix | head -1)"
  fi
fi
echo "extension: $VSIX"

# --- the scenario, outside any git repository ------------------------------------
SCEN="$(mktemp -d "${TMPDIR:-/tmp}/hlo-vscode-real-XXXXXX")"
SCEN="$(cd "$SCEN" && pwd -P)"
CS_PID=
cleanup() {
  if [ -n "$CS_PID" ]; then kill "$CS_PID" 2>/dev/null || true; wait "$CS_PID" 2>/dev/null || true; fi
  if [ -z "${HLO_REAL_CLIENT_KEEP:-}" ]; then rm -rf "$SCEN"; else echo "kept $SCEN"; fi
}
trap cleanup EXIT
d="$SCEN"
while [ "$d" != / ]; do
  if [ -e "$d/.git" ]; then echo "$SCEN is inside a git repository ($d); set TMPDIR elsewhere"; exit 1; fi
  d="$(dirname "$d")"
done
rm -rf "$ART" && mkdir -p "$ART"

mkdir -p "$SCEN/proj"
cat > "$SCEN/proj/model.py" <<'PY'
import jax
import jax.numpy as jnp

HIDDEN = 128


def layer(w, x):
    return jnp.maximum(x @ w, 0.0)


@jax.jit
def mlp(w1, w2, x):
    h = layer(w1, x)
    return (h @ w2).sum()


if __name__ == "__main__":
    print(mlp(jnp.ones((64, HIDDEN)), jnp.ones((HIDDEN, 10)), jnp.ones((32, 64))))
PY
# Relative file names in the stack frames (JAX's canonicalisation, as for a program
# run from proj/ on another machine): the server finds model.py two levels up.
t0=$SECONDS
(cd "$SCEN/proj" && env -u JAX_PLATFORMS HLO_LSP_STATE_DIR="$SCEN/state-dump" \
  JAX_HLO_SOURCE_FILE_CANONICALIZATION_REGEX='.*/proj/' PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}" \
  "$PYTHON" -m hlo_lsp dump --platform cpu --out runs/dump -- "$PYTHON" model.py) > "$ART/dump.log" 2>&1 \
  || { cat "$ART/dump.log"; exit 1; }
DUMP="$(ls "$SCEN"/proj/runs/dump/module_*.jit_mlp.cpu_after_optimizations.txt)"
grep -q '^1 "model.py"$' "$DUMP" || { echo "the dump's file names are not relative:"; grep -A3 FileNames "$DUMP"; exit 1; }
echo "dump: $DUMP ($((SECONDS - t0)) s)"

# A real profiled dump (issue 43): XLA's dump and two jax.profiler runs.
t0=$SECONDS
PROFILED="$(cd "$REPO" && env -u JAX_PLATFORMS PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}" \
  "$PYTHON" -m tests.profiled "$SCEN/profiled" 2> "$ART/profiled.log" | tail -1)" || { cat "$ART/profiled.log"; exit 1; }
mkdir -p "$SCEN/no-profile"
echo "profiled dump: $PROFILED ($((SECONDS - t0)) s)"

# The examples' dumps for the highlighting checks.
mkdir -p "$SCEN/examples"
cp "$REPO"/examples/gpu/*.txt "$SCEN/examples/"
cp "$REPO"/examples/cpu_dump/module_0028.* "$SCEN/examples/" 2>/dev/null || true
cp "$REPO/examples/gpu/jit_matmul_fn.fp8_cublaslt.sm90_gpu_after_optimizations.txt" "$SCEN/examples/my_module.txt"

# A deviceless H100 dump with the GEMM fusion's PTX and LLVM IR (issue 44).
cp -r "$REPO/examples/gpu/deviceless/fp8_fusion_log" "$SCEN/kernels"

# A Python without the package, for the no-server check.
python3 -m venv --without-pip "$SCEN/bare"

PORT="$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"

# start_code_server NAME PYTHONPATH_FOR_SERVER PYTHON_SETTING: a fresh user data dir with
# the extension installed; sets CS_PID.
start_code_server() {
  local name="$1" pypath="$2" python_setting="$3" data="$SCEN/cs-$1"
  mkdir -p "$data/User" "$data/ext"
  cat > "$data/User/settings.json" <<JSON
{
  "hlo.server.pythonPath": "$python_setting",
  "workbench.startupEditor": "none",
  "workbench.colorTheme": "Default Dark Modern",
  "security.workspace.trust.enabled": false,
  "editor.minimap.enabled": false,
  "editor.wordWrap": "on",
  "editor.semanticHighlighting.enabled": false,
  "editor.hover.delay": 300,
  "workbench.tips.enabled": false,
  "extensions.autoUpdate": false,
  "extensions.autoCheckUpdates": false,
  "update.mode": "none",
  "telemetry.telemetryLevel": "off"
}
JSON
  # hlo.server.pythonPath is machine-overridable: in a remote window (code-server is
  # one) VS Code may take it from the remote settings and drop the user's, depending on
  # which loads first. The remote settings say the same.
  mkdir -p "$data/Machine"
  printf '{ "hlo.server.pythonPath": "%s" }\n' "$python_setting" > "$data/Machine/settings.json"
  XDG_DATA_HOME="$SCEN/xdg/data" "$CS_BIN" --config /dev/null --extensions-dir "$data/ext" --user-data-dir "$data" \
    --install-extension "$VSIX" >/dev/null
  # Started in the checkout, where `python -c "import hlo_lsp"` imports the package
  # from the working directory whatever the interpreter: the extension must probe
  # the interpreter where the server runs (the workspace folder), not here.
  # XDG_*: code-server's logs and heartbeat stay in the scenario, not in ~/.local/share.
  (cd "$REPO" && exec env -u PYTHONPATH ${pypath:+PYTHONPATH="$pypath"} HLO_LSP_STATE_DIR="$SCEN/state-editor" \
    XDG_DATA_HOME="$SCEN/xdg/data" XDG_CONFIG_HOME="$SCEN/xdg/config" XDG_CACHE_HOME="$SCEN/xdg/cache" \
    "$CS_BIN" --config /dev/null --bind-addr "127.0.0.1:$PORT" --auth none --disable-telemetry \
    --disable-update-check --disable-workspace-trust --disable-getting-started-override \
    --extensions-dir "$data/ext" --user-data-dir "$data") > "$ART/code-server-$name.log" 2>&1 &
  CS_PID=$!
  for _ in $(seq 120); do curl -fs -o /dev/null "http://127.0.0.1:$PORT/healthz" && return 0; sleep 0.5; done
  echo "code-server did not start:"; cat "$ART/code-server-$name.log"; return 1
}
stop_code_server() {
  kill "$CS_PID" 2>/dev/null || true; wait "$CS_PID" 2>/dev/null || true; CS_PID=
}
check() {
  XDG_CONFIG_HOME="$SCEN/xdg/config" XDG_CACHE_HOME="$SCEN/xdg/cache" HLO_CHROMIUM="$CHROMIUM" HLO_ART="$ART" HLO_DUMP="$DUMP" HLO_PROGRAM="$SCEN/proj/model.py" \
    HLO_BARE_PYTHON="$SCEN/bare/bin/python" HLO_PROFILED="$PROFILED" HLO_EMPTY="$SCEN/no-profile" HLO_FP8_DUMP="${FP8_DUMP:-}" HLO_KERNELS="$SCEN/kernels" NODE_PATH="$WORK/node_modules" node "$HERE/check.mjs" "$@"
}

ONLY="${HLO_REAL_CLIENT_ONLY:-first-hour examples profile no-server broken-server experiment kernels passes}"   # a subset, while debugging
wanted() { [[ " $ONLY " == *" $1 "* ]]; }
FP8_DUMP=
if wanted experiment; then
  t0=$SECONDS
  mkdir -p "$SCEN/fp8" && cp "$REPO/examples/gpu/programs/fp8_matmul_bias.py" "$SCEN/fp8/fp8_block.py"
  (cd "$SCEN/fp8" && env -u JAX_PLATFORMS XLA_FLAGS= HLO_LSP_STATE_DIR="$SCEN/state-dump" \
    PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}" \
    "$PYTHON" -m hlo_lsp dump --target h100 --out dump -- "$PYTHON" fp8_block.py) > "$ART/fp8-dump.log" 2>&1 \
    || { cat "$ART/fp8-dump.log"; exit 1; }
  FP8_DUMP="$(ls "$SCEN"/fp8/dump/module_*.jit_fp8_block.sm_9.0a_gpu_after_optimizations.txt)"
  echo "H100 dump: $FP8_DUMP ($((SECONDS - t0)) s)"
fi
status=0
t0=$SECONDS
if wanted first-hour || wanted examples || wanted profile || wanted experiment || wanted kernels; then
  start_code_server main "$REPO${PYTHONPATH:+:$PYTHONPATH}" "$PYTHON"
  if wanted first-hour; then check first-hour "http://127.0.0.1:$PORT/?folder=$(dirname "$DUMP")" "$WORK" || status=1; fi
  if wanted examples; then check examples "http://127.0.0.1:$PORT/?folder=$SCEN/examples" "$WORK" || status=1; fi
  if wanted profile; then check profile "http://127.0.0.1:$PORT/?folder=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["dump"])' "$PROFILED")" "$WORK" || status=1; fi
  if wanted kernels; then check kernels "http://127.0.0.1:$PORT/?folder=$SCEN/kernels" "$WORK" || status=1; fi
  if wanted experiment; then check experiment "http://127.0.0.1:$PORT/?folder=$(dirname "$FP8_DUMP")" "$WORK" || status=1; fi
  stop_code_server
fi
if wanted passes; then
  # issue 44, the pass history (check.mjs "passes"): a copy of examples/cpu_passes
  mkdir -p "$SCEN/passes" && cp "$REPO"/examples/cpu_passes/module_* "$SCEN/passes/"
  # and of a deviceless H100 dump with XLA:GPU's priority-fusion log (the blame's decisions)
  mkdir -p "$SCEN/passes/gpu" && cp "$REPO"/examples/gpu/deviceless/multi_output_fusion_log/*{gpu_after_optimizations,after_priority-fusion.before_cse,priority_fusion_dump}.txt "$SCEN/passes/gpu/"
  start_code_server passes "$REPO${PYTHONPATH:+:$PYTHONPATH}" "$PYTHON"
  check passes "http://127.0.0.1:$PORT/?folder=$SCEN/passes" "$WORK" || status=1
  stop_code_server
fi
if wanted no-server; then
  start_code_server no-server "" "$SCEN/bare/bin/python"
  check no-server "http://127.0.0.1:$PORT/?folder=$(dirname "$DUMP")" "$WORK" || status=1
  stop_code_server
fi
if wanted broken-server; then
  # hlo_lsp imports (PYTHONPATH), its dependencies do not: the server exits at start.
  start_code_server broken-server "$REPO" "$SCEN/bare/bin/python"
  check broken-server "http://127.0.0.1:$PORT/?folder=$(dirname "$DUMP")" "$WORK" || status=1
  stop_code_server
fi
echo "checks: $((SECONDS - t0)) s; total $((SECONDS - t_start)) s; screenshots in $ART"
exit $status
