// Hides metadata / backend_config / frontend_attributes in place with editor decorations.
// The buffer is never edited: the text gets `display: none` and a ` ⋯ metadata` marker
// is drawn after it. Ranges come from the server's `hlo/inlineRegions` request.
import * as vscode from 'vscode';
import type { LanguageClient } from 'vscode-languageclient/node';
import {
  HiddenRange,
  INLINE_REGIONS_METHOD,
  InlineRegion,
  InlineRegionKind,
  hintText,
  normalizeKinds,
  parseInlineRegions,
  selectHiddenRanges,
} from './inlineRegions';

const STATE_KEY = 'hlo.metadata.hidden';
const CONTEXT_KEY = 'hlo.metadataHidden';
const DEBOUNCE_MS = 300;

interface CacheEntry {
  version: number;
  regions: InlineRegion[];
  /** Lines touched by a region, to skip cursor moves that change nothing. */
  lines: Set<number>;
}

function regionLines(regions: readonly InlineRegion[]): Set<number> {
  const lines = new Set<number>();
  for (const r of regions) for (let l = r.range.start.line; l <= r.range.end.line; l++) lines.add(l);
  return lines;
}

export class InlineRegionController implements vscode.Disposable {
  private readonly disposables: vscode.Disposable[] = [];
  /** One decoration type per marker text (at most 7 kinds combinations). */
  private readonly types = new Map<string, vscode.TextEditorDecorationType>();
  private readonly cache = new Map<string, CacheEntry>();
  private readonly timers = new Map<string, ReturnType<typeof setTimeout>>();
  private readonly inflight = new Map<string, vscode.CancellationTokenSource>();
  /** Per editor: the cursor lines the decorations were last computed with. */
  private readonly revealed = new WeakMap<vscode.TextEditor, string>();
  private readonly selectionTimers = new WeakMap<vscode.TextEditor, ReturnType<typeof setTimeout>>();
  private readonly status: vscode.StatusBarItem;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly getClient: () => LanguageClient | undefined,
    private readonly log: (message: string) => void,
  ) {
    this.status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 100);
    this.status.command = 'hlo.toggleMetadata';
    this.disposables.push(
      this.status,
      vscode.window.onDidChangeVisibleTextEditors(() => this.refreshVisible()),
      vscode.window.onDidChangeActiveTextEditor(() => this.updateStatus()),
      vscode.workspace.onDidChangeTextDocument((e) => {
        if (e.document.languageId === 'hlo' && e.contentChanges.length > 0) this.schedule(e.document);
      }),
      vscode.workspace.onDidOpenTextDocument((doc) => {
        if (doc.languageId === 'hlo') this.schedule(doc);
      }),
      vscode.workspace.onDidCloseTextDocument((doc) => this.forget(doc.uri.toString())),
      vscode.window.onDidChangeTextEditorSelection((e) => this.onSelection(e.textEditor)),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration('hlo.metadata.hidden')) {
          // an explicit settings change wins over the toggled workspace state
          void this.context.workspaceState.update(STATE_KEY, undefined).then(() => this.onStateChanged());
        } else if (e.affectsConfiguration('hlo.metadata')) {
          this.onStateChanged();
        }
      }),
    );
    void vscode.commands.executeCommand('setContext', CONTEXT_KEY, this.hidden);
    this.updateStatus();
  }

  /** Whether metadata is hidden: the toggled workspace state, else `hlo.metadata.hidden`. */
  get hidden(): boolean {
    const toggled = this.context.workspaceState.get<boolean>(STATE_KEY);
    if (typeof toggled === 'boolean') return toggled;
    return vscode.workspace.getConfiguration('hlo').get<boolean>('metadata.hidden', true);
  }

  async toggle(): Promise<void> {
    await this.context.workspaceState.update(STATE_KEY, !this.hidden);
    this.onStateChanged();
    vscode.window.setStatusBarMessage(this.hidden ? 'HLO: inline metadata hidden' : 'HLO: inline metadata shown', 2000);
  }

  /** Re-requests the ranges for every visible HLO editor (e.g. after the server (re)started). */
  refreshVisible(): void {
    const seen = new Set<string>();
    for (const editor of vscode.window.visibleTextEditors) {
      const doc = editor.document;
      if (doc.languageId !== 'hlo') continue;
      const key = doc.uri.toString();
      if (seen.has(key)) continue;
      seen.add(key);
      const cached = this.cache.get(key);
      if (cached && cached.version === doc.version) this.applyToDocument(doc);
      else void this.request(doc);
    }
    this.updateStatus();
  }

  /** Drops cached ranges and asks the server again. */
  invalidateAll(): void {
    this.cache.clear();
    this.refreshVisible();
  }

  private onStateChanged(): void {
    void vscode.commands.executeCommand('setContext', CONTEXT_KEY, this.hidden);
    for (const editor of vscode.window.visibleTextEditors) {
      if (editor.document.languageId === 'hlo') this.apply(editor);
    }
    this.refreshVisible();
  }

  private kinds(): Set<InlineRegionKind> {
    return normalizeKinds(vscode.workspace.getConfiguration('hlo').get<unknown>('metadata.kinds'));
  }

  private revealOnCursorLine(): boolean {
    return vscode.workspace.getConfiguration('hlo').get<boolean>('metadata.revealOnCursorLine', true);
  }

  private isVisible(doc: vscode.TextDocument): boolean {
    return vscode.window.visibleTextEditors.some((e) => e.document === doc);
  }

  private schedule(doc: vscode.TextDocument): void {
    const key = doc.uri.toString();
    const old = this.timers.get(key);
    if (old) clearTimeout(old);
    this.timers.set(
      key,
      setTimeout(() => {
        this.timers.delete(key);
        if (this.isVisible(doc)) void this.request(doc);
      }, DEBOUNCE_MS),
    );
  }

  private async request(doc: vscode.TextDocument): Promise<void> {
    const key = doc.uri.toString();
    if (!this.hidden) return; // nothing to hide: do not ask
    const client = this.getClient();
    if (!client || !client.isRunning()) return; // refreshed when the client reaches Running
    this.inflight.get(key)?.cancel();
    const cts = new vscode.CancellationTokenSource();
    this.inflight.set(key, cts);
    const version = doc.version;
    let regions: InlineRegion[] = [];
    try {
      const result = await client.sendRequest<unknown>(INLINE_REGIONS_METHOD, { textDocument: { uri: key } }, cts.token);
      regions = parseInlineRegions(result);
    } catch (err) {
      if (cts.token.isCancellationRequested) return;
      this.log(`hlo/inlineRegions failed for ${key}: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      if (this.inflight.get(key) === cts) this.inflight.delete(key);
      cts.dispose();
    }
    if (cts.token.isCancellationRequested || doc.isClosed) return;
    if (doc.version !== version) {
      this.schedule(doc); // edited meanwhile: the ranges are stale
      return;
    }
    this.cache.set(key, { version, regions, lines: regionLines(regions) });
    this.applyToDocument(doc);
  }

  /** Cursor moved: re-apply (debounced) only if a line with a region gained or lost a cursor. */
  private onSelection(editor: vscode.TextEditor): void {
    if (editor.document.languageId !== 'hlo' || !this.hidden || !this.revealOnCursorLine()) return;
    const entry = this.cache.get(editor.document.uri.toString());
    if (!entry) return;
    const key = this.revealKey(editor, entry);
    if (key === this.revealed.get(editor)) return;
    const old = this.selectionTimers.get(editor);
    if (old) clearTimeout(old);
    this.selectionTimers.set(
      editor,
      setTimeout(() => {
        this.selectionTimers.delete(editor);
        this.apply(editor);
      }, 30),
    );
  }

  /** The cursor lines that have a region, as a string key. */
  private revealKey(editor: vscode.TextEditor, entry: CacheEntry): string {
    const lines = [...new Set(editor.selections.map((s) => s.active.line))].filter((l) => entry.lines.has(l));
    return lines.sort((a, b) => a - b).join(',');
  }

  private applyToDocument(doc: vscode.TextDocument): void {
    for (const editor of vscode.window.visibleTextEditors) {
      if (editor.document === doc) this.apply(editor);
    }
  }

  private decorationType(text: string): vscode.TextEditorDecorationType {
    let type = this.types.get(text);
    if (!type) {
      type = vscode.window.createTextEditorDecorationType({
        // The well-known trick: the CSS injected through textDecoration hides the text;
        // the `after` marker is a separate element and stays visible.
        textDecoration: 'none; display: none;',
        rangeBehavior: vscode.DecorationRangeBehavior.ClosedClosed,
        after: {
          contentText: text,
          color: new vscode.ThemeColor('editorInlayHint.foreground'),
          backgroundColor: new vscode.ThemeColor('editorInlayHint.background'),
          fontStyle: 'italic',
        },
      });
      this.types.set(text, type);
    }
    return type;
  }

  private apply(editor: vscode.TextEditor): void {
    const doc = editor.document;
    const entry = this.cache.get(doc.uri.toString());
    let hidden: HiddenRange[] = [];
    if (this.hidden && entry) {
      const revealLines = this.revealOnCursorLine() ? editor.selections.map((s) => s.active.line) : [];
      this.revealed.set(editor, this.revealKey(editor, entry));
      hidden = selectHiddenRanges(entry.regions, { kinds: this.kinds(), revealLines, lineCount: doc.lineCount });
    }
    const byText = new Map<string, vscode.Range[]>();
    for (const h of hidden) {
      const text = hintText(h.kinds);
      const range = doc.validateRange(
        new vscode.Range(h.range.start.line, h.range.start.character, h.range.end.line, h.range.end.character),
      );
      if (range.isEmpty) continue;
      const list = byText.get(text) ?? [];
      list.push(range);
      byText.set(text, list);
    }
    for (const text of byText.keys()) this.decorationType(text);
    for (const [text, type] of this.types) editor.setDecorations(type, byText.get(text) ?? []);
  }

  private forget(key: string): void {
    this.cache.delete(key);
    const timer = this.timers.get(key);
    if (timer) clearTimeout(timer);
    this.timers.delete(key);
    this.inflight.get(key)?.cancel();
  }

  private updateStatus(): void {
    const editor = vscode.window.activeTextEditor;
    if (editor && editor.document.languageId === 'hlo') {
      this.status.text = this.hidden ? '$(eye-closed) HLO metadata' : '$(eye) HLO metadata';
      this.status.tooltip = this.hidden
        ? 'Inline metadata is hidden (the file is unchanged). Click to show it.'
        : 'Inline metadata is shown. Click to hide it.';
      this.status.show();
    } else {
      this.status.hide();
    }
  }

  dispose(): void {
    for (const t of this.timers.values()) clearTimeout(t);
    for (const c of this.inflight.values()) c.cancel();
    for (const type of this.types.values()) type.dispose();
    this.types.clear();
    for (const d of this.disposables) d.dispose();
  }
}
