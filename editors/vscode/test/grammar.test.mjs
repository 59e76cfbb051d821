// Scopes that the grammar gives to real lines of HLO text, tokenized with vscode-textmate
// and vscode-oniguruma (the engine VS Code uses). Lines come from the GPU seed dumps
// (/work/shared/corpus/gpu-from-seeds or their copies in examples/gpu), the CPU dump in
// examples/cpu_dump, and, when present, other files of /work/shared/corpus.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadGrammar, tokenizeLines } from './tm.mjs';
import { corpusFile, cpuDumpFile, gpuFile, readLines } from './corpus.mjs';

const grammar = await loadGrammar();

/** Tokenizes a whole file and returns the tokenized lines (context from earlier lines kept). */
function tokenizeFile(file) {
  return tokenizeLines(grammar, readLines(file)).lines;
}

/** The first tokenized line of `file` containing `needle`. */
function lineWith(file, needle) {
  const line = tokenizeFile(file).find((l) => l.line.includes(needle));
  assert.ok(line, `no line containing ${JSON.stringify(needle)} in ${file}`);
  return line;
}

/** The `nth` token whose text is exactly `text` (substrings of longer tokens do not count). */
function token(line, text, nth = 0) {
  let seen = 0;
  for (let at = line.line.indexOf(text); at >= 0; at = line.line.indexOf(text, at + 1)) {
    const tok = line.tokens.find((t) => t.start === at && t.end === at + text.length);
    if (tok && seen++ === nth) return tok;
  }
  const near = line.tokens.filter((t) => t.text.includes(text)).map((t) => `${JSON.stringify(t.text)} ${t.scopes.join(' ')}`);
  assert.fail(`no token ${JSON.stringify(text)} #${nth} in: ${line.line.slice(0, 200)}\n  tokens containing it: ${near.join('; ')}`);
}

/** Tokens overlapping [from, to) in the line. */
function tokensIn(line, from, to) {
  return line.tokens.filter((t) => t.end > from && t.start < to);
}

function hasScope(tok, scope) {
  return tok.scopes.includes(scope);
}

function assertScope(tok, scope) {
  assert.ok(hasScope(tok, scope), `${JSON.stringify(tok.text)}: expected ${scope}, got ${tok.scopes.join(' | ')}`);
}

function assertNoScopeLike(tok, prefix) {
  const hit = tok.scopes.find((s) => s.startsWith(prefix));
  assert.ok(!hit, `${JSON.stringify(tok.text)}: unexpected ${hit} in ${tok.scopes.join(' | ')}`);
}

const SEED0 = gpuFile('jit_matmul_fn.fp8_cublaslt.sm90_gpu_after_optimizations.txt');
const SEED1_FUSED = gpuFile('jit_matmul_fn_with_scale.fp8_cublaslt_fused.gpu_after_optimizations.txt');
const SEED1_FUSION = gpuFile('jit_matmul_fn_with_scale.fp8_gemm_fusion.gpu_after_optimizations.txt');
const CPU_TRAIN = cpuDumpFile('module_0028.jit_train_step.cpu_after_optimizations.txt');

test('opcodes: the word after the result shape', () => {
  const gemm = lineWith(SEED0, '%cublas-gemm.1.0 = ');
  assertScope(token(gemm, 'custom-call'), 'support.function.opcode.hlo');
  const root = lineWith(SEED0, 'ROOT %get-tuple-element.1 = ');
  assertScope(token(root, 'get-tuple-element'), 'support.function.opcode.hlo');
  const param = lineWith(SEED0, '%Arg_1.2.0 = f8e5m2[128,128]{1,0} parameter(1)');
  assertScope(token(param, 'parameter'), 'support.function.opcode.hlo');
  const fusion = lineWith(SEED1_FUSION, '%gemm_fusion_dot.19.0 = ');
  assertScope(token(fusion, 'fusion'), 'support.function.opcode.hlo');
  // the opcode of a tuple-shaped instruction: `(..., ...) custom-call(`
  const fused = lineWith(SEED1_FUSED, '%cublas-gemm.clone.1.0 = ');
  assertScope(token(fused, 'custom-call'), 'support.function.opcode.hlo');
  // names that look like opcodes are not opcodes
  assertNoScopeLike(token(gemm, '%cublas-gemm.1.0'), 'support.function');
});

test('element types and dimensions in shapes', () => {
  const line = lineWith(SEED0, '%cublas-gemm.1.0 = ');
  for (const ty of ['f8e5m2', 's8', 'f8e4m3fn', 'f32']) {
    const tok = token(line, ty);
    assertScope(tok, 'storage.type.hlo');
    assertScope(tok, 'meta.shape.hlo');
  }
  assertScope(token(line, '33554432'), 'constant.numeric.dimension.hlo');
  // shapes in a computation header's parameter list
  const header = lineWith(SEED0, 'ENTRY %main.4 (');
  const ty = token(header, 'f8e4m3fn');
  assertScope(ty, 'storage.type.hlo');
  assertScope(ty, 'meta.parameters.hlo');
});

test('layouts after a shape are meta.layout.hlo', () => {
  const line = lineWith(SEED0, '%Arg_0.1.0 = f8e4m3fn[128,128]{1,0} parameter(0)');
  const at = line.line.indexOf('{1,0}');
  const toks = tokensIn(line, at, at + '{1,0}'.length);
  assert.equal(toks.map((t) => t.text).join(''), '{1,0}');
  for (const t of toks) assertScope(t, 'meta.layout.hlo');
  assertScope(toks[1], 'constant.numeric.layout.hlo');
  // braces that are not layouts are not
  const transpose = lineWith(SEED0, 'ROOT %transpose.1.1 = ');
  const dims = transpose.line.indexOf('dimensions={1,0}') + 'dimensions='.length;
  for (const t of tokensIn(transpose, dims, dims + 5)) assertNoScopeLike(t, 'meta.layout');
});

test('tiled TPU layouts {1,0:T(8,128)(2,1)S(1)} (shared corpus)', (t) => {
  const file = corpusFile('AI-Hypercomputer__maxtext__tests__utils__reference_hlo_qwen3_1.7b.txt');
  if (!file) return t.skip('shared corpus not present');
  const line = lineWith(file, '{1,0:T(8,128)(2,1)S(1)}');
  const at = line.line.indexOf('{1,0:T(8,128)(2,1)S(1)}');
  const toks = tokensIn(line, at, at + '{1,0:T(8,128)(2,1)S(1)}'.length);
  for (const tok of toks) assertScope(tok, 'meta.layout.hlo');
  const tiles = toks.filter((tok) => tok.text === 'T' || tok.text === 'S');
  assert.equal(tiles.length, 2);
  for (const tok of tiles) assertScope(tok, 'storage.modifier.layout.hlo');
});

test('instruction definitions vs uses', () => {
  const def = lineWith(SEED0, '%cublas-gemm.1.0 = ');
  assertScope(token(def, '%cublas-gemm.1.0'), 'variable.other.definition.hlo');
  const root = lineWith(SEED0, 'ROOT %get-tuple-element.1 = ');
  assertScope(token(root, 'ROOT'), 'keyword.other.root.hlo');
  assertScope(token(root, '%get-tuple-element.1'), 'variable.other.definition.hlo');
  const use = token(root, '%cublas-gemm.1.0');
  assertScope(use, 'variable.other.hlo');
  assert.ok(!hasScope(use, 'variable.other.definition.hlo'));
  // operands printed with shapes (as_text) and several operands
  assertScope(token(def, '%Arg_0.1.0'), 'variable.other.hlo');
  assertScope(token(def, '%wrapped_transpose'), 'variable.other.hlo');
  // parameters of a computation header
  const header = lineWith(SEED0, 'ENTRY %main.4 (');
  assertScope(token(header, 'Arg_0.1.0'), 'variable.parameter.hlo');
});

test('computation definitions vs references (calls=, to_apply=, condition=, body=, branch_computations=)', () => {
  const header = lineWith(SEED0, '%wrapped_transpose_computation (param_0');
  assertScope(token(header, '%wrapped_transpose_computation'), 'entity.name.function.hlo');
  const entry = lineWith(SEED0, 'ENTRY %main.4 (');
  assertScope(token(entry, 'ENTRY'), 'keyword.other.entry.hlo');
  assertScope(token(entry, '%main.4'), 'entity.name.function.hlo');
  const fusion = lineWith(SEED0, 'calls=%wrapped_transpose_computation');
  const ref = token(fusion, '%wrapped_transpose_computation');
  assertScope(ref, 'entity.name.function.call.hlo');
  assert.ok(!hasScope(ref, 'entity.name.function.hlo'));
  assertScope(token(fusion, 'calls'), 'entity.other.attribute-name.hlo');
  assertScope(token(fusion, 'kInput'), 'constant.other.enum.hlo');
  const fusions = lineWith(SEED1_FUSION, 'calls=%gemm_fusion_dot.19_computation');
  assertScope(token(fusions, '%gemm_fusion_dot.19_computation'), 'entity.name.function.call.hlo');
  const fusionHeader = lineWith(SEED1_FUSION, '%gemm_fusion_dot.19_computation (');
  assertScope(token(fusionHeader, '%gemm_fusion_dot.19_computation'), 'entity.name.function.hlo');
});

test('computation references in the CPU dump (while, conditional, reduce)', (t) => {
  if (!CPU_TRAIN) return t.skip('examples/cpu_dump not generated');
  const w = lineWith(CPU_TRAIN, ' while(');
  const cond = w.line.match(/condition=(%[\w.\-]+)/)[1];
  const body = w.line.match(/body=(%[\w.\-]+)/)[1];
  assertScope(token(w, cond), 'entity.name.function.call.hlo');
  assertScope(token(w, body), 'entity.name.function.call.hlo');
  const c = lineWith(CPU_TRAIN, 'branch_computations={');
  const branches = c.line.match(/branch_computations=\{([^}]*)\}/)[1].split(',').map((s) => s.trim());
  assert.ok(branches.length >= 2);
  branches.forEach((b) => assertScope(token(c, b), 'entity.name.function.call.hlo'));
  const r = lineWith(CPU_TRAIN, 'to_apply=');
  assertScope(token(r, r.line.match(/to_apply=(%[\w.\-]+)/)[1]), 'entity.name.function.call.hlo');
});

test('metadata={...} is one dimmed region (comment.block.metadata.hlo)', () => {
  const line = lineWith(SEED0, '%cublas-gemm.1.0 = ');
  const from = line.line.indexOf('metadata={');
  const to = line.line.indexOf('}, backend_config=') + 1;
  assert.ok(from > 0 && to > from);
  const region = tokensIn(line, from, to);
  assert.equal(region.map((t) => t.text).join(''), line.line.slice(from, to));
  for (const tok of region) {
    assertScope(tok, 'meta.metadata.hlo');
    assertScope(tok, 'comment.block.metadata.hlo');
    // nothing inside gets a scope that themes colour differently from comments
    for (const p of ['string.', 'constant.', 'entity.', 'keyword.', 'variable.', 'support.', 'storage.']) assertNoScopeLike(tok, p);
  }
  // op_name's value contains brackets and parentheses: still inside, and the region ends at its `}`
  assert.ok(region.some((t) => t.text.includes('dot_general[dimension_numbers=')));
  const after = tokensIn(line, to, line.line.length);
  for (const tok of after) assert.ok(!hasScope(tok, 'meta.metadata.hlo'), `${tok.text} leaked into metadata`);
  // the same on a short metadata and in the CPU dump (stack_frame_id)
  const b = lineWith(SEED0, '%Arg_1.2.0 = f8e5m2[128,128]{1,0} parameter(1), metadata={op_name="b"}');
  assertScope(token(b, 'op_name'), 'comment.block.metadata.hlo');
});

test('backend_config JSON: keys, strings, numbers, booleans', () => {
  const line = lineWith(SEED0, 'backend_config={"operation_queue_id"');
  for (const key of ['"operation_queue_id"', '"gemm_backend_config"', '"alpha_real"', '"selected_algorithm"', '"epilogue"']) {
    const tok = token(line, key);
    assertScope(tok, 'support.type.property-name.json.hlo');
    assertScope(tok, 'meta.backend-config.hlo');
  }
  assertScope(token(line, '"DEFAULT"'), 'string.quoted.double.json.hlo');
  assertScope(token(line, 'false'), 'constant.language.json.hlo');
  const alpha = line.line.indexOf('"alpha_real":1') + '"alpha_real":'.length;
  assertScope(line.tokens.find((t) => t.start === alpha), 'constant.numeric.json.hlo');
  assertScope(token(line, 'backend_config'), 'entity.other.attribute-name.hlo');
  // the region closes with the JSON object: the line ends at top level
  const last = line.tokens[line.tokens.length - 1];
  assert.equal(last.text, '}');
  assert.ok(hasScope(last, 'meta.backend-config.hlo'));
});

test('backend_config JSON in the CPU dump', (t) => {
  if (!CPU_TRAIN) return t.skip('examples/cpu_dump not generated');
  const line = lineWith(CPU_TRAIN, '"fusion_config":{"kind":"__ynn_fusion"}');
  assertScope(token(line, '"fusion_config"'), 'support.type.property-name.json.hlo');
  assertScope(token(line, '"__ynn_fusion"'), 'string.quoted.double.json.hlo');
});

test('multi-line backend_config JSON (shared corpus)', (t) => {
  const file = corpusFile('openxla__xla__xla__backends__gpu__codegen__triton__tests__concat__concat_active_scalar_constant.hlo');
  if (!file) return t.skip('shared corpus not present');
  const lines = tokenizeFile(file);
  const i = lines.findIndex((l) => /backend_config=\{\s*$/.test(l.line));
  assert.ok(i > 0);
  const key = lines.slice(i + 1).find((l) => l.line.includes('"num_warps"'));
  assertScope(token(key, '"num_warps"'), 'support.type.property-name.json.hlo');
  const close = lines.slice(i + 1).find((l) => /^\s*\}\s*$/.test(l.line) && l.tokens.some((tok) => hasScope(tok, 'meta.backend-config.hlo')));
  assert.ok(close, 'the JSON object closes');
});

test('comments: /*index=5*/ between operands', () => {
  const line = lineWith(SEED0, '/*index=5*/');
  const at = line.line.indexOf('/*index=5*/');
  const toks = tokensIn(line, at, at + '/*index=5*/'.length);
  assert.equal(toks.map((x) => x.text).join(''), '/*index=5*/');
  for (const tok of toks) assertScope(tok, 'comment.block.hlo');
  // the operand after the comment is still an operand
  assertScope(line.tokens.find((x) => x.start === at + '/*index=5*/'.length), 'storage.type.hlo');
  assertScope(token(line, '%constant_1', 3), 'variable.other.hlo');
});

test('comments: // line comments (shared corpus)', (t) => {
  const file = corpusFile('jax-ml__jax__jaxlib__gpu__triton_add_kernel.hlo') ?? corpusFile('openxla__xla__xla__backends__cpu__benchmarks__hlo__diffrax.b380012920.hlo');
  if (!file) return t.skip('shared corpus not present');
  const c = tokenizeFile(file).find((l) => l.line.trimStart().startsWith('//'));
  assert.ok(c, 'a // comment line');
  for (const tok of c.tokens.filter((x) => x.text.trim())) assertScope(tok, 'comment.line.double-slash.hlo');
});

test('module header, attributes and stack-frame tables', (t) => {
  const header = lineWith(SEED0, 'HloModule jit_matmul_fn');
  assertScope(token(header, 'HloModule'), 'keyword.other.module.hlo');
  assertScope(token(header, 'jit_matmul_fn'), 'entity.name.namespace.module.hlo');
  assertScope(token(header, 'entry_computation_layout'), 'entity.other.attribute-name.hlo');
  assertScope(token(header, '->'), 'keyword.operator.arrow.hlo');
  assertScope(token(header, 'true'), 'constant.language.boolean.hlo');
  // a custom_call_target is a string
  const gemm = lineWith(SEED0, 'custom_call_target="__cublas$lt$matmul$f8"');
  assertScope(token(gemm, '__cublas$lt$matmul$f8'), 'string.quoted.double.hlo');
  if (!CPU_TRAIN) return t.skip('examples/cpu_dump not generated');
  const lines = tokenizeFile(CPU_TRAIN);
  for (const table of ['FileNames', 'FunctionNames', 'FileLocations', 'StackFrames']) {
    const l = lines.find((x) => x.line === table);
    assert.ok(l, table);
    assertScope(token(l, table), 'keyword.other.table.hlo');
  }
  const loc = lines.find((x) => /^\d+ \{file_name_id=/.test(x.line));
  assertScope(loc.tokens[0], 'constant.numeric.id.hlo');
  assertScope(token(loc, 'file_name_id'), 'entity.other.attribute-name.hlo');
  const name = lines.find((x) => /^\d+ "/.test(x.line));
  assertScope(name.tokens.find((x) => x.text.length > 1 && hasScope(x, 'string.quoted.double.hlo')), 'string.quoted.double.hlo');
});
