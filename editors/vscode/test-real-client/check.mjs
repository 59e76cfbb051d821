// Drives code-server in headless Chromium and checks what a user of the extension sees.
//   node check.mjs URL WORKDIR      (run by run.sh; puppeteer-core is installed in WORKDIR)
import assert from 'node:assert/strict';
import path from 'node:path';
import { createRequire } from 'node:module';

const [url, work] = process.argv.slice(2);
const require = createRequire(path.join(work, 'package.json'));
const puppeteer = require('puppeteer-core');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const results = [];

const browser = await puppeteer.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ['--no-sandbox', '--disable-gpu'] });
const page = await browser.newPage();
await page.setViewport({ width: 1700, height: 1000 });

async function waitFor(what, fn, ms = 60000) {
  const t0 = Date.now();
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await sleep(250);
  }
}

async function check(name, fn) {
  try {
    await fn();
    results.push(`ok   ${name}`);
  } catch (err) {
    results.push(`FAIL ${name}: ${err.message}`);
    await page.screenshot({ path: path.join(work, `fail-${results.length}.png`) });
  }
}

async function openFile(part) {
  await waitFor('explorer', () => page.$('.explorer-viewlet .monaco-list-row'));
  const rows = await page.$$('.explorer-viewlet .monaco-list-row');
  for (const r of rows) {
    const label = await r.evaluate((e) => e.getAttribute('aria-label') || '');
    if (label.includes(part)) {
      await r.click();
      await waitFor(`editor for ${part}`, () => page.evaluate((p) => document.querySelector('.tab.active')?.textContent.includes(p), part));
      return;
    }
  }
  throw new Error(`${part} not in the explorer`);
}

const statusBar = () => page.$$eval('.statusbar-item', (els) => els.map((e) => e.textContent.trim()).filter(Boolean));

/** Visible editor lines: text, the hidden (display:none) text, ::after markers, colours of some words. */
const viewLines = () =>
  page.evaluate(() =>
    [...document.querySelectorAll('.monaco-editor .view-lines .view-line')]
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
      .sort((a, b) => a.top - b.top),
  );

async function command(title) {
  await page.keyboard.down('Control');
  await page.keyboard.down('Shift');
  await page.keyboard.press('KeyP');
  await page.keyboard.up('Shift');
  await page.keyboard.up('Control');
  await sleep(700);
  await page.keyboard.type(title, { delay: 10 });
  await sleep(700);
  await page.keyboard.press('Enter');
  await sleep(1500);
}

async function gotoLine(n) {
  await page.keyboard.down('Control');
  await page.keyboard.press('KeyG');
  await page.keyboard.up('Control');
  await sleep(500);
  await page.keyboard.type(String(n));
  await page.keyboard.press('Enter');
  await sleep(1500);
}

await page.goto(url, { waitUntil: 'networkidle2', timeout: 120000 });
await waitFor('workbench', () => page.$('.monaco-workbench'));
await sleep(3000);

await check('a GPU dump opens as HLO (filenamePatterns)', async () => {
  await openFile('jit_matmul_fn.fp8_cublaslt.sm90');
  await waitFor('language HLO', async () => (await statusBar()).includes('HLO'));
});

await check('metadata hidden with a "⋯ metadata" marker (server + decorations)', async () => {
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
  await page.screenshot({ path: path.join(work, 'hidden.png') });
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
  await page.screenshot({ path: path.join(work, 'shown.png') });
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
  await page.screenshot({ path: path.join(work, 'cursor-line.png') });
});

await check('a CPU dump opens as HLO and its metadata is hidden', async () => {
  await openFile('module_0028.jit_train_step.cpu_after_optimizations.txt');
  await waitFor('language HLO', async () => (await statusBar()).includes('HLO'));
  await gotoLine(140); // past the stack-frame tables
  await waitFor('hidden metadata', async () => (await viewLines()).some((l) => l.hidden.startsWith(', metadata={')));
});

await check('-buffer-assignment.txt stays Plain Text', async () => {
  await openFile('cpu_after_optimizations-buffer-assignment.txt');
  await waitFor('Plain Text', async () => (await statusBar()).includes('Plain Text'));
  assert.ok(!(await statusBar()).includes('HLO'));
});

await check('a .txt with another name whose first line is HloModule becomes HLO', async () => {
  await openFile('my_module.txt');
  await waitFor('language HLO', async () => (await statusBar()).includes('HLO'));
  await waitFor('hidden metadata', async () => (await viewLines()).some((l) => l.hidden.startsWith(', metadata={')));
});

await browser.close();
console.log(results.join('\n'));
const failed = results.filter((r) => r.startsWith('FAIL')).length;
console.log(`${results.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
