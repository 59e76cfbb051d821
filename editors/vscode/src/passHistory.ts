// Pure helpers of the pass history (docs/protocol.md, "Pass history"; issue 44): the
// `hlo/passHistory` and `hlo/passBlame` replies validated, and what the *Pass History*
// view shows of a row. No `vscode` import: unit-tested from editors/vscode/test/.

import type { Position, Range } from './inlineRegions';

export const PASS_HISTORY_METHOD = 'hlo/passHistory';
export const PASS_BLAME_METHOD = 'hlo/passBlame';

/** One file of a module's history (`snapshots[i]` of the reply). */
export interface PassSnapshot {
  index: number;
  pipeline: string;
  passName: string;
  file: string;
  uri: string;
}

/** A row of the timeline; `first`, `last`, `previous` are indices into `snapshots`. */
export interface PassRow {
  label: string;
  step: string;
  last: number;
  previous: number | null;
  added: number | null;
  removed: number | null;
  changed: number | null;
  instructions: number;
  notes: string;
  end: boolean;
}

export interface PassHistory {
  module: string;
  snapshots: PassSnapshot[];
  rows: PassRow[];
  quiet: number;
  message: string;
}

export interface PassPlace {
  words: string;
  uri: string;
  location: { uri: string; range: Range };
}

/** What XLA:GPU's priority-fusion log decided of the blamed instruction (`fusion` of the reply). */
export interface PassFusion {
  file: string;
  name: string;
  decisions: string[];
}

export interface PassBlame {
  instruction: string;
  createdBy?: PassPlace;
  changedBy: PassPlace[];
  message: string;
  fusion?: PassFusion;
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const int = (v: unknown): number | null => (Number.isInteger(v) ? (v as number) : null);

/** The `hlo/passHistory` result validated; rows naming no snapshot are left out. */
export function parsePassHistory(result: unknown): PassHistory {
  const r = (typeof result === 'object' && result !== null ? result : {}) as Record<string, unknown>;
  const snapshots: PassSnapshot[] = (Array.isArray(r.snapshots) ? r.snapshots : [])
    .filter((s): s is Record<string, unknown> => typeof s === 'object' && s !== null)
    .map((s) => ({ index: int(s.index) ?? -1, pipeline: str(s.pipeline), passName: str(s.passName), file: str(s.file), uri: str(s.uri) }));
  const rows: PassRow[] = [];
  for (const raw of Array.isArray(r.rows) ? r.rows : []) {
    if (typeof raw !== 'object' || raw === null) continue;
    const o = raw as Record<string, unknown>;
    const last = int(o.last);
    const previous = int(o.previous);
    if (last === null || !snapshots[last]?.uri) continue;
    rows.push({
      label: str(o.label),
      step: str(o.step),
      last,
      previous: previous !== null && snapshots[previous]?.uri ? previous : null,
      added: int(o.added),
      removed: int(o.removed),
      changed: int(o.changed),
      instructions: int(o.instructions) ?? 0,
      notes: str(o.notes),
      end: o.end === true,
    });
  }
  return { module: str(r.module), snapshots, rows, quiet: int(r.quiet) ?? 0, message: str(r.message) };
}

/** What the view shows beside a row's label: `+3 -0 ~2` (added, removed, changed), or the instructions of an end. */
export function rowDescription(row: PassRow): string {
  if (row.end) return `${row.instructions} instructions`;
  if (row.added === null) return 'unreadable';
  return `+${row.added} -${row.removed ?? 0} ~${row.changed ?? 0}`;
}

/** The row's tooltip: step, label, counts, what appeared and vanished. */
export function rowTooltip(row: PassRow): string {
  const counts = row.end ? `${row.instructions} instructions` : row.added === null ? '' : `${row.added} added, ${row.removed} removed, ${row.changed} changed`;
  return [`${row.step}  ${row.label}`, counts, row.notes].filter(Boolean).join('\n');
}

/** The two files of a row's diff (`left` undefined for the first file) and the diff's title. */
export function rowDiff(history: PassHistory, row: PassRow): { left?: string; right: string; title: string } {
  const right = history.snapshots[row.last].uri;
  const left = row.previous !== null ? history.snapshots[row.previous].uri : undefined;
  const title = row.end ? row.label : `${row.label} (snapshot ${row.step})`;
  return { left, right, title };
}

function isRange(v: unknown): v is Range {
  const r = v as { start?: Position; end?: Position } | null;
  return !!r && Number.isInteger(r.start?.line) && Number.isInteger(r.start?.character) && Number.isInteger(r.end?.line) && Number.isInteger(r.end?.character);
}

function place(v: unknown): PassPlace | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const o = v as Record<string, unknown>;
  const loc = o.location as { uri?: unknown; range?: unknown } | undefined;
  if (!loc || typeof loc.uri !== 'string' || !isRange(loc.range)) return undefined;
  return { words: str(o.words), uri: str(o.uri), location: { uri: loc.uri, range: loc.range } };
}

function fusion(v: unknown): PassFusion | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const o = v as Record<string, unknown>;
  const decisions = (Array.isArray(o.decisions) ? o.decisions : []).filter((d): d is string => typeof d === 'string' && d !== '');
  return decisions.length ? { file: str(o.file), name: str(o.name), decisions } : undefined;
}

/** The `hlo/passBlame` result validated (`fusion` left out when it has no decision). */
export function parsePassBlame(result: unknown): PassBlame {
  const r = (typeof result === 'object' && result !== null ? result : {}) as Record<string, unknown>;
  const changedBy = (Array.isArray(r.changedBy) ? r.changedBy : []).map(place).filter((p): p is PassPlace => !!p);
  return { instruction: str(r.instruction), createdBy: place(r.createdBy), changedBy, message: str(r.message), fusion: fusion(r.fusion) };
}

/**
 * The notification of a blame with priority-fusion decisions (undefined without), the
 * decisions first (the blame itself is in the status bar): `HLO: priority fusion of
 * %<instruction> (%<name> in <log>): <decision>; <decision>`. The text is the dump's (control
 * characters escaped by the server); a notification turns `[label](command:...)` into a
 * link, so `](` is written `] (`: shown as text, never a link.
 */
export function blameFusionNotice(blame: PassBlame): string | undefined {
  const f = blame.fusion;
  if (!f) return undefined;
  const where = blame.instruction && blame.instruction !== f.name ? `%${f.name} in ${f.file}` : f.file;
  const text = `HLO: priority fusion of %${blame.instruction || f.name} (${where}): ${f.decisions.join('; ')}`;
  return text.replace(/\]\(/g, '] (');
}

/** Server to client: a history the client was given changed on disk (docs/protocol.md). */
export const PASS_HISTORY_CHANGED_METHOD = 'hlo/passHistoryChanged';

/** The dump directory (a path) an `hlo/passHistoryChanged` notification names; undefined when malformed. */
export function changedDirectory(params: unknown): string | undefined {
  const d = typeof params === 'object' && params !== null ? (params as Record<string, unknown>).directory : undefined;
  return typeof d === 'string' && d !== '' ? d : undefined;
}

/** `n` and its noun: `1 file`, `2 files`. */
function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

/** The line above the Pass History view's rows: how many files the history has and how
 * many snapshots changed nothing; without rows, why there is no history. */
export function viewMessage(history: PassHistory): string {
  if (!history.rows.length) return history.message;
  const quiet = history.quiet ? `; ${count(history.quiet, 'snapshot')} changed nothing` : '';
  return `${count(history.snapshots.length, 'file')}${quiet}. Click a pass for its diff.`;
}
