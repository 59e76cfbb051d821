// The whole extension (src/extension.ts bundled with esbuild, the real vscode-languageclient)
// activated inside Node against a stand-in for the `vscode` module (smoke/vscode-mock.cjs).
// It starts a real server process over stdio and goes through the user-visible flows:
// metadata hidden on open, cursor line revealed, toggle, recompile, restart, shutdown.
//
// Server: smoke/fake-server.mjs (always), and the real `python -m hlo_lsp` when
// HLO_LSP_PYTHON (default python3) can import hlo_lsp and pygls.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import * as esbuild from 'esbuild';
import { HERE, REPO } from './tm.mjs';
import { GPU_FILES, cpuDumpFile, gpuFile } from './corpus.mjs';

const require = createRequire(import.meta.url);
const EXT_SRC = path.join(REPO, 'editors', 'vscode', 'src', 'extension.ts');
const MOCK = path.join(HERE, 'smoke', 'vscode-mock.cjs');
const FAKE_SERVER = path.join(HERE, 'smoke', 'fake-server.mjs');
const SEED0 = gpuFile(GPU_FILES[0]);
const pkg = JSON.parse(fs.readFileSync(path.join(REPO, 'editors', 'vscode', 'package.json'), 'utf8'));

/** src/<name>.ts (default: the extension) bundled against the vscode mock; its path. */
async function bundleModule(name = 'extension') {
  const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'hlo-ext-smoke-'));
  const outfile = path.join(outdir, `${name}.cjs`);
  await esbuild.build({
    entryPoints: [path.join(path.dirname(EXT_SRC), `${name}.ts`)],
    bundle: true,
    format: 'cjs',
    platform: 'node',
    outfile,
    alias: { vscode: MOCK },
    nodePaths: [path.join(HERE, 'node_modules')],
    logLevel: 'silent',
  });
  return outfile;
}

async function waitFor(what, fn, ms = 15000) {
  const t0 = Date.now();
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() - t0 > ms) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

function memento() {
  const m = new Map();
  return { get: (k, d) => (m.has(k) ? m.get(k) : d), update: (k, v) => (v === undefined ? m.delete(k) : m.set(k, v), Promise.resolve()), keys: () => [...m.keys()] };
}

/** The last decorations set on `uri` for every decoration type that hides text. */
function hiddenNow(record, uri) {
  const hiding = new Map(record.decorationTypes.filter((t) => t.options.textDecoration?.includes('display: none')).map((t) => [t.id, t]));
  const last = new Map();
  for (const d of record.decorations) if (d.uri === uri && hiding.has(d.typeId)) last.set(d.typeId, d);
  const out = [];
  for (const [id, d] of last) for (const r of d.ranges) out.push({ range: r, hint: hiding.get(id).options.after?.contentText });
  return out.sort((a, b) => a.range.start.line - b.range.start.line || a.range.start.character - b.range.start.character);
}

function serverLog(file) {
  return fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
}

function textOf(lines, r) {
  assert.equal(r.start.line, r.end.line, 'single-line region');
  return lines[r.start.line].slice(r.start.character, r.end.character);
}

async function runFlows(t, { advertiseRecompile }) {
  const bundle = await bundleModule();
  // the bundle inlines the mock, which publishes its hooks on a global
  const ext = require(bundle);
  const mock = globalThis.__hloVscodeMock;
  assert.ok(mock, 'mock hooks available');
  const { record, settings } = mock;
  const logFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'hlo-fake-')), 'server.log');
  settings['hlo.server.path'] = process.execPath;
  settings['hlo.server.extraArgs'] = [FAKE_SERVER, '--log', logFile, ...(advertiseRecompile ? [] : ['--no-recompile'])];
  settings['hlo.profile'] = '/profiles';
  const context = { subscriptions: [], workspaceState: memento(), globalState: memento(), extensionPath: path.join(REPO, 'editors', 'vscode') };

  // activation registers the client-side commands at once
  await ext.activate(context);
  let deactivated = false;
  try {
    for (const id of ['hlo.restartServer', 'hlo.toggleMetadata']) assert.ok(record.commands.has(id), id);
    const { doc, editor } = mock.openHlo(SEED0);
    const uri = doc.uri.toString();
    const lines = fs.readFileSync(SEED0, 'utf8').split('\n');

    // the server starts, gets the document, and answers hlo/inlineRegions; metadata gets hidden
    await waitFor('initialize', () => serverLog(logFile).some((m) => m.method === 'initialize'));
    // hlo.profile reaches the server as its `profile` setting (docs/protocol.md)
    assert.equal(serverLog(logFile).find((m) => m.method === 'initialize').params.initializationOptions.profile, '/profiles');
    await waitFor('didOpen', () => serverLog(logFile).some((m) => m.method === 'textDocument/didOpen' && m.params.textDocument.languageId === 'hlo'));
    const expected = lines.flatMap((l, i) => [...l.matchAll(/, metadata=\{(?:[^}"]|"(?:[^"\\]|\\.)*")*\}/g)].map((m) => ({ line: i, text: m[0] })));
    await waitFor('metadata hidden', () => hiddenNow(record, uri).length === expected.length);
    let hidden = hiddenNow(record, uri);
    assert.deepEqual(hidden.map((h) => ({ line: h.range.start.line, text: textOf(lines, h.range) })), expected);
    assert.ok(hidden.every((h) => h.hint === ' ⋯ metadata'));
    assert.ok(!hidden.some((h) => textOf(lines, h.range).includes('backend_config')), 'backend_config is not hidden by default');
    assert.equal(record.contexts['hlo.metadataHidden'], true);

    // the line with the cursor shows everything
    const cursorLine = expected[expected.length - 1].line;
    mock.moveCursor(editor, cursorLine);
    hidden = await waitFor('cursor line revealed', () => {
      const h = hiddenNow(record, uri);
      return h.length === expected.length - 1 ? h : undefined;
    });
    assert.ok(!hidden.some((h) => h.range.start.line === cursorLine));
    // moving to a line without metadata hides it again; moving between such lines changes nothing
    const setsBefore = record.decorations.length;
    mock.moveCursor(editor, 0);
    await waitFor('hidden again after the cursor left', () => hiddenNow(record, uri).length === expected.length);
    assert.ok(record.decorations.length > setsBefore);
    await new Promise((r) => setTimeout(r, 500)); // let late inlineRegions answers land
    const setsAfterLeaving = record.decorations.length;
    mock.moveCursor(editor, 1);
    mock.moveCursor(editor, 2);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(record.decorations.length, setsAfterLeaving, 'no re-decoration for moves between lines without regions');

    // more kinds: metadata and backend_config next to each other merge into one marker
    settings['hlo.metadata.kinds'] = ['metadata', 'backend_config'];
    mock.fire('workspace.onDidChangeConfiguration', { affectsConfiguration: (s) => 'hlo.metadata.kinds'.startsWith(s) });
    await waitFor('merged marker', () => hiddenNow(record, uri).some((h) => h.hint === ' ⋯ metadata, backend_config'));
    settings['hlo.metadata.kinds'] = ['metadata'];
    mock.fire('workspace.onDidChangeConfiguration', { affectsConfiguration: (s) => 'hlo.metadata.kinds'.startsWith(s) });

    // toggle: everything shown, the state is remembered in the workspace state
    await mock.commands.executeCommand('hlo.toggleMetadata');
    assert.deepEqual(hiddenNow(record, uri), []);
    assert.equal(record.contexts['hlo.metadataHidden'], false);
    assert.equal(context.workspaceState.get('hlo.metadata.hidden'), false);
    await mock.commands.executeCommand('hlo.toggleMetadata');
    await waitFor('hidden again', () => hiddenNow(record, uri).length === expected.length);

    // recompile from the palette: the active document's uri is sent to the server
    await waitFor('hlo.recompile registered', () => record.commands.has('hlo.recompile'));
    await mock.commands.executeCommand('hlo.recompile');
    const exec = await waitFor('executeCommand', () => serverLog(logFile).find((m) => m.method === 'workspace/executeCommand'));
    assert.deepEqual(exec.params, { command: 'hlo.recompile', arguments: [uri] });
    await waitFor('the report in the output channel', () => record.output.includes(`hlo.recompile:\nrecompiled ${uri}\nsecond line`));

    // restart: a second server process, commands still there (no duplicate registration)
    await mock.commands.executeCommand('hlo.restartServer');
    await waitFor('second initialize', () => serverLog(logFile).filter((m) => m.method === 'initialize').length === 2);
    assert.ok(serverLog(logFile).some((m) => m.method === 'shutdown'), 'the first server was shut down');
    await waitFor('hlo.recompile registered again', () => record.commands.has('hlo.recompile'));
    await mock.commands.executeCommand('hlo.recompile', doc.uri);
    await waitFor('second executeCommand', () => serverLog(logFile).filter((m) => m.method === 'workspace/executeCommand').length === 2);
    assert.equal(record.messages.filter((m) => m.level === 'error').length, 0, JSON.stringify(record.messages));

    // HLO: Load Profile... (issue 43) from the palette: a folder (the dump's directory
    // offered first), the runs there newest first, the older one picked: the server
    // command gets that run.
    await waitFor('hlo.loadProfile registered', () => record.commands.has('hlo.loadProfile'));
    const loads = () => serverLog(logFile).filter((m) => m.method === 'workspace/executeCommand' && m.params.command === 'hlo.loadProfile');
    const runsAsked = () => serverLog(logFile).filter((m) => m.method === 'hlo/profileRuns');
    record.quickPickAnswers = [1, 1];
    record.openDialogAnswer = '/chosen/prof';
    const picks = record.quickPicks.length;
    let reply = await mock.commands.executeCommand('hlo.loadProfile');
    assert.deepEqual(record.quickPicks[picks].map((i) => i.label), ['Beside this dump', 'Choose a Folder...']);
    assert.match(record.quickPicks[picks][0].description, /hlo\.profile: \/profiles/);
    const dialog = record.openDialogs.at(-1);
    assert.equal(dialog.canSelectFolders, true);
    assert.equal(dialog.canSelectFiles, false);
    assert.equal(dialog.defaultUri.fsPath, path.dirname(SEED0), 'the folder picker starts in the dump directory');
    assert.deepEqual(runsAsked().at(-1).params, { textDocument: { uri }, path: '/chosen/prof' });
    assert.deepEqual(record.quickPicks[picks + 1].map((i) => i.label), ['2026-11-29 06:19:32', '2026-11-29 06:19:31'], 'newest first');
    assert.match(record.quickPicks[picks + 1][0].description, /newest/);
    const older = '/chosen/prof/plugins/profile/2026_11_29_06_19_31';
    assert.deepEqual(loads().at(-1).params.arguments, [{ uri, path: older }]);
    assert.deepEqual(reply, { run: older, message: `loaded ${older}` });
    // "Beside this dump": the newest run there preselected (the first item)
    record.quickPickAnswers = [0, 0];
    reply = await mock.commands.executeCommand('hlo.loadProfile');
    assert.deepEqual(runsAsked().at(-1).params, { textDocument: { uri } });
    assert.deepEqual(loads().at(-1).params.arguments, [{ uri, path: '/beside/plugins/profile/2026_11_29_06_19_32' }]);
    // a folder without a profile: the server's command says so (nothing to choose)
    record.quickPickAnswers = [1];
    record.openDialogAnswer = '/chosen/empty';
    const shown = record.quickPicks.length;
    reply = await mock.commands.executeCommand('hlo.loadProfile');
    assert.equal(record.quickPicks.length, shown + 1, 'no run to choose from');
    assert.deepEqual(loads().at(-1).params.arguments, [{ uri, path: '/chosen/empty' }]);
    // dismissed: nothing is loaded
    const before = loads().length;
    record.quickPickAnswers = [];
    assert.equal(await mock.commands.executeCommand('hlo.loadProfile'), undefined);
    record.quickPickAnswers = [1];
    record.openDialogAnswer = undefined;
    assert.equal(await mock.commands.executeCommand('hlo.loadProfile'), undefined);
    assert.equal(loads().length, before, 'a dismissed choice loads nothing');
    // a directory given (a code lens, a keybinding): sent as it is, nothing asked
    const asked = record.quickPicks.length;
    await mock.commands.executeCommand('hlo.loadProfile', { uri, path: '/given' });
    assert.deepEqual(loads().at(-1).params.arguments, [{ uri, path: '/given' }]);
    assert.equal(record.quickPicks.length, asked);

    // a .txt that VS Code opens as Plain Text but starts with HloModule becomes hlo; side files do not
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'hlo-plain-'));
    const adopt = path.join(tmp, 'my_module.txt');
    fs.copyFileSync(SEED0, adopt);
    const side = path.join(tmp, 'module_0001.jit_f.cpu_after_optimizations-buffer-assignment.txt');
    fs.writeFileSync(side, 'HloModule looks_like_hlo_but_is_a_side_file\n');
    const notes = path.join(tmp, 'notes.txt');
    fs.writeFileSync(notes, 'allocation 0: size 4\n');
    for (const f of [adopt, side, notes]) mock.openDocument(f);
    await waitFor('my_module.txt switched to hlo', () => record.languageChanges.length >= 1);
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(record.languageChanges, [{ uri: `file://${adopt}`, languageId: 'hlo' }]);
    await waitFor('didOpen of the adopted document', () =>
      serverLog(logFile).some((m) => m.method === 'textDocument/didOpen' && m.params.textDocument.uri.endsWith('/my_module.txt') && m.params.textDocument.languageId === 'hlo'));

    deactivated = true;
    for (const d of context.subscriptions) await d.dispose?.();
    await ext.deactivate();
    await waitFor('second shutdown', () => serverLog(logFile).filter((m) => m.method === 'shutdown').length === 2);
    if (process.env.HLO_SMOKE_DEBUG) {
      t.diagnostic(record.output.join('\n'));
      t.diagnostic(serverLog(logFile).map((m) => m.method).join(' '));
      t.diagnostic(JSON.stringify(record.messages));
    }
  } finally {
    // Also after a failed assertion: a fake server left running keeps node's
    // test runner waiting for this file's process until run.sh is killed.
    if (!deactivated) {
      for (const d of context.subscriptions) await d.dispose?.();
      await ext.deactivate();
    }
  }
  return { record };
}

test('extension smoke test: fake server that advertises hlo.recompile', async (t) => {
  await runFlows(t, { advertiseRecompile: true });
});

test('extension smoke test: fake server without executeCommandProvider (client-side hlo.recompile)', async (t) => {
  await runFlows(t, { advertiseRecompile: false });
});

/** A Python that can run the real server from this checkout, or undefined. */
function realServerPython() {
  const python = process.env.HLO_LSP_PYTHON || 'python3';
  try {
    execFileSync(python, ['-c', 'import hlo_lsp.lsp.server, pygls'], { cwd: REPO, env: { ...process.env, PYTHONPATH: REPO }, stdio: 'ignore', timeout: 60000 });
    return python;
  } catch {
    return undefined;
  }
}

/**
 * Run `body(mock, record)` with the bundled extension activated against the real
 * server (`python -m hlo_lsp` from this checkout), then deactivate it. Skips the
 * test where no Python with hlo_lsp and pygls is found.
 */
async function withRealServer(t, body) {
  const python = realServerPython();
  if (!python) return t.skip('no Python with hlo_lsp and pygls (set HLO_LSP_PYTHON)');
  const previous = process.env.PYTHONPATH;
  process.env.PYTHONPATH = previous ? `${REPO}${path.delimiter}${previous}` : REPO;
  try {
    const ext = require(await bundleModule());
    const mock = globalThis.__hloVscodeMock;
    mock.settings['hlo.server.path'] = '';
    mock.settings['hlo.server.pythonPath'] = python;
    const context = { subscriptions: [], workspaceState: memento(), globalState: memento() };
    await ext.activate(context);
    try {
      await body(mock, mock.record);
    } finally {
      // Also after a failed assertion: a server left running keeps the run alive.
      for (const d of context.subscriptions) await d.dispose?.();
      await ext.deactivate();
    }
  } finally {
    if (previous === undefined) delete process.env.PYTHONPATH;
    else process.env.PYTHONPATH = previous;
  }
}

test('extension smoke test: the real server (python -m hlo_lsp) hides exactly the metadata attributes', async (t) => {
  return withRealServer(t, async (mock, record) => {
    for (const file of GPU_FILES.map(gpuFile)) {
      const { doc } = mock.openHlo(file);
      const uri = doc.uri.toString();
      const lines = fs.readFileSync(file, 'utf8').split('\n');
      const expected = lines.flatMap((l, i) => [...l.matchAll(/, metadata=\{(?:[^}"]|"(?:[^"\\]|\\.)*")*\}/g)].map((m) => ({ line: i, text: m[0] })));
      if (expected.length === 0) continue;
      try {
        await waitFor(`metadata hidden in ${path.basename(file)}`, () => hiddenNow(record, uri).length === expected.length, 60000);
      } catch (err) {
        t.diagnostic(`server output:\n${record.output.join('\n').slice(-3000)}`);
        t.diagnostic(`hidden: ${JSON.stringify(hiddenNow(record, uri).map((h) => textOf(lines, h.range)))}`);
        throw err;
      }
      const hidden = hiddenNow(record, uri);
      assert.deepEqual(hidden.map((h) => ({ line: h.range.start.line, text: textOf(lines, h.range) })), expected);
    }
    assert.equal(record.messages.filter((m) => m.level === 'error').length, 0, JSON.stringify(record.messages));
  });
});

test('extension smoke test: the real server behind the readable view, summary, compare and counterpart commands', async (t) => {
  return withRealServer(t, async (mock, record) => {
    for (const id of ['hlo.openReadableView', 'hlo.openReadableViewInlineFusions', 'hlo.showSummaryView', 'hlo.compareWith']) {
      assert.ok(record.commands.has(id), `${id} registered at activation`);
    }
    const seed = gpuFile(GPU_FILES[0]);
    const { doc, editor } = mock.openHlo(seed);
    const uri = doc.uri.toString();
    const lines = fs.readFileSync(seed, 'utf8').split('\n');
    const gemmLine = lines.findIndex((l) => l.includes('%cublas-gemm.1.0 = '));
    // languageclient registers the server's commands once it is initialized
    await waitFor('server commands registered', () => ['hlo.showSummary', 'hlo.gotoCounterpart'].every((id) => record.commands.has(id)), 60000);
    const provider = (kind) => record.providers.find((p) => p.kind === kind && p.selector?.scheme === 'hlo-readable')?.provider;

    // Readable view: a read-only hlo document from hlo.readableView, the cursor on the
    // view line of the original cursor line, lines linking back to the original file.
    mock.moveCursor(editor, gemmLine);
    await mock.commands.executeCommand('hlo.openReadableView');
    const shownView = record.shown.at(-1);
    assert.ok(shownView?.uri.startsWith('hlo-readable:'), JSON.stringify(shownView));
    assert.equal(shownView.languageId, 'hlo');
    const view = mock.documents.find((d) => d.uri.toString() === shownView.uri);
    const viewText = view.getText();
    assert.ok(viewText.includes('"gemm_backend_config": {'), 'backend_config expanded');
    assert.ok(!viewText.includes('metadata={'), 'metadata reduced');
    const viewLines = viewText.split('\n');
    assert.match(viewLines[shownView.options.selection.start.line], /%cublas-gemm\.1\.0 = /, 'cursor placed on the same instruction');
    const links = await provider('DocumentLink').provideDocumentLinks(view);
    const gemmLink = links.find((l) => viewLines[l.range.start.line].includes('%cublas-gemm.1.0 = '));
    assert.ok(gemmLink, 'a link on the custom-call line');
    assert.equal(viewLines[gemmLink.range.start.line].slice(gemmLink.range.start.character, gemmLink.range.end.character), '%cublas-gemm.1.0');
    assert.equal(gemmLink.target.toString(), `${uri}#L${gemmLine + 1}`);
    assert.ok(links.length >= 8, `${links.length} links`);
    for (const l of links) assert.ok(l.target.toString().startsWith(`${uri}#L`), l.target.toString());
    // go to definition from a line of the expanded backend_config
    const configLine = viewLines.findIndex((l) => l.includes('"gemm_backend_config": {'));
    const def = await provider('Definition').provideDefinition(view, new (require(MOCK).Position)(configLine, 8));
    assert.equal(def.uri.toString(), uri);
    assert.equal(def.range.start.line, gemmLine);
    // with fusions inlined: another document, the fused computation indented under its fusion
    await mock.commands.executeCommand('hlo.openReadableViewInlineFusions');
    const inlined = record.shown.at(-1);
    assert.notEqual(inlined.uri, shownView.uri);
    const inlinedText = mock.documents.find((d) => d.uri.toString() === inlined.uri).getText();
    assert.match(inlinedText, /\n {6}%wrapped_transpose_computation \(/);

    // Kernel summary (issue 40, item 4): the palette command shows the server's text table
    // as a read-only document that never wraps (language hlo-summary), not a Markdown
    // preview; each kernel's row goes to its instruction ...
    const previewed = [];
    record.commands.set('markdown.showPreviewToSide', (u) => previewed.push(u.toString()));
    await mock.commands.executeCommand('hlo.showSummaryView');
    const shownSummary = record.shown.at(-1);
    assert.ok(shownSummary.uri.startsWith('hlo-report:'), shownSummary.uri);
    assert.equal(shownSummary.languageId, 'hlo-summary');
    assert.deepEqual(pkg.contributes.configurationDefaults['[hlo-summary]'], { 'editor.wordWrap': 'off' });
    const summaryDoc = mock.documents.find((d) => d.uri.toString() === shownSummary.uri);
    const summaryLines = summaryDoc.getText().split('\n');
    assert.ok(summaryDoc.getText().includes('cuBLASLt FP8'), summaryDoc.getText());
    assert.ok(!summaryDoc.getText().includes('| '), 'the text table, not Markdown');
    const reportProvider = (kind) => record.providers.find((p) => p.kind === kind && p.selector?.scheme === 'hlo-report')?.provider;
    const summaryLinks = await reportProvider('DocumentLink').provideDocumentLinks(summaryDoc);
    const gemmRows = summaryLinks.filter((l) => summaryLines[l.range.start.line].slice(l.range.start.character, l.range.end.character) === '%cublas-gemm.1.0');
    assert.ok(gemmRows.length >= 2, `the top table's row and the full list's: ${summaryLinks.length} links`);
    const gemmColumn = lines[gemmLine].indexOf('%cublas-gemm.1.0');
    for (const l of gemmRows) assert.equal(l.target.toString(), `${uri}#L${gemmLine + 1},${gemmColumn + 1}`);
    const rowDef = await reportProvider('Definition').provideDefinition(summaryDoc, new (require(MOCK).Position)(gemmRows[0].range.start.line, 40));
    assert.equal(rowDef.uri.toString(), uri);
    assert.deepEqual([rowDef.range.start.line, rowDef.range.start.character, rowDef.range.end.character], [gemmLine, gemmColumn, gemmColumn + '%cublas-gemm.1.0'.length]);
    const headline = summaryLines.findIndex((l) => l.startsWith('HloModule '));
    assert.equal(await reportProvider('Definition').provideDefinition(summaryDoc, new (require(MOCK).Position)(headline, 0)), undefined);
    // ... and the code lens command hlo.showSummary [uri] shows the same table
    const lensResult = await mock.commands.executeCommand('hlo.showSummary', uri);
    assert.equal(lensResult.text, summaryDoc.getText());
    assert.equal(record.shown.at(-1).uri, shownSummary.uri);
    assert.equal(record.shown.at(-1).languageId, 'hlo-summary');
    assert.equal(previewed.length, 0, 'no Markdown preview');

    // Compare With...: two files given (explorer / programmatic) ...
    const [oldFile, newFile] = [gpuFile(GPU_FILES[1]), gpuFile(GPU_FILES[2])];
    await mock.commands.executeCommand('hlo.compareWith', `file://${oldFile}`, `file://${newFile}`);
    const shownDiff = record.shown.at(-1);
    const diffText = mock.documents.find((d) => d.uri.toString() === shownDiff.uri).getText();
    // the tab reads as the report does: old first, then new (issue 40, item 6)
    assert.ok(diffText.startsWith(`old ${path.basename(oldFile)}: `), diffText.slice(0, 200));
    assert.equal(decodeURIComponent(shownDiff.uri.replace(/[?#].*$/, '').replace(/^.*\//, '')), `${path.basename(oldFile)} → ${path.basename(newFile)} (diff)`);
    assert.match(diffText, /`__cublas\$lt\$matmul\$f8` disappeared \(1 -> 0\)/);
    assert.match(diffText, /Triton GEMM fusion appeared/);
    // ... or one: the other is picked (cancelled here)
    const shownBefore = record.shown.length;
    await mock.commands.executeCommand('hlo.compareWith');
    assert.ok(record.quickPicks.at(-1)?.some((i) => /Browse/.test(i.label)), 'a quick pick was offered');
    assert.equal(record.shown.length, shownBefore, 'cancelled: nothing shown');

    // Go to counterpart: after optimizations -> before optimizations (examples/cpu_dump)
    const after = cpuDumpFile('module_0028.jit_train_step.cpu_after_optimizations.txt');
    if (after) {
      const gone = [];
      record.commands.set('editor.action.goToLocations', (...args) => gone.push(args));
      const { doc: afterDoc, editor: afterEditor } = mock.openHlo(after);
      const afterLines = afterDoc.getText().split('\n');
      const paramLine = afterLines.findIndex((l) => l.includes('%params__b1__.1 = '));
      afterEditor.selections = [new (require(MOCK).Selection)(paramLine, 4, paramLine, 4)];
      const locs = await mock.commands.executeCommand('hlo.gotoCounterpart');
      assert.equal(locs.length, 1, JSON.stringify(locs));
      assert.match(locs[0].uri, /module_0028\.jit_train_step\.before_optimizations\.txt$/);
      const beforeLines = fs.readFileSync(after.replace('cpu_after_optimizations', 'before_optimizations'), 'utf8').split('\n');
      assert.equal(locs[0].range.start.line, beforeLines.findIndex((l) => l.includes('%params__b1__.1 = ')));
      assert.equal(gone.length, 1);
      assert.equal(gone[0][0].toString(), afterDoc.uri.toString());
      assert.equal(gone[0][2].length, 1);
      assert.equal(gone[0][3], 'goto');
      // Compare With... from the after file (cursor at its start) offers its before file
      // first, as the server's hlo/counterpartFiles answers, though no editor has it open
      // and the workspace search finds nothing here (issue 40, item 6) ...
      const beforeFile = after.replace('cpu_after_optimizations', 'before_optimizations');
      mock.openHlo(after);
      await mock.commands.executeCommand('hlo.compareWith');
      let offered = record.quickPicks.at(-1);
      assert.ok(!mock.documents.some((d) => d.uri.path === beforeFile), 'the before file is not open');
      assert.equal(offered[0].label, path.basename(beforeFile), JSON.stringify(offered.map((i) => i.label)));
      assert.equal(offered[0].uri.toString(), `file://${beforeFile}`);
      assert.match(offered[0].description, /^counterpart · /);
      assert.ok(offered.length > 2 && !offered.slice(1).some((i) => /^counterpart/.test(i.description ?? '')));
      assert.match(offered.at(-1).label, /Browse/);
      // ... and once when it is open too
      mock.openDocument(beforeFile, 'hlo');
      mock.openHlo(after);
      await mock.commands.executeCommand('hlo.compareWith');
      offered = record.quickPicks.at(-1);
      assert.equal(offered[0].label, path.basename(beforeFile));
      assert.equal(offered.filter((i) => i.label === path.basename(beforeFile)).length, 1, JSON.stringify(offered.map((i) => i.label)));
    } else {
      t.diagnostic('examples/cpu_dump not generated: counterpart not checked');
    }

    assert.equal(record.messages.filter((m) => m.level === 'error' || m.level === 'warning').length, 0, JSON.stringify(record.messages));
  });
});

test("extension smoke test: the real server's hlo.recompile reply has every field the extension reads", async (t) => {
  // A dump with a recipe whose program fails: the server asks before running
  // it (a recipe is dump content), the user clicks Run, and the reply says why
  // the program failed, in the fields of RecompileReply.
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'hlo-recompile-contract-'));
  const dump = path.join(tmp, 'dump');
  fs.mkdirSync(dump);
  const seed = cpuDumpFile('module_0000.jit_stage.cpu_after_optimizations.txt');
  const file = path.join(dump, path.basename(seed));
  fs.copyFileSync(seed, file);
  fs.writeFileSync(path.join(dump, 'hlo-lsp-recipe.json'), JSON.stringify({
    format: 'hlo-lsp-recipe/1', command: ['python3', '-c', 'import sys; print("boom"); sys.exit(3)'],
    cwd: tmp, env: {}, platform: 'cpu', host: os.hostname(),
  }));
  const sc = require(await bundleModule('serverCommand'));
  const state = process.env.HLO_LSP_STATE_DIR;
  process.env.HLO_LSP_STATE_DIR = path.join(tmp, 'state');  // confirmations kept here, not in ~
  try {
  return await withRealServer(t, async (mock, record) => {
    const { doc } = mock.openHlo(file);
    await waitFor('hlo.recompile registered', () => record.commands.has('hlo.recompile'), 60000);
    record.answer = 'Run';
    record.quickPickAnswer = 0; // from a menu (a Uri): the choices; the first is the plain recompile
    const asked = record.messages.length;
    const reply = await mock.commands.executeCommand('hlo.recompile', doc.uri);
    record.answer = undefined;
    record.quickPickAnswer = undefined;
    assert.match(record.quickPicks.at(-1)?.[0]?.label ?? '', /^Recompile with JAX on /, 'the menu offered the choices');
    assert.ok(record.messages.slice(asked).some((m) => m.text.includes('sys.exit(3)')),
      `the question names the command: ${JSON.stringify(record.messages.slice(asked))}`);
    assert.equal(typeof reply, 'object', JSON.stringify(reply));
    for (const field of sc.RECOMPILE_FIELDS) assert.ok(field in reply, `the reply has ${field}: ${JSON.stringify(reply)}`);
    assert.equal(reply.ok, false);
    assert.match(reply.summary, /exited with status 3/);
    assert.ok(reply.summary.includes('\n'), 'the summary has several lines');
    const shown = sc.describeCommandResult(reply);
    assert.equal(shown, reply.summary.trim());
    await waitFor('the report in the output channel', () => record.output.includes(`hlo.recompile:\n${shown}`));
    assert.equal(fs.readFileSync(file, 'utf8'), fs.readFileSync(seed, 'utf8'), 'the dump is unchanged');
    // Issue 40: a code action's options reach the server whole (the extension sent
    // [uri] only, and "Compile for H100" ran on the CPU). An unknown target is refused
    // before anything runs.
    const refused = await mock.commands.executeCommand('hlo.recompile', doc.uri.toString(), { target: 'no-such-gpu' });
    assert.match(refused?.error ?? '', /unknown target 'no-such-gpu'/, JSON.stringify(refused));
    // HLO: Recompile from the palette offers the server's code actions, same titles.
    const picks = record.quickPicks.length;
    const dismissed = await mock.commands.executeCommand('hlo.recompile');
    assert.equal(dismissed, undefined, 'a dismissed choice runs nothing');
    const offered = (record.quickPicks[picks] ?? []).map((i) => i.label);
    assert.ok(offered.includes('Compile for H100 here, no GPU needed') && offered.length >= 2, JSON.stringify(offered));
    assert.deepEqual(offered.map((t, i) => record.quickPicks[picks][i].choice.arguments[0]), offered.map(() => doc.uri.toString()));
  });
  } finally {
    if (state === undefined) delete process.env.HLO_LSP_STATE_DIR;
    else process.env.HLO_LSP_STATE_DIR = state;
  }
});

test('extension smoke test: HLO: Load Profile... with the real server on a real profiled dump', async (t) => {
  // tests/profiled.py: XLA's dump of a JAX program and two runs of jax.profiler.trace
  const python = realServerPython();
  if (!python) return t.skip('no Python with hlo_lsp and pygls (set HLO_LSP_PYTHON)');
  let made;
  try {
    const out = execFileSync(python, ['-m', 'tests.profiled', fs.mkdtempSync(path.join(os.tmpdir(), 'hlo-profiled-'))], {
      cwd: REPO, env: { ...process.env, PYTHONPATH: REPO }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 300000,
    });
    made = JSON.parse(out.trim().split('\n').at(-1));
  } catch {
    return t.skip(`no profiled dump (does ${python} have jax?)`);
  }
  const [older, newer] = made.runs;
  return withRealServer(t, async (mock, record) => {
    const { doc } = mock.openHlo(made.after);
    await waitFor('hlo.loadProfile registered', () => record.commands.has('hlo.loadProfile'), 60000);
    // Beside this dump: the two runs, newest first; the older one picked
    record.quickPickAnswers = [0, 1];
    const picks = record.quickPicks.length;
    const reply = await mock.commands.executeCommand('hlo.loadProfile');
    const offered = record.quickPicks[picks + 1] ?? [];
    assert.deepEqual(offered.map((i) => i.detail), [newer, older], 'the runs, newest first');
    assert.deepEqual(Object.keys(reply ?? {}).sort(), ['message', 'run'], JSON.stringify(reply));
    assert.equal(reply.run, older);
    assert.ok(reply.message.includes(path.basename(older)), reply.message);
    await waitFor('the server says so', () => record.messages.some((m) => m.level === 'info' && m.text === reply.message));
    // the run loaded is marked when the runs are offered again
    record.quickPickAnswers = [0];
    await mock.commands.executeCommand('hlo.loadProfile');
    assert.match(record.quickPicks.at(-1).find((i) => i.detail === older).description, /loaded now/);
    assert.equal(doc.uri.fsPath, made.after);
  });
});

test('extension smoke test: without a server, one notification naming the cause', async () => {
  const ext = require(await bundleModule());
  const mock = globalThis.__hloVscodeMock;
  const record = mock.record;
  const before = record.messages.length;
  mock.settings['hlo.server.path'] = '';
  mock.settings['hlo.server.pythonPath'] = '/nonexistent/bin/python3';
  const context = { subscriptions: [], workspaceState: memento(), globalState: memento(), extensionPath: path.join(REPO, 'editors', 'vscode') };
  await ext.activate(context);
  try {
    mock.openHlo(SEED0);
    await waitFor('the notification', () => record.messages.length > before, 20000);
    await new Promise((r) => setTimeout(r, 1500)); // nothing else follows
    const shown = record.messages.slice(before);
    assert.equal(shown.length, 1, JSON.stringify(shown));
    assert.equal(shown[0].level, 'error');
    assert.match(shown[0].text, /no Python interpreter at `\/nonexistent\/bin\/python3`/);
    assert.doesNotMatch(shown[0].text, /pip install hlo-lsp/);
  } finally {
    for (const d of context.subscriptions) await d.dispose?.();
    await ext.deactivate();
  }
});

test('extension smoke test: the Pass History view follows its dump directory (the real server)', async (t) => {
  // examples/cpu_passes (a real XLA CPU compile dumped with --xla_dump_hlo_pass_re=.*) caught
  // while XLA writes it: the files after snapshot 0014 held back, copied in later as XLA does.
  const prefix = 'module_0008.jit_layer.';
  const src = path.join(REPO, 'examples', 'cpu_passes');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hlo-passes-view-'));
  const dump = path.join(dir, 'dump');
  fs.mkdirSync(dump);
  const later = fs.readdirSync(src).filter((n) => n === `${prefix}cpu_after_optimizations.txt` || Number(n.slice(prefix.length, prefix.length + 4)) >= 15);
  for (const n of fs.readdirSync(src)) if (!later.includes(n)) fs.copyFileSync(path.join(src, n), path.join(dump, n));
  try {
    return await withRealServer(t, async (mock, record) => {
      mock.openHlo(path.join(dump, `${prefix}before_optimizations.txt`));
      await waitFor('the server running', () => record.commands.has('hlo.showSummary'), 60000);
      const view = record.treeViews.find((v) => v.id === 'hlo.passHistory');
      const provider = view.options.treeDataProvider;
      const steps = () => provider.getChildren().map((item) => item.row.step).join(' ');
      await mock.commands.executeCommand('hlo.showPassHistory');
      assert.ok(view.visible, 'HLO: Show Pass History shows the view');
      await waitFor('the passes so far', () => steps() === '- 0006 0014', 30000);
      // XLA writes the rest of its snapshots: the view shows them with no command
      // (the mock reports no file events: the server's own look at the directory finds them)
      for (const n of later) fs.copyFileSync(path.join(src, n), path.join(dump, n));
      await waitFor('the new passes in the view', () => steps() === '- 0006 0014 0017 0024', 60000);
      // Hidden, the view asks nothing: out of date once told, shown anew when visible again
      mock.setViewVisible(view, false);
      const asked = record.output.length;
      for (const n of later) fs.rmSync(path.join(dump, n));
      await waitFor('told while hidden', () => provider.stale === true, 60000);
      assert.equal(steps(), '- 0006 0014 0017 0024', 'not asked while hidden');
      mock.setViewVisible(view, true);
      await waitFor('the passes left, once visible', () => steps() === '- 0006 0014', 30000);
      assert.deepEqual(record.output.slice(asked).filter((l) => /hlo\/passHistory failed/.test(l)), []);
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
