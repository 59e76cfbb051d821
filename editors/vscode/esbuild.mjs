// Bundles src/extension.ts into out/extension.js and copies the TextMate grammar from
// ../../grammar/ into syntaxes/ (vsce only packages files inside this folder).
//   node esbuild.mjs [--production] [--watch]
import * as esbuild from 'esbuild';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const production = process.argv.includes('--production');
const watch = process.argv.includes('--watch');

function copyGrammar() {
  const src = path.resolve(here, '..', '..', 'grammar', 'hlo.tmLanguage.json');
  const dst = path.join(here, 'syntaxes', 'hlo.tmLanguage.json');
  const text = fs.readFileSync(src, 'utf8');
  const grammar = JSON.parse(text); // fail the build on a broken grammar
  if (grammar.scopeName !== 'source.hlo') throw new Error(`${src}: scopeName is ${grammar.scopeName}, expected source.hlo`);
  fs.mkdirSync(path.dirname(dst), { recursive: true });
  fs.writeFileSync(dst, text);
  console.log(`copied ${path.relative(here, src)} -> ${path.relative(here, dst)}`);
}

copyGrammar();
const ctx = await esbuild.context({
  absWorkingDir: here,
  entryPoints: ['src/extension.ts'],
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node18', // VS Code 1.82's extension host
  outfile: 'out/extension.js',
  external: ['vscode'],
  sourcemap: !production,
  minify: production,
  logLevel: 'info',
});
if (watch) {
  await ctx.watch();
} else {
  await ctx.rebuild();
  await ctx.dispose();
}
