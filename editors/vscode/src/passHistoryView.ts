// The pass history in VS Code (docs/protocol.md, "Pass history"; issue 44), for dumps made
// with XLA_FLAGS=--xla_dump_hlo_pass_re=.*:
// - the *Pass History* tree view (Explorer) of the active HLO editor's module
//   (`hlo/passHistory`): one item per pass that changed it, with its counts; a click opens
//   the diff of that step (`vscode.diff` of the snapshot before it and its own, titled with
//   the pass); *HLO: Show Pass History* reveals it. It follows the dump directory: on the
//   server's `hlo/passHistoryChanged` for the directory of the module shown (a recompile,
//   an experiment, XLA writing more snapshots) it asks again, at once when the view is
//   visible, else when it is shown again;
// - *HLO: Go to First Appearance* (editor context menu): the snapshot that created the
//   instruction under the cursor, opened on its name (`hlo/passBlame`); with XLA:GPU's
//   priority-fusion log, a notification says why priority fusion fused it or did not.
// The server does the work; this file only asks, validates and shows.
import * as nodePath from 'node:path';
import * as vscode from 'vscode';
import { LanguageClient } from 'vscode-languageclient/node';
import {
  PASS_HISTORY_CHANGED_METHOD,
  PASS_BLAME_METHOD,
  PASS_HISTORY_METHOD,
  PassHistory,
  PassRow,
  blameFusionNotice,
  changedDirectory,
  parsePassBlame,
  parsePassHistory,
  rowDescription,
  rowDiff,
  rowTooltip,
  viewMessage,
} from './passHistory';

export const PASS_HISTORY_VIEW = 'hlo.passHistory';
export const SHOW_PASS_HISTORY = 'hlo.showPassHistory';
export const GOTO_FIRST_APPEARANCE = 'hlo.gotoFirstAppearance';
export const OPEN_PASS_STEP = 'hlo.openPassStep';

interface Item {
  history: PassHistory;
  row: PassRow;
}

export class HloPassHistory implements vscode.TreeDataProvider<Item>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<Item | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly view: vscode.TreeView<Item>;
  private readonly disposables: vscode.Disposable[] = [];
  private history: PassHistory | undefined;
  /** The document whose module the view shows. */
  private shown: string | undefined;
  /** The history shown is out of date (its directory changed while the view was hidden). */
  private stale = false;
  private offered = false;

  constructor(
    private readonly getClient: () => LanguageClient | undefined,
    private readonly log: (message: string) => void,
  ) {
    this.view = vscode.window.createTreeView(PASS_HISTORY_VIEW, { treeDataProvider: this, showCollapseAll: false });
    this.disposables.push(
      this.view,
      this.changed,
      vscode.commands.registerCommand(SHOW_PASS_HISTORY, () => this.show()),
      vscode.commands.registerCommand(GOTO_FIRST_APPEARANCE, () => this.gotoFirstAppearance()),
      vscode.commands.registerCommand(OPEN_PASS_STEP, (item: Item) => this.openStep(item)),
      vscode.workspace.onDidOpenTextDocument((doc) => this.available(doc)),
      vscode.window.onDidChangeActiveTextEditor((e) => {
        if (this.view.visible) void this.refresh(e);
      }),
      this.view.onDidChangeVisibility((e) => {
        if (e.visible) void this.refresh(vscode.window.activeTextEditor, false, true);
      }),
    );
    for (const doc of vscode.workspace.textDocuments) this.available(doc);
  }

  /** The view is offered once an HLO document is open (context key `hlo.passHistory.available`). */
  private available(doc: vscode.TextDocument): void {
    if (doc.languageId !== 'hlo' || this.offered) return;
    this.offered = true;
    void vscode.commands.executeCommand('setContext', 'hlo.passHistory.available', true);
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }

  getTreeItem(item: Item): vscode.TreeItem {
    const t = new vscode.TreeItem(`${item.row.step}  ${item.row.label}`, vscode.TreeItemCollapsibleState.None);
    t.description = `${rowDescription(item.row)}${item.row.notes ? `  ${item.row.notes}` : ''}`;
    t.tooltip = rowTooltip(item.row);
    t.command = { command: OPEN_PASS_STEP, title: 'Open the diff of this pass', arguments: [item] };
    return t;
  }

  getChildren(item?: Item): Item[] {
    if (item || !this.history) return [];
    const history = this.history;
    return history.rows.map((row) => ({ history, row }));
  }

  /** *HLO: Show Pass History*: the view revealed, with the active editor's module. */
  private async show(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    await vscode.commands.executeCommand(`${PASS_HISTORY_VIEW}.focus`);
    await this.refresh(editor, true);
  }

  /**
   * The server's notifications for the view, on each client (extension.ts): a dump directory
   * changed (`hlo/passHistoryChanged`).
   */
  listen(client: LanguageClient): vscode.Disposable {
    return client.onNotification(PASS_HISTORY_CHANGED_METHOD, (params: unknown) => this.directoryChanged(params));
  }

  /** `hlo/passHistoryChanged`: the history shown, asked again when it is in that directory (when visible). */
  private directoryChanged(params: unknown): void {
    const directory = changedDirectory(params);
    const shown = this.shown;
    if (!directory || !shown || nodePath.dirname(vscode.Uri.parse(shown).fsPath) !== directory) return;
    if (!this.view.visible) {
      this.stale = true; // asked again when the view is shown
      return;
    }
    void this.ask(shown, true);
  }

  /**
   * Asks the server for the module of `editor`'s document (an HLO file) and shows it;
   * `orShown`: else (another editor is active) the module shown, when it is out of date.
   */
  private async refresh(editor: vscode.TextEditor | undefined, force = false, orShown = false): Promise<void> {
    const doc = editor?.document;
    if (!doc || doc.languageId !== 'hlo' || doc.uri.scheme !== 'file') {
      if (orShown && this.stale && this.shown) await this.ask(this.shown, true);
      return;
    }
    await this.ask(doc.uri.toString(), force || (this.stale && doc.uri.toString() === this.shown));
  }

  /** Asks the server for the module of the document `uri` and shows it (unless shown and not `force`). */
  private async ask(uri: string, force: boolean): Promise<void> {
    if (!force && uri === this.shown) return;
    const client = this.getClient();
    if (!client || !client.isRunning()) {
      this.view.message = 'The HLO language server is not running.';
      return;
    }
    try {
      const history = parsePassHistory(await client.sendRequest(PASS_HISTORY_METHOD, { textDocument: { uri } }));
      this.shown = uri;
      this.stale = false;
      this.history = history;
      this.view.title = history.module ? `Pass History: ${history.module}` : 'Pass History';
      this.view.message = viewMessage(history);
      this.changed.fire(undefined);
    } catch (err) {
      this.log(`${PASS_HISTORY_METHOD} failed: ${String(err)}`);
    }
  }

  /** A row clicked: the diff of its step (the file alone for the first). */
  private async openStep(item: Item): Promise<void> {
    const { left, right, title } = rowDiff(item.history, item.row);
    if (left) {
      await vscode.commands.executeCommand('vscode.diff', vscode.Uri.parse(left), vscode.Uri.parse(right), title, { preview: false });
    } else {
      await vscode.commands.executeCommand('vscode.open', vscode.Uri.parse(right));
    }
  }

  /** *HLO: Go to First Appearance*: the snapshot that created the instruction under the cursor. */
  private async gotoFirstAppearance(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    if (!editor || editor.document.languageId !== 'hlo') {
      void vscode.window.showWarningMessage('HLO: put the cursor on an instruction of an HLO dump file.');
      return;
    }
    const client = this.getClient();
    if (!client || !client.isRunning()) {
      void vscode.window.showWarningMessage('HLO: the language server is not running.');
      return;
    }
    const position = { line: editor.selection.active.line, character: editor.selection.active.character };
    const blame = parsePassBlame(
      await client.sendRequest(PASS_BLAME_METHOD, { textDocument: { uri: editor.document.uri.toString() }, position }),
    );
    if (!blame.createdBy) {
      void vscode.window.showInformationMessage(`HLO: ${blame.message || 'no pass history here'}`);
      return;
    }
    const where = blame.createdBy.location;
    const range = client.protocol2CodeConverter.asRange(where.range);
    const shown = await vscode.window.showTextDocument(vscode.Uri.parse(where.uri), { preview: false });
    // the name selected, the cursor at its start
    shown.selection = new vscode.Selection(range.end, range.start);
    shown.revealRange(range, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
    vscode.window.setStatusBarMessage(`HLO: ${blame.message}`, 15000);
    // why priority fusion fused it or did not: in a notification, as text
    const fused = blameFusionNotice(blame);
    if (fused) void vscode.window.showInformationMessage(fused);
  }
}
