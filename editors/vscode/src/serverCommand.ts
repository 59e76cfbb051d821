// Pure helpers for starting the server and for the `hlo.recompile` command.
// No `vscode` import: unit-tested from editors/vscode/test/.

export interface ServerSettings {
  /** `hlo.server.path`: an executable; empty means "run the Python module". */
  path?: string;
  /** `hlo.server.pythonPath`. */
  pythonPath?: string;
  /** `hlo.server.extraArgs`. */
  extraArgs?: unknown;
}

export interface ServerCommand {
  command: string;
  args: string[];
}

export const DEFAULT_PYTHON = 'python3';

function stringArray(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

/** `hlo.server.path` with extraArgs when set, else `[pythonPath, -m, hlo_lsp, ...extraArgs]`. */
export function resolveServerCommand(settings: ServerSettings): ServerCommand {
  const extraArgs = stringArray(settings.extraArgs);
  const path = (settings.path ?? '').trim();
  if (path) return { command: path, args: extraArgs };
  const python = (settings.pythonPath ?? '').trim() || DEFAULT_PYTHON;
  return { command: python, args: ['-m', 'hlo_lsp', ...extraArgs] };
}

/** Quotes a command line for display in messages and logs. */
export function formatCommandLine(cmd: ServerCommand): string {
  return [cmd.command, ...cmd.args].map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : JSON.stringify(a))).join(' ');
}

function uriString(value: unknown): string | undefined {
  if (typeof value === 'string') return value || undefined;
  // a vscode.Uri (from an editor/title or explorer menu), duck-typed
  if (typeof value === 'object' && value !== null && typeof (value as { scheme?: unknown }).scheme === 'string') {
    const s = String(value);
    return s && s !== '[object Object]' ? s : undefined;
  }
  return undefined;
}

/** The options of `hlo.recompile`: `{target: "h100"}` (a GPU compiled for without one) or `{platform: "cpu"}`. */
export type RecompileOptions = Record<string, unknown>;

/** Arguments of workspace/executeCommand `hlo.recompile`: `[uri]`, `[uri, {target}]` or `[uri, {platform}]`. */
export type RecompileArguments = [string] | [string, RecompileOptions];

function isOptions(value: unknown): value is RecompileOptions {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && typeof (value as { scheme?: unknown }).scheme !== 'string';
}

/**
 * Arguments for workspace/executeCommand `hlo.recompile`, as the server's code actions
 * send them: `[uri]`, `[uri, {"target": "h100"}]` or `[uri, {"platform": "cpu"}]`; the
 * options object is passed on whole (dropping it compiled on the CPU instead of for the
 * H100, issue 40). Takes the uri from the command's own arguments (string or Uri) or
 * else from the active HLO editor. Returns undefined when there is no document to recompile.
 */
export function recompileArguments(args: readonly unknown[], activeDocumentUri?: string): RecompileArguments | undefined {
  const fromArgs = args.length > 0 ? uriString(args[0]) : undefined;
  const uri = fromArgs ?? activeDocumentUri;
  if (!uri) return undefined;
  const options = args.length > 1 && isOptions(args[1]) ? args[1] : undefined;
  return options ? [uri, options] : [uri];
}

/**
 * Whether *HLO: Recompile* asks how to recompile: when it was not run by a code action
 * (whose first argument is the uri string, its choice made), i.e. from the palette
 * (no arguments) or a menu (a vscode.Uri).
 */
export function recompileNeedsChoice(args: readonly unknown[]): boolean {
  return typeof args[0] !== 'string';
}

/** The kind of the server's recompile code actions (hlo_lsp/lsp/handlers/recompile.py). */
export const RECOMPILE_ACTION_KIND = 'source.hlo.recompile';

/** One way to recompile: a code action's title and its `hlo.recompile` arguments. */
export interface RecompileChoice {
  title: string;
  arguments: RecompileArguments;
}

/**
 * The `hlo.recompile` choices of a textDocument/codeAction answer (CodeAction[] or
 * Command[]), in the server's order: the same titles and arguments as the light bulb.
 * Other commands and malformed entries are left out.
 */
export function recompileChoices(result: unknown, command = 'hlo.recompile'): RecompileChoice[] {
  if (!Array.isArray(result)) return [];
  const out: RecompileChoice[] = [];
  for (const item of result) {
    if (typeof item !== 'object' || item === null) continue;
    const a = item as { title?: unknown; command?: unknown; arguments?: unknown };
    const cmd = (typeof a.command === 'object' && a.command !== null ? a.command : a) as { command?: unknown; arguments?: unknown };
    if (cmd.command !== command || typeof a.title !== 'string' || !Array.isArray(cmd.arguments)) continue;
    const args = recompileArguments(cmd.arguments);
    if (args && typeof cmd.arguments[0] === 'string') out.push({ title: a.title, arguments: args });
  }
  return out;
}

/**
 * The fields of the `hlo.recompile` reply the extension reads. The contract is
 * `RecompileReply` in hlo_lsp/lsp/messages.py; the extension's tests check these
 * names against the real server's reply, so a renamed field fails CI.
 */
export const RECOMPILE_FIELDS = ['ok', 'cancelled', 'error', 'summary'] as const;

/** The `hlo.recompile` reply, as far as the extension reads it. */
export interface RecompileReply {
  ok: boolean;
  cancelled: boolean;
  error: string;
  summary: string;
}

/**
 * The report of a `hlo.recompile` reply (several lines: `summary`, else `error`),
 * or of a plain string result; undefined when there is nothing to say.
 */
export function describeCommandResult(result: unknown): string | undefined {
  if (typeof result === 'string') return result.trim() || undefined;
  if (typeof result === 'object' && result !== null) {
    const r = result as Partial<Record<(typeof RECOMPILE_FIELDS)[number], unknown>>;
    for (const text of [r.summary, r.error]) {
      if (typeof text === 'string' && text.trim()) return text.trim();
    }
  }
  return undefined;
}

/** The oldest server this extension works with (the custom messages it reads). */
export const MIN_SERVER_VERSION = '0.1.0';

/** Run as `python -c PROBE_CODE` before starting: prints the server's version. */
export const PROBE_CODE = 'import hlo_lsp; print(hlo_lsp.__version__)';

/** Why the server cannot start, for the one notification shown on first run. */
export interface StartProblem {
  cause: 'no-interpreter' | 'missing' | 'too-old' | 'broken';
  message: string;
}

/** `a >= b` for dotted numeric versions (`0.10.0` > `0.9.1`); other parts compare as 0. */
export function versionAtLeast(a: string, b: string): boolean {
  const pa = a.split('.').map((x) => parseInt(x, 10) || 0);
  const pb = b.split('.').map((x) => parseInt(x, 10) || 0);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d > 0;
  }
  return true;
}

/**
 * What the probe (`python -c PROBE_CODE`) says: undefined when the server can
 * start, else the cause in one sentence. `errorCode` is the spawn error's code
 * (`ENOENT`: no such interpreter) or the exit status.
 */
export function diagnoseProbe(
  python: string,
  result: { errorCode?: string | number; stdout: string; stderr: string },
  minVersion: string = MIN_SERVER_VERSION,
): StartProblem | undefined {
  if (result.errorCode === 'ENOENT' || result.errorCode === 'EACCES') {
    return { cause: 'no-interpreter', message: `no Python interpreter at \`${python}\`` };
  }
  if (result.errorCode !== undefined && result.errorCode !== 0) {
    if (/No module named '?hlo_lsp'?/.test(result.stderr)) {
      return { cause: 'missing', message: `the hlo-lsp package is not installed for \`${python}\`` };
    }
    const last = result.stderr.trim().split('\n').pop() ?? '';
    return { cause: 'broken', message: `\`${python}\` cannot import hlo_lsp: ${last || 'exit ' + String(result.errorCode)}` };
  }
  const version = result.stdout.trim().split('\n').pop() ?? '';
  if (!versionAtLeast(version, minVersion)) {
    return { cause: 'too-old', message: `hlo-lsp ${version || '?'} for \`${python}\` is older than ${minVersion}, which this extension needs` };
  }
  return undefined;
}
