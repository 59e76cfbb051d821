// The hlo-lsp graph page: renders the DOT of the page with Graphviz (WebAssembly,
// inlined as hloGraphviz), then adds what an editor needs. Every node <g> gets
// data-name, data-kind and data-range (the instruction's LSP range as JSON);
// clicking a node posts {type: "hlo-graph-reveal", name, uri, range} to the
// parent window (an editor's webview reveals the line) and shows file:line.
// Wheel zooms, drag pans, clicking a cluster's title collapses it.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("hlo-graph-data").textContent);
  const host = document.getElementById("graph");
  const selected = document.getElementById("selected");

  function post(message) {
    try { window.parent.postMessage(message, "*"); } catch (e) { /* no parent */ }
    if (typeof acquireVsCodeApi === "function") {
      try { (window.__vscode = window.__vscode || acquireVsCodeApi()).postMessage(message); } catch (e) { /* */ }
    }
  }

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
        post(message);
        console.log(JSON.stringify(message));
      });
    }
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

  function panZoom(svg) {
    const vb = svg.viewBox.baseVal;
    let view = { x: vb.x, y: vb.y, w: vb.width, h: vb.height };
    const apply = () => svg.setAttribute("viewBox", `${view.x} ${view.y} ${view.w} ${view.h}`);
    svg.removeAttribute("width");
    svg.removeAttribute("height");
    host.addEventListener("wheel", (ev) => {
      ev.preventDefault();
      const r = svg.getBoundingClientRect();
      const scale = Math.min(view.w / r.width, view.h / r.height) || 1;
      const k = Math.exp(ev.deltaY * 0.0015);
      const px = view.x + (ev.clientX - r.left) * scale, py = view.y + (ev.clientY - r.top) * scale;
      view = { x: px - (px - view.x) * k, y: py - (py - view.y) * k, w: view.w * k, h: view.h * k };
      apply();
    }, { passive: false });
    let drag = null;
    host.addEventListener("mousedown", (ev) => {
      drag = { x: ev.clientX, y: ev.clientY, view: { ...view } };
      host.classList.add("dragging");
    });
    window.addEventListener("mouseup", () => { drag = null; host.classList.remove("dragging"); });
    window.addEventListener("mousemove", (ev) => {
      if (!drag) return;
      const r = svg.getBoundingClientRect();
      const scale = Math.max(view.w / r.width, view.h / r.height) || 1;
      view = { ...drag.view, x: drag.view.x - (ev.clientX - drag.x) * scale,
               y: drag.view.y - (ev.clientY - drag.y) * scale };
      apply();
    });
  }

  hloGraphviz.Graphviz.load().then((graphviz) => {
    host.innerHTML = graphviz.dot(data.dot, "svg");
    const svg = host.querySelector("svg");
    attach(svg);
    panZoom(svg);
    const focus = data.focus && svg.getElementById(data.focus);
    if (focus) focus.classList.add("selected");
    document.body.dataset.renderMs = String(Math.round(performance.now()));
    document.body.dataset.rendered = "true";
  }).catch((err) => {
    document.getElementById("error").textContent = "Graphviz failed: " + err;
    document.body.dataset.rendered = "error";
  });
})();
