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

/**
 * XLA's kernel files in a dump (hlo_lsp/dump/kernels.py `is_kernel_file`): each module's
 * PTX (`module_0001.jit_f.7.ptx`) and LLVM IR (`module_0001.jit_f.7.ir-with-opt.ll`, ...).
 * Sent to the server in their own language (never `hlo`): definition on a kernel's
 * `.entry` / `define` line goes to its HLO instruction, hover names it; nothing else.
 */
export const KERNEL_FILE = /^(?:\d+\.)?module_\d+\..+?\.(?:\d+|constants)\.(?:ptx|ir-(?:with|no)-opt(?:-noconst)?\.ll)$/;

/** Globs of the document selector for them (the server checks the names again). */
export const KERNEL_FILE_GLOBS = ['**/*module_[0-9]*.ptx', '**/*module_[0-9]*.ir-*opt*.ll'];

/** True for the path of a kernel file XLA wrote in a dump. */
export function isKernelFile(path: string): boolean {
  return KERNEL_FILE.test(path.replace(/\\/g, '/').split('/').pop() ?? '');
}
