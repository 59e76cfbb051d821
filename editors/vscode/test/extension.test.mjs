// The VS Code extension without VS Code: its pure modules (compiled from TypeScript with
// esbuild), the file patterns in package.json (matched with VS Code's glob semantics),
// the language configuration and the contributed settings and commands.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import * as esbuild from 'esbuild';
import { REPO } from './tm.mjs';
import { EXAMPLES, GPU_FILES, gpuFile, readLines } from './corpus.mjs';

const EXT = path.join(REPO, 'editors', 'vscode');
const pkg = JSON.parse(fs.readFileSync(path.join(EXT, 'package.json'), 'utf8'));
const langConfig = JSON.parse(fs.readFileSync(path.join(EXT, 'language-configuration.json'), 'utf8'));

/** Compiles editors/vscode/src/<name>.ts to an ES module in a temp dir and imports it. */
async function importTs(name) {
  const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'hlo-ext-'));
  const outfile = path.join(outdir, `${name}.mjs`);
  await esbuild.build({
    entryPoints: [path.join(EXT, 'src', `${name}.ts`)],
    bundle: true,
    format: 'esm',
    platform: 'node',
    outfile,
    external: ['vscode'],
    logLevel: 'silent',
  });
  return import(pathToFileURL(outfile).href);
}

const ir = await importTs('inlineRegions');
const sc = await importTs('serverCommand');
const det = await importTs('detect');
const vw = await importTs('views');
const pf = await importTs('profiles');

const pos = (line, character) => ({ line, character });
const region = (l1, c1, l2, c2, kind = 'metadata') => ({ range: { start: pos(l1, c1), end: pos(l2, c2) }, kind });

// ---------------------------------------------------------------- inline regions

test('inlineRegions: parseInlineRegions validates the server result', () => {
  assert.deepEqual(ir.parseInlineRegions(null), []);
  assert.deepEqual(ir.parseInlineRegions({}), []);
  assert.deepEqual(ir.parseInlineRegions('x'), []);
  const parsed = ir.parseInlineRegions([
    region(3, 10, 3, 40, 'backend_config'),
    region(1, 5, 1, 9),
    { range: { start: pos(2, 0), end: pos(2, 4) }, kind: 'comment' }, // unknown kind
    { range: { start: pos(2, 9), end: pos(2, 4) }, kind: 'metadata' }, // inverted
    { range: { start: { line: -1, character: 0 }, end: pos(2, 4) }, kind: 'metadata' },
    { range: { start: pos(2, 1.5), end: pos(2, 4) }, kind: 'metadata' },
    { kind: 'metadata' },
    42,
  ]);
  assert.deepEqual(parsed, [region(1, 5, 1, 9), region(3, 10, 3, 40, 'backend_config')]);
});

test('inlineRegions: normalizeKinds reads hlo.metadata.kinds', () => {
  assert.deepEqual([...ir.normalizeKinds(undefined)], ['metadata']);
  assert.deepEqual([...ir.normalizeKinds('metadata')], ['metadata']);
  assert.deepEqual([...ir.normalizeKinds([])], []);
  assert.deepEqual([...ir.normalizeKinds(['backend_config', 'nonsense', 'frontend_attributes', 'backend_config'])], [
    'backend_config',
    'frontend_attributes',
  ]);
  assert.deepEqual(ir.INLINE_REGION_KINDS, ['metadata', 'backend_config', 'frontend_attributes']);
  assert.equal(ir.INLINE_REGIONS_METHOD, 'hlo/inlineRegions');
});

test('inlineRegions: selectHiddenRanges filters kinds, reveals cursor lines, clamps, merges', () => {
  const regions = [
    region(0, 10, 0, 20, 'metadata'),
    region(0, 20, 0, 50, 'backend_config'), // touches the previous one
    region(2, 5, 2, 30, 'frontend_attributes'),
    region(4, 3, 6, 1, 'metadata'), // spans lines
    region(9, 0, 9, 4, 'metadata'), // past the end with lineCount 8
    region(5, 7, 5, 7, 'metadata'), // empty
  ];
  const all = new Set(ir.INLINE_REGION_KINDS);
  assert.deepEqual(ir.selectHiddenRanges(regions, { kinds: new Set(['metadata']) }), [
    { range: { start: pos(0, 10), end: pos(0, 20) }, kinds: ['metadata'] },
    { range: { start: pos(4, 3), end: pos(6, 1) }, kinds: ['metadata'] },
    { range: { start: pos(9, 0), end: pos(9, 4) }, kinds: ['metadata'] },
  ]);
  assert.deepEqual(ir.selectHiddenRanges(regions, { kinds: all, lineCount: 8, revealLines: [2, 5] }), [
    { range: { start: pos(0, 10), end: pos(0, 50) }, kinds: ['metadata', 'backend_config'] },
  ]);
  assert.deepEqual(ir.selectHiddenRanges(regions, { kinds: new Set() }), []);
  // an end past the document is clamped to the last line
  const clamped = ir.selectHiddenRanges([region(6, 2, 12, 0)], { kinds: all, lineCount: 8 });
  assert.equal(clamped.length, 1);
  assert.equal(clamped[0].range.end.line, 7);
  // overlapping regions merge into their union
  assert.deepEqual(ir.selectHiddenRanges([region(1, 0, 1, 30), region(1, 10, 1, 20, 'backend_config')], { kinds: all }), [
    { range: { start: pos(1, 0), end: pos(1, 30) }, kinds: ['metadata', 'backend_config'] },
  ]);
});

test('inlineRegions: hint text', () => {
  assert.equal(ir.hintText(['metadata']), ' ⋯ metadata');
  assert.equal(ir.hintText(['metadata', 'backend_config']), ' ⋯ metadata, backend_config');
});

test('inlineRegions: hiding the protocol ranges on real lines leaves well-formed lines', () => {
  // Ranges as docs/protocol.md defines them: the ", " before the attribute and the attribute.
  const lines = readLines(gpuFile(GPU_FILES[0]));
  const regions = [];
  lines.forEach((text, line) => {
    for (const [kind, re] of [
      ['metadata', /, metadata=\{(?:[^}"]|"(?:[^"\\]|\\.)*")*\}/g],
      ['backend_config', /, backend_config=\{.*\}$/g],
    ]) {
      for (const m of text.matchAll(re)) regions.push({ range: { start: pos(line, m.index), end: pos(line, m.index + m[0].length) }, kind });
    }
  });
  const parsed = ir.parseInlineRegions(JSON.parse(JSON.stringify(regions)));
  const hidden = ir.selectHiddenRanges(parsed, { kinds: ir.normalizeKinds(['metadata', 'backend_config']), lineCount: lines.length, revealLines: [] });
  const shown = lines.map((l) => l);
  for (const h of [...hidden].reverse()) {
    const l = h.range.start.line;
    shown[l] = shown[l].slice(0, h.range.start.character) + ir.hintText(h.kinds) + shown[l].slice(h.range.end.character);
  }
  const gemm = shown.find((l) => l.includes('%cublas-gemm.1.0 = '));
  assert.match(gemm, /custom_call_target="__cublas\$lt\$matmul\$f8" ⋯ metadata, backend_config$/);
  const root = shown.find((l) => l.includes('ROOT %get-tuple-element.1'));
  assert.match(root, /\), index=0 ⋯ metadata$/);
  assert.ok(shown.every((l) => !l.includes('metadata={')));
});

// ---------------------------------------------------------------- server command

test('serverCommand: hlo.server.path or python -m hlo_lsp', () => {
  assert.deepEqual(sc.resolveServerCommand({}), { command: 'python3', args: ['-m', 'hlo_lsp'] });
  assert.deepEqual(sc.resolveServerCommand({ path: '', pythonPath: '/venv/bin/python', extraArgs: ['--log', 'x'] }), {
    command: '/venv/bin/python',
    args: ['-m', 'hlo_lsp', '--log', 'x'],
  });
  assert.deepEqual(sc.resolveServerCommand({ path: '  ', pythonPath: ' ' }), { command: 'python3', args: ['-m', 'hlo_lsp'] });
  assert.deepEqual(sc.resolveServerCommand({ path: '/usr/local/bin/hlo-lsp', pythonPath: 'python3', extraArgs: ['-v', 3, null] }), {
    command: '/usr/local/bin/hlo-lsp',
    args: ['-v'],
  });
  assert.deepEqual(sc.resolveServerCommand({ extraArgs: 'not-a-list' }).args, ['-m', 'hlo_lsp']);
  assert.equal(sc.formatCommandLine({ command: '/a b/python', args: ['-m', 'hlo_lsp'] }), '"/a b/python" -m hlo_lsp');
});

test('serverCommand: hlo.recompile arguments are [uri] or [uri, options], as the code actions send them', () => {
  const uri = 'file:///work/dump/module_0001.jit_f.cpu_after_optimizations.txt';
  assert.deepEqual(sc.recompileArguments([uri]), [uri]);
  // Issue 40: the H100 action's options went missing, and it compiled on the CPU.
  assert.deepEqual(sc.recompileArguments([uri, { target: 'h100' }]), [uri, { target: 'h100' }]);
  assert.deepEqual(sc.recompileArguments([uri, { platform: 'cpu' }], 'file:///other'), [uri, { platform: 'cpu' }]);
  assert.deepEqual(sc.recompileArguments([uri, 'junk']), [uri]);
  assert.equal(sc.recompileNeedsChoice([uri, { target: 'h100' }]), false, 'a code action chose already');
  assert.equal(sc.recompileNeedsChoice([uri]), false);
  assert.equal(sc.recompileNeedsChoice([]), true, 'the palette asks');
  assert.equal(sc.recompileNeedsChoice([{ scheme: 'file', toString: () => uri }]), true, 'a menu asks');
  // The QuickPick's choices are the server's code actions, titles and arguments.
  const actions = [
    { title: 'Recompile with JAX on CPU and refresh', kind: 'source.hlo.recompile', command: { title: 'x', command: 'hlo.recompile', arguments: [uri] } },
    { title: 'Compile for H100 here, no GPU needed', kind: 'source.hlo.recompile', command: { title: 'x', command: 'hlo.recompile', arguments: [uri, { target: 'h100' }] } },
    { title: 'A bare Command', command: 'hlo.recompile', arguments: [uri, { platform: 'cpu' }] },
    { title: 'Something else', command: { title: 'y', command: 'other', arguments: [uri] } },
    { title: 'No uri', command: { title: 'z', command: 'hlo.recompile', arguments: [] } },
    null,
  ];
  assert.deepEqual(sc.recompileChoices(actions), [
    { title: 'Recompile with JAX on CPU and refresh', arguments: [uri] },
    { title: 'Compile for H100 here, no GPU needed', arguments: [uri, { target: 'h100' }] },
    { title: 'A bare Command', arguments: [uri, { platform: 'cpu' }] },
  ]);
  assert.deepEqual(sc.recompileChoices(null), []);
  assert.equal(sc.RECOMPILE_ACTION_KIND, 'source.hlo.recompile');
  assert.deepEqual(sc.recompileArguments([], uri), [uri]);
  assert.equal(sc.recompileArguments([]), undefined);
  const fakeUri = { scheme: 'file', toString: () => uri }; // what a menu passes: a vscode.Uri
  assert.deepEqual(sc.recompileArguments([fakeUri], 'file:///other'), [uri]);
  assert.deepEqual(sc.recompileArguments([{}], uri), [uri]);
  assert.equal(sc.describeCommandResult('  recompiled \n'), 'recompiled');
  assert.equal(sc.describeCommandResult({ ok: true, summary: 'Recompiled\nfusions 2 -> 3\n' }), 'Recompiled\nfusions 2 -> 3');
  assert.equal(sc.describeCommandResult({ ok: false, error: 'Cannot recompile: x', summary: '' }), 'Cannot recompile: x');
  assert.equal(sc.describeCommandResult({ message: 'not a field of the reply' }), undefined);
  assert.deepEqual([...sc.RECOMPILE_FIELDS], ['ok', 'cancelled', 'error', 'summary']);
});

test('serverCommand: the first-run probe names the cause', () => {
  assert.equal(sc.diagnoseProbe('python3', { stdout: '0.1.0\n', stderr: '' }), undefined);
  assert.equal(sc.diagnoseProbe('/no/python', { errorCode: 'ENOENT', stdout: '', stderr: '' }).cause, 'no-interpreter');
  const missing = sc.diagnoseProbe('python3', { errorCode: 1, stdout: '', stderr: "Traceback...\nModuleNotFoundError: No module named 'hlo_lsp'\n" });
  assert.equal(missing.cause, 'missing');
  assert.match(missing.message, /not installed for `python3`/);
  assert.equal(sc.diagnoseProbe('python3', { stdout: '0.0.9\n', stderr: '' }, '0.1.0').cause, 'too-old');
  assert.equal(sc.diagnoseProbe('python3', { errorCode: 1, stdout: '', stderr: 'ImportError: libfoo.so\n' }).cause, 'broken');
  assert.ok(sc.versionAtLeast('0.10.0', '0.9.1') && !sc.versionAtLeast('0.1.0', '0.1.1') && sc.versionAtLeast('1.0', '1.0.0'));
  assert.equal(sc.describeCommandResult(null), undefined);
  assert.equal(sc.describeCommandResult({}), undefined);
});

// ---------------------------------------------------------------- file patterns

/** VS Code's glob (src/vs/base/common/glob.ts) for the features filenamePatterns use. */
function globToRegExp(pattern) {
  let re = '';
  for (let i = 0; i < pattern.length; ) {
    const c = pattern[i];
    if (c === '*') {
      let n = 0;
      while (pattern[i] === '*') {
        n++;
        i++;
      }
      re += n === 1 ? '[^/\\\\]*?' : '.*?';
    } else if (c === '?') {
      re += '[^/\\\\]';
      i++;
    } else if (c === '[') {
      const j = pattern.indexOf(']', i + 1);
      let body = pattern.slice(i + 1, j);
      if (body.startsWith('!')) body = '^' + body.slice(1);
      re += `[${body}]`;
      i = j + 1;
    } else if (c === '{') {
      const j = pattern.indexOf('}', i);
      re += '(?:' + pattern.slice(i + 1, j).split(',').map((a) => globToRegExp(a).source.slice(1, -1)).join('|') + ')';
      i = j + 1;
    } else {
      re += c.replace(/[.+^$()|\\\/]/g, '\\$&');
      i++;
    }
  }
  return new RegExp(`^${re}$`);
}

/** How VS Code picks a language by path: lower-cased, basename unless the pattern has a `/`. */
function isHloByName(filePath) {
  const lang = pkg.contributes.languages.find((l) => l.id === 'hlo');
  const lower = filePath.toLowerCase();
  const base = path.posix.basename(lower);
  if (lang.extensions.some((e) => base.endsWith(e.toLowerCase()))) return true;
  return lang.filenamePatterns.some((p) => globToRegExp(p.toLowerCase()).test(p.includes('/') ? lower : base));
}

test('filenamePatterns: XLA dump names open as hlo', () => {
  const names = [
    'model.hlo',
    'module_0001.jit_f.before_optimizations.txt',
    'module_0001.jit_f.cpu_after_optimizations.txt',
    'module_0001.jit_f.sm_9.0_gpu_after_optimizations.txt',
    'module_0042.jit_train_step.gfx942_gpu_after_optimizations.txt',
    '1700000000000000.module_0001.jit_f.sm_8.0_gpu_after_optimizations.txt',
    'module_0002.after_optimizations.txt',
    'module_0001.jit_f.0004.simplification.after_dce.before_x.txt',
    'module_0002.add_one_shard_parallel.7.0005.spmd-partitioner.after_auto_sharding.before_slice_auto_sharded_stages.txt',
    'module_0096.func_shard_parallel__2.68.0031.fusion.after_fusion_merger.before_multi_output_fusion.txt',
    'MODULE_0001.JIT_F.CPU_AFTER_OPTIMIZATIONS.TXT',
    ...GPU_FILES,
  ];
  const dump = path.join(EXAMPLES, 'cpu_dump');
  if (fs.existsSync(dump)) names.push(...fs.readdirSync(dump).filter((f) => /optimizations\.txt$/.test(f)));
  for (const n of names) assert.ok(isHloByName(`/home/u/dump/${n}`), n);
});

test('filenamePatterns: XLA side files never open as hlo', () => {
  const prefixes = [
    'module_0001.jit_f.cpu_after_optimizations',
    'module_0001.jit_f.sm_9.0_gpu_after_optimizations',
    '1700000000000000.module_0001.jit_f.gfx942_gpu_after_optimizations',
    'module_0002.add_one_shard_parallel.7.sm_7.0_gpu_after_optimizations',
    'module_0003.jit_before_optimizations.cpu_after_optimizations',
    'module_0004.a.0001.b.after_c.before_d.cpu_after_optimizations', // a module named like a pass dump
  ];
  const names = [];
  for (const p of prefixes) {
    for (const s of ['-buffer-assignment.txt', '-memory-usage-report.txt', '-buffer-assignment-values.txt', '-live-range.txt']) names.push(p + s);
  }
  names.push('module_0001.jit_f.debug_options', 'module_0001.jit_f.cpu_after_optimizations.dot', 'module_0001.jit_f.cpu_after_optimizations.html');
  names.push('module_0001.jit_f.ir-no-opt.ll', 'module_0001.jit_f.thunk_sequence.txt', 'notes.txt', 'hlo.txt');
  const dump = path.join(EXAMPLES, 'cpu_dump');
  if (fs.existsSync(dump)) names.push(...fs.readdirSync(dump).filter((f) => !/optimizations\.txt$/.test(f)));
  const wrong = names.filter((n) => isHloByName(`/home/u/dump/${n}`));
  // The only names a glob cannot exclude: a module that is itself *named* like a per-pass dump
  // (`a.0001.b.after_c.before_d`); XLA/JAX module names (jit_f, jit_f.7, ...) never are.
  assert.deepEqual(wrong.filter((n) => !n.startsWith('module_0004.a.0001.b.after_c.before_d.')), []);
});

test('firstLine: HLO text yes, XLA side files no', () => {
  const lang = pkg.contributes.languages.find((l) => l.id === 'hlo');
  const re = new RegExp(lang.firstLine);
  for (const f of GPU_FILES) assert.match(readLines(gpuFile(f))[0], re, f);
  const dump = path.join(EXAMPLES, 'cpu_dump');
  if (fs.existsSync(dump)) {
    for (const f of fs.readdirSync(dump)) {
      const first = readLines(path.join(dump, f))[0];
      if (/optimizations\.txt$/.test(f)) assert.match(first, re, f);
      else assert.doesNotMatch(first, re, f);
    }
  }
  assert.doesNotMatch('HloModuleX foo', re);
});

test('detect: a Plain Text .txt starting with HloModule is HLO, side files never', () => {
  const first = readLines(gpuFile(GPU_FILES[0]))[0];
  assert.ok(det.shouldAdoptAsHlo('/d/my_module.txt', 'plaintext', first));
  assert.ok(det.shouldAdoptAsHlo('/d/MY.TXT', 'plaintext', '\uFEFFHloModule m'));
  assert.ok(!det.shouldAdoptAsHlo('/d/my_module.txt', 'markdown', first), 'only Plain Text documents');
  assert.ok(!det.shouldAdoptAsHlo('/d/my_module.log', 'plaintext', first), 'only .txt');
  assert.ok(!det.shouldAdoptAsHlo('/d/notes.txt', 'plaintext', 'HloModuleX'));
  assert.ok(!det.shouldAdoptAsHlo('/d/notes.txt', 'plaintext', '  HloModule m'));
  for (const suffix of det.NOT_HLO_SUFFIXES) assert.ok(!det.shouldAdoptAsHlo(`/d/module_0001.jit_f.cpu_after_optimizations${suffix}`, 'plaintext', first), suffix);
  const dump = path.join(EXAMPLES, 'cpu_dump');
  if (fs.existsSync(dump)) {
    for (const f of fs.readdirSync(dump)) {
      const expected = /optimizations\.txt$/.test(f);
      assert.equal(det.shouldAdoptAsHlo(path.join(dump, f), 'plaintext', readLines(path.join(dump, f))[0]), expected, f);
    }
  }
});

// ---------------------------------------------------------------- language configuration, contributions

test('language configuration: comments, brackets, words with . and -', () => {
  assert.equal(langConfig.comments.lineComment, '//');
  assert.deepEqual(langConfig.comments.blockComment, ['/*', '*/']);
  assert.deepEqual(langConfig.brackets, [['{', '}'], ['[', ']'], ['(', ')']]);
  for (const open of ['{', '[', '(', '"']) assert.ok(langConfig.autoClosingPairs.some((p) => p.open === open), open);
  const word = new RegExp(langConfig.wordPattern, 'g');
  const line = readLines(gpuFile(GPU_FILES[0])).find((l) => l.includes('ROOT %get-tuple-element.1'));
  const words = line.match(word);
  assert.ok(words.includes('%get-tuple-element.1'), words.join(' '));
  assert.ok(words.includes('%cublas-gemm.1.0'));
  assert.ok(words.includes('get-tuple-element'));
  assert.ok(words.includes('f8e5m2'));
  assert.ok(!words.some((w) => w.includes('[') || w.includes('{') || w.includes(',') || w.includes('=')));
  assert.ok(!new RegExp(langConfig.wordPattern).test(''), 'wordPattern must not match the empty string');
  const gemm = readLines(gpuFile(GPU_FILES[0])).find((l) => l.includes('custom_call_target='));
  assert.ok(gemm.match(word).includes('__cublas$lt$matmul$f8'));
});

test('package.json: language, grammar, commands, settings', () => {
  const c = pkg.contributes;
  assert.equal(pkg.publisher, 'hlo-lsp');
  assert.equal(pkg.license, 'Apache-2.0');
  assert.ok(pkg.repository);
  assert.ok(pkg.engines.vscode);
  assert.equal(pkg.main, './out/extension.js');
  assert.ok(fs.existsSync(path.join(EXT, 'LICENSE')));
  const grammar = c.grammars.find((g) => g.language === 'hlo');
  assert.equal(grammar.scopeName, 'source.hlo');
  assert.equal(grammar.path, './syntaxes/hlo.tmLanguage.json');
  const commands = c.commands.map((x) => x.command).sort();
  assert.deepEqual(commands, [
    'hlo.compareWith',
    'hlo.gotoCounterpart',
    'hlo.gotoFirstAppearance',
    'hlo.loadProfile',
    'hlo.openReadableView',
    'hlo.openReadableViewInlineFusions',
    'hlo.recompile',
    'hlo.restartServer',
    'hlo.showGraph',
    'hlo.showMemory',
    'hlo.showPassHistory',
    'hlo.showSummaryView',
    'hlo.toggleMetadata',
  ]);
  for (const x of c.commands) assert.equal(x.category, 'HLO', x.command);
  // every contributed command is hidden from the palette outside HLO editors (restart excepted)
  const palette = new Map(c.menus.commandPalette.map((m) => [m.command, m.when]));
  for (const id of commands.filter((id) => id !== 'hlo.restartServer')) assert.match(palette.get(id) ?? '', /editorLangId == hlo/, id);
  // the menus only name contributed commands, and only for HLO documents
  for (const [menu, entries] of Object.entries(c.menus)) {
    for (const m of entries) {
      assert.ok(commands.includes(m.command), `${menu}: ${m.command}`);
      assert.match(m.when, /(editorLangId|resourceLangId) == hlo/, `${menu}: ${m.command}`);
    }
  }
  assert.ok(c.menus['editor/title'].some((m) => m.command === 'hlo.openReadableView' && m.group === 'navigation'));
  assert.ok(c.menus['editor/context'].some((m) => m.command === 'hlo.gotoCounterpart'));
  assert.ok(c.menus['explorer/context'].some((m) => m.command === 'hlo.compareWith'));
  const p = c.configuration.properties;
  assert.equal(p['hlo.server.path'].default, '');
  assert.equal(p['hlo.server.pythonPath'].default, 'python3');
  assert.deepEqual(p['hlo.server.extraArgs'].default, []);
  assert.equal(p['hlo.server.extraArgs'].items.type, 'string');
  assert.deepEqual(p['hlo.trace.server'].enum, ['off', 'messages', 'verbose']);
  assert.equal(p['hlo.metadata.hidden'].default, true);
  assert.deepEqual(p['hlo.metadata.kinds'].default, ['metadata']);
  assert.deepEqual(p['hlo.metadata.kinds'].items.enum, ['metadata', 'backend_config', 'frontend_attributes']);
  // issue 43: the server's `profile` setting (docs/protocol.md), a directory
  assert.equal(p['hlo.profile'].type, 'string');
  assert.equal(p['hlo.profile'].default, '');
  // Plain Text too: a .txt starting with HloModule is switched to hlo (see detect.ts)
  assert.deepEqual(pkg.activationEvents, ['onLanguage:hlo', 'onLanguage:plaintext']);
  // hidden text still takes room when lines wrap: HLO files do not wrap by default
  assert.equal(c.configurationDefaults['[hlo]']['editor.wordWrap'], 'off');
});

test('package.json: semantic token types map onto the grammar scopes', async () => {
  const grammar = JSON.parse(fs.readFileSync(path.join(REPO, 'grammar', 'hlo.tmLanguage.json'), 'utf8'));
  const names = new Set();
  (function walk(o) {
    if (Array.isArray(o)) o.forEach(walk);
    else if (o && typeof o === 'object') {
      for (const [k, v] of Object.entries(o)) {
        if ((k === 'name' || k === 'contentName') && typeof v === 'string') v.split(' ').forEach((n) => names.add(n));
        else walk(v);
      }
    }
  })(grammar);
  const mapping = pkg.contributes.semanticTokenScopes.find((m) => m.language === 'hlo').scopes;
  for (const [token, scopes] of Object.entries(mapping)) {
    for (const scope of scopes) assert.ok(names.has(scope), `${token} -> ${scope}: not a scope of the grammar`);
  }
  assert.deepEqual(mapping['keyword.customCall'], ['support.function.opcode.hlo']);
  assert.deepEqual(mapping['variable.declaration'], ['variable.other.definition.hlo']);
});

// ---------------------------------------------------------------- views (readable view, summary, compare, counterpart)

// A readable view as `hlo.readableView` returns it (docs/protocol.md): the text, and per
// line the 0-based source line it shows (null for blank lines; the text ends with \n).
const VIEW_TEXT = [
  'HloModule jit_f, entry_computation_layout={()->f32[]}',
  '',
  'ENTRY %main.4 () -> f32[] {',
  '  %c = f32[] constant(1)',
  '  %cublas-gemm.1.0 = (f32[], s8[4]{0}) custom-call(f32[] %c), custom_call_target="__cublas$gemm"',
  '    // __cublas$gemm: cuBLAS GEMM',
  '    // backend_config:',
  '    //   {"gemm_backend_config": {',
  '  ROOT %get-tuple-element.1 = f32[] get-tuple-element((f32[], s8[4]{0}) %cublas-gemm.1.0), index=0  // output',
  '}',
  '',
].join('\n');
const VIEW_LINES = [0, null, 5, 6, 7, 7, 7, 7, 9, 10, null];

test('views: parseReadableView validates the server result', () => {
  assert.equal(vw.parseReadableView(null), undefined);
  assert.equal(vw.parseReadableView({ sourceLines: [] }), undefined);
  const v = vw.parseReadableView({ text: VIEW_TEXT, lineMap: [], sourceLines: VIEW_LINES });
  assert.deepEqual(v, { text: VIEW_TEXT, sourceLines: VIEW_LINES });
  // malformed and missing entries become null: one entry per line of the text
  const w = vw.parseReadableView({ text: 'a\nb\nc', sourceLines: [3, -1] });
  assert.deepEqual(w.sourceLines, [3, null, null]);
  assert.deepEqual(vw.parseReadableView({ text: 'a\n', sourceLines: ['1', 2.5, 0] }).sourceLines, [null, null]);
});

test('views: readable view lines link back to their source lines', () => {
  const v = vw.parseReadableView({ text: VIEW_TEXT, sourceLines: VIEW_LINES });
  const lines = VIEW_TEXT.split('\n');
  const links = vw.readableLinks(v);
  const shown = links.map((l) => ({ line: l.line, text: lines[l.line].slice(l.start, l.end), target: l.targetLine }));
  assert.deepEqual(shown, [
    { line: 0, text: 'jit_f', target: 0 },
    { line: 2, text: '%main.4', target: 5 },
    { line: 3, text: '%c', target: 6 },
    // the comment lines under the custom-call show the same source line: no links of their own
    { line: 4, text: '%cublas-gemm.1.0', target: 7 },
    { line: 8, text: '%get-tuple-element.1', target: 9 },
    { line: 9, text: '}', target: 10 },
  ]);
  // go to definition works from any mapped line, comments included
  assert.equal(vw.sourceLineAt(v, 6), 7);
  assert.equal(vw.sourceLineAt(v, 1), undefined);
  assert.equal(vw.sourceLineAt(v, 99), undefined);
  // the cursor of the original file, placed in the view
  assert.equal(vw.viewLineFor(v, 7), 4);
  assert.equal(vw.viewLineFor(v, 8), 4, 'a source line without a view line: the last one before');
  assert.equal(vw.viewLineFor(v, 0), 0);
  assert.equal(vw.viewLineFor({ text: '\n', sourceLines: [null, null] }, 3), undefined);
  assert.equal(vw.lineTarget('file:///d/x.txt', 7), 'file:///d/x.txt#L8');
  assert.equal(vw.lineTarget('file:///d/x.txt#L2', 0), 'file:///d/x.txt#L1');
});

test('views: command arguments and view URIs', () => {
  const uri = 'file:///d/module_0001.jit_f.cpu_after_optimizations.txt';
  assert.deepEqual(vw.readableViewArguments(uri, true), [uri, { inlineFusions: true }]);
  assert.deepEqual(vw.summaryArguments(uri), [uri, { format: 'markdown' }]);
  assert.deepEqual(vw.compareArguments('file:///a.txt', uri), ['file:///a.txt', uri, { format: 'text' }]);
  const req = { command: vw.READABLE_VIEW, arguments: vw.readableViewArguments(uri, false) };
  assert.deepEqual(vw.decodeViewRequest(vw.encodeViewRequest(req)), req);
  assert.equal(vw.decodeViewRequest('not json'), undefined);
  assert.equal(vw.decodeViewRequest('{"command": 1, "arguments": []}'), undefined);
  assert.equal(vw.viewPath('/d/x.txt', 'readable.hlo'), '/d/x.txt.readable.hlo');
  assert.equal(vw.baseName('file:///d/a%20b.txt?q#L1'), 'a b.txt');
  assert.equal(vw.textResult('## summary'), '## summary');
  assert.equal(vw.textResult(null), undefined);
  assert.equal(vw.textResult('  '), undefined);
  assert.equal(vw.READABLE_SCHEME, 'hlo-readable');
  assert.equal(vw.COUNTERPART_METHOD, 'hlo/counterpart');
});

test('views: the summary table and its rows that go to their instruction', () => {
  const uri = 'file:///d/x.txt';
  assert.deepEqual(vw.summaryTableArguments(uri), [uri, { format: 'text', targets: true }]);
  const text = 'HloModule m, ENTRY %main\n\nFusions (1)\n  %fusion.1  kLoop  loop fusion\n';
  const location = { uri, range: { start: { line: 7, character: 2 }, end: { line: 7, character: 11 } } };
  const t = vw.parseSummaryTable({ text, targets: [
    { line: 3, start: 2, end: 11, location },
    { line: 99, start: 0, end: 1, location }, // past the text
    { line: 3, start: 4, end: 4, location }, // empty
    { line: 3, start: 2, end: 11, location: { uri } }, // no range
  ] });
  assert.deepEqual(t, { text, targets: [{ line: 3, start: 2, end: 11, location }] });
  assert.deepEqual(vw.summaryTargetAt(t, 3).location, location);
  assert.equal(vw.summaryTargetAt(t, 0), undefined);
  assert.equal(vw.locationTarget(location), 'file:///d/x.txt#L8,3');
  // a server without targets answers the text alone: shown without links
  assert.deepEqual(vw.parseSummaryTable(text), { text, targets: [] });
  assert.equal(vw.parseSummaryTable(null), undefined);
  assert.equal(vw.parseSummaryTable({ targets: [] }), undefined);
  assert.equal(vw.SUMMARY_LANGUAGE, 'hlo-summary');
  assert.ok(pkg.contributes.languages.some((l) => l.id === vw.SUMMARY_LANGUAGE));
  assert.equal(pkg.contributes.configurationDefaults[`[${vw.SUMMARY_LANGUAGE}]`]['editor.wordWrap'], 'off');
});

test('views: Compare With... takes its two files from the arguments, the active file or a pick', () => {
  const a = 'file:///d/a.txt';
  const b = 'file:///d/b.txt';
  const uri = (s) => ({ scheme: 'file', toString: () => s });
  assert.deepEqual(vw.compareTargets([a, b]), { oldUri: a, newUri: b });
  assert.deepEqual(vw.compareTargets([uri(a), [uri(a), uri(b)]]), { oldUri: a, newUri: b }, 'explorer, two selected');
  assert.deepEqual(vw.compareTargets([uri(b), [uri(b)]], a), { oldUri: b }, 'explorer, one selected: pick the other');
  assert.deepEqual(vw.compareTargets([], a), { oldUri: a });
  assert.deepEqual(vw.compareTargets([]), { oldUri: undefined });
});

test('views: Compare With... offers the counterparts first, as the server answers them, then the directory, the rest; the result is titled old first', () => {
  const d = 'file:///w/dump/';
  const after = `${d}module_0028.jit_train_step.cpu_after_optimizations.txt`;
  const before = `${d}module_0028.jit_train_step.before_optimizations.txt`;
  const renumbered = 'file:///w/old/module_0031.jit_train_step.before_optimizations.txt';
  const candidates = [
    'file:///w/a.hlo',
    `${d}module_0027.jit_train_step.cpu_after_optimizations.txt`,
    renumbered,
    'file:///v/b.hlo',
    before,
    `${d}module_0001.jit_add.before_optimizations.txt`,
    after,
    'file:///w/a.hlo',
  ];
  // hlo/counterpartFiles as the server answers it, best first: one file the workspace
  // search did not find (outside the workspace); what is no URI is dropped
  const elsewhere = 'file:///elsewhere/module_0028.jit_train_step.before_optimizations.txt';
  const answer = vw.parseUriList([before, renumbered, elsewhere, 7, null, '']);
  assert.deepEqual(answer, [before, renumbered, elsewhere]);
  const offered = vw.orderCompareCandidates(after, candidates, answer);
  assert.deepEqual(offered.map((r) => [r.uri, r.counterpart]), [
    // the server's order, not the names': the counterparts first, marked
    [before, true],
    [renumbered, true],
    [elsewhere, true],
    // then the files of the same directory, then the rest, each by URI; each once
    [`${d}module_0001.jit_add.before_optimizations.txt`, false],
    [`${d}module_0027.jit_train_step.cpu_after_optimizations.txt`, false],
    ['file:///v/b.hlo', false],
    ['file:///w/a.hlo', false],
  ]);
  // no answer (no counterpart, or a server without the request): nothing marked, the
  // directory first; the file itself is never offered, even if the answer names it
  assert.deepEqual(vw.parseUriList(null), []);
  assert.deepEqual(vw.parseUriList({ uri: before }), []);
  const plain = vw.orderCompareCandidates(after, candidates, [after]);
  assert.deepEqual(plain.map((r) => r.uri), [
    `${d}module_0001.jit_add.before_optimizations.txt`,
    `${d}module_0027.jit_train_step.cpu_after_optimizations.txt`,
    before,
    'file:///v/b.hlo',
    'file:///w/a.hlo',
    renumbered,
  ]);
  assert.ok(plain.every((r) => !r.counterpart));
  // the tab reads as the report: old first
  assert.equal(vw.comparePath('/w/dump/a.before_optimizations.txt', 'file:///w/dump/a.after_optimizations.txt'), '/w/dump/a.before_optimizations.txt → a.after_optimizations.txt (diff)');
});

test('views: hlo/counterpart params and locations', () => {
  const uri = 'file:///d/module_0028.jit_train_step.cpu_after_optimizations.txt';
  const pos = { line: 4, character: 2 };
  const active = { uri, position: { line: 9, character: 1 } };
  assert.deepEqual(vw.counterpartParams([uri, pos]), { textDocument: { uri }, position: pos });
  assert.deepEqual(vw.counterpartParams([{ textDocument: { uri }, position: pos }]), { textDocument: { uri }, position: pos });
  assert.deepEqual(vw.counterpartParams([], active), { textDocument: { uri }, position: active.position });
  assert.deepEqual(vw.counterpartParams([{ scheme: 'file', toString: () => uri }], active), { textDocument: { uri }, position: active.position });
  assert.equal(vw.counterpartParams(['file:///other.txt'], active), undefined, 'a menu on another file: no cursor there');
  assert.equal(vw.counterpartParams([]), undefined);
  const loc = { uri, range: { start: pos, end: { line: 4, character: 9 } } };
  assert.deepEqual(vw.parseLocations([loc, { uri }, { range: loc.range }, null]), [loc]);
  assert.deepEqual(vw.parseLocations(null), []);
});

// ---------------------------------------------------------------- profiles (HLO: Load Profile...)

test('profiles: hlo/profileRuns answers, the runs newest first, hlo.loadProfile arguments', () => {
  const uri = 'file:///d/module_0006.jit_net.cpu_after_optimizations.txt';
  const older = { path: '/d/prof/plugins/profile/2026_11_29_06_19_31', name: '2026_11_29_06_19_31' };
  const newer = { path: '/d/prof/plugins/profile/2026_11_29_06_19_32', name: '2026_11_29_06_19_32' };
  const found = pf.parseProfileRuns({ runs: [older, { path: 3 }, null, newer], loaded: newer.path, message: '' });
  assert.deepEqual(found, { runs: [older, newer], loaded: newer.path, message: '' });
  assert.deepEqual(pf.parseProfileRuns({ runs: [], loaded: null, message: 'no profile in /e' }), { runs: [], loaded: null, message: 'no profile in /e' });
  assert.equal(pf.parseProfileRuns(null), undefined);
  assert.equal(pf.parseProfileRuns({ loaded: null }), undefined);
  // offered newest first (the first is preselected), each with its directory
  const items = pf.runItems(found);
  assert.deepEqual(items.map((i) => [i.label, i.description, i.detail]), [
    ['2026-11-29 06:19:32', 'newest, loaded now', newer.path],
    ['2026-11-29 06:19:31', '', older.path],
  ]);
  assert.equal(pf.runLabel('my-run'), 'my-run');
  // the palette (no arguments) and a menu (a Uri) choose; a directory given goes as it is
  assert.equal(pf.loadProfileArgument([]), undefined);
  assert.ok(pf.profileNeedsChoice([]));
  const asUri = { scheme: 'file', toString: () => uri };
  assert.deepEqual(pf.loadProfileArgument([asUri]), { uri });
  assert.ok(pf.profileNeedsChoice([asUri]));
  assert.deepEqual(pf.loadProfileArgument([{ uri, path: older.path }]), { uri, path: older.path });
  assert.ok(!pf.profileNeedsChoice([{ uri, path: older.path }]));
  assert.deepEqual(pf.loadProfileArgument([uri, '/d/prof']), { uri, path: '/d/prof' });
  assert.deepEqual(pf.loadProfileArgument([{ uri, path: '' }]), { uri });
  assert.equal(pf.loadProfileArgument([{ path: '/d' }]), undefined);
});

test('passHistory.ts: the hlo/passHistory and hlo/passBlame replies validated; a row\'s diff is the file before it and its own', async () => {
  const p = await importTs('passHistory');
  const snap = (index, passName, file) => ({ index, pipeline: 'pipe', passName, file, uri: `file:///d/${file}` });
  const history = p.parsePassHistory({
    module: 'module_0008.jit_layer',
    snapshots: [snap(-1, 'before_optimizations', 'b.txt'), snap(13, 'pipeline-start', 's13.txt'), snap(14, 'dot-library-rewriter', 's14.txt'), 'junk'],
    rows: [
      { label: 'before_optimizations', step: '-', first: 0, last: 0, previous: null, added: 0, removed: 0, changed: 0, instructions: 15, notes: '', end: true },
      { label: 'dot-library-passes: dot-library-rewriter', step: '0014', first: 2, last: 2, previous: 1, added: 3, removed: 0, changed: 2, instructions: 18, notes: '+fusion kCustom', end: false },
      { label: 'unreadable', step: '0015', first: 9, last: 9, previous: 2 }, // names no snapshot: left out
      { label: 'x', step: '0016', first: 2, last: 2, previous: 2, added: null, removed: null, changed: null, instructions: 0, notes: 'unreadable: too large', end: false },
    ],
    quiet: 21,
  });
  assert.equal(history.rows.length, 3);
  assert.equal(history.quiet, 21);
  assert.deepEqual(p.rowDiff(history, history.rows[1]), { left: 'file:///d/s13.txt', right: 'file:///d/s14.txt', title: 'dot-library-passes: dot-library-rewriter (snapshot 0014)' });
  assert.deepEqual(p.rowDiff(history, history.rows[0]), { left: undefined, right: 'file:///d/b.txt', title: 'before_optimizations' });
  assert.equal(p.rowDescription(history.rows[1]), '+3 -0 ~2');
  assert.equal(p.rowDescription(history.rows[0]), '15 instructions');
  assert.equal(p.rowDescription(history.rows[2]), 'unreadable');
  assert.equal(p.viewMessage(history), '3 files; 21 snapshots changed nothing. Click a pass for its diff.');
  assert.equal(p.viewMessage({ ...history, snapshots: history.snapshots.slice(0, 1), quiet: 1 }),
    '1 file; 1 snapshot changed nothing. Click a pass for its diff.');
  assert.equal(p.viewMessage({ ...history, quiet: 0 }), '3 files. Click a pass for its diff.');
  assert.deepEqual(p.parsePassHistory(null), { module: '', snapshots: [], rows: [], quiet: 0, message: '' });
  assert.equal(p.viewMessage(p.parsePassHistory({ message: 'no pass snapshots' })), 'no pass snapshots');
  const range = { start: { line: 38, character: 3 }, end: { line: 38, character: 13 } };
  const blame = p.parsePassBlame({
    instruction: 'ynn_fusion', message: 'created by ...',
    createdBy: { words: 'dot-library-rewriter in dot-library-passes, snapshot 0014', uri: 'file:///d/s14.txt', location: { uri: 'file:///d/s14.txt', range } },
    changedBy: [{ words: 'bad' }],
  });
  assert.deepEqual(blame.createdBy.location, { uri: 'file:///d/s14.txt', range });
  assert.deepEqual(blame.changedBy, []);
  assert.equal(p.parsePassBlame({ message: 'no pass snapshots' }).createdBy, undefined);
});

test('passHistory.ts: the directory of an hlo/passHistoryChanged notification', async () => {
  const p = await importTs('passHistory');
  assert.equal(p.PASS_HISTORY_CHANGED_METHOD, 'hlo/passHistoryChanged');
  assert.equal(p.changedDirectory({ directory: '/d/dump' }), '/d/dump');
  for (const bad of [null, 'x', {}, { directory: '' }, { directory: 3 }]) assert.equal(p.changedDirectory(bad), undefined);
});

test('passHistory.ts: a blame\'s priority-fusion decisions validated and shown as text in the notification', async () => {
  const p = await importTs('passHistory');
  const range = { start: { line: 72, character: 3 }, end: { line: 72, character: 35 } };
  const createdBy = { words: 'priority-fusion in fusion, snapshot 0027', uri: 'file:///d/s27.txt', location: { uri: 'file:///d/s27.txt', range } };
  const message = '%loop_exponential_multiply_fusion: created by priority-fusion in fusion, snapshot 0027; changed by 1 pass since';
  const blame = p.parsePassBlame({
    instruction: 'loop_exponential_multiply_fusion', message, createdBy, changedBy: [],
    fusion: { file: 'module_0001.jit_stats.priority_fusion_dump.txt', name: 'fusion.1', decisions: ['fused into %reduce_sum.14.0, %fusion: estimated 9.83 µs fused against 8.03 µs unfused', 7, 'took in %tanh.1.0'] },
  });
  assert.deepEqual(blame.fusion, { file: 'module_0001.jit_stats.priority_fusion_dump.txt', name: 'fusion.1', decisions: ['fused into %reduce_sum.14.0, %fusion: estimated 9.83 µs fused against 8.03 µs unfused', 'took in %tanh.1.0'] });
  assert.equal(p.blameFusionNotice(blame),
    'HLO: priority fusion of %loop_exponential_multiply_fusion (%fusion.1 in module_0001.jit_stats.priority_fusion_dump.txt): fused into %reduce_sum.14.0, %fusion: estimated 9.83 µs fused against 8.03 µs unfused; took in %tanh.1.0');
  // its own name in the log: the log's file alone
  assert.equal(p.blameFusionNotice({ ...blame, instruction: 'fusion.1' }),
    'HLO: priority fusion of %fusion.1 (module_0001.jit_stats.priority_fusion_dump.txt): fused into %reduce_sum.14.0, %fusion: estimated 9.83 µs fused against 8.03 µs unfused; took in %tanh.1.0');
  // no decisions (null, none, not a list): no fusion, no notification
  for (const f of [null, undefined, 'x', { file: 'f', name: 'n', decisions: [] }, { file: 'f', name: 'n', decisions: 'took in %a' }]) {
    const b = p.parsePassBlame({ message, createdBy, fusion: f });
    assert.equal(b.fusion, undefined);
    assert.equal(p.blameFusionNotice(b), undefined);
  }
  // text from the dump is never a link in the notification (which links `[label](command:...)`)
  const odd = p.parsePassBlame({ message, createdBy, fusion: { file: 'l.txt', name: 'a](command:x)', decisions: ['not fused into its users: [run](command:workbench.action.terminal.new)'] } });
  const notice = p.blameFusionNotice(odd);
  assert.ok(!notice.includes(']('), notice);
  assert.ok(notice.endsWith('not fused into its users: [run] (command:workbench.action.terminal.new)'), notice);
});

test('detect: the kernel files of a dump (PTX, LLVM IR) go to the server as what they are', () => {
  const dir = path.join(REPO, 'examples', 'gpu', 'deviceless', 'fp8_fusion_log');
  const kernels = fs.readdirSync(dir).filter((n) => det.isKernelFile(path.join(dir, n)));
  assert.deepEqual(kernels.sort(), ['module_0001.jit_fp8_block.7.ir-with-opt.ll', 'module_0001.jit_fp8_block.7.ptx']);
  for (const name of ['module_0001.jit_f.constants.ir-no-opt.ll', '1700000000.module_0012.jit_g.3.ir-with-opt-noconst.ll']) {
    assert.ok(det.isKernelFile(`/d/${name}`), name);
  }
  for (const name of ['notes.ptx', 'kernel.ll', 'module_0001.jit_f.ptx', 'module_0001.jit_f.sm_9.0a_gpu_after_optimizations.txt']) {
    assert.ok(!det.isKernelFile(`/d/${name}`), name);
  }
});
