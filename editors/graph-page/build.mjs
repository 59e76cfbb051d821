// Bundles @hpcc-js/wasm-graphviz (Graphviz as WebAssembly, inlined in the module)
// into one classic script defining `globalThis.hloGraphviz.Graphviz`, written to
// hlo_lsp/features/graph_page/graphviz.js, which `hlo-lsp graph` inlines into every
// page it writes (no network needed to view a page).
import { build } from "esbuild";
import { fileURLToPath } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
const out = path.join(here, "..", "..", "hlo_lsp", "features", "graph_page", "graphviz.js");

await build({
  stdin: { contents: 'export { Graphviz } from "@hpcc-js/wasm-graphviz";', resolveDir: here },
  bundle: true,
  format: "iife",
  globalName: "hloGraphviz",
  platform: "browser",
  target: "es2020",
  minify: true,
  legalComments: "inline",
  banner: { js: "/* @hpcc-js/wasm-graphviz 1.29.2 (Graphviz, EPL-1.0 / Apache-2.0), bundled by editors/graph-page/build.mjs */" },
  outfile: out,
});
console.log(`wrote ${out}`);
