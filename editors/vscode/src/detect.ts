// Which documents are HLO beyond what `contributes.languages` can say. VS Code gives
// `.txt` to Plain Text before it looks at `firstLine`, so a `.txt` file whose first line
// starts with `HloModule` (docs/protocol.md) is switched to `hlo` by the extension.
// No `vscode` import: unit-tested from editors/vscode/test/.

/** XLA's side files next to the HLO dumps: never HLO. */
export const NOT_HLO_SUFFIXES = [
  '-buffer-assignment.txt',
  '-memory-usage-report.txt',
  '-buffer-assignment-values.txt',
  '-live-range.txt',
];

export const FIRST_LINE = /^\uFEFF?HloModule\b/;

/** True for a Plain Text `.txt` document whose first line starts with `HloModule`. */
export function shouldAdoptAsHlo(path: string, languageId: string, firstLine: string): boolean {
  if (languageId !== 'plaintext') return false;
  const lower = path.toLowerCase();
  if (!lower.endsWith('.txt') || NOT_HLO_SUFFIXES.some((s) => lower.endsWith(s))) return false;
  return FIRST_LINE.test(firstLine);
}
