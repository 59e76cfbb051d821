// A minimal LSP server over stdio for the extension smoke test: initialize, document
// sync, `hlo/inlineRegions` (metadata and backend_config ranges found with a regex, as
// docs/protocol.md describes them), workspace/executeCommand `hlo.recompile` and
// `hlo.loadProfile`, and `hlo/profileRuns` (two runs in any directory, none in one whose
// name ends with `empty`; the shapes of hlo_lsp/lsp/messages.py).
//   node fake-server.mjs --log FILE [--no-recompile]
import fs from 'node:fs';

const argv = process.argv.slice(2);
const logFile = argv[argv.indexOf('--log') + 1];
const advertiseRecompile = !argv.includes('--no-recompile');
const docs = new Map();
const log = (entry) => fs.appendFileSync(logFile, JSON.stringify(entry) + '\n');

function send(msg) {
  const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', ...msg }), 'utf8');
  process.stdout.write(`Content-Length: ${body.length}\r\n\r\n`);
  process.stdout.write(body);
}

function inlineRegions(text) {
  const out = [];
  text.split('\n').forEach((line, i) => {
    for (const [kind, re] of [
      ['metadata', /, metadata=\{(?:[^}"]|"(?:[^"\\]|\\.)*")*\}/g],
      ['backend_config', /, backend_config=\{.*\}(?=$)/g],
    ]) {
      for (const m of line.matchAll(re)) {
        out.push({ range: { start: { line: i, character: m.index }, end: { line: i, character: m.index + m[0].length } }, kind });
      }
    }
  });
  return out.sort((a, b) => a.range.start.line - b.range.start.line || a.range.start.character - b.range.start.character);
}

function handle(msg) {
  log({ method: msg.method, params: msg.params, id: msg.id });
  switch (msg.method) {
    case 'initialize':
      return send({
        id: msg.id,
        result: {
          capabilities: {
            textDocumentSync: 1,
            ...(advertiseRecompile ? { executeCommandProvider: { commands: ['hlo.recompile', 'hlo.loadProfile'] } } : {}),
          },
          serverInfo: { name: 'fake-hlo-lsp' },
        },
      });
    case 'textDocument/didOpen':
      docs.set(msg.params.textDocument.uri, msg.params.textDocument.text);
      return;
    case 'textDocument/didChange':
      docs.set(msg.params.textDocument.uri, msg.params.contentChanges[msg.params.contentChanges.length - 1].text);
      return;
    case 'hlo/inlineRegions':
      return send({ id: msg.id, result: inlineRegions(docs.get(msg.params.textDocument.uri) ?? '') });
    case 'hlo/profileRuns': {
      const dir = msg.params.path ?? '/beside';
      const runs = dir.endsWith('empty') ? [] : ['2026_11_29_06_19_31', '2026_11_29_06_19_32'].map((name) => ({ path: `${dir}/plugins/profile/${name}`, name }));
      return send({ id: msg.id, result: { runs, loaded: null, message: runs.length ? '' : `no profile in ${dir}` } });
    }
    case 'workspace/executeCommand':
      if (msg.params.command === 'hlo.loadProfile') {
        const run = msg.params.arguments?.[0]?.path ?? null;
        return send({ id: msg.id, result: { run, message: run ? `loaded ${run}` : 'no profile near the dump' } });
      }
      // The shape of RecompileReply (hlo_lsp/lsp/messages.py).
      return send({ id: msg.id, result: { ok: true, cancelled: false, error: '', summary: `recompiled ${msg.params.arguments?.[0]}\nsecond line` } });
    case 'shutdown':
      return send({ id: msg.id, result: null });
    case 'exit':
      process.exit(0);
    default:
      if (msg.id !== undefined && msg.method) send({ id: msg.id, error: { code: -32601, message: `unhandled ${msg.method}` } });
  }
}

let buf = Buffer.alloc(0);
process.stdin.on('data', (chunk) => {
  buf = Buffer.concat([buf, chunk]);
  for (;;) {
    const sep = buf.indexOf('\r\n\r\n');
    if (sep < 0) return;
    const len = Number(/Content-Length: (\d+)/i.exec(buf.subarray(0, sep).toString())[1]);
    if (buf.length < sep + 4 + len) return;
    const body = buf.subarray(sep + 4, sep + 4 + len).toString('utf8');
    buf = buf.subarray(sep + 4 + len);
    handle(JSON.parse(body));
  }
});
process.stdin.on('end', () => process.exit(0));
