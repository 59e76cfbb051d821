// Drives code-server in headless Chromium and checks what a user of the extension sees.
//   node check.mjs first-hour|examples|profile|passes|no-server URL WORKDIR     (run by run.sh)
// puppeteer-core is installed in WORKDIR. Environment from run.sh: HLO_CHROMIUM,
// HLO_ART (screenshots), HLO_DUMP (jit_mlp's dump file), HLO_PROGRAM (model.py),
// HLO_BARE_PYTHON (a Python without hlo_lsp), HLO_PROFILED (the paths of the real
// profiled dump of tests/profiled.py, JSON), HLO_EMPTY (a folder without a profile),
// HLO_KERNELS (a copy of examples/gpu/deviceless/fp8_fusion_log: mode "kernels").
import assert from 'node:assert/strict';
import fs from 'node:fs';
import zlib from 'node:zlib';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';

const [mode, url, work] = process.argv.slice(2);
const art = process.env.HLO_ART;
const require = createRequire(path.join(work, 'package.json'));
const puppeteer = require('puppeteer-core');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const results = [];
let shot = 0;

const browser = await puppeteer.launch({
  executablePath: process.env.HLO_CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
    '--disable-sync', '--no-first-run', '--disable-dev-shm-usage'],
});
const page = await browser.newPage();
await page.setViewport({ width: 1600, height: 1000 });

async function screenshot(name) {
  shot += 1;
  await page.screenshot({ path: path.join(art, `${mode}-${String(shot).padStart(2, '0')}-${name}.png`) });
}

async function waitFor(what, fn, ms = 60000) {
  const t0 = Date.now();
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await sleep(250);
  }
}

/** Runs a step; a failure is recorded with a screenshot and the later steps still run. */
async function check(name, fn) {
  const t0 = Date.now();
  try {
    await fn();
    results.push(`ok   ${name} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  } catch (err) {
    results.push(`FAIL ${name}: ${err.stack || err.message}`);
    await screenshot(`FAIL-${name.replace(/[^\w]+/g, '-').slice(0, 40)}`);
  }
}

async function keys(...combo) {
  const key = combo.pop();
  for (const m of combo) await page.keyboard.down(m);
  await page.keyboard.press(key);
  for (const m of combo.reverse()) await page.keyboard.up(m);
}

const statusBar = () => page.$$eval('.statusbar-item', (els) => els.map((e) => e.textContent.trim()).filter(Boolean));
const activeTab = () => page.evaluate(() => {
  const t = document.querySelector('.tabs-container .tab.active');
  return t ? { label: t.querySelector('.label-name')?.textContent ?? t.textContent, title: t.getAttribute('title') || '', aria: t.getAttribute('aria-label') || '' } : undefined;
});
/** The notification toasts shown now and the entries of the notification center (text). */
const toasts = () => page.$$eval('.notifications-toasts .notification-toast', (els) => els.map((e) => e.textContent));

/** Visible editor lines of the active editor: text, the hidden (display:none) text, ::after markers, colours of some words. */
const viewLines = () =>
  page.evaluate(() => {
    const editor = document.querySelector('.editor-group-container.active .monaco-editor') || document.querySelector('.monaco-editor');
    return [...editor.querySelectorAll('.view-lines .view-line')]
      .map((l) => {
        const spans = [...l.querySelectorAll('span span')];
        const text = (e) => e.textContent.replace(/\u00a0/g, ' '); // the editor renders some spaces as NBSP
        return {
          top: parseInt(l.style.top, 10),
          text: text(l),
          hidden: spans.filter((s) => getComputedStyle(s).display === 'none').map(text).join(''),
          markers: spans.map((s) => getComputedStyle(s, '::after').content).filter((c) => c && c !== 'none' && c !== 'normal'),
          colors: Object.fromEntries(spans.map((s) => [text(s), getComputedStyle(s).color])),
        };
      })
      .sort((a, b) => a.top - b.top);
  });

async function palette(prefix, text) {
  await keys('Control', 'Shift', 'KeyP');
  await waitFor('quick input', () => page.$('.quick-input-widget:not([style*="display: none"]) input'));
  await sleep(300);
  if (!prefix) {
    // Ctrl+Shift+P opens with ">"; remove it for file and line modes
    await keys('Control', 'KeyA');
    await page.keyboard.press('Backspace');
  }
  await page.keyboard.type(text, { delay: 10 });
  await sleep(800);
}

async function command(title) {
  await palette(true, title);
  const picked = await waitFor(`"${title}" in the palette`, () =>
    page.evaluate((t) => {
      const rows = [...document.querySelectorAll('.quick-input-list .monaco-list-row')];
      return rows.some((r) => r.textContent.includes(t));
    }, title), 10000);
  assert.ok(picked);
  await page.keyboard.press('Enter');
  await sleep(1000);
}

/** Quick Open a file of the workspace by name. */
async function openFile(name) {
  await palette(false, name);
  await waitFor(`${name} in Quick Open`, () =>
    page.evaluate((n) => [...document.querySelectorAll('.quick-input-list .monaco-list-row')].some((r) => r.textContent.includes(n)), name), 15000);
  await page.keyboard.press('Enter');
  await waitFor(`editor for ${name}`, async () => (await activeTab())?.label.includes(name));
  await sleep(500);
}

/** Moves the cursor with Go to Line (1-based line and column). */
async function gotoLine(line, column) {
  await palette(false, `:${line}${column ? `:${column}` : ''}`);
  await page.keyboard.press('Enter');
  await sleep(800);
}

/** The cursor's line and column from the status bar ("Ln 8, Col 24"). */
const cursorAt = async () => {
  const item = (await statusBar()).find((s) => /^Ln \d+, Col \d+/.test(s));
  const m = item && /^Ln (\d+), Col (\d+)/.exec(item);
  return m ? { line: Number(m[1]), column: Number(m[2]) } : undefined;
};

/** Text of the visible hover widget. */
const hoverText = () =>
  page.evaluate(() => {
    const hs = [...document.querySelectorAll('.monaco-hover')].filter((h) => !h.classList.contains('hidden') && h.offsetParent !== null);
    return hs.map((h) => h.innerText).join('\n');
  });

/** Show Hover (Ctrl+K Ctrl+I) at the cursor until a hover containing `needle` shows; its text. */
async function showHover(needle, ms = 60000) {
  const t0 = Date.now();
  for (;;) {
    await keys('Control', 'KeyK');
    await keys('Control', 'KeyI');
    // a busy machine can miss the chord or answer late: ask again every 10 s
    const h = await waitFor('hover', async () => {
      const t = await hoverText();
      return t.includes(needle) ? t : undefined;
    }, 10000).catch(() => undefined);
    if (h) return h;
    if (Date.now() - t0 > ms) throw new Error(`no hover with ${JSON.stringify(needle)} in ${ms / 1000} s; last: ${await hoverText()}`);
  }
}

/** Scrolls the visible hover with the mouse wheel until its paragraph holding `needle` is in view; true once it is. */
async function scrollHoverTo(needle) {
  const place = () => page.evaluate((n) => {
    const h = [...document.querySelectorAll('.monaco-hover')].find((e) => !e.classList.contains('hidden') && e.offsetParent !== null);
    if (!h) return undefined;
    const r = h.getBoundingClientRect();
    const p = [...h.querySelectorAll('p, div.hover-row')].reverse().find((e) => e.textContent.includes(n));
    const q = p?.getBoundingClientRect();
    return { x: r.x + r.width / 2, y: r.y + r.height / 2, seen: !!q && q.top >= r.top && q.bottom <= r.bottom };
  }, needle);
  const at = await place();
  if (!at) return false;
  await page.mouse.move(at.x, at.y);
  for (let i = 0; i < 30; i++) {
    if ((await place())?.seen) return true;
    await page.mouse.wheel({ deltaY: 40 });
    await sleep(150);
  }
  return false;
}

async function dismiss() {
  await page.keyboard.press('Escape');
  await sleep(300);
}

await page.goto(url, { waitUntil: 'networkidle2', timeout: 120000 });
await waitFor('workbench', () => page.$('.monaco-workbench'));
await sleep(3000);
await screenshot('workbench');

if (mode === 'first-hour') {
  const dump = process.env.HLO_DUMP;
  const program = process.env.HLO_PROGRAM;
  const dumpName = path.basename(dump);
  const text = fs.readFileSync(dump, 'utf8');
  const lines = text.split('\n');
  // The oracle for F12, read from the dump's own tables: the instruction's frame -> its location's line.
  const table = (name) => {
    const m = new RegExp(`^${name}\\n((?:\\d+ .*\\n)+)`, 'm').exec(text);
    return Object.fromEntries(m[1].trim().split('\n').map((l) => [l.split(' ')[0], l]));
  };
  const row = lines.findIndex((l) => l.includes('%ynn_fusion.1 = ') || (/^\s+%\S+ = .*fusion\(.*stack_frame_id=/.test(l) && !l.includes('ROOT')));
  assert.ok(row >= 0, 'an ENTRY fusion with a stack_frame_id= in the dump');
  const frame = /stack_frame_id=(\d+)/.exec(lines[row])[1];
  const loc = /file_location_id=(\d+)/.exec(table('StackFrames')[frame])[1];
  const frameLine = Number(/ line=(\d+)/.exec(table('FileLocations')[loc])[1]);
  const frameColumn = Number(/ column=(\d+)/.exec(table('FileLocations')[loc])[1]); // 0-based
  const instr = /%(\S+) = /.exec(lines[row])[1];
  const shape = /= (\S+?)\{/.exec(lines[row])[1];
  const opName = /op_name="([^"]+)"/.exec(lines[row])[1];
  console.log(`F12 oracle: ${dumpName}:${row + 1} %${instr} stack_frame_id=${frame} -> model.py:${frameLine}`);

  await check('the dump opens as HLO; the server starts', async () => {
    await openFile(dumpName);
    await waitFor('language HLO', async () => (await statusBar()).includes('HLO'));
  });

  await check('metadata hidden in place with a "⋯ metadata" marker', async () => {
    await gotoLine(lines.findIndex((l) => l.startsWith('ENTRY ')) + 1); // the computations in view, the cursor on a line without metadata
    const vl = await waitFor('hidden metadata', async () => {
      const ls = await viewLines();
      return ls.filter((l) => l.hidden.startsWith(', metadata={')).length >= 5 ? ls : undefined;
    });
    const withMeta = vl.filter((l) => l.text.includes(', metadata={'));
    assert.ok(withMeta.length >= 5, `${withMeta.length} lines with metadata in view`);
    for (const l of withMeta) {
      assert.ok(l.hidden.startsWith(', metadata={') && l.hidden.endsWith('}'), `not hidden: ${l.text.slice(0, 100)}`);
      assert.ok(l.markers.some((m) => m.includes('⋯ metadata')), `no marker: ${l.text.slice(0, 100)}`);
      assert.ok(!l.hidden.includes('backend_config'), 'backend_config is not hidden by default');
    }
    await screenshot('metadata-hidden');
  });

  await check(`hover on %${instr} names its opcode, shape, op_name and Python line`, async () => {
    await gotoLine(row + 1, lines[row].indexOf(`%${instr}`) + 3);
    const h = await showHover(instr);
    console.log(`hover text:\n${h}\n---`);
    for (const s of [`%${instr}`, 'fusion', shape, opName, `model.py:${frameLine}`]) assert.ok(h.includes(s), `hover lacks ${JSON.stringify(s)}:\n${h}`);
    await screenshot('hover');
    await dismiss();
  });

  await check(`F12 on stack_frame_id= opens model.py at line ${frameLine}`, async () => {
    const col = lines[row].indexOf('stack_frame_id=') + 3;
    await gotoLine(row + 1, col);
    await page.keyboard.press('F12');
    const tab = await waitFor('model.py active', async () => {
      const t = await activeTab();
      return t && t.label.includes('model.py') ? t : undefined;
    }, 20000);
    await waitFor(`cursor on line ${frameLine}`, async () => (await cursorAt())?.line === frameLine, 10000);
    assert.equal((await cursorAt()).column, frameColumn + 1, 'the cursor is on the column of the frame');
    // model.py is outside the workspace folder: the breadcrumbs show its whole path
    const crumbs = await page.$$eval('.editor-group-container.active .breadcrumbs-control .monaco-breadcrumb-item', (els) => els.map((e) => e.textContent.trim()));
    console.log(`tab ${JSON.stringify(tab)}, breadcrumbs ${JSON.stringify(crumbs)}`);
    const parts = program.split(path.sep).filter(Boolean);
    assert.deepEqual(crumbs.slice(-3), parts.slice(-3), `the breadcrumbs name ${program}`);
    const vl = await viewLines();
    assert.ok(vl.some((l) => l.text.includes('return jnp.maximum(x @ w, 0.0)')), 'model.py is shown');
    await screenshot('definition-model-py');
  });

  await check('recompile after HIDDEN 128 -> 256: confirm Run; the report names the changed shapes', async () => {
    await openFile(dumpName);
    assert.ok((await viewLines()).some((l) => l.text.includes('f32[32,128]')), 'the dump has the 128-wide layer');
    fs.writeFileSync(program, fs.readFileSync(program, 'utf8').replace('HIDDEN = 128', 'HIDDEN = 256'));
    await gotoLine(row + 1, 3);
    // The code action, as a user finds it: Source Action... in the editor.
    await command('Source Action...');
    const action = await waitFor('the recompile source action', () =>
      page.evaluate(() => [...document.querySelectorAll('.action-widget .monaco-list-row')].map((r) => r.textContent).find((t) => /Recompile/.test(t))), 20000);
    console.log(`code action: ${action}`);
    await screenshot('source-action');
    await page.evaluate((a) => [...document.querySelectorAll('.action-widget .monaco-list-row')].find((r) => r.textContent === a).click(), action);
    // The recipe's command was confirmed by `hlo-lsp dump` in another state directory: the editor asks.
    const confirm = await waitFor('the Run / Cancel confirmation', async () => (await toasts()).find((t) => t.includes('Command:')), 30000);
    assert.match(confirm, /model\.py/);
    assert.match(confirm, /Directory: .*proj/);
    await screenshot('confirmation');
    await page.evaluate(() => {
      const b = [...document.querySelectorAll('.notifications-toasts .notification-toast .monaco-button')].find((e) => e.textContent.trim() === 'Run');
      b.click();
    });
    // The report: the server's notification and the whole text in the output channel.
    await waitFor('"Recompiled on" notification', async () => (await toasts()).some((t) => t.includes('Recompiled on')), 240000);
    await screenshot('recompiled-notification');
    await command('View: Toggle Maximized Panel');
    const report = await waitFor('the report in the output channel', async () => {
      const t = await page.evaluate(() => [...document.querySelectorAll('.part.panel .monaco-editor .view-line')]
        .sort((a, b) => parseInt(a.style.top, 10) - parseInt(b.style.top, 10)).map((l) => l.textContent.replace(/\u00a0/g, ' ')).join('\n'));
      const i = t.lastIndexOf('hlo.recompile:');
      return i >= 0 && t.includes('f32[32,256]', i) ? t.slice(i) : undefined;
    }, 30000);
    console.log(`report:\n${report}\n---`);
    await screenshot('recompile-report');
    assert.ok(report.split('\n').filter((l) => l.trim()).length >= 3, 'the report has several lines');
    assert.match(report, /Recompiled on CPU/);
    assert.ok(report.includes(`changed %${instr} fusion: shape ${shape} -> f32[32,256]`), `the report names %${instr}: ${shape} -> f32[32,256]`);
    assert.ok(report.includes('f32[64,128] -> f32[64,256]'), 'the report names the changed parameter shape');
    assert.ok(report.includes('model.py:'), 'the changes are grouped per Python line');
    await command('View: Toggle Maximized Panel');
    await waitFor('the editor shows the new dump', async () => (await viewLines()).some((l) => l.text.includes('f32[32,256]')), 20000);
    assert.ok(!(await viewLines()).some((l) => l.text.includes('f32[32,128]')), 'no 128-wide shape left in view');
    await screenshot('new-dump');
  });

  /** The recompile code actions of Source Action... at the cursor (their titles), the menu left open. */
  const sourceActions = async () => {
    await command('Source Action...');
    return waitFor('the recompile source actions', async () => {
      const rows = await page.evaluate(() => [...document.querySelectorAll('.action-widget .monaco-list-row')].map((r) => r.textContent));
      const ours = rows.filter((t) => /Recompile|Compile for|Run on/.test(t));
      return ours.length >= 2 ? ours : undefined;
    }, 20000);
  };
  const dumpDir = path.dirname(dump);
  const currentDump = () => path.join(dumpDir, fs.readdirSync(dumpDir).find((n) => /\.jit_mlp\.cpu_after_optimizations\.txt$/.test(n)));

  await check('HLO: Recompile (the palette) offers the same choices as the code actions', async () => {
    await openFile(path.basename(currentDump())); // the editor focused, not the output panel
    await gotoLine(1, 1);
    const actions = await sourceActions();
    await dismiss();
    await command('HLO: Recompile');
    const picks = await waitFor('the choices in a QuickPick', async () => {
      const rows = await page.evaluate(() => [...document.querySelectorAll('.quick-input-widget:not([style*="display: none"]) .quick-input-list .monaco-list-row')]
        .map((r) => r.querySelector('.label-name')?.textContent ?? r.textContent));
      return rows.some((t) => t.includes('Compile for H100')) ? rows : undefined;
    }, 20000);
    console.log(`code actions: ${JSON.stringify(actions)}; HLO: Recompile offers ${JSON.stringify(picks)}`);
    await screenshot('recompile-quickpick');
    await dismiss();
    assert.deepEqual(picks, actions, 'the same titles, in the same order');
  });

  await check('"Recompile and profile": a profile of the new dump beside it; the report says what was traced', async () => {
    await command('Notifications: Clear All Notifications'); // the CPU recompile's report
    // Issue 43: the program calls mlp 3 times; the first (its compile) is not traced.
    fs.writeFileSync(program, fs.readFileSync(program, 'utf8').replace(
      '    print(mlp(', '    for _ in range(3):\n        print(mlp('));
    await openFile(path.basename(currentDump()));
    await gotoLine(1, 1);
    const title = 'Recompile and profile';
    assert.ok((await sourceActions()).includes(title), `${title} is offered`);
    await page.evaluate((a) => [...document.querySelectorAll('.action-widget .monaco-list-row')].find((r) => r.textContent === a).click(), title);
    // The recipe's command was confirmed with Run above: it runs without asking again.
    const toast = await waitFor('"Recompiled on" notification', async () => (await toasts()).find((t) => t.includes('Recompiled on')), 240000)
      .catch(async (err) => { throw new Error(`${err.message}; notifications: ${JSON.stringify(await toasts())}`); });
    console.log(`profiled recompile: ${toast}`);
    await screenshot('profiled-notification');
    assert.match(toast, /Profiled 2 calls \(jit_mlp x2\) on CPU/);
    const runs = path.join(dumpDir, 'profile', 'plugins', 'profile');
    const [run, ...more] = fs.readdirSync(runs);
    assert.equal(more.length, 0, `one profile run in ${runs}`);
    const trace = fs.readdirSync(path.join(runs, run)).find((n) => n.endsWith('.trace.json.gz'));
    assert.ok(trace, `a trace in ${run}`);
    const events = JSON.parse(zlib.gunzipSync(fs.readFileSync(path.join(runs, run, trace))).toString())
      .traceEvents.filter((e) => e.args && e.args.hlo_module === 'jit_mlp');
    const names = new Set([...fs.readFileSync(currentDump(), 'utf8').matchAll(/^\s*(?:ROOT )?%([\w.-]+) = /gm)].map((m) => m[1]));
    const ops = [...new Set(events.map((e) => e.args.hlo_op))];
    assert.ok(ops.length > 0, 'the trace measures jit_mlp');
    assert.deepEqual(ops.filter((o) => !names.has(o)), [], "every measured op is an instruction of the new dump");
    assert.equal(new Set(events.map((e) => e.args.run_id)).size, 2, 'two calls traced');
  });

  await check('the H100 code action at a "}": an sm_9.0a dump is written; the report says H100', async () => {
    await command('Notifications: Clear All Notifications'); // the CPU recompile's report
    const file = currentDump();
    await openFile(path.basename(file));
    const closing = fs.readFileSync(file, 'utf8').split('\n').indexOf('}');
    assert.ok(closing >= 0, "a computation's closing }");
    await gotoLine(closing + 1, 1);
    const title = 'Compile for H100 here, no GPU needed';
    assert.ok((await sourceActions()).includes(title), `${title} is offered on a "}"`);
    await page.evaluate((a) => [...document.querySelectorAll('.action-widget .monaco-list-row')].find((r) => r.textContent === a).click(), title);
    const t0 = Date.now();
    // The recipe's command was confirmed with Run above: it runs without asking again.
    const toast = await waitFor('"Recompiled on" notification', async () => (await toasts()).find((t) => t.includes('Recompiled on')), 300000)
      .catch(async (err) => { throw new Error(`${err.message}; notifications: ${JSON.stringify(await toasts())}`); });
    console.log(`H100 recompile: ${((Date.now() - t0) / 1000).toFixed(0)} s; ${toast}`);
    await screenshot('h100-notification');
    assert.match(toast, /Recompiled on H100 without a GPU/);
    const written = fs.readdirSync(dumpDir).filter((n) => /\.jit_mlp\.sm_9\.0a_gpu_after_optimizations\.txt$/.test(n));
    assert.equal(written.length, 1, `an sm_9.0a after-optimizations dump of jit_mlp in ${fs.readdirSync(dumpDir).join(' ')}`);
    assert.match(fs.readFileSync(path.join(dumpDir, written[0]), 'utf8'), /^ENTRY /m);
  });
}

/**
 * Issue 40, item 4: `HLO: Show Kernel Summary` shows the summary as a table that does not
 * wrap (the user's settings say "editor.wordWrap": "on"), and a row goes to its
 * instruction (a click on the row, then F12). `folder`: the examples' directory.
 */
async function summaryTableScenario(folder) {
  const name = 'jit_matmul_fn.fp8_cublaslt.sm90_gpu_after_optimizations.txt';
  const t = fs.readFileSync(path.join(folder, name), 'utf8').split('\n');
  const gemm = t.findIndex((l) => l.includes('%cublas-gemm.1.0 = '));
  await check('HLO: Show Kernel Summary: a table whose rows do not wrap; a row goes to its instruction', async () => {
    await openFile(name);
    await gotoLine(1);
    await command('HLO: Show Kernel Summary');
    await waitFor('the summary tab', () => page.evaluate(() => document.querySelector('.editor-group-container.active .tab.active .label-name')?.textContent?.includes('summary.txt')), 60000);
    await waitFor('the language HLO Kernel Summary', async () => (await statusBar()).includes('HLO Kernel Summary'), 10000);
    const row = /^\s+%cublas-gemm\.1\.0\s+__cublas\$lt\$matmul\$f8\s+cuBLASLt FP8/; // the full list's row
    const vl = await waitFor('the kernel rows', async () => {
      const ls = await viewLines();
      return ls.some((l) => row.test(l.text)) ? ls : undefined;
    }, 30000);
    await screenshot('summary-table');
    // each row on one line of the editor: wider than the editor, not wrapped
    const px = await page.evaluate(() => {
      const editor = document.querySelector('.editor-group-container.active .monaco-editor');
      const visible = editor.querySelector('.editor-scrollable').getBoundingClientRect().width;
      const widest = Math.max(...[...editor.querySelectorAll('.view-lines .view-line > span')].map((s) => s.getBoundingClientRect().width));
      return { visible, widest };
    });
    console.log(`summary: ${vl.length} lines in view, the widest ${Math.round(px.widest)} px, the editor ${Math.round(px.visible)} px`);
    assert.ok(px.widest > px.visible, `a row wider than the editor (${px.widest} > ${px.visible} px) is shown on one line`);
    const gemmRows = vl.filter((l) => l.text.includes('%cublas-gemm.1.0'));
    assert.ok(gemmRows.length >= 2, 'the top table and the full list name the call');
    // a click on the row, then Go to Definition: the instruction in the dump
    const rowEl = await page.evaluateHandle((top) => [...document.querySelectorAll('.editor-group-container.active .monaco-editor .view-lines .view-line')]
      .find((l) => parseInt(l.style.top, 10) === top), vl.find((l) => row.test(l.text)).top);
    const box = await rowEl.asElement().boundingBox();
    await page.mouse.click(box.x + 200, box.y + box.height / 2);
    await sleep(300);
    await page.keyboard.press('F12');
    const activeInGroup = () => page.evaluate(() => document.querySelector('.editor-group-container.active .tab.active .label-name')?.textContent ?? '');
    await waitFor(`the dump on line ${gemm + 1}`, async () => (await activeInGroup()).includes(name) && !(await activeInGroup()).includes('summary') && (await cursorAt())?.line === gemm + 1, 20000);
    assert.equal((await cursorAt()).column, t[gemm].indexOf('%cublas-gemm.1.0') + 1, 'on the instruction name');
    await screenshot('summary-row-went-to-instruction');
  });
  // one editor group again for the checks that follow
  await command('View: Close All Editor Groups').catch(() => {});
}

/**
 * Issue 41, item 3: text from a dump is data in a hover. A dump made in a temp directory
 * whose custom-call has Markdown, HTML, ESC, bidi and newlines in its op_name, source_file,
 * custom_call_target and backend_config, opened by its absolute path in Quick Open: the
 * hover on the instruction shows that text, and its DOM holds no image, link or heading
 * (on main the op_name's `# H [l](...) ![t](...)` rendered an <h1>, an <a> and an <img>
 * fetched from attacker.invalid).
 */
async function hostileHoverScenario() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hlo-hostile-'));
  const hostile = 'x` \n\n# H [l](https://attacker.invalid/a) ![t](https://attacker.invalid/b.png) `y'
    + ' <img src=https://attacker.invalid/p.png onerror=alert(1)><a href="https://attacker.invalid/c">c</a>'
    + ' \u001b[2J\u202eevil <script>alert(1)</script>';
  const q = (s) => JSON.stringify(s).replace(/\\u001b/g, '\u001b'); // an HLO string (ESC as itself)
  const config = q(JSON.stringify({ name: hostile }));
  const name = 'module_0001.jit_hostile.cpu_after_optimizations.txt';
  const file = path.join(dir, name);
  fs.writeFileSync(file, [
    'HloModule jit_hostile, entry_computation_layout={(f32[2]{0})->f32[2]{0}}',
    '',
    'ENTRY %main (p: f32[2]) -> f32[2] {',
    '  %p = f32[2]{0} parameter(0)',
    `  ROOT %hostile_call = f32[2]{0} custom-call(f32[2]{0} %p), custom_call_target=${q(hostile)}, backend_config=${config}, metadata={op_type=${q(hostile)} op_name=${q(hostile)} source_file=${q(hostile)} source_line=3}`,
    '}',
    ''].join('\n'));
  await check('hover on an instruction whose op_name holds Markdown, HTML and ESC shows them as text', async () => {
    await palette(false, file);
    await waitFor(`${name} in Quick Open`, () =>
      page.evaluate((n) => [...document.querySelectorAll('.quick-input-list .monaco-list-row')].some((r) => r.textContent.includes(n)), name), 15000);
    await page.keyboard.press('Enter');
    await waitFor(`editor for ${name}`, async () => (await activeTab())?.label.includes(name));
    await waitFor('language HLO', async () => (await statusBar()).includes('HLO'));
    await gotoLine(5, 10);
    const h = await showHover('op_name');
    console.log(`hostile hover text:\n${h}\n---`);
    const dom = await page.evaluate(() => {
      const hs = [...document.querySelectorAll('.monaco-hover')].filter((e) => !e.classList.contains('hidden') && e.offsetParent !== null);
      const all = (sel) => hs.flatMap((e) => [...e.querySelectorAll(sel)]);
      return {
        imgs: all('img').map((e) => e.getAttribute('src')),
        links: all('a').map((e) => e.getAttribute('href') || e.getAttribute('data-href') || e.textContent),
        headings: all('h1, h2, h3, h4, h5, h6').map((e) => e.textContent),
        scripts: all('script').length,
        codes: all('code').map((e) => e.textContent),
      };
    });
    console.log(`hostile hover DOM: ${JSON.stringify(dom)}`);
    await screenshot('hostile-hover');
    assert.deepEqual(dom.imgs, [], 'no image from dump text');
    assert.ok(!dom.links.some((l) => /attacker|^l$|^c$/.test(l || '')), `no link from dump text: ${JSON.stringify(dom.links)}`);
    assert.deepEqual(dom.headings, [], 'no heading from dump text');
    assert.equal(dom.scripts, 0);
    // the op_name is shown whole, as text, with its newlines and ESC made visible
    assert.ok(dom.codes.some((c) => c.includes('# H [l](https://attacker.invalid/a) ![t](https://attacker.invalid/b.png)')
      && c.includes('\\n\\n') && c.includes('\\x1b[2J') && c.includes('\\u202e')), `the op_name as one code span: ${JSON.stringify(dom.codes)}`);
    await dismiss();
  });
  await command('View: Close All Editor Groups').catch(() => {});
  fs.rmSync(dir, { recursive: true, force: true });
}

if (mode === 'examples') {
  await check('a GPU dump opens as HLO (filenamePatterns)', async () => {
    await openFile('jit_matmul_fn.fp8_cublaslt.sm90_gpu_after_optimizations.txt');
    await waitFor('language HLO', async () => (await statusBar()).includes('HLO'));
  });

  await check('hover on a custom-call names its target', async () => {
    const t = fs.readFileSync(path.join(new URL(url).searchParams.get('folder'), 'jit_matmul_fn.fp8_cublaslt.sm90_gpu_after_optimizations.txt'), 'utf8').split('\n');
    const r = t.findIndex((l) => l.includes('%cublas-gemm.1.0 = '));
    await gotoLine(r + 1, t[r].indexOf('custom-call(') + 3);
    const h = await showHover('cublas');
    console.log(`hover text:\n${h}\n---`);
    assert.ok(h.includes('__cublas$lt$matmul$f8'), `hover lacks the custom-call target:\n${h}`);
    await screenshot('hover-custom-call');
    await dismiss();
    await gotoLine(1);
  });

  await check('metadata hidden with a "⋯ metadata" marker (server + decorations)', async () => {
    await gotoLine(1); // no metadata on the cursor line
    const lines = await waitFor('hidden metadata', async () => {
      const ls = await viewLines();
      return ls.filter((l) => l.hidden.startsWith(', metadata={')).length >= 7 ? ls : undefined;
    });
    const withMeta = lines.filter((l) => l.text.includes(', metadata={'));
    for (const l of withMeta) {
      assert.ok(l.hidden.startsWith(', metadata={') && l.hidden.endsWith('}'), `not hidden: ${l.text.slice(0, 80)}`);
      assert.ok(l.markers.some((m) => m.includes('⋯ metadata')), `no marker: ${l.text.slice(0, 80)}`);
      assert.ok(!l.hidden.includes('backend_config'), 'backend_config is not hidden by default');
    }
    await screenshot('hidden');
  });

  await check('highlighting: opcode, instruction name, comment and metadata colours', async () => {
    await command('HLO: Toggle Inline Metadata'); // show metadata to see its colour
    const lines = await viewLines();
    const gemm = lines.find((l) => l.text.includes('%cublas-gemm.1.0 = '));
    const c = gemm.colors; // VS Code merges neighbouring tokens of one colour into one span
    const colorOf = (pred, what) => {
      const key = Object.keys(c).find(pred);
      assert.ok(key !== undefined, `no span for ${what} in ${JSON.stringify(Object.keys(c).slice(0, 40))}`);
      return c[key];
    };
    const opcode = colorOf((k) => k === 'custom-call', 'the opcode');
    const name = colorOf((k) => k === '%cublas-gemm.1.0', 'the instruction name');
    const type = colorOf((k) => k === 'f8e5m2', 'an element type');
    const comment = colorOf((k) => k.includes('/*index=5*/'), 'the /*index=5*/ comment');
    const metadata = colorOf((k) => k.startsWith('metadata={'), 'metadata');
    const jsonKey = colorOf((k) => k === '"operation_queue_id"', 'a backend_config key');
    assert.equal(new Set([opcode, name, type, comment]).size, 4, 'opcode, name, type and comment have their own colours');
    assert.equal(metadata, comment, 'metadata is coloured like a comment');
    assert.notEqual(jsonKey, comment);
    await screenshot('shown');
  });

  await check('toggle hides again; the cursor line shows its metadata', async () => {
    await command('HLO: Toggle Inline Metadata');
    await waitFor('hidden again', async () => (await viewLines()).some((l) => l.hidden.startsWith(', metadata={')));
    await gotoLine(10);
    const line10 = await waitFor('line 10 revealed', async () => {
      const l = (await viewLines()).find((x) => x.text.includes('%Arg_1.2.0 = '));
      return l && l.hidden === '' ? l : undefined;
    });
    assert.ok(line10.text.includes(', metadata={op_name="b"}'));
    const others = (await viewLines()).filter((l) => l.text.includes(', metadata={') && !l.text.includes('%Arg_1.2.0 = '));
    assert.ok(others.every((l) => l.hidden.startsWith(', metadata={')));
    await screenshot('cursor-line');
  });

  await check('HLO: Show Graph opens the graph beside the editor; a click on a node reveals its line', async () => {
    const t = fs.readFileSync(path.join(new URL(url).searchParams.get('folder'), 'jit_matmul_fn.fp8_cublaslt.sm90_gpu_after_optimizations.txt'), 'utf8').split('\n');
    const r = t.findIndex((l) => l.includes('%cublas-gemm.1.0 = '));
    const target = t.findIndex((l) => l.includes('%wrapped_transpose = ')); // an operand, on another line
    await gotoLine(r + 1, t[r].indexOf('%cublas-gemm.1.0') + 3);
    await command('HLO: Show Graph');
    // the webview: the page the server made, in an iframe of the webview's own iframe
    const frame = await waitFor('the graph rendered in a webview', async () => {
      for (const f of page.frames()) {
        const ok = await f.$('body[data-rendered="true"] #graph svg g.node').catch(() => null);
        if (ok) return f;
      }
      return undefined;
    }, 60000);
    const names = await frame.$$eval('#graph svg g.node', (gs) => gs.map((g) => g.dataset.name));
    assert.ok(names.includes('cublas-gemm.1.0') && names.includes('wrapped_transpose'), `nodes: ${names}`);
    await screenshot('graph-panel');
    const node = await frame.$('#graph svg g.node[data-name="wrapped_transpose"]:not([data-stub])');
    await node.click();
    await waitFor(`the editor on line ${target + 1}`, async () => (await cursorAt())?.line === target + 1, 15000);
    await screenshot('graph-click-revealed');
    // the cursor moved in the editor: its node is marked in the graph
    await waitFor('the node of the cursor line marked', () =>
      frame.$eval('#graph svg g.node.cursor', (g) => g.dataset.name).catch(() => undefined), 10000);
  });

  await check('a CPU dump opens as HLO and its metadata is hidden', async () => {
    await openFile('module_0028.jit_train_step.cpu_after_optimizations.txt');
    await waitFor('language HLO', async () => (await statusBar()).includes('HLO'));
    await gotoLine(140); // past the stack-frame tables
    await waitFor('hidden metadata', async () => (await viewLines()).some((l) => l.hidden.startsWith(', metadata={')));
  });

  await check('HLO: Show Memory over the Schedule charts the buffer assignment; a click on a buffer reveals its line', async () => {
    const t = fs.readFileSync(path.join(new URL(url).searchParams.get('folder'), 'module_0028.jit_train_step.cpu_after_optimizations.txt'), 'utf8').split('\n');
    await command('HLO: Show Memory over the Schedule');
    const frame = await waitFor('the memory page in a webview', async () => {
      for (const f of page.frames()) {
        const rows = await f.evaluate(() => document.querySelectorAll('tr.buffer[data-range]').length).catch(() => 0);
        if (rows > 0) return f;
      }
      return undefined;
    }, 60000).catch(async (err) => {
      const seen = await Promise.all(page.frames().map((f) => f.evaluate(() => `${location.href.slice(0, 80)} peak=${!!document.querySelector('#peak')} rows=${document.querySelectorAll('tr.buffer').length}`).catch((e) => `(${e.message.slice(0, 60)})`)));
      throw new Error(`${err.message}; frames: ${seen.join(' | ')}`);
    });
    const peak = Number(await frame.$eval('#peak', (e) => e.dataset.bytes));
    assert.ok(peak > 0, `peak ${peak}`);
    await screenshot('memory-panel');
    const name = await frame.$eval('tr.buffer[data-range]', (r) => r.dataset.name);
    const row = t.findIndex((l) => l.includes(`%${name} = `));
    assert.ok(row >= 0, `%${name} in the dump`);
    await (await frame.$('tr.buffer[data-range]')).click();
    await waitFor(`the editor on line ${row + 1}`, async () => (await cursorAt())?.line === row + 1, 15000);
    await screenshot('memory-click-revealed');
  });

  await summaryTableScenario(new URL(url).searchParams.get('folder'));
  await hostileHoverScenario();

  await check('-buffer-assignment.txt stays Plain Text', async () => {
    await openFile('cpu_after_optimizations-buffer-assignment.txt');
    await waitFor('Plain Text', async () => (await statusBar()).includes('Plain Text'));
    assert.ok(!(await statusBar()).includes('HLO'));
  });

  await check('a .txt with another name whose first line is HloModule becomes HLO', async () => {
    await openFile('my_module.txt');
    await waitFor('language HLO', async () => (await statusBar()).includes('HLO'));
    await waitFor('hidden metadata', async () => (await viewLines()).some((l) => l.hidden.startsWith(', metadata={')));
    await screenshot('my-module');
  });
}

/**
 * Issue 43: measured times in hover. The real profiled dump of tests/profiled.py (XLA's
 * dump of a JAX program on the CPU and two runs of jax.profiler.trace in <dump>/prof, the
 * newest measuring more steps) opened in code-server: the hover on %convolution shows
 * the Measured line with the newest run's count (the screenshot of the README), then
 * *HLO: Load Profile...* from the palette offers the runs newest first, loads the older
 * one picked (the server's notification names it) and the hover has its count; on a
 * folder without a profile (picked in VS Code's folder dialog) a warning says so. The
 * counts are read from each run's trace here.
 */
async function profileScenario() {
  const made = JSON.parse(process.env.HLO_PROFILED);
  const op = 'convolution';
  const count = (run) => {
    const file = fs.readdirSync(run).find((n) => n.endsWith('.trace.json.gz'));
    const events = JSON.parse(zlib.gunzipSync(fs.readFileSync(path.join(run, file)))).traceEvents;
    return events.filter((e) => e.ph === 'X' && e.args?.hlo_op === op && e.args?.hlo_module === 'jit_net').length;
  };
  const [older, newer] = made.runs;
  const [olderCount, newerCount] = [count(older), count(newer)];
  assert.ok(olderCount > 0 && olderCount < newerCount, `${olderCount} < ${newerCount}`);
  const name = path.basename(made.after);
  const lines = fs.readFileSync(made.after, 'utf8').split('\n');
  const row = lines.findIndex((l) => l.includes(`%${op} = `));
  const hoverOn = async (needle) => {
    await gotoLine(row + 1, lines[row].indexOf(`%${op}`) + 3);
    return showHover(needle);
  };
  /** The rows of the quick pick shown now (their labels), once one has `needle`. */
  const quickPick = (needle) => waitFor(`"${needle}" in a quick pick`, async () => {
    const rows = await page.evaluate(() => [...document.querySelectorAll('.quick-input-widget:not([style*="display: none"]) .quick-input-list .monaco-list-row')]
      .map((r) => r.querySelector('.label-name')?.textContent ?? r.textContent));
    return rows.some((t) => t.includes(needle)) ? rows : undefined;
  }, 20000);
  const label = (run) => path.basename(run).replace(/^(\d{4})_(\d\d)_(\d\d)_(\d\d)_(\d\d)_(\d\d)$/, '$1-$2-$3 $4:$5:$6');

  await check('the profiled dump opens as HLO', async () => {
    await openFile(name);
    await waitFor('language HLO', async () => (await statusBar()).includes('HLO'));
  });

  await check(`hover on %${op} shows the Measured line of the newest run beside the dump (${newerCount} runs)`, async () => {
    const h = await hoverOn(`${newerCount} runs`);
    console.log(`measured hover:\n${h}\n---`);
    assert.match(h, /Measured/);
    // the README's picture: the hover scrolled (the mouse wheel over it) to its Measured paragraph
    assert.ok(await scrollHoverTo('Measured'), 'the Measured paragraph scrolled into the hover');
    await screenshot('measured-hover');
    await dismiss();
  });

  await check('HLO: Load Profile... beside the dump: the runs newest first; the older one picked is loaded', async () => {
    await command('Notifications: Clear All Notifications');
    await command('HLO: Load Profile...');
    const where = await quickPick('Beside this dump');
    assert.deepEqual(where, ['Beside this dump', 'Choose a Folder...']);
    await page.keyboard.press('Enter');
    const runs = await quickPick(label(newer));
    assert.deepEqual(runs, [label(newer), label(older)], 'newest first');
    await screenshot('load-profile-runs');
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('Enter');
    const toast = await waitFor('the server says the run is loaded', async () => (await toasts()).find((t) => t.includes('loaded')), 30000);
    console.log(`load profile: ${toast}`);
    assert.ok(toast.includes(path.basename(older)), `the notification names ${path.basename(older)}: ${toast}`);
    await screenshot('load-profile-loaded');
    const h = await hoverOn(`${olderCount} runs`);
    assert.match(h, /Measured/);
    await dismiss();
  });

  await check('HLO: Load Profile... on a folder without a profile: a warning says so', async () => {
    const empty = process.env.HLO_EMPTY;
    await command('Notifications: Clear All Notifications');
    await command('HLO: Load Profile...');
    await quickPick('Choose a Folder...');
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('Enter');
    // VS Code's own folder dialog in a remote window: a path in a quick input
    const input = await waitFor('the folder dialog', () => page.$('.quick-input-widget:not([style*="display: none"]) input'), 20000);
    await sleep(800);
    const start = await page.evaluate((e) => e.value, input);
    console.log(`folder dialog starts at ${start}`);
    assert.ok(start.startsWith(made.dump), `the dialog starts in the dump directory: ${start}`);
    const rows = () => page.evaluate(() => [...document.querySelectorAll('.quick-input-widget:not([style*="display: none"]) .quick-input-list .monaco-list-row')]
      .map((r) => (r.querySelector('.label-name') ?? r).textContent.trim()));
    // the folder's path pasted into the dialog (one input event: typed key by key, the
    // dialog's own completion of each folder races the keys), again until it lists
    // that folder (empty: only "..")
    const paste = (value) => input.evaluate((e, v) => {
      e.value = v;
      e.dispatchEvent(new Event('input', { bubbles: true }));
    }, value);
    await waitFor('the dialog in the empty folder', async () => {
      const now = await rows();
      if (now.length === 1 && now[0].includes('..') && (await input.evaluate((e) => e.value)).startsWith(empty)) return true;
      await paste(`${empty}/`);
      await sleep(2000);
      return false;
    }, 40000).catch(async (err) => { throw new Error(`${err.message}; rows: ${JSON.stringify((await rows()).slice(0, 20))}`); });
    await sleep(500);
    await screenshot('load-profile-folder');
    // ... and its button ("Load Profile", the dialog's OK) accepts it
    const button = await page.evaluateHandle(() => [...document.querySelectorAll('.quick-input-widget:not([style*="display: none"]) .monaco-button')]
      .find((e) => e.textContent.trim() === 'Load Profile'));
    assert.ok(button.asElement(), 'the dialog has a Load Profile button');
    await button.asElement().click();
    const toast = await waitFor('the warning', async () => (await toasts()).find((t) => t.includes('No profile')), 30000)
      .catch(async (err) => { throw new Error(`${err.message}; notifications: ${JSON.stringify(await toasts())}`); });
    console.log(`load profile (empty folder): ${toast}`);
    assert.ok(toast.includes(empty), `the warning names ${empty}: ${toast}`);
    await screenshot('load-profile-none');
  });
}

if (mode === 'profile') await profileScenario();

/**
 * Issue 44, acceptance item 3: the experiment "Triton GEMM off" on a deviceless H100 dump
 * (HLO_FP8_DUMP: the FP8 matmul with a bias, the dot a Triton GEMM fusion), as a user
 * applies it: Source Action... on %gemm_fusion_dot, the experiment picked, Run clicked in
 * the confirmation (which shows the flag); the notification says what the instruction
 * became, and the variant's file is shown at its counterpart (window/showDocument).
 */
async function experimentScenario() {
  const dump = process.env.HLO_FP8_DUMP;
  const title = 'Recompile with Triton GEMM off (--xla_gpu_enable_triton_gemm=false)';
  const lines = fs.readFileSync(dump, 'utf8').split('\n');
  const row = lines.findIndex((l) => /^\s*%gemm_fusion_dot = /.test(l));
  await check('"Recompile with Triton GEMM off" on %gemm_fusion_dot: one cuBLASLt FP8 call, the variant shown at it', async () => {
    assert.ok(row >= 0, 'a %gemm_fusion_dot in the H100 dump');
    await openFile(path.basename(dump));
    await waitFor('language HLO', async () => (await statusBar()).includes('HLO'));
    await gotoLine(row + 1, 5);
    await command('Source Action...');
    const offered = await waitFor('the experiment in Source Action...', async () => {
      const rows = await page.evaluate(() => [...document.querySelectorAll('.action-widget .monaco-list-row')].map((r) => r.textContent));
      return rows.includes(title) ? rows : undefined;
    }, 30000);
    console.log(`source actions: ${JSON.stringify(offered)}`);
    await screenshot('experiment-source-action');
    await page.evaluate((a) => [...document.querySelectorAll('.action-widget .monaco-list-row')].find((r) => r.textContent === a).click(), title);
    const confirm = await waitFor('the Run / Cancel confirmation', async () => (await toasts()).find((t) => t.includes('Command:')), 30000);
    assert.ok(confirm.includes('XLA_FLAGS=--xla_gpu_enable_triton_gemm=false'), `the confirmation shows the flag: ${confirm}`);
    await screenshot('experiment-confirmation');
    await page.evaluate(() => {
      const b = [...document.querySelectorAll('.notifications-toasts .notification-toast .monaco-button')].find((e) => e.textContent.trim() === 'Run');
      b.click();
    });
    const toast = await waitFor('the experiment notification', async () => (await toasts()).find((t) => t.includes('Experiment compiled for')), 300000)
      .catch(async (err) => { throw new Error(`${err.message}; notifications: ${JSON.stringify(await toasts())}`); });
    console.log(`experiment: ${toast}`);
    await screenshot('experiment-notification');
    assert.ok(toast.includes('`%gemm_fusion_dot` -> one cuBLASLt FP8 call with a BIAS epilogue'), `the notification: ${toast}`);
    const variantDir = `${path.dirname(dump)}.experiments/xla_gpu_enable_triton_gemm=false`;
    const variant = fs.readdirSync(variantDir).find((n) => /\.jit_fp8_block\.sm_9\.0a_gpu_after_optimizations\.txt$/.test(n));
    assert.ok(variant, `the variant's file in ${variantDir}`);
    const callLine = fs.readFileSync(path.join(variantDir, variant), 'utf8').split('\n').findIndex((l) => l.includes('__cublas$lt$matmul$f8')) + 1;
    // The active editor's breadcrumbs name the variant's folder (its tab, the file's name alone).
    const crumbs = await waitFor('the variant shown', async () => {
      const c = await page.$$eval('.editor-group-container.active .breadcrumbs-control .monaco-breadcrumb-item', (els) => els.map((e) => e.textContent.trim()));
      return c.includes('dump.experiments') && c.includes('xla_gpu_enable_triton_gemm=false') && c.includes(variant) ? c : undefined;
    }, 30000);
    console.log(`shown: ${JSON.stringify(crumbs)}`);
    await waitFor(`the cursor on line ${callLine}`, async () => (await cursorAt())?.line === callLine, 10000);
    assert.ok((await viewLines()).some((l) => l.text.includes('__cublas$lt$matmul$f8')), 'the cuBLASLt call is in view');
    await screenshot('experiment-variant');
  });
}

if (mode === 'experiment') await experimentScenario();

/**
 * Issue 44: the pass history. A copy of examples/cpu_passes (a real XLA CPU compile dumped
 * with --xla_dump_hlo_pass_re=.*) opened in code-server: the hover on %ynn_fusion of the
 * after-optimizations file says which pass created it; *HLO: Show Pass History* lists the
 * passes in the Pass History view, a click on dot-library-rewriter's row opens the diff of
 * the snapshot before it and its own; *HLO: Go to First Appearance* on %ynn_fusion opens
 * the snapshot that created it, the cursor on its name. The view follows the dump
 * directory: the files XLA writes after snapshot 0014 moved out (a recompile that dumps
 * fewer passes) and back (XLA writing them), its rows change with no command. In gpu/
 * (the after-optimizations file, the snapshot after priority-fusion and the
 * priority-fusion log of examples/gpu/deviceless/multi_output_fusion_log), Go to First
 * Appearance on %loop_exponential_multiply_fusion opens that snapshot and the notification
 * says what the log decided of it (fusion.1 when priority fusion ran).
 */
async function passesScenario(folder) {
  const prefix = 'module_0008.jit_layer.';
  const after = `${prefix}cpu_after_optimizations.txt`;
  const files = fs.readdirSync(folder);
  const created = files.find((n) => n.startsWith(`${prefix}0014.`));
  const before = files.find((n) => n.startsWith(`${prefix}0013.`));
  const lines = fs.readFileSync(path.join(folder, after), 'utf8').split('\n');
  const row = lines.findIndex((l) => l.includes('%ynn_fusion = '));
  const createdLine = fs.readFileSync(path.join(folder, created), 'utf8').split('\n').findIndex((l) => l.includes('%ynn_fusion = '));
  const onFusion = async () => {
    await openFile(after);
    await gotoLine(row + 1, lines[row].indexOf('%ynn_fusion') + 3);
  };

  await check('the after-optimizations file of a pass dump opens as HLO', async () => {
    await openFile(after);
    await waitFor('language HLO', async () => (await statusBar()).includes('HLO'));
  });

  await check('hover on %ynn_fusion says which pass created it', async () => {
    await onFusion();
    const h = await showHover('Pass history');
    console.log(`pass history hover:\n${h}\n---`);
    assert.match(h, /Pass history: Created by dot-library-rewriter in dot-library-passes, snapshot 0014/);
    assert.ok(await scrollHoverTo('Pass history'), 'the Pass history paragraph scrolled into the hover');
    await screenshot('pass-history-hover');
    await dismiss();
  });

  await check('HLO: Show Pass History lists the passes; a click opens the diff of the step', async () => {
    await command('HLO: Show Pass History');
    // the folder's file list collapsed: the Pass History view gets the Explorer's height
    const folderPane = await page.evaluateHandle(() => [...document.querySelectorAll('.pane-header[aria-expanded="true"]')]
      .find((h) => h.textContent.trim().toLowerCase() === 'passes'));
    if (folderPane.asElement()) await folderPane.asElement().click();
    await sleep(1000); // the panes' new heights laid out
    const label = 'dot-library-passes: dot-library-rewriter';
    // The row, found afresh each time: the list re-renders (and recycles its rows'
    // elements) while the view settles after the folder pane collapsed.
    const row = () => waitFor('the pass in the Pass History view', async () => {
      for (const r of await page.$$('.monaco-list-row')) {
        const t = await r.evaluate((e) => e.textContent);
        if (t.includes(label) && t.includes('0014')) return { r, t };
      }
      return undefined;
    }, 60000);
    const { t: text } = await row();
    assert.match(text, /\+3 -0 ~2/, `the row's counts: ${text}`);
    // A click, as the user does; again on the row found anew when the list moved
    // under the first one (no diff of this step within 10 s).
    const stepTab = async () => {
      const t = await activeTab();
      return t && t.label.includes('dot-library-rewriter') && (await page.$('.monaco-diff-editor')) ? t : undefined;
    };
    let tab;
    for (let attempt = 0; attempt < 3 && !tab; attempt++) {
      const { r } = await row();
      await r.click();
      tab = await waitFor('the diff of the step, in its tab', stepTab, 10000).catch(() => undefined);
    }
    assert.ok(tab, 'a click on the row opens the diff of the step');
    console.log(`diff tab: ${JSON.stringify(tab)}`);
    assert.ok(tab.label.includes('snapshot 0014'), `titled with the pass: ${tab.label}`);
    const both = `${tab.title} ${tab.aria}`;
    assert.ok(both.includes(before) && both.includes(created), `the diff of ${before} and ${created}: ${both}`);
    // the two sides show the two snapshots: the fusion only on the right
    const sides = await page.$$eval('.monaco-diff-editor .editor.original .view-lines, .monaco-diff-editor .editor.modified .view-lines',
      (els) => els.map((e) => e.textContent));
    assert.equal(sides.length, 2);
    await screenshot('pass-history-diff');
  });

  await check('HLO: Go to First Appearance opens the snapshot that created %ynn_fusion on its name', async () => {
    await onFusion();
    await command('HLO: Go to First Appearance');
    await waitFor(`the editor of ${created}`, async () => (await activeTab())?.label.includes(created), 30000);
    const at = await waitFor('the cursor on its line', async () => {
      const c = await cursorAt();
      return c && c.line === createdLine + 1 ? c : undefined;
    }, 15000);
    const fusionLine = fs.readFileSync(path.join(folder, created), 'utf8').split('\n')[createdLine];
    assert.equal(at.column, fusionLine.indexOf('%ynn_fusion') + 2, 'on the name, after the %');
    await screenshot('pass-history-first-appearance');
  });

  await check('the Pass History view follows the dump directory, with no command', async () => {
    const fusion = 'HLO_passes_after_layout_assignment: fusion';
    const rows = () => page.$$eval('.monaco-list-row', (els) => els.map((e) => e.textContent));
    const shows = async (label) => (await rows()).some((t) => t.includes(label));
    await openFile(created);
    await command('HLO: Show Pass History');
    await waitFor('the fusion pass in the view', () => shows(fusion), 30000);
    // A recompile that dumps fewer passes: every file after snapshot 0014 gone (moved
    // beside the folder, the same real files), the active editor's module shown.
    const held = `${folder}.held`;
    fs.mkdirSync(held, { recursive: true });
    const later = files.filter((n) => n === after || Number(n.slice(prefix.length, prefix.length + 4)) >= 15);
    for (const n of later) fs.renameSync(path.join(folder, n), path.join(held, n));
    await waitFor('the passes after 0014 gone from the view', async () => !(await shows(fusion)) && (await shows('dot-library-rewriter')), 60000);
    await screenshot('pass-history-fewer');
    // XLA writes them again: back in the view
    for (const n of later) fs.renameSync(path.join(held, n), path.join(folder, n));
    await waitFor('the passes after 0014 back in the view', async () => (await shows(fusion)) && (await shows('after_optimizations')), 60000);
    console.log(`rows: ${JSON.stringify((await rows()).filter((t) => /^\s*(-|\d{4})/.test(t)))}`);
    await screenshot('pass-history-followed');
  });

  await check('HLO: Go to First Appearance says why priority fusion fused %loop_exponential_multiply_fusion', async () => {
    const gpu = path.join(folder, 'gpu');
    const mofAfter = fs.readdirSync(gpu).find((n) => n.endsWith('gpu_after_optimizations.txt'));
    const snapshot = fs.readdirSync(gpu).find((n) => n.includes('.after_priority-fusion.'));
    const text = fs.readFileSync(path.join(gpu, mofAfter), 'utf8').split('\n');
    const at = text.findIndex((l) => l.includes('%loop_exponential_multiply_fusion = '));
    assert.ok(mofAfter && snapshot && at >= 0, `${mofAfter}, ${snapshot}, ${at}`);
    await openFile(mofAfter);
    await gotoLine(at + 1, text[at].indexOf('%loop_exponential_multiply_fusion') + 3);
    await command('HLO: Go to First Appearance');
    await waitFor(`the editor of ${snapshot}`, async () => (await activeTab())?.label.includes(snapshot), 30000);
    const toast = await waitFor('the priority fusion notification', async () => (await toasts()).find((t) => t.includes('priority fusion')), 30000)
      .catch(async (err) => { throw new Error(`${err.message}; notifications: ${JSON.stringify(await toasts())}`); });
    console.log(`blame notification: ${toast}`);
    // The toast shows its first line; the user expands it (its chevron) to read it all.
    const message = () => page.evaluate(() => {
      const t = [...document.querySelectorAll('.notifications-toasts .notification-toast')].find((e) => e.textContent.includes('priority fusion'));
      const m = t?.querySelector('.notification-list-item-message');
      return m ? { text: m.innerText, lines: Math.round(m.getBoundingClientRect().height / parseFloat(getComputedStyle(m).lineHeight)) } : undefined;
    });
    let el;
    for (const t of await page.$$('.notifications-toasts .notification-toast')) {
      if ((await t.evaluate((x) => x.textContent)).includes('priority fusion')) el = t;
    }
    await el.hover();
    const expand = await el.$('.codicon-notifications-expand');
    if (expand) await expand.click();
    const shown = await waitFor('the notification expanded', async () => {
      const m = await message();
      return m && m.lines > 1 ? m : undefined;
    }, 10000);
    console.log(`blame notification shown (${shown.lines} lines): ${shown.text}`);
    assert.equal(shown.text, 'HLO: priority fusion of %loop_exponential_multiply_fusion (%fusion.1 in module_0001.jit_stats.priority_fusion_dump.txt): '
      + 'fused into %reduce_sum.14.0, %fusion: estimated 9.83 µs fused against 8.03 µs unfused; took in %tanh.1.0');
    await screenshot('pass-blame-priority-fusion');
  });
}

if (mode === 'passes') await passesScenario(new URL(url).searchParams.get('folder'));

/**
 * Issue 44, the kernel that runs: a copy of examples/gpu/deviceless/fp8_fusion_log (a
 * deviceless H100 dump: the after-optimizations HLO, the GEMM fusion's PTX and LLVM IR)
 * opened in code-server. F12 on %gemm_fusion_dot opens the PTX at its `.entry` line,
 * which stays Plain Text (not HLO) with no problems; hover there names the HLO
 * instruction; F12 on the `.entry` comes back to the instruction's line.
 */
async function kernelsScenario() {
  const dir = process.env.HLO_KERNELS;
  const after = fs.readdirSync(dir).find((n) => n.endsWith('gpu_after_optimizations.txt'));
  const ptx = fs.readdirSync(dir).find((n) => n.endsWith('.ptx'));
  const lines = fs.readFileSync(path.join(dir, after), 'utf8').split('\n');
  const row = lines.findIndex((l) => l.includes('%gemm_fusion_dot = '));
  const entry = fs.readFileSync(path.join(dir, ptx), 'utf8').split('\n').indexOf('.visible .entry gemm_fusion_dot(');
  assert.ok(row >= 0 && entry >= 0, `${row}, ${entry}`);
  const problems = () => page.evaluate(() => document.querySelectorAll('.editor-group-container.active .squiggly-error, .editor-group-container.active .squiggly-warning').length);

  await check('F12 on the GEMM fusion opens its PTX at the .entry, as Plain Text', async () => {
    await openFile(after);
    await waitFor('language HLO', async () => (await statusBar()).includes('HLO'));
    await gotoLine(row + 1, lines[row].indexOf('%gemm_fusion_dot') + 3);
    await page.keyboard.press('F12');
    await waitFor(`${ptx} active`, async () => (await activeTab())?.label.includes(ptx), 30000);
    await waitFor(`cursor on line ${entry + 1}`, async () => (await cursorAt())?.line === entry + 1, 10000);
    assert.equal((await cursorAt()).column, '.visible .entry '.length + 1, 'the cursor on the kernel name');
    await waitFor('Plain Text', async () => (await statusBar()).includes('Plain Text'));
    assert.ok(!(await statusBar()).includes('HLO'), 'the PTX file is not HLO');
    await sleep(2000);
    assert.equal(await problems(), 0, 'no problems in the PTX file');
    await screenshot('ptx-entry');
  });

  await check('hover on the .entry names the HLO instruction; F12 there comes back to it', async () => {
    const h = await showHover('generated by XLA');
    console.log(`kernel hover:\n${h}\n---`);
    assert.ok(h.includes('%gemm_fusion_dot'), h);
    await screenshot('ptx-hover');
    await dismiss();
    await page.keyboard.press('F12');
    await waitFor(`${after} active`, async () => (await activeTab())?.label.includes(after), 30000);
    await waitFor(`cursor on line ${row + 1}`, async () => (await cursorAt())?.line === row + 1, 10000);
  });
}

if (mode === 'kernels') await kernelsScenario();

/** jit_mlp's after-optimizations file in the dump folder now (first-hour recompiled it for an H100: renamed). */
const mlpDumpNow = () => {
  const dir = path.dirname(process.env.HLO_DUMP);
  return fs.readdirSync(dir).find((n) => /\.jit_mlp\..*after_optimizations\.txt$/.test(n)) ?? path.basename(process.env.HLO_DUMP);
};

/** After a wait for a second one to come (languageclient's, a retry): the notifications
 * about the server in the notification centre, asserting there is exactly one. */
async function theServerNotification() {
  await sleep(8000);
  await screenshot('notification');
  await command('Notifications: Show Notifications');
  await sleep(800);
  const all = await page.$$eval('.notifications-center .notification-list-item', (els) => els.map((e) => e.textContent));
  await screenshot('notification-center');
  console.log(`notifications:\n${all.join('\n---\n')}\n---`);
  const about = all.filter((t) => /HLO|hlo|language server|Language Server/.test(t));
  assert.equal(about.length, 1, `one notification about the server, not ${about.length}: ${JSON.stringify(all)}`);
  return about;
}

if (mode === 'no-server') {
  const bare = process.env.HLO_BARE_PYTHON;
  await check('hlo.server.pythonPath without the package: exactly one notification, naming the cause', async () => {
    await openFile(mlpDumpNow());
    await waitFor('language HLO', async () => (await statusBar()).includes('HLO'));
    await waitFor('the notification', async () => (await toasts()).some((t) => t.includes('cannot start')), 30000);
    const about = await theServerNotification();
    assert.ok(about[0].includes(`the hlo-lsp package is not installed for \`${bare}\``) || about[0].includes(`the hlo-lsp package is not installed for ${bare}`),
      `the notification names the cause: ${about[0]}`);
  });
}

if (mode === 'broken-server') {
  await check('the server exits at start (its dependencies missing): exactly one notification, naming the cause', async () => {
    await openFile(mlpDumpNow());
    await waitFor('language HLO', async () => (await statusBar()).includes('HLO'));
    await waitFor('a notification', async () => (await toasts()).length > 0, 30000);
    const about = await theServerNotification();
    assert.match(about[0], /cannot start: `[^`]+ -m hlo_lsp` failed: ModuleNotFoundError: No module named '[\w.]+'/, `the notification names the cause: ${about[0]}`);
  });
}

await browser.close();
console.log(results.join('\n'));
const failed = results.filter((r) => r.startsWith('FAIL')).length;
console.log(`${mode}: ${results.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
