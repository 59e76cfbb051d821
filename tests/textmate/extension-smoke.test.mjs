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
import { GPU_FILES, gpuFile } from './corpus.mjs';

const require = createRequire(import.meta.url);
const EXT_SRC = path.join(REPO, 'editors', 'vscode', 'src', 'extension.ts');
const MOCK = path.join(HERE, 'smoke', 'vscode-mock.cjs');
const FAKE_SERVER = path.join(HERE, 'smoke', 'fake-server.mjs');
const SEED0 = gpuFile(GPU_FILES[0]);

async function bundleExtension() {
  const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'hlo-ext-smoke-'));
  const outfile = path.join(outdir, 'extension.cjs');
  await esbuild.build({
    entryPoints: [EXT_SRC],
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
  const bundle = await bundleExtension();
  // the bundle inlines the mock, which publishes its hooks on a global
  const ext = require(bundle);
  const mock = globalThis.__hloVscodeMock;
  assert.ok(mock, 'mock hooks available');
  const { record, settings } = mock;
  const logFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'hlo-fake-')), 'server.log');
  settings['hlo.server.path'] = process.execPath;
  settings['hlo.server.extraArgs'] = [FAKE_SERVER, '--log', logFile, ...(advertiseRecompile ? [] : ['--no-recompile'])];
  const context = { subscriptions: [], workspaceState: memento(), globalState: memento(), extensionPath: path.join(REPO, 'editors', 'vscode') };

  // activation registers the client-side commands at once
  await ext.activate(context);
  for (const id of ['hlo.restartServer', 'hlo.toggleMetadata']) assert.ok(record.commands.has(id), id);
  const { doc, editor } = mock.openHlo(SEED0);
  const uri = doc.uri.toString();
  const lines = fs.readFileSync(SEED0, 'utf8').split('\n');

  // the server starts, gets the document, and answers hlo/inlineRegions; metadata gets hidden
  await waitFor('initialize', () => serverLog(logFile).some((m) => m.method === 'initialize'));
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
  await waitFor('result message', () => record.messages.some((m) => m.text === `HLO: recompiled ${uri}`));

  // restart: a second server process, commands still there (no duplicate registration)
  await mock.commands.executeCommand('hlo.restartServer');
  await waitFor('second initialize', () => serverLog(logFile).filter((m) => m.method === 'initialize').length === 2);
  assert.ok(serverLog(logFile).some((m) => m.method === 'shutdown'), 'the first server was shut down');
  await waitFor('hlo.recompile registered again', () => record.commands.has('hlo.recompile'));
  await mock.commands.executeCommand('hlo.recompile', doc.uri);
  await waitFor('second executeCommand', () => serverLog(logFile).filter((m) => m.method === 'workspace/executeCommand').length === 2);
  assert.equal(record.messages.filter((m) => m.level === 'error').length, 0, JSON.stringify(record.messages));

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

  for (const d of context.subscriptions) await d.dispose?.();
  await ext.deactivate();
  await waitFor('second shutdown', () => serverLog(logFile).filter((m) => m.method === 'shutdown').length === 2);
  if (process.env.HLO_SMOKE_DEBUG) {
    t.diagnostic(record.output.join('\n'));
    t.diagnostic(serverLog(logFile).map((m) => m.method).join(' '));
    t.diagnostic(JSON.stringify(record.messages));
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
    execFileSync(python, ['-c', 'import hlo_lsp.server, pygls'], { cwd: REPO, env: { ...process.env, PYTHONPATH: REPO }, stdio: 'ignore', timeout: 60000 });
    return python;
  } catch {
    return undefined;
  }
}

test('extension smoke test: the real server (python -m hlo_lsp) hides exactly the metadata attributes', async (t) => {
  const python = realServerPython();
  if (!python) return t.skip('no Python with hlo_lsp and pygls (set HLO_LSP_PYTHON)');
  const previous = process.env.PYTHONPATH;
  process.env.PYTHONPATH = previous ? `${REPO}${path.delimiter}${previous}` : REPO;
  try {
    const ext = require(await bundleExtension());
    const mock = globalThis.__hloVscodeMock;
    const { record, settings } = mock;
    settings['hlo.server.path'] = '';
    settings['hlo.server.pythonPath'] = python;
    const context = { subscriptions: [], workspaceState: memento(), globalState: memento() };
    await ext.activate(context);
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
    for (const d of context.subscriptions) await d.dispose?.();
    await ext.deactivate();
  } finally {
    if (previous === undefined) delete process.env.PYTHONPATH;
    else process.env.PYTHONPATH = previous;
  }
});
