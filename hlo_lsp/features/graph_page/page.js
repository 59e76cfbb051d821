// The hlo-lsp graph page: renders the DOT of the page with Graphviz (WebAssembly,
// inlined as hloGraphviz), then adds what an editor needs. Every node <g> gets
// data-name, data-kind and data-range (the instruction's LSP range as JSON);
// clicking a node posts {type: "hlo-graph-reveal", name, uri, range} to the
// parent window (an editor's webview reveals the line) and shows file:line.
// Wheel zooms, drag pans, clicking a cluster's title collapses it. The host may
// post {type: "hlo-graph-select", line} (the editor's cursor line, 0-based): the
// nodes whose name is on that line are marked (class "cursor", blue as README.md says)
// and brought into view. A graph too big to fit opens at natural size around the node
// it is around (marked as the cursor's), else around the computation's ROOT.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("hlo-graph-data").textContent);
  const host = document.getElementById("graph");
  const selected = document.getElementById("selected");

  function attach(svg) {
    const byId = new Map(data.nodes.map((n) => [n.svgId, n]));
    const clusterOf = new Map(data.nodes.map((n) => [n.svgId, n.clusterSvgId]));
    for (const g of svg.querySelectorAll("g.node")) {
      const n = byId.get(g.id);
      if (!n) continue;
      g.dataset.name = n.name;
      g.dataset.kind = n.kind;
      g.dataset.range = JSON.stringify(n.range);
      if (n.stub) g.dataset.stub = "true";
      g.addEventListener("click", (ev) => {
        ev.stopPropagation();
        for (const s of svg.querySelectorAll("g.node.selected")) s.classList.remove("selected");
        g.classList.add("selected");
        const line = n.range.start.line + 1, col = n.range.start.character + 1;
        selected.textContent = `${n.name}: ${data.file}:${line}:${col}`;
        const message = { type: "hlo-graph-reveal", name: n.name, uri: data.uri, range: n.range };
        hloPost(message);  // post.js
        console.log(JSON.stringify(message));
      });
    }
    window.addEventListener("message", (ev) => {
      const m = ev.data;
      if (!m || m.type !== "hlo-graph-select" || typeof m.line !== "number") return;
      let first = null;
      for (const g of svg.querySelectorAll("g.node")) {
        const n = byId.get(g.id);
        const on = !!n && n.range.start.line === m.line;
        g.classList.toggle("cursor", on);
        if (on && !first) first = g;
      }
      if (first && first.scrollIntoView) first.scrollIntoView({ block: "nearest", inline: "nearest" });
      document.body.dataset.cursorLine = String(m.line);
    });
    // clusters: ancestors of each node's cluster, for collapsing nested ones
    const parentOf = new Map(data.clusters.map((c) => [c.svgId, c.parentSvgId]));
    function inside(clusterSvgId, target) {
      for (let c = clusterSvgId; c; c = parentOf.get(c)) if (c === target) return true;
      return false;
    }
    for (const g of svg.querySelectorAll("g.cluster")) {
      const title = g.querySelector("text");
      if (!title) continue;
      title.addEventListener("click", (ev) => {
        ev.stopPropagation();
        const collapsed = g.classList.toggle("collapsed");
        const hidden = new Set();
        for (const [svgId, c] of clusterOf) if (c && inside(c, g.id)) hidden.add(svgId);
        for (const id of hidden) svg.getElementById(id)?.classList.toggle("collapsed-hidden", collapsed);
        for (const e of data.edges) {
          if (hidden.has(e.source) || hidden.has(e.target)) {
            svg.getElementById(e.svgId)?.classList.toggle("collapsed-hidden", collapsed);
          }
        }
      });
    }
  }

  // Pan and zoom by the SVG's viewBox. The SVG fits its box (xMidYMid meet):
  // user units per pixel is the larger of the two ratios, the rest is margin.
  function panZoom(svg, focus) {
    const vb = svg.viewBox.baseVal;
    let view = { x: vb.x, y: vb.y, w: vb.width, h: vb.height };
    const apply = () => svg.setAttribute("viewBox", `${view.x} ${view.y} ${view.w} ${view.h}`);
    svg.removeAttribute("width");
    svg.removeAttribute("height");
    function frame() {
      const r = svg.getBoundingClientRect();
      const s = Math.max(view.w / r.width, view.h / r.height) || 1;
      return { r, s, ox: (r.width - view.w / s) / 2, oy: (r.height - view.h / s) / 2 };
    }
    function toUser(cx, cy) {
      const f = frame();
      return { x: view.x + (cx - f.r.left - f.ox) * f.s, y: view.y + (cy - f.r.top - f.oy) * f.s };
    }
    // A graph far wider (or taller) than the window would be unreadable when
    // fitted: start at natural size around the focus (else the first node).
    const start = frame();
    if (start.s > 2.5 && focus) {
      const b = focus.getBoundingClientRect();
      const c = toUser(b.left + b.width / 2, b.top + b.height / 2);
      const w = start.r.width, h = start.r.height;
      // centred on the focus, but within the drawing (ROOT at the bottom: no blank below)
      const within = (v, lo, size, span) => (span > size ? Math.min(Math.max(v, lo), lo + span - size) : v);
      view = { x: within(c.x - w / 2, vb.x, w, vb.width), y: within(c.y - h / 2, vb.y, h, vb.height), w, h };
      apply();
    }
    host.addEventListener("wheel", (ev) => {
      ev.preventDefault();
      const p = toUser(ev.clientX, ev.clientY);
      const k = Math.exp(ev.deltaY * 0.0015);
      view = { x: p.x - (p.x - view.x) * k, y: p.y - (p.y - view.y) * k, w: view.w * k, h: view.h * k };
      apply();
    }, { passive: false });
    let drag = null;
    host.addEventListener("mousedown", (ev) => {
      drag = { x: ev.clientX, y: ev.clientY, view: { ...view }, s: frame().s };
      host.classList.add("dragging");
    });
    window.addEventListener("mouseup", () => { drag = null; host.classList.remove("dragging"); });
    window.addEventListener("mousemove", (ev) => {
      if (!drag) return;
      view = { ...drag.view, x: drag.view.x - (ev.clientX - drag.x) * drag.s,
               y: drag.view.y - (ev.clientY - drag.y) * drag.s };
      apply();
    });
  }

  hloGraphviz.Graphviz.load().then((graphviz) => {
    host.innerHTML = graphviz.dot(data.dot, "svg");
    const svg = host.querySelector("svg");
    attach(svg);
    const focus = (data.focus && svg.getElementById(data.focus)) ||
      (data.root && svg.getElementById(data.root)) || svg.querySelector("g.node");
    if (focus && data.focus) focus.classList.add("cursor");
    panZoom(svg, focus);
    document.body.dataset.renderMs = String(Math.round(performance.now()));
    document.body.dataset.rendered = "true";
  }).catch((err) => {
    document.getElementById("error").textContent = "Graphviz failed: " + err;
    document.body.dataset.rendered = "error";
  });
})();
