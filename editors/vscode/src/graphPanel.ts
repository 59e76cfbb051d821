// "HLO: Show Graph": the dataflow graph around the cursor (or of the computation whose
// header it is on) in a webview beside the editor. The server draws it: `hlo/graph` with
// `page: true` answers with the self-contained page `hlo-lsp graph` writes (Graphviz in
// WebAssembly, docs/protocol.md "Custom request hlo/graph"). This file only shows the
// page and links it to the editor: a click on a node reveals its instruction, the cursor
// line marks its node. "HLO: Show Memory over the Schedule" does the same with `hlo/memory`
// (bytes live over the schedule from XLA's reports; a click on a buffer reveals its instruction).
import * as vscode from 'vscode';
import { LanguageClient } from 'vscode-languageclient/node';

export const SHOW_GRAPH = 'hlo.showGraph';
export const SHOW_MEMORY = 'hlo.showMemory';
const GRAPH_METHOD = 'hlo/graph';
const MEMORY_METHOD = 'hlo/memory';

interface RevealMessage {
  type: 'hlo-graph-reveal';
  name: string;
  uri: string;
  range: { start: { line: number; character: number }; end: { line: number; character: number } };
}

/** The `hlo-graph-reveal` message a node click posts, or undefined for anything else. */
export function revealMessage(m: unknown): RevealMessage | undefined {
  const r = m as RevealMessage;
  const pos = (p: unknown) =>
    typeof p === 'object' && p !== null && Number.isInteger((p as { line: unknown }).line) &&
    Number.isInteger((p as { character: unknown }).character);
  if (!r || r.type !== 'hlo-graph-reveal' || typeof r.uri !== 'string' || !r.range || !pos(r.range.start) || !pos(r.range.end)) {
    return undefined;
  }
  return r;
}

/**
 * Options of the graph and memory panels. The page (hlo_lsp/features/graph_page) is
 * self-contained and carries its own Content-Security-Policy (default-src 'none',
 * scripts and styles by a nonce per page, WebAssembly for Graphviz, images data:
 * only): it needs no file, so the webview may load none (localResourceRoots []),
 * and no command: URI runs from it.
 */
export const WEBVIEW_OPTIONS: vscode.WebviewPanelOptions & vscode.WebviewOptions = {
  enableScripts: true,
  enableCommandUris: false,
  localResourceRoots: [],
  retainContextWhenHidden: true,
};

export class HloGraphPanel implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private memoryPanel: vscode.WebviewPanel | undefined;
  private shownUri: string | undefined;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly getClient: () => LanguageClient | undefined,
    private readonly log: (message: string) => void,
  ) {
    this.disposables.push(
      vscode.commands.registerCommand(SHOW_GRAPH, () => this.show()),
      vscode.commands.registerCommand(SHOW_MEMORY, () => this.showMemory()),
      vscode.window.onDidChangeTextEditorSelection((e) => this.cursorMoved(e)),
    );
  }

  dispose(): void {
    this.panel?.dispose();
    this.memoryPanel?.dispose();
    for (const d of this.disposables.splice(0)) d.dispose();
  }

  private async show(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    const client = this.getClient();
    if (!editor || editor.document.languageId !== 'hlo') {
      void vscode.window.showWarningMessage('HLO: open an HLO file to show its graph.');
      return;
    }
    if (!client) {
      void vscode.window.showWarningMessage('HLO: the language server is not running.');
      return;
    }
    const uri = editor.document.uri.toString();
    const position = editor.selection.active;
    let reply: { page?: unknown; message?: unknown; computation?: unknown } | null;
    try {
      reply = await client.sendRequest(GRAPH_METHOD, {
        textDocument: { uri },
        position: { line: position.line, character: position.character },
        page: true,
      });
    } catch (err) {
      this.log(`hlo/graph failed: ${String(err)}`);
      void vscode.window.showErrorMessage(`HLO: the graph could not be made: ${String(err)}`);
      return;
    }
    if (!reply || typeof reply.page !== 'string' || !reply.page) {
      void vscode.window.showInformationMessage('HLO: no graph here (put the cursor on an instruction or a computation).');
      return;
    }
    const title = `Graph: ${typeof reply.computation === 'string' ? reply.computation : 'HLO'}`;
    if (!this.panel) {
      this.panel = vscode.window.createWebviewPanel('hloGraph', title, { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true }, {
        ...WEBVIEW_OPTIONS,
      });
      this.panel.onDidDispose(() => {
        this.panel = undefined;
        this.shownUri = undefined;
      });
      this.panel.webview.onDidReceiveMessage((m) => void this.reveal(m));
    }
    this.panel.title = title;
    this.panel.webview.html = reply.page;
    this.shownUri = uri;
    this.panel.reveal(vscode.ViewColumn.Beside, true);
  }

  private async showMemory(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    const client = this.getClient();
    if (!editor || editor.document.languageId !== 'hlo' || !client) {
      void vscode.window.showWarningMessage('HLO: open an HLO file (with the language server running) to show its memory.');
      return;
    }
    let reply: { page?: unknown } | null;
    try {
      reply = await client.sendRequest(MEMORY_METHOD, { textDocument: { uri: editor.document.uri.toString() } });
    } catch (err) {
      this.log(`hlo/memory failed: ${String(err)}`);
      void vscode.window.showErrorMessage(`HLO: memory over the schedule failed: ${String(err)}`);
      return;
    }
    if (!reply || typeof reply.page !== 'string' || !reply.page) {
      void vscode.window.showInformationMessage(
        'HLO: no memory report beside this file (XLA writes *-live-range.txt and *-buffer-assignment.txt beside after-optimizations dumps).');
      return;
    }
    if (!this.memoryPanel) {
      this.memoryPanel = vscode.window.createWebviewPanel('hloMemory', 'Memory', { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true }, {
        ...WEBVIEW_OPTIONS,
      });
      this.memoryPanel.onDidDispose(() => (this.memoryPanel = undefined));
      this.memoryPanel.webview.onDidReceiveMessage((m) => void this.reveal(m));
    }
    this.memoryPanel.title = `Memory: ${editor.document.uri.path.split('/').pop()}`;
    this.memoryPanel.webview.html = reply.page;
    this.memoryPanel.reveal(vscode.ViewColumn.Beside, true);
  }

  /** A node (or a buffer) was clicked: its instruction, selected in the editor beside. */
  private async reveal(m: unknown): Promise<void> {
    const r = revealMessage(m);
    if (!r) return;
    const range = new vscode.Range(r.range.start.line, r.range.start.character, r.range.end.line, r.range.end.character);
    const uri = vscode.Uri.parse(r.uri);
    const visible = vscode.window.visibleTextEditors.find((e) => e.document.uri.toString() === uri.toString());
    const editor = await vscode.window.showTextDocument(uri, {
      viewColumn: visible?.viewColumn ?? vscode.ViewColumn.One,
      selection: range,
      preserveFocus: false,
    });
    editor.revealRange(range, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
  }

  /** The cursor moved in the document the graph shows: mark its line's node. */
  private cursorMoved(e: vscode.TextEditorSelectionChangeEvent): void {
    if (!this.panel || e.textEditor.document.uri.toString() !== this.shownUri) return;
    void this.panel.webview.postMessage({ type: 'hlo-graph-select', line: e.selections[0].active.line });
  }
}
