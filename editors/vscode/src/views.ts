// Pure helpers for the views built from server commands (docs/protocol.md, "Readable HLO"
// and "Workspace"): the readable view and its links back to the original file, the
// arguments of `hlo.readableView` / `hlo.showSummary` / `hlo.compareDumps`, and the
// `hlo/counterpart` and `hlo/counterpartFiles` requests. No `vscode` import: unit-tested
// from editors/vscode/test/.

import type { Position, Range } from './inlineRegions';

export type { Position, Range };

export const READABLE_VIEW = 'hlo.readableView';
export const SHOW_SUMMARY = 'hlo.showSummary';
export const COMPARE_DUMPS = 'hlo.compareDumps';
export const GOTO_COUNTERPART = 'hlo.gotoCounterpart';
export const COUNTERPART_METHOD = 'hlo/counterpart';
export const COUNTERPART_FILES_METHOD = 'hlo/counterpartFiles';

/** Scheme of the read-only readable views (language `hlo`). */
export const READABLE_SCHEME = 'hlo-readable';
/** Scheme of the summary and comparison reports. */
export const REPORT_SCHEME = 'hlo-report';

export interface Location {
  uri: string;
  range: Range;
}

/** The result of `hlo.readableView`. */
export interface ReadableView {
  text: string;
  /** 0-based source line shown by each line of `text` (split at `\n`); null: none. */
  sourceLines: (number | null)[];
}

/** A link from a line of the readable view to a line of the original file. */
export interface LineLink {
  line: number;
  /** Character range on the view line (UTF-16 units). */
  start: number;
  end: number;
  /** 0-based line in the original file. */
  targetLine: number;
}

/** The workspace/executeCommand request a view is made from; kept in the view's URI query. */
export interface ViewRequest {
  command: string;
  arguments: unknown[];
}

function isLine(v: unknown): v is number {
  return Number.isInteger(v) && (v as number) >= 0;
}

/**
 * Validates the result of `hlo.readableView`: `{text, sourceLines}` (lineMap is not
 * needed by the editor). Missing or malformed line entries become null, so there is one
 * entry per line of `text`. Anything else (null: the server could not render) -> undefined.
 */
export function parseReadableView(result: unknown): ReadableView | undefined {
  if (typeof result !== 'object' || result === null) return undefined;
  const { text, sourceLines } = result as { text?: unknown; sourceLines?: unknown };
  if (typeof text !== 'string') return undefined;
  const count = text.split('\n').length;
  const raw = Array.isArray(sourceLines) ? sourceLines : [];
  const lines: (number | null)[] = [];
  for (let i = 0; i < count; i++) lines.push(isLine(raw[i]) ? (raw[i] as number) : null);
  return { text, sourceLines: lines };
}

/** The source line shown by `viewLine`, if any. */
export function sourceLineAt(view: ReadableView, viewLine: number): number | undefined {
  const v = view.sourceLines[viewLine];
  return isLine(v) ? v : undefined;
}

/**
 * The first view line showing `sourceLine`; else the last view line showing an earlier
 * source line (the cursor of the original file, placed in the view); else undefined.
 */
export function viewLineFor(view: ReadableView, sourceLine: number): number | undefined {
  let below: number | undefined;
  let belowSource = -1;
  for (let i = 0; i < view.sourceLines.length; i++) {
    const s = view.sourceLines[i];
    if (s === null) continue;
    if (s === sourceLine) return i;
    if (s < sourceLine && s > belowSource) {
      below = i;
      belowSource = s;
    }
  }
  return below;
}

const NAME = /^(\s*)(?:(?:ROOT|ENTRY|HloModule)\s+)?(%?[A-Za-z_][\w.$-]*)/;

/**
 * Document links of a readable view: one per run of lines showing the same source line,
 * on the first line of the run, covering the instruction or computation name
 * (`%cublas-gemm.1.0`, `%main.4`); a line without a name gets its trimmed text.
 * Blank and unmapped lines get none.
 */
export function readableLinks(view: ReadableView): LineLink[] {
  const lines = view.text.split('\n');
  const out: LineLink[] = [];
  let previous: number | null = null;
  lines.forEach((text, line) => {
    const target = view.sourceLines[line] ?? null;
    const first = target !== null && target !== previous;
    previous = target;
    if (!first || text.trim() === '') return;
    const m = NAME.exec(text);
    if (m) {
      const start = m[0].length - m[2].length;
      out.push({ line, start, end: m[0].length, targetLine: target });
    } else {
      const start = text.length - text.trimStart().length;
      out.push({ line, start, end: text.trimEnd().length, targetLine: target });
    }
  });
  return out;
}

/** A URI of the original file with the line fragment VS Code's opener understands. */
export function lineTarget(sourceUri: string, line: number): string {
  return `${sourceUri.replace(/#.*$/, '')}#L${line + 1}`;
}

/** The path of a view of `sourcePath`, e.g. `/d/x.txt` -> `/d/x.txt.readable.hlo`. */
export function viewPath(sourcePath: string, suffix: string): string {
  return `${sourcePath}.${suffix}`;
}

/** Last path segment of a URI or path, decoded. */
export function baseName(uriOrPath: string): string {
  const s = uriOrPath.replace(/[?#].*$/, '').replace(/\/+$/, '');
  const last = s.slice(s.lastIndexOf('/') + 1);
  try {
    return decodeURIComponent(last);
  } catch {
    return last;
  }
}

export function encodeViewRequest(request: ViewRequest): string {
  return JSON.stringify(request);
}

export function decodeViewRequest(query: string): ViewRequest | undefined {
  try {
    const v = JSON.parse(query) as unknown;
    if (typeof v !== 'object' || v === null) return undefined;
    const { command, arguments: args } = v as { command?: unknown; arguments?: unknown };
    if (typeof command !== 'string' || !Array.isArray(args)) return undefined;
    return { command, arguments: args };
  } catch {
    return undefined;
  }
}

/** Arguments of `hlo.readableView`. */
export function readableViewArguments(uri: string, inlineFusions: boolean): [string, { inlineFusions: boolean }] {
  return [uri, { inlineFusions }];
}

/** Arguments of `hlo.showSummary`. */
export function summaryArguments(uri: string, format: 'markdown' | 'text' = 'markdown'): [string, { format: string }] {
  return [uri, { format }];
}

/** Language of the summary table document (monospace, never wrapped: package.json). */
export const SUMMARY_LANGUAGE = 'hlo-summary';

/** Arguments of `hlo.showSummary` for the table the editor shows: the text with row targets. */
export function summaryTableArguments(uri: string): [string, { format: 'text'; targets: true }] {
  return [uri, { format: 'text', targets: true }];
}

/** A row of the summary table that goes to its instruction. */
export interface SummaryTarget {
  line: number;
  /** The `%name` on the row (UTF-16 units). */
  start: number;
  end: number;
  location: Location;
}

/** The summary table: the server's text report and its rows' targets. */
export interface SummaryTable {
  text: string;
  targets: SummaryTarget[];
}

/**
 * Validates the answer of `hlo.showSummary` with `summaryTableArguments`:
 * `{text, targets}`; a plain string (a server without targets) is the text without
 * targets. Malformed targets are dropped; no text (null: failure) -> undefined.
 */
export function parseSummaryTable(result: unknown): SummaryTable | undefined {
  const plain = textResult(result);
  if (plain !== undefined) return { text: plain, targets: [] };
  if (typeof result !== 'object' || result === null) return undefined;
  const { text, targets } = result as { text?: unknown; targets?: unknown };
  const body = textResult(text);
  if (body === undefined) return undefined;
  const lines = body.split('\n');
  const out: SummaryTarget[] = [];
  for (const t of Array.isArray(targets) ? targets : []) {
    if (typeof t !== 'object' || t === null) continue;
    const { line, start, end, location } = t as { line?: unknown; start?: unknown; end?: unknown; location?: unknown };
    const [loc] = parseLocations([location]);
    if (!loc || !isLine(line) || !isLine(start) || !isLine(end) || line >= lines.length || end <= start) continue;
    out.push({ line, start, end, location: loc });
  }
  return { text: body, targets: out };
}

/** The target of the summary row `line` (the whole row goes there), if it names a kernel. */
export function summaryTargetAt(table: SummaryTable, line: number): SummaryTarget | undefined {
  return table.targets.find((t) => t.line === line);
}

/** A URI of an instruction's line, with the `#L<line>,<column>` fragment VS Code's opener understands. */
export function locationTarget(location: Location): string {
  const { line, character } = location.range.start;
  return `${location.uri.replace(/#.*$/, '')}#L${line + 1},${character + 1}`;
}

/** Arguments of `hlo.compareDumps`. */
export function compareArguments(oldUri: string, newUri: string, format: 'markdown' | 'text' = 'text'): [string, string, { format: string }] {
  return [oldUri, newUri, { format }];
}

/** A string result of a server command, or undefined (null: failure / unknown document). */
export function textResult(result: unknown): string | undefined {
  return typeof result === 'string' && result.trim() !== '' ? result : undefined;
}

function toPosition(v: unknown): Position | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const { line, character } = v as { line?: unknown; character?: unknown };
  return isLine(line) && isLine(character) ? { line, character } : undefined;
}

/** Validates a `Location[]` (result of `hlo/counterpart` / `hlo.gotoCounterpart`). */
export function parseLocations(result: unknown): Location[] {
  if (!Array.isArray(result)) return [];
  const out: Location[] = [];
  for (const item of result) {
    if (typeof item !== 'object' || item === null) continue;
    const { uri, range } = item as { uri?: unknown; range?: { start?: unknown; end?: unknown } };
    if (typeof uri !== 'string' || typeof range !== 'object' || range === null) continue;
    const start = toPosition(range.start);
    const end = toPosition(range.end);
    if (start && end) out.push({ uri, range: { start, end } });
  }
  return out;
}

/** A URI string from a command argument: a string, a vscode.Uri (duck-typed) or `{uri}`. */
export function uriArg(v: unknown): string | undefined {
  if (typeof v === 'string') return v || undefined;
  if (typeof v === 'object' && v !== null) {
    if (typeof (v as { scheme?: unknown }).scheme === 'string') {
      const s = String(v);
      return s && s !== '[object Object]' ? s : undefined;
    }
    const u = (v as { uri?: unknown }).uri;
    return typeof u === 'string' && u ? u : undefined;
  }
  return undefined;
}

/**
 * `{textDocument, position}` for `hlo/counterpart` from the arguments of
 * `hlo.gotoCounterpart` (`[uri, position]` or `[{textDocument, position}]`, as the server
 * command takes them), else from the active editor; undefined without a document.
 */
export function counterpartParams(
  args: readonly unknown[],
  active?: { uri: string; position: Position },
): { textDocument: { uri: string }; position: Position } | undefined {
  if (args.length >= 2) {
    const uri = uriArg(args[0]);
    const position = toPosition(args[1]);
    if (uri && position) return { textDocument: { uri }, position };
  } else if (args.length === 1 && typeof args[0] === 'object' && args[0] !== null && 'position' in (args[0] as object)) {
    const { textDocument, position } = args[0] as { textDocument?: unknown; position?: unknown };
    const uri = uriArg(textDocument);
    const pos = toPosition(position);
    if (uri && pos) return { textDocument: { uri }, position: pos };
  }
  if (!active) return undefined;
  // `[uri]` alone (an editor menu) only makes sense for the active document
  const only = args.length === 1 ? uriArg(args[0]) : undefined;
  if (only && only !== active.uri) return undefined;
  return { textDocument: { uri: active.uri }, position: active.position };
}

/** Validates the result of `hlo/counterpartFiles`: its URI strings, in order (anything else dropped). */
export function parseUriList(result: unknown): string[] {
  return Array.isArray(result) ? result.filter((u): u is string => typeof u === 'string' && u !== '') : [];
}

function dirOf(uri: string): string {
  return uri.replace(/[?#].*$/, '').replace(/[^/]*$/, '');
}

/**
 * The files `HLO: Compare With...` offers for comparing `oldUri` with, in order: the
 * `counterparts` (the server's `hlo/counterpartFiles` answer, best first, marked
 * `counterpart`; offered even when not among `candidates`), then the candidates in
 * `oldUri`'s directory, then the rest, each by URI. `oldUri` and repeats are left out.
 */
export function orderCompareCandidates(
  oldUri: string,
  candidates: readonly string[],
  counterparts: readonly string[],
): { uri: string; counterpart: boolean }[] {
  const seen = new Set([oldUri]);
  const out: { uri: string; counterpart: boolean }[] = [];
  for (const uri of counterparts) {
    if (seen.has(uri)) continue;
    seen.add(uri);
    out.push({ uri, counterpart: true });
  }
  const dir = dirOf(oldUri);
  const rest = [...new Set(candidates)].filter((u) => !seen.has(u));
  rest.sort((a, b) => Number(dirOf(a) !== dir) - Number(dirOf(b) !== dir) || (a < b ? -1 : a > b ? 1 : 0));
  for (const uri of rest) out.push({ uri, counterpart: false });
  return out;
}

/**
 * The path of the comparison's view: in `oldUri`'s directory, named old first as the
 * report reads (`old.txt → new.txt (diff)`; not `.txt`, so never taken for HLO).
 */
export function comparePath(oldPath: string, newUri: string): string {
  return `${oldPath} → ${baseName(newUri)} (diff)`;
}

/**
 * Which two files `HLO: Compare With...` compares. Arguments as VS Code passes them:
 * `[oldUri, newUri]` (programmatic), `[clickedUri, selectedUris]` (explorer, two files
 * selected: old = the first selected), `[uri]` (editor menus), `[]` (palette: the active
 * HLO file). `newUri` undefined: ask the user for it.
 */
export function compareTargets(args: readonly unknown[], activeUri?: string): { oldUri?: string; newUri?: string } {
  const selected = Array.isArray(args[1]) ? args[1].map(uriArg).filter((u): u is string => !!u) : [];
  if (selected.length === 2) return { oldUri: selected[0], newUri: selected[1] };
  const first = uriArg(args[0]);
  const second = Array.isArray(args[1]) ? undefined : uriArg(args[1]);
  if (first && second) return { oldUri: first, newUri: second };
  return { oldUri: first ?? activeUri };
}
