// The editor side of the server's view commands (docs/protocol.md): the readable view
// (`hlo.readableView`) as a read-only virtual document linked back to the original file,
// the kernel summary (`hlo.showSummary`, also the code lens: the text table as a read-only
// document that never wraps, each kernel's row linked to its instruction), the comparison of two dumps
// (`hlo.compareDumps`, the files offered first from `hlo/counterpartFiles`) and the jump to
// the other optimization stage (`hlo/counterpart`).
// The server does the work; this file only asks, validates and shows.
import * as vscode from 'vscode';
import { ExecuteCommandRequest, LanguageClient } from 'vscode-languageclient/node';
import {
  COMPARE_DUMPS,
  COUNTERPART_FILES_METHOD,
  COUNTERPART_METHOD,
  READABLE_SCHEME,
  READABLE_VIEW,
  REPORT_SCHEME,
  ReadableView,
  SHOW_SUMMARY,
  SUMMARY_LANGUAGE,
  SummaryTable,
  ViewRequest,
  baseName,
  compareArguments,
  comparePath,
  compareTargets,
  counterpartParams,
  decodeViewRequest,
  encodeViewRequest,
  lineTarget,
  locationTarget,
  orderCompareCandidates,
  parseLocations,
  parseReadableView,
  parseSummaryTable,
  parseUriList,
  readableLinks,
  readableViewArguments,
  sourceLineAt,
  summaryTableArguments,
  summaryTargetAt,
  textResult,
  uriArg,
  viewLineFor,
  viewPath,
} from './views';

interface ViewContent {
  text: string;
  /** Readable views: the line map and the original document. */
  view?: ReadableView;
  source?: string;
  /** The summary table: its rows' instructions. */
  table?: SummaryTable;
}

/** Globs of the files `HLO: Compare With...` offers (docs/protocol.md, "Documents the server handles"). */
const HLO_FILES = '**/{*.hlo,*before_optimizations.txt,*after_optimizations.txt,module_*.after_*.before_*.txt}';

export class HloViews implements vscode.TextDocumentContentProvider, vscode.DocumentLinkProvider, vscode.DefinitionProvider {
  private readonly contents = new Map<string, ViewContent>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly getClient: () => LanguageClient | undefined,
    private readonly log: (message: string) => void,
  ) {
    const readable = { scheme: READABLE_SCHEME };
    const report = { scheme: REPORT_SCHEME };
    this.disposables.push(
      this.changed,
      vscode.workspace.registerTextDocumentContentProvider(READABLE_SCHEME, this),
      vscode.workspace.registerTextDocumentContentProvider(REPORT_SCHEME, this),
      vscode.languages.registerDocumentLinkProvider(readable, this),
      vscode.languages.registerDefinitionProvider(readable, this),
      vscode.languages.registerDocumentLinkProvider(report, this),
      vscode.languages.registerDefinitionProvider(report, this),
      vscode.commands.registerCommand('hlo.openReadableView', (...args: unknown[]) => this.openReadableView(args, false)),
      vscode.commands.registerCommand('hlo.openReadableViewInlineFusions', (...args: unknown[]) => this.openReadableView(args, true)),
      vscode.commands.registerCommand('hlo.showSummaryView', (...args: unknown[]) => this.showSummaryView(args)),
      vscode.commands.registerCommand('hlo.compareWith', (...args: unknown[]) => this.compareWith(args)),
      vscode.workspace.onDidCloseTextDocument((doc) => {
        if (doc.uri.scheme === READABLE_SCHEME || doc.uri.scheme === REPORT_SCHEME) this.contents.delete(doc.uri.toString());
      }),
    );
  }

  dispose(): void {
    for (const d of this.disposables.splice(0)) d.dispose();
    this.contents.clear();
  }

  // ------------------------------------------------------------ server access

  private async execute(command: string, args: unknown[]): Promise<unknown> {
    const client = this.getClient();
    if (!client || !client.isRunning()) {
      throw new Error('the HLO language server is not running (open an HLO file to start it)');
    }
    return client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args });
  }

  private fail(what: string, err: unknown): undefined {
    const message = err instanceof Error ? err.message : String(err);
    this.log(`${what} failed: ${message}`);
    void vscode.window.showErrorMessage(`HLO: ${what} failed: ${message}`);
    return undefined;
  }

  /** The HLO document a command applies to: its argument, else the active editor (a view: its original). */
  private documentUri(args: readonly unknown[]): string | undefined {
    const fromArgs = uriArg(args[0]);
    if (fromArgs) return this.originalOf(fromArgs);
    const doc = vscode.window.activeTextEditor?.document;
    if (!doc) return undefined;
    if (doc.uri.scheme === READABLE_SCHEME) return this.originalOf(doc.uri.toString());
    return doc.languageId === 'hlo' ? doc.uri.toString() : undefined;
  }

  private originalOf(uri: string): string {
    if (!uri.startsWith(`${READABLE_SCHEME}:`)) return uri;
    const content = this.contents.get(uri);
    if (content?.source) return content.source;
    const request = decodeViewRequest(vscode.Uri.parse(uri).query);
    return (request && uriArg(request.arguments[0])) || uri;
  }

  // ------------------------------------------------------------ virtual documents

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    return (await this.contentOf(uri))?.text ?? '';
  }

  /** What a view shows; asked again (from the request in its URI) when not known, e.g. after a reload. */
  private async contentOf(uri: vscode.Uri): Promise<ViewContent | undefined> {
    const key = uri.toString();
    const known = this.contents.get(key);
    if (known) return known;
    const request = decodeViewRequest(uri.query);
    if (!request) return undefined;
    try {
      const content = await this.fetch(request);
      if (content) this.contents.set(key, content);
      return content;
    } catch (err) {
      this.log(`${request.command} failed: ${String(err)}`);
      return undefined;
    }
  }

  private async fetch(request: ViewRequest): Promise<ViewContent | undefined> {
    const result = await this.execute(request.command, request.arguments);
    if (request.command === READABLE_VIEW) {
      const view = parseReadableView(result);
      return view && { text: view.text, view, source: uriArg(request.arguments[0]) };
    }
    if (request.command === SHOW_SUMMARY) {
      const table = parseSummaryTable(result);
      return table && { text: table.text, table, source: uriArg(request.arguments[0]) };
    }
    const text = textResult(result);
    return text === undefined ? undefined : { text };
  }

  /** Stores `content` for a view URI, tells open editors, and opens the document. */
  private async openView(uri: vscode.Uri, content: ViewContent): Promise<vscode.TextDocument> {
    const key = uri.toString();
    const existed = this.contents.has(key);
    this.contents.set(key, content);
    if (existed) this.changed.fire(uri);
    return vscode.workspace.openTextDocument(uri);
  }

  private viewUri(scheme: string, source: string, suffix: string, request: ViewRequest): vscode.Uri {
    const src = vscode.Uri.parse(source);
    return vscode.Uri.from({ scheme, path: viewPath(src.path || `/${baseName(source)}`, suffix), query: encodeViewRequest(request) });
  }

  async provideDocumentLinks(document: vscode.TextDocument): Promise<vscode.DocumentLink[]> {
    const content = await this.contentOf(document.uri);
    if (content?.table) {
      return content.table.targets.map((t) => {
        const link = new vscode.DocumentLink(new vscode.Range(t.line, t.start, t.line, t.end), vscode.Uri.parse(locationTarget(t.location)));
        link.tooltip = `Go to the instruction (line ${t.location.range.start.line + 1} of ${baseName(t.location.uri)})`;
        return link;
      });
    }
    if (!content?.view || !content.source) return [];
    const source = content.source;
    return readableLinks(content.view).map((l) => {
      const link = new vscode.DocumentLink(new vscode.Range(l.line, l.start, l.line, l.end), vscode.Uri.parse(lineTarget(source, l.targetLine)));
      link.tooltip = `Go to line ${l.targetLine + 1} of ${baseName(source)}`;
      return link;
    });
  }

  async provideDefinition(document: vscode.TextDocument, position: vscode.Position): Promise<vscode.Location | undefined> {
    const content = await this.contentOf(document.uri);
    if (content?.table) {
      // anywhere on a kernel's row: its instruction
      const t = summaryTargetAt(content.table, position.line);
      if (!t) return undefined;
      const { start, end } = t.location.range;
      return new vscode.Location(vscode.Uri.parse(t.location.uri), new vscode.Range(start.line, start.character, end.line, end.character));
    }
    if (!content?.view || !content.source) return undefined;
    const line = sourceLineAt(content.view, position.line);
    return line === undefined ? undefined : new vscode.Location(vscode.Uri.parse(content.source), new vscode.Position(line, 0));
  }

  // ------------------------------------------------------------ commands

  /** `HLO: Open Readable View`: `hlo.readableView` in a read-only `hlo` document beside the file. */
  async openReadableView(args: readonly unknown[], inlineFusionsDefault: boolean): Promise<vscode.TextEditor | undefined> {
    const source = this.documentUri(args);
    if (!source) {
      void vscode.window.showWarningMessage('HLO: open an HLO file to show its readable view.');
      return undefined;
    }
    const opts = args[1];
    const inlineFusions =
      typeof opts === 'object' && opts !== null && typeof (opts as { inlineFusions?: unknown }).inlineFusions === 'boolean'
        ? (opts as { inlineFusions: boolean }).inlineFusions
        : inlineFusionsDefault;
    const request: ViewRequest = { command: READABLE_VIEW, arguments: readableViewArguments(source, inlineFusions) };
    try {
      const content = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Window, title: 'HLO: readable view' },
        () => this.fetch(request),
      );
      if (!content?.view) {
        void vscode.window.showWarningMessage(`HLO: no readable view for ${baseName(source)} (not an HLO module the server can parse).`);
        return undefined;
      }
      const uri = this.viewUri(READABLE_SCHEME, source, inlineFusions ? 'inline-fusions.readable.hlo' : 'readable.hlo', request);
      let doc = await this.openView(uri, content);
      if (doc.languageId !== 'hlo') doc = await vscode.languages.setTextDocumentLanguage(doc, 'hlo');
      // place the cursor on what the cursor of the original file is on
      const active = vscode.window.activeTextEditor;
      const from = active && active.document.uri.toString() === source ? active.selection.active.line : undefined;
      const line = from === undefined ? undefined : viewLineFor(content.view, from);
      const at = new vscode.Position(line ?? 0, 0);
      return await vscode.window.showTextDocument(doc, {
        viewColumn: vscode.ViewColumn.Beside,
        preview: false,
        selection: new vscode.Range(at, at),
      });
    } catch (err) {
      return this.fail('readable view', err);
    }
  }

  /** Shows a text report (the comparison) as a read-only document beside the file. */
  private async showReport(uri: vscode.Uri, text: string): Promise<vscode.TextDocument> {
    const doc = await this.openView(uri, { text });
    await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.Beside, preview: true });
    return doc;
  }

  /**
   * Shows a summary table (the server's text report, aligned in columns) as a read-only
   * document of language `hlo-summary`, which never wraps (package.json); each kernel's
   * row links to its instruction (document links on the name, go to definition anywhere
   * on the row).
   */
  private async showTable(source: string, table: SummaryTable): Promise<vscode.TextDocument> {
    const request: ViewRequest = { command: SHOW_SUMMARY, arguments: summaryTableArguments(source) };
    const uri = this.viewUri(REPORT_SCHEME, source, 'summary.txt', request);
    let doc = await this.openView(uri, { text: table.text, table, source });
    if (doc.languageId !== SUMMARY_LANGUAGE) doc = await vscode.languages.setTextDocumentLanguage(doc, SUMMARY_LANGUAGE);
    await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.Beside, preview: true });
    return doc;
  }

  /** Shows the result of `hlo.showSummary` (from the code lens, through the middleware). */
  async showSummaryResult(source: string | undefined, result: unknown): Promise<void> {
    const table = parseSummaryTable(result);
    if (!source || table === undefined) {
      void vscode.window.showWarningMessage('HLO: no kernel summary for this document.');
      return;
    }
    await this.showTable(source, table);
  }

  /**
   * `hlo.showSummary` run through the languageclient (the code lens, or another
   * extension): the server's answer is shown, and still returned to the caller. The
   * code lens (`[uri]`) asks for the table the editor shows; a caller giving its own
   * options gets the answer it asked for.
   */
  async runShowSummary(args: unknown[], next: (args: unknown[]) => Promise<unknown>): Promise<unknown> {
    const source = this.documentUri(args);
    if (!source) {
      void vscode.window.showWarningMessage('HLO: open an HLO file to show its kernel summary.');
      return undefined;
    }
    try {
      const result = await next(args.length > 1 ? args : summaryTableArguments(source));
      await this.showSummaryResult(source, result);
      return result;
    } catch (err) {
      return this.fail('kernel summary', err);
    }
  }

  /** `HLO: Show Kernel Summary`. */
  async showSummaryView(args: readonly unknown[]): Promise<vscode.TextDocument | undefined> {
    const source = this.documentUri(args);
    if (!source) {
      void vscode.window.showWarningMessage('HLO: open an HLO file to show its kernel summary.');
      return undefined;
    }
    try {
      const table = await vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title: 'HLO: kernel summary' }, async () =>
        parseSummaryTable(await this.execute(SHOW_SUMMARY, summaryTableArguments(source))),
      );
      if (table === undefined) {
        void vscode.window.showWarningMessage(`HLO: no kernel summary for ${baseName(source)}.`);
        return undefined;
      }
      return await this.showTable(source, table);
    } catch (err) {
      return this.fail('kernel summary', err);
    }
  }

  /**
   * The files of the other optimization stage of `uri`'s module, best first, as the
   * server ranks them (`hlo/counterpartFiles`); none when the server cannot say.
   */
  private async counterpartFiles(uri: string): Promise<vscode.Uri[]> {
    const client = this.getClient();
    if (!client || !client.isRunning()) return [];
    try {
      return parseUriList(await client.sendRequest(COUNTERPART_FILES_METHOD, { textDocument: { uri } })).map((u) => vscode.Uri.parse(u));
    } catch (err) {
      this.log(`${COUNTERPART_FILES_METHOD} failed: ${String(err)}`);
      return [];
    }
  }

  /**
   * The files offered to compare `exclude` with: its counterparts (marked), then the HLO
   * files of its directory, then the rest of the workspace's and the open ones.
   */
  private async compareItems(exclude: string): Promise<(vscode.QuickPickItem & { uri?: vscode.Uri })[]> {
    const uris = new Map<string, vscode.Uri>();
    const counterparts = this.counterpartFiles(exclude);
    for (const doc of vscode.workspace.textDocuments) if (doc.languageId === 'hlo' && doc.uri.scheme === 'file') uris.set(doc.uri.toString(), doc.uri);
    try {
      for (const u of await vscode.workspace.findFiles(HLO_FILES, '**/node_modules/**', 5000)) uris.set(u.toString(), u);
    } catch (err) {
      this.log(`findFiles failed: ${String(err)}`);
    }
    const first = await counterparts;
    for (const u of first) uris.set(u.toString(), u);
    return orderCompareCandidates(exclude, [...uris.keys()], first.map((u) => u.toString())).map(({ uri, counterpart }) => {
      const u = uris.get(uri) as vscode.Uri;
      const where = vscode.workspace.asRelativePath(u, true);
      return { label: baseName(u.path), description: counterpart ? `counterpart · ${where}` : where, uri: u };
    });
  }

  /** Asks for the file to compare with: the offered files (`compareItems`), or a file dialog. */
  private async pickFile(exclude: string): Promise<string | undefined> {
    const browse = '$(folder-opened) Browse...';
    const items = this.compareItems(exclude).then((found) => [...found, { label: browse }]);
    const picked = await vscode.window.showQuickPick<vscode.QuickPickItem & { uri?: vscode.Uri }>(items, {
      placeHolder: `Compare ${baseName(exclude)} (old) with... (new)`,
      matchOnDescription: true,
    });
    if (!picked) return undefined;
    if (picked.uri) return picked.uri.toString();
    const chosen = await vscode.window.showOpenDialog({
      canSelectMany: false,
      defaultUri: vscode.Uri.parse(exclude.slice(0, exclude.lastIndexOf('/') + 1) || exclude),
      openLabel: 'Compare',
      filters: { 'HLO files': ['hlo', 'txt'], 'All files': ['*'] },
    });
    return chosen?.[0]?.toString();
  }

  /** `HLO: Compare With...`: this file (old) against another one (new), `hlo.compareDumps`. */
  async compareWith(args: readonly unknown[]): Promise<vscode.TextDocument | undefined> {
    const active = this.documentUri([]);
    let { oldUri, newUri } = compareTargets(args, active);
    if (oldUri) oldUri = this.originalOf(oldUri);
    if (!oldUri) {
      void vscode.window.showWarningMessage('HLO: open an HLO file to compare it with another one.');
      return undefined;
    }
    newUri = newUri ? this.originalOf(newUri) : await this.pickFile(oldUri);
    if (!newUri) return undefined;
    const request: ViewRequest = { command: COMPARE_DUMPS, arguments: compareArguments(oldUri, newUri) };
    try {
      const text = textResult(await this.execute(request.command, request.arguments));
      if (text === undefined) {
        void vscode.window.showWarningMessage(`HLO: could not compare ${baseName(oldUri)} with ${baseName(newUri)}.`);
        return undefined;
      }
      // named as it reads: old first, then new
      const old = vscode.Uri.parse(oldUri);
      const uri = vscode.Uri.from({ scheme: REPORT_SCHEME, path: comparePath(old.path || `/${baseName(oldUri)}`, newUri), query: encodeViewRequest(request) });
      return await this.showReport(uri, text);
    } catch (err) {
      return this.fail('compare', err);
    }
  }

  /**
   * `HLO: Go to Counterpart`: `hlo/counterpart` for the cursor (or the arguments), then
   * VS Code's go-to-locations (peek when there are several). Returns the LSP locations.
   */
  async gotoCounterpart(args: readonly unknown[]): Promise<unknown> {
    const editor = vscode.window.activeTextEditor;
    const active =
      editor && editor.document.languageId === 'hlo' && editor.document.uri.scheme !== READABLE_SCHEME
        ? { uri: editor.document.uri.toString(), position: { line: editor.selection.active.line, character: editor.selection.active.character } }
        : undefined;
    const params = counterpartParams(args, active);
    if (!params) {
      void vscode.window.showWarningMessage('HLO: put the cursor on an instruction of an HLO file to go to its counterpart.');
      return [];
    }
    const client = this.getClient();
    try {
      if (!client || !client.isRunning()) throw new Error('the HLO language server is not running');
      const locations = parseLocations(await client.sendRequest(COUNTERPART_METHOD, params));
      if (locations.length === 0) {
        void vscode.window.showInformationMessage(
          'HLO: no counterpart found (the before/after optimizations file of this module, with a matching instruction).',
        );
        return locations;
      }
      const p2c = client.protocol2CodeConverter;
      await vscode.commands.executeCommand(
        'editor.action.goToLocations',
        vscode.Uri.parse(params.textDocument.uri),
        p2c.asPosition(params.position),
        locations.map((l) => p2c.asLocation(l)),
        locations.length > 1 ? 'peek' : 'goto',
        'No counterpart',
      );
      return locations;
    } catch (err) {
      this.fail('go to counterpart', err);
      return [];
    }
  }
}
