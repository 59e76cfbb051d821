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

/**
 * Arguments for workspace/executeCommand `hlo.recompile`: `[uri]`. Takes the uri from
 * the command's own arguments (string or Uri) or else from the active HLO editor.
 * Returns undefined when there is no document to recompile.
 */
export function recompileArguments(args: readonly unknown[], activeDocumentUri?: string): [string] | undefined {
  const fromArgs = args.length > 0 ? uriString(args[0]) : undefined;
  const uri = fromArgs ?? activeDocumentUri;
  return uri ? [uri] : undefined;
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
