// Pure logic for the `hlo/inlineRegions` request (docs/protocol.md): validating the
// server's answer and choosing which ranges to hide. No `vscode` import here, so the
// tests in editors/vscode/test/ can load this file with plain Node.

export const INLINE_REGIONS_METHOD = 'hlo/inlineRegions';

export const INLINE_REGION_KINDS = ['metadata', 'backend_config', 'frontend_attributes'] as const;
export type InlineRegionKind = (typeof INLINE_REGION_KINDS)[number];

/** LSP position: 0-based line, UTF-16 code unit offset (the same unit VS Code uses). */
export interface Position {
  line: number;
  character: number;
}

export interface Range {
  start: Position;
  end: Position;
}

export interface InlineRegion {
  range: Range;
  kind: InlineRegionKind;
}

/** A range to hide; touching/overlapping regions are merged and keep all their kinds. */
export interface HiddenRange {
  range: Range;
  kinds: InlineRegionKind[];
}

export interface HideOptions {
  /** Kinds to hide (setting `hlo.metadata.kinds`). */
  kinds: ReadonlySet<InlineRegionKind>;
  /** Lines shown in full, e.g. the lines with a cursor. A range touching one is not hidden. */
  revealLines?: Iterable<number>;
  /** Number of lines in the document; ranges past the end are dropped, ends are clamped. */
  lineCount?: number;
}

export const DEFAULT_KINDS: readonly InlineRegionKind[] = ['metadata'];

export function isInlineRegionKind(value: unknown): value is InlineRegionKind {
  return typeof value === 'string' && (INLINE_REGION_KINDS as readonly string[]).includes(value);
}

export function comparePositions(a: Position, b: Position): number {
  return a.line !== b.line ? a.line - b.line : a.character - b.character;
}

function toPosition(value: unknown): Position | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { line, character } = value as { line?: unknown; character?: unknown };
  if (!Number.isInteger(line) || !Number.isInteger(character)) return undefined;
  if ((line as number) < 0 || (character as number) < 0) return undefined;
  return { line: line as number, character: character as number };
}

/**
 * Validates the result of `hlo/inlineRegions`. Anything that is not an array gives [];
 * malformed items, unknown kinds and inverted ranges are dropped. Sorted by position.
 */
export function parseInlineRegions(result: unknown): InlineRegion[] {
  if (!Array.isArray(result)) return [];
  const out: InlineRegion[] = [];
  for (const item of result) {
    if (typeof item !== 'object' || item === null) continue;
    const { range, kind } = item as { range?: unknown; kind?: unknown };
    if (!isInlineRegionKind(kind) || typeof range !== 'object' || range === null) continue;
    const start = toPosition((range as { start?: unknown }).start);
    const end = toPosition((range as { end?: unknown }).end);
    if (!start || !end || comparePositions(start, end) > 0) continue;
    out.push({ range: { start, end }, kind });
  }
  return out.sort((a, b) => comparePositions(a.range.start, b.range.start) || comparePositions(a.range.end, b.range.end));
}

/** The value of `hlo.metadata.kinds` as a set; unknown entries are ignored. */
export function normalizeKinds(value: unknown, fallback: readonly InlineRegionKind[] = DEFAULT_KINDS): Set<InlineRegionKind> {
  if (!Array.isArray(value)) return new Set(fallback);
  return new Set(value.filter(isInlineRegionKind));
}

/** Chooses the ranges to hide: kind filter, cursor lines, clamping, then merging. */
export function selectHiddenRanges(regions: readonly InlineRegion[], options: HideOptions): HiddenRange[] {
  const reveal = new Set(options.revealLines ?? []);
  const lineCount = options.lineCount;
  const picked: HiddenRange[] = [];
  for (const region of regions) {
    if (!options.kinds.has(region.kind)) continue;
    let { start, end } = region.range;
    if (lineCount !== undefined) {
      if (start.line >= lineCount) continue;
      if (end.line >= lineCount) end = { line: lineCount - 1, character: Number.MAX_SAFE_INTEGER };
    }
    if (comparePositions(start, end) >= 0) continue;
    let touchesReveal = false;
    for (let line = start.line; line <= end.line && !touchesReveal; line++) touchesReveal = reveal.has(line);
    if (touchesReveal) continue;
    picked.push({ range: { start, end }, kinds: [region.kind] });
  }
  picked.sort((a, b) => comparePositions(a.range.start, b.range.start));
  const merged: HiddenRange[] = [];
  for (const cur of picked) {
    const last = merged[merged.length - 1];
    if (last && comparePositions(cur.range.start, last.range.end) <= 0) {
      if (comparePositions(cur.range.end, last.range.end) > 0) last.range = { start: last.range.start, end: cur.range.end };
      for (const k of cur.kinds) if (!last.kinds.includes(k)) last.kinds.push(k);
    } else {
      merged.push({ range: cur.range, kinds: [...cur.kinds] });
    }
  }
  return merged;
}

/** The marker shown where text is hidden, e.g. ` ⋯ metadata`. */
export function hintText(kinds: readonly InlineRegionKind[]): string {
  return kinds.length === 0 ? ' ⋯' : ` ⋯ ${kinds.join(', ')}`;
}
