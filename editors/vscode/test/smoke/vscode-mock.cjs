// A small stand-in for the `vscode` module: enough of the API for the extension and
// vscode-languageclient to activate, start a real server process over stdio, send
// requests, register commands and set decorations. Everything it sees is recorded in
// `mock.record` for the smoke test. Unknown members are generic stubs.
'use strict';
const fs = require('node:fs');
const nodePath = require('node:path');

function pick(items) {
  const titles = items.filter((i) => i && typeof i === 'object' ? 'title' in i : typeof i === 'string');
  return titles.find((i) => (typeof i === 'string' ? i : i.title) === record.answer);
}
const record = {
  commands: new Map(), // id -> handler
  executed: [],
  messages: [], // {level, text}
  output: [],
  decorationTypes: [], // {id, options}
  decorations: [], // {editor, typeId, ranges}
  contexts: {},
  requestsLog: [],
  languageChanges: [], // {uri, languageId} from languages.setTextDocumentLanguage
  contentProviders: new Map(), // scheme -> TextDocumentContentProvider
  providers: [], // {kind: 'DocumentLink' | 'Definition' | ..., selector, provider}
  shown: [], // {uri, languageId, options} from window.showTextDocument
  quickPicks: [], // items offered by window.showQuickPick
  quickPickAnswer: undefined, // the index of the item window.showQuickPick picks (undefined: dismissed)
  quickPickAnswers: [], // the indices of the next picks, one each (before quickPickAnswer)
  quickPickOptions: [], // the options of each window.showQuickPick
  openDialogs: [], // the options of window.showOpenDialog
  openDialogAnswer: undefined, // the folder path window.showOpenDialog answers (undefined: dismissed)
  treeViews: [], // the views of window.createTreeView ({id, options: {treeDataProvider}, visible, ...})
};
const settings = {}; // 'hlo.server.path' -> value

class Disposable {
  constructor(fn) { this._fn = fn; }
  static from(...ds) { return new Disposable(() => ds.forEach((d) => d && d.dispose && d.dispose())); }
  dispose() { if (this._fn) { const f = this._fn; this._fn = undefined; f(); } }
}
class EventEmitter {
  constructor() { this._listeners = new Set(); this.event = (fn, thisArg, disposables) => {
    const l = thisArg ? fn.bind(thisArg) : fn; this._listeners.add(l);
    const d = new Disposable(() => this._listeners.delete(l)); if (Array.isArray(disposables)) disposables.push(d); return d; }; }
  fire(e) { for (const l of [...this._listeners]) { try { l(e); } catch (err) { record.output.push(`listener error: ${err && err.stack}`); } } }
  dispose() { this._listeners.clear(); }
}
class CancellationError extends Error {}
class CancellationTokenSource {
  constructor() { this._em = new EventEmitter(); const self = this;
    this.token = { isCancellationRequested: false, onCancellationRequested: this._em.event }; this._self = self; }
  cancel() { if (!this.token.isCancellationRequested) { this.token.isCancellationRequested = true; this._em.fire(undefined); } }
  dispose() { this._em.dispose(); }
}
class Uri {
  constructor(scheme, authority, path, query, fragment) { Object.assign(this, { scheme, authority: authority || '', path: path || '', query: query || '', fragment: fragment || '' }); }
  static parse(s) { const m = /^([a-z][\w+.-]*):(?:\/\/([^/]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$/i.exec(s); return m ? new Uri(m[1], m[2], decodeURIComponent(m[3]), m[4] && decodeURIComponent(m[4]), m[5]) : new Uri('file', '', s); }
  static file(p) { return new Uri('file', '', p); }
  static from(c) { return new Uri(c.scheme, c.authority, c.path, c.query, c.fragment); }
  static joinPath(u, ...ps) { return new Uri(u.scheme, u.authority, nodePath.posix.join(u.path, ...ps)); }
  get fsPath() { return this.path; }
  with(c) { return new Uri(c.scheme ?? this.scheme, c.authority ?? this.authority, c.path ?? this.path, c.query ?? this.query, c.fragment ?? this.fragment); }
  toString() { return `${this.scheme}://${this.authority}${encodeURI(this.path)}${this.query ? '?' + encodeURIComponent(this.query) : ''}${this.fragment ? '#' + this.fragment : ''}`; }
  toJSON() { return { scheme: this.scheme, path: this.path }; }
}
class Position {
  constructor(line, character) { this.line = line; this.character = character; }
  compareTo(o) { return this.line - o.line || this.character - o.character; }
  isBefore(o) { return this.compareTo(o) < 0; } isAfter(o) { return this.compareTo(o) > 0; } isEqual(o) { return this.compareTo(o) === 0; }
}
class Range {
  constructor(a, b, c, d) { if (typeof a === 'number') { this.start = new Position(a, b); this.end = new Position(c, d); } else { this.start = a; this.end = b; } }
  get isEmpty() { return this.start.isEqual(this.end); }
  get isSingleLine() { return this.start.line === this.end.line; }
}
class Selection extends Range { constructor(a, b, c, d) { super(a, b, c, d); this.anchor = this.start; this.active = this.end; } }
class Location { constructor(uri, rangeOrPosition) { this.uri = uri; this.range = rangeOrPosition instanceof Range ? rangeOrPosition : new Range(rangeOrPosition, rangeOrPosition); } }
class DocumentLink { constructor(range, target) { this.range = range; this.target = target; } }
class ThemeColor { constructor(id) { this.id = id; } }
class MarkdownString { constructor(v = '') { this.value = v; } appendText(t) { this.value += t; return this; } appendMarkdown(t) { this.value += t; return this; } appendCodeblock(t) { this.value += t; return this; } }

class CodeActionKind {
  constructor(value) { this.value = value; }
  append(part) { return new CodeActionKind(this.value ? `${this.value}.${part}` : part); }
  contains(other) { return this.value === '' || other.value === this.value || other.value.startsWith(this.value + '.'); }
  intersects(other) { return this.contains(other) || other.contains(this); }
}
for (const [k, v] of Object.entries({ Empty: '', QuickFix: 'quickfix', Refactor: 'refactor', RefactorExtract: 'refactor.extract', RefactorInline: 'refactor.inline', RefactorMove: 'refactor.move', RefactorRewrite: 'refactor.rewrite', Source: 'source', SourceOrganizeImports: 'source.organizeImports', SourceFixAll: 'source.fixAll', Notebook: 'notebook' })) CodeActionKind[k] = new CodeActionKind(v);

class TextDocument {
  constructor(uri, languageId, text) { this.uri = uri; this.languageId = languageId; this.version = 1; this.isClosed = false; this.isDirty = false; this.isUntitled = false; this.eol = 1; this._text = text; this.fileName = uri.fsPath; }
  getText(range) { if (!range) return this._text; return this._text.slice(this.offsetAt(range.start), this.offsetAt(range.end)); }
  get _lines() { return this._text.split('\n'); }
  get lineCount() { return this._lines.length; }
  lineAt(l) { const line = typeof l === 'number' ? l : l.line; const text = this._lines[line]; return { text, range: new Range(line, 0, line, text.length), lineNumber: line }; }
  offsetAt(p) { const ls = this._lines; let o = 0; for (let i = 0; i < p.line && i < ls.length; i++) o += ls[i].length + 1; return o + p.character; }
  positionAt(o) { const ls = this._lines; let l = 0; while (l < ls.length - 1 && o > ls[l].length) { o -= ls[l].length + 1; l++; } return new Position(l, o); }
  validateRange(r) { const ls = this._lines; const clamp = (p) => { const line = Math.min(Math.max(p.line, 0), ls.length - 1); return new Position(line, Math.min(Math.max(p.character, 0), ls[line].length)); }; return new Range(clamp(r.start), clamp(r.end)); }
  save() { return Promise.resolve(true); }
}

const ev = {};
function event(name) { if (!ev[name]) ev[name] = new EventEmitter(); return ev[name].event; }
function fire(name, e) { if (ev[name]) ev[name].fire(e); }

const documents = [];
const visibleTextEditors = [];
let activeTextEditor;

function makeEditor(doc) {
  return {
    document: doc, selections: [new Selection(0, 0, 0, 0)], get selection() { return this.selections[0]; }, options: {}, viewColumn: 1, visibleRanges: [],
    setDecorations(type, ranges) { record.decorations.push({ uri: doc.uri.toString(), typeId: type.id, ranges: ranges.map((r) => (r.range ? r.range : r)) }); },
    edit() { return Promise.resolve(true); }, revealRange() {},
  };
}

function configuration(section) {
  const prefix = section ? section + '.' : '';
  return {
    get(key, def) { const k = prefix + key; if (k in settings) return settings[k]; return def; },
    has(key) { return prefix + key in settings; },
    inspect(key) { const k = prefix + key; return { key: k, defaultValue: undefined, globalValue: k in settings ? settings[k] : undefined }; },
    update() { return Promise.resolve(); },
  };
}

const languages = {
  match(selector, doc) {
    const sels = Array.isArray(selector) ? selector : [selector];
    for (const s of sels) {
      if (typeof s === 'string' ? s === doc.languageId : (!s.language || s.language === doc.languageId) && (!s.scheme || s.scheme === doc.uri.scheme) && (!s.pattern || true)) return 10;
    }
    return 0;
  },
  createDiagnosticCollection(name) { const m = new Map(); return { name, set(u, d) { if (u) m.set(String(u), d); }, delete(u) { m.delete(String(u)); }, clear() { m.clear(); }, forEach(f) { m.forEach((v, k) => f(Uri.parse(k), v)); }, get(u) { return m.get(String(u)); }, has(u) { return m.has(String(u)); }, dispose() {} }; },
  getLanguages() { return Promise.resolve(['hlo', 'plaintext', 'markdown']); },
  setTextDocumentLanguage(d, languageId) {
    // like VS Code: the document is closed and opened again with the new language
    record.languageChanges.push({ uri: d.uri.toString(), languageId });
    const i = documents.indexOf(d);
    if (i >= 0) documents.splice(i, 1);
    fire('workspace.onDidCloseTextDocument', d);
    const doc = new TextDocument(d.uri, languageId, d._text);
    documents.push(doc);
    fire('workspace.onDidOpenTextDocument', doc);
    return Promise.resolve(doc);
  },
};
const languagesProxy = new Proxy(languages, { get(t, p) { if (p in t) return t[p];
  if (typeof p === 'string' && p.startsWith('register')) {
    const kind = p.replace(/^register/, '').replace(/Provider$/, '');
    return (selector, provider) => { const entry = { kind, selector, provider }; record.providers.push(entry);
      return new Disposable(() => { const i = record.providers.indexOf(entry); if (i >= 0) record.providers.splice(i, 1); }); };
  } if (typeof p === 'string' && p.startsWith('on')) return event('languages.' + p); return undefined; } });

const workspace = {
  getConfiguration: configuration,
  get textDocuments() { return documents; },
  workspaceFolders: undefined,
  name: undefined,
  rootPath: undefined,
  notebookDocuments: [],
  async openTextDocument(u) {
    const uri = typeof u === 'string' ? Uri.file(u) : u;
    const provider = record.contentProviders.get(uri.scheme);
    if (!provider) return new TextDocument(uri, 'hlo', fs.readFileSync(uri.fsPath, 'utf8'));
    // a virtual document: one per uri, language from the extension of its path, like VS Code
    const key = uri.toString();
    const open = documents.find((d) => d.uri.toString() === key);
    if (open) return open;
    const text = await provider.provideTextDocumentContent(uri, new CancellationTokenSource().token);
    const ext = nodePath.posix.extname(uri.path);
    const doc = new TextDocument(uri, ext === '.hlo' ? 'hlo' : ext === '.md' ? 'markdown' : 'plaintext', text ?? '');
    documents.push(doc);
    fire('workspace.onDidOpenTextDocument', doc);
    if (provider.onDidChange) {
      provider.onDidChange(async (changed) => {
        if (changed.toString() === key) doc._text = (await provider.provideTextDocumentContent(changed, new CancellationTokenSource().token)) ?? '';
      });
    }
    return doc;
  },
  createFileSystemWatcher() { return { onDidCreate: event('fsw.c'), onDidChange: event('fsw.ch'), onDidDelete: event('fsw.d'), dispose() {} }; },
  applyEdit() { return Promise.resolve(true); },
  fs: { stat: () => Promise.reject(new Error('no fs')) },
  getWorkspaceFolder() { return undefined; },
  asRelativePath(p) { return String(p); },
  registerTextDocumentContentProvider(scheme, provider) { record.contentProviders.set(scheme, provider); return new Disposable(() => record.contentProviders.delete(scheme)); },
  findFiles() { return Promise.resolve([]); },
};
const workspaceProxy = new Proxy(workspace, { get(t, p) { if (p in t) return t[p]; if (typeof p === 'string' && p.startsWith('on')) return event('workspace.' + p); return undefined; } });

let typeCounter = 0;
const window = {
  createOutputChannel(name) { return { name, append(t) { record.output.push(t); }, appendLine(t) { record.output.push(t); }, replace() {}, clear() {}, show() {}, hide() {}, dispose() {}, info(t) { record.output.push(t); }, warn(t) { record.output.push(t); }, error(t) { record.output.push(t); }, trace(t) { record.output.push(t); }, debug(t) { record.output.push(t); }, logLevel: 2, onDidChangeLogLevel: event('outlog') }; },
  createStatusBarItem() { return { text: '', tooltip: '', command: undefined, show() { this.visible = true; }, hide() { this.visible = false; }, dispose() {} }; },
  createTreeView(id, options) { const v = { id, options, visible: false, message: '', title: '', onDidChangeVisibility: event('treeView.onDidChangeVisibility'), reveal() { return Promise.resolve(); }, dispose() {} }; record.treeViews.push(v); return v; },
  createTextEditorDecorationType(options) { const t = { id: `dec${++typeCounter}`, options, dispose() {} }; record.decorationTypes.push(t); return t; },
  get visibleTextEditors() { return visibleTextEditors; },
  get activeTextEditor() { return activeTextEditor; },
  tabGroups: { all: [], onDidChangeTabs: event('tabs'), onDidChangeTabGroups: event('tabgroups') },
  // A question's buttons are answered with the item titled record.answer (the
  // user's click), else dismissed, as a closed notification is.
  showErrorMessage(text, ...items) { record.messages.push({ level: 'error', text }); return Promise.resolve(pick(items)); },
  showWarningMessage(text, ...items) { record.messages.push({ level: 'warning', text }); return Promise.resolve(pick(items)); },
  showInformationMessage(text, ...items) { record.messages.push({ level: 'info', text }); return Promise.resolve(pick(items)); },
  setStatusBarMessage(text) { record.messages.push({ level: 'status', text }); return new Disposable(); },
  withProgress(_opts, task) { return Promise.resolve(task({ report() {} }, new CancellationTokenSource().token)); },
  showTextDocument(doc, options) { record.shown.push({ uri: doc.uri.toString(), languageId: doc.languageId, options }); return Promise.resolve(makeEditor(doc)); },
  showQuickPick(items, options) { return Promise.resolve(items).then((i) => { record.quickPicks.push(i); record.quickPickOptions.push(options);
    const answer = record.quickPickAnswers.length ? record.quickPickAnswers.shift() : record.quickPickAnswer;
    return answer === undefined ? undefined : i[answer]; }); },
  showOpenDialog(options) { record.openDialogs.push(options); return Promise.resolve(record.openDialogAnswer === undefined ? undefined : [Uri.file(record.openDialogAnswer)]); },
};
const windowProxy = new Proxy(window, { get(t, p) { if (p in t) return t[p]; if (typeof p === 'string' && p.startsWith('on')) return event('window.' + p); return undefined; } });

/** A tree view shown or hidden, as the user does (its onDidChangeVisibility fired). */
function setViewVisible(view, visible) {
  if (view.visible === visible) return;
  view.visible = visible;
  fire('treeView.onDidChangeVisibility', { visible });
}

const commands = {
  registerCommand(id, handler, thisArg) {
    if (record.commands.has(id)) throw new Error(`command '${id}' already exists`);
    record.commands.set(id, thisArg ? handler.bind(thisArg) : handler);
    return new Disposable(() => record.commands.delete(id));
  },
  registerTextEditorCommand(id, h) { return commands.registerCommand(id, h); },
  executeCommand(id, ...args) {
    record.executed.push({ id, args });
    if (id === 'setContext') { record.contexts[args[0]] = args[1]; return Promise.resolve(); }
    const view = record.treeViews.find((v) => `${v.id}.focus` === id);
    if (view) { setViewVisible(view, true); return Promise.resolve(); } // `<view>.focus`: VS Code shows the view
    const h = record.commands.get(id);
    if (!h) return Promise.reject(new Error(`command '${id}' not found`));
    try { return Promise.resolve(h(...args)); } catch (e) { return Promise.reject(e); }
  },
  getCommands() { return Promise.resolve([...record.commands.keys()]); },
};

const l10n = { t(message, ...args) { const m = typeof message === 'string' ? message : message.message; const a = Array.isArray(args[0]) ? args[0] : (typeof args[0] === 'object' && args[0] ? args[0] : args); return String(m).replace(/\{(\w+)\}/g, (_, k) => String(a[k])); }, bundle: undefined, uri: undefined };

/** A value that absorbs any use: property access, calls, `new`; for API this mock lacks. */
function universal() {
  const f = function () {};
  const p = new Proxy(f, {
    get(_t, k) {
      if (k === Symbol.toPrimitive) return () => '';
      if (k === 'then') return undefined;
      if (k === 'dispose') return () => {};
      return p;
    },
    apply: () => p,
    construct: () => p,
  });
  return p;
}

const stubClasses = new Map();
function stubClass(name) {
  if (!stubClasses.has(name)) {
    const C = { [name]: class { constructor(...args) { this._args = args; } } }[name];
    // static members (enum values, Kind.Empty, ...) that the mock does not model
    stubClasses.set(name, new Proxy(C, { get: (t, k) => (k in t ? t[k] : typeof k === 'string' && /^[A-Z]/.test(k) ? universal() : undefined) }));
  }
  return stubClasses.get(name);
}

const enums = {
  StatusBarAlignment: { Left: 1, Right: 2 },
  DecorationRangeBehavior: { OpenOpen: 0, ClosedClosed: 1, OpenClosed: 2, ClosedOpen: 3 },
  ProgressLocation: { SourceControl: 1, Window: 10, Notification: 15 },
  DiagnosticSeverity: { Error: 0, Warning: 1, Information: 2, Hint: 3 },
  TextDocumentSaveReason: { Manual: 1, AfterDelay: 2, FocusOut: 3 },
  ViewColumn: { Active: -1, Beside: -2, One: 1, Two: 2 },
  ConfigurationTarget: { Global: 1, Workspace: 2, WorkspaceFolder: 3 },
  EndOfLine: { LF: 1, CRLF: 2 },
  FileType: { Unknown: 0, File: 1, Directory: 2, SymbolicLink: 64 },
  UIKind: { Desktop: 1, Web: 2 },
  LogLevel: { Off: 0, Trace: 1, Debug: 2, Info: 3, Warning: 4, Error: 5 },
  NotebookCellKind: { Markup: 1, Code: 2 },
};

const api = {
  version: '1.82.0',
  Disposable, EventEmitter, CancellationError, CancellationTokenSource, Uri, Position, Range, Selection, ThemeColor, MarkdownString, CodeActionKind, Location, DocumentLink,
  ...enums,
  languages: languagesProxy, workspace: workspaceProxy, window: windowProxy, commands, l10n,
  env: { language: 'en', appName: 'mock', appRoot: '/', machineId: 'm', sessionId: 's', uriScheme: 'vscode', uiKind: 1, openExternal: () => Promise.resolve(true), clipboard: { readText: () => Promise.resolve(''), writeText: () => Promise.resolve() } },
  extensions: { getExtension: () => undefined, all: [], onDidChange: event('ext') },
  // test hooks
  __mock: {
    record, settings, fire, documents, visibleTextEditors, setViewVisible,
    openHlo(filePath) {
      const doc = new TextDocument(Uri.file(filePath), 'hlo', fs.readFileSync(filePath, 'utf8'));
      documents.push(doc);
      const editor = makeEditor(doc);
      visibleTextEditors.push(editor);
      activeTextEditor = editor;
      fire('workspace.onDidOpenTextDocument', doc);
      fire('window.onDidChangeVisibleTextEditors', visibleTextEditors);
      fire('window.onDidChangeActiveTextEditor', editor);
      return { doc, editor };
    },
    /** A document opened without an editor, e.g. as VS Code opens a `.txt` file: Plain Text. */
    openDocument(filePath, languageId = 'plaintext') {
      const doc = new TextDocument(Uri.file(filePath), languageId, fs.readFileSync(filePath, 'utf8'));
      documents.push(doc);
      fire('workspace.onDidOpenTextDocument', doc);
      return doc;
    },
    moveCursor(editor, line) {
      editor.selections = [new Selection(line, 0, line, 0)];
      fire('window.onDidChangeTextEditorSelection', { textEditor: editor, selections: editor.selections });
    },
  },
};

module.exports = new Proxy(api, {
  get(t, p) {
    if (p in t) return t[p];
    if (typeof p !== 'string') return undefined;
    if (/^[A-Z]/.test(p)) return (t[p] = stubClass(p));
    return undefined;
  },
});

// The extension bundle inlines this module; the test reaches the hooks through a global.
globalThis.__hloVscodeMock = { ...api.__mock, commands };
