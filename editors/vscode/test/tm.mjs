// Loads grammar/hlo.tmLanguage.json with vscode-textmate + vscode-oniguruma (the engine VS Code uses).
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import vsctm from 'vscode-textmate';
import oniguruma from 'vscode-oniguruma';

const require = createRequire(import.meta.url);
export const HERE = path.dirname(fileURLToPath(import.meta.url));
export const REPO = path.resolve(HERE, '..', '..', '..');
export const GRAMMAR_PATH = path.join(REPO, 'grammar', 'hlo.tmLanguage.json');

let registryPromise;
export function loadGrammar() {
  if (!registryPromise) {
    registryPromise = (async () => {
      const wasm = fs.readFileSync(require.resolve('vscode-oniguruma/release/onig.wasm'));
      await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
      const registry = new vsctm.Registry({
        onigLib: Promise.resolve({
          createOnigScanner: (sources) => new oniguruma.OnigScanner(sources),
          createOnigString: (s) => new oniguruma.OnigString(s),
        }),
        loadGrammar: async (scopeName) => {
          if (scopeName !== 'source.hlo') return null;
          return vsctm.parseRawGrammar(fs.readFileSync(GRAMMAR_PATH, 'utf8'), GRAMMAR_PATH);
        },
      });
      const grammar = await registry.loadGrammar('source.hlo');
      if (!grammar) throw new Error('grammar source.hlo did not load');
      return grammar;
    })();
  }
  return registryPromise;
}

export const INITIAL = vsctm.INITIAL;

/** Tokenizes lines in sequence; returns [{line, tokens:[{text, scopes, start, end}], stack}] */
export function tokenizeLines(grammar, lines, stack = INITIAL) {
  const out = [];
  for (const line of lines) {
    const r = grammar.tokenizeLine(line, stack);
    const tokens = r.tokens.map((t) => ({
      text: line.slice(t.startIndex, t.endIndex), scopes: t.scopes, start: t.startIndex, end: t.endIndex,
    }));
    out.push({ line, tokens, stoppedEarly: r.stoppedEarly });
    stack = r.ruleStack;
  }
  return { lines: out, stack };
}

export function tokenizeText(grammar, text) {
  return tokenizeLines(grammar, text.split(/\r?\n/));
}
