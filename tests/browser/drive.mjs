// Drives a page `hlo-lsp graph` or `hlo-lsp memory` wrote in headless Chromium
// (playwright-core with the system's chromium) and prints what it found as JSON:
//   node drive.mjs '{"chromium": "/usr/bin/chromium", "url": "file:///...", "kind": "graph",
//                   "click": "node name" | null, "selectLine": 0-based line | null,
//                   "screenshot": "/path.png" | null}'
// graph: rendered nodes (data-name, data-kind, data-range), edges (by the names of
// their ends, from each edge's <title>), the messages a click posted, render time.
// memory: the peak figure and the rows shown.
import { chromium } from "playwright-core";

const spec = JSON.parse(process.argv[2]);
const browser = await chromium.launch({
  executablePath: spec.chromium,
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu"],
});
const out = {};
try {
  const page = await browser.newPage({ viewport: { width: spec.width || 1400, height: spec.height || 900 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.addInitScript(() => {
    window.__posted = [];
    window.addEventListener("message", (ev) => window.__posted.push(ev.data));
    // what the page's Content-Security-Policy refused (directive and source)
    window.__violations = [];
    document.addEventListener("securitypolicyviolation",
      (ev) => window.__violations.push([ev.effectiveDirective, ev.blockedURI]));
  });
  const t0 = Date.now();
  await page.goto(spec.url);
  if (spec.kind === "graph") {
    await page.waitForSelector("body[data-rendered]", { timeout: 20000 });
    out.wallMs = Date.now() - t0;
    out.rendered = await page.getAttribute("body", "data-rendered");
    out.renderMs = Number(await page.getAttribute("body", "data-render-ms"));
    out.stubs = await page.$$eval("#graph svg g.node[data-stub]", (gs) => gs.length);
    out.nodes = await page.$$eval("#graph svg g.node:not([data-stub])", (gs) => gs.map((g) => ({
      svgId: g.id, name: g.dataset.name, kind: g.dataset.kind,
      range: g.dataset.range ? JSON.parse(g.dataset.range) : null })));
    out.edges = await page.$$eval("#graph svg g.edge", (gs) => {
      const names = new Map([...document.querySelectorAll("#graph svg g.node")]
        .map((g) => [g.querySelector("title").textContent, g.dataset.name]));
      return gs.filter((g) => /^e\d+$/.test(g.id)).map((g) => {
        const [a, b] = g.querySelector("title").textContent.split("->");
        return [names.get(a), names.get(b)];
      });
    });
    out.omitted = await page.$eval("#omitted", (e) => e.textContent).catch(() => null);
    // as the page opens: the nodes in view, each node's outline colour, the cursor's nodes
    out.inView = await page.evaluate(() => {
      const r = document.querySelector("#graph").getBoundingClientRect();
      return [...document.querySelectorAll("#graph svg g.node:not([data-stub])")].filter((g) => {
        const b = g.getBoundingClientRect();
        return b.right > r.left && b.left < r.right && b.bottom > r.top && b.top < r.bottom;
      }).map((g) => g.dataset.name);
    });
    out.strokes = await page.$$eval("#graph svg g.node:not([data-stub])", (gs) => gs.map((g) => {
      const shape = g.querySelector("polygon, path");
      return [g.dataset.name, shape ? getComputedStyle(shape).stroke : null];
    }));
    out.cursorAtOpen = await page.$$eval("#graph svg g.node.cursor:not([data-stub])", (gs) => gs.map((g) => g.dataset.name));
    if (spec.click) {
      const node = page.locator(`#graph svg g.node[data-name="${spec.click}"]:not([data-stub])`).first();
      await node.scrollIntoViewIfNeeded().catch(() => {});
      await node.click({ force: true });
      await page.waitForFunction(() => window.__posted.length > 0, null, { timeout: 5000 });
      out.posted = await page.evaluate(() => window.__posted);
      out.selected = await page.textContent("#selected");
    }
    if (typeof spec.selectLine === "number") {
      // what an editor posts when its cursor moves (docs/protocol.md, hlo/graph "page")
      await page.evaluate((line) => window.postMessage({ type: "hlo-graph-select", line }, "*"), spec.selectLine);
      await page.waitForSelector(`body[data-cursor-line="${spec.selectLine}"]`, { timeout: 5000 });
      out.cursor = await page.$$eval("#graph svg g.node.cursor:not([data-stub])", (gs) => gs.map((g) => g.dataset.name));
    }
  } else {
    await page.waitForSelector("#peak");
    out.wallMs = Date.now() - t0;
    out.peak = Number(await page.getAttribute("#peak", "data-bytes"));
    out.peakText = await page.textContent("#peak");
    out.reportPeak = await page.getAttribute("#report-peak", "data-bytes").catch(() => null);
    out.rows = await page.$$eval("tr.buffer", (rs) => rs.map((r) => [r.dataset.name, Number(r.dataset.bytes)]));
    out.bars = await page.$$eval("rect.step", (rs) => rs.map((r) => Number(r.dataset.bytes)));
    if (spec.click) {
      await page.click(`tr.buffer[data-name="${spec.click}"]`);
      await page.waitForFunction(() => window.__posted.length > 0, null, { timeout: 5000 });
      out.posted = await page.evaluate(() => window.__posted);
    }
  }
  if (spec.screenshot) await page.screenshot({ path: spec.screenshot });
  // a script the page did not bring sets window.__pwned (tests of the CSP)
  out.pwned = await page.evaluate(() => window.__pwned || null);
  out.violations = await page.evaluate(() => window.__violations);
  out.errors = errors;
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
