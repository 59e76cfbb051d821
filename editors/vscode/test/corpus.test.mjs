// Whole real files through the grammar: every line finishes, the rule stack stays
// bounded, every instruction / computation header starts at the top level (no region
// leaks from one line into the next instruction), the stack is back to the root at
// the end of the file, and the time per MB is reasonable.
//
// Always: the GPU seed dumps (/work/shared/corpus/gpu-from-seeds or examples/gpu) and
// examples/cpu_dump. When /work/shared/corpus exists: a selection of larger and odder
// files. HLO_TM_FULL_CORPUS=1 runs every file of the corpus (about 30 MB).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { INITIAL, loadGrammar } from './tm.mjs';
import { CORPUS, EXAMPLES, GPU_FILES, corpusFile, gpuFile } from './corpus.mjs';

const grammar = await loadGrammar();

const MAX_DEPTH = 16;
const MAX_SECONDS_PER_MB = Number(process.env.HLO_TM_MAX_S_PER_MB || 20);
// lines that start an instruction (`[ROOT] name = shape opcode(`) or a computation
const INSTRUCTION = /^\s*(?:ROOT\s+)?%?[A-Za-z_][\w.\-]*\s*=\s*(?:\(|[a-z][a-z0-9]*\[)/;
const HEADER = /^\s*(?:ENTRY\s+)?%?[A-Za-z_][\w.\-]*\s*\(.*\)\s*->.*\{\s*$/;

const SELECTED = [
  'AI-Hypercomputer__maxtext__tests__utils__reference_hlo_qwen3_1.7b.txt', // TPU: tiled layouts, JSON backend_config, stack frames
  'Junyi-99__hlo-visualizer__examples__v6e-2x2__scan_rnn.after.hlo', // FileNames/StackFrames tables
  'ROCm__xla__perf_tools__hlo_eval_tools__large_language_models__llama3_8b__training__module_0099.jit_train_step.before_optimizations.txt',
  'openxla__xla__xla__tools__benchmarks__hlo__hlo_llama31_8b_bf16_2x8.hlo', // 65k-character lines
  'openxla__xla__xla__backends__gpu__codegen__triton__tests__concat__concat_active_scalar_constant.hlo', // multi-line JSON
  'openxla__xla__xla__translate__hlo_to_mhlo__tests__import.hlotxt', // FileCheck test, every attribute under the sun
  'jax-ml__jax__jaxlib__gpu__triton_add_kernel.hlo', // MLIR dictionary backend_config with an opaque string
  'openxla__xla__xla__tests__fuzz__rand_000001.hlo',
  'HeydrichBeillschmidt__alpa_trimming__tests__hlo__module_0096.func_shard_parallel__2.68.sm_7.0_gpu_after_optimizations.txt', // quoted backend_config
];

function scan(file) {
  const text = fs.readFileSync(file, 'utf8');
  const lines = text.split(/\r?\n/);
  let stack = INITIAL;
  let maxDepth = stack.depth;
  const problems = [];
  const cpu0 = process.cpuUsage(); // processor time: a busy machine does not count (issue 42)
  lines.forEach((line, i) => {
    const r = grammar.tokenizeLine(line, stack);
    if (r.stoppedEarly) problems.push(`line ${i + 1}: tokenizing stopped early`);
    const covered = r.tokens.length ? r.tokens[r.tokens.length - 1].endIndex : 0;
    if (covered < line.length) problems.push(`line ${i + 1}: tokens end at ${covered} of ${line.length}`);
    if (INSTRUCTION.test(line) || HEADER.test(line)) {
      const first = r.tokens.find((tok) => line.slice(tok.startIndex, tok.endIndex).trim());
      const outer = first.scopes.filter((s) => s !== 'source.hlo' && !s.startsWith('meta.computation.header'));
      if (outer.length !== 1) problems.push(`line ${i + 1}: starts inside ${first.scopes.join(' | ')}`);
    }
    stack = r.ruleStack;
    maxDepth = Math.max(maxDepth, stack.depth);
  });
  const cpu = process.cpuUsage(cpu0);
  const seconds = (cpu.user + cpu.system) / 1e6;
  if (maxDepth > MAX_DEPTH) problems.push(`rule stack reached depth ${maxDepth}`);
  if (stack.depth !== INITIAL.depth) problems.push(`rule stack depth ${stack.depth} at the end of the file`);
  return { bytes: Buffer.byteLength(text), seconds, problems, lines: lines.length };
}

function check(file) {
  const r = scan(file);
  assert.deepEqual(r.problems.slice(0, 20), [], `${path.basename(file)}`);
  return r;
}

test('GPU seed dumps tokenize cleanly', () => {
  for (const name of GPU_FILES) check(gpuFile(name));
});

test('examples/cpu_dump tokenizes cleanly', (t) => {
  const dir = path.join(EXAMPLES, 'cpu_dump');
  if (!fs.existsSync(dir)) return t.skip('examples/cpu_dump not generated');
  const files = fs.readdirSync(dir).filter((f) => /optimizations\.txt$/.test(f));
  assert.ok(files.length > 0);
  for (const f of files) check(path.join(dir, f));
});

test('selected corpus files tokenize cleanly and fast enough', (t) => {
  const files = SELECTED.map(corpusFile).filter(Boolean);
  if (files.length === 0) return t.skip('shared corpus not present');
  let bytes = 0;
  let seconds = 0;
  for (const f of files) {
    const r = check(f);
    bytes += r.bytes;
    seconds += r.seconds;
  }
  const perMB = seconds / (bytes / 1e6);
  t.diagnostic(`${files.length} files, ${(bytes / 1e6).toFixed(2)} MB in ${seconds.toFixed(2)} s: ${perMB.toFixed(2)} s/MB`);
  assert.ok(perMB < MAX_SECONDS_PER_MB, `${perMB.toFixed(2)} s/MB (limit ${MAX_SECONDS_PER_MB})`);
});

test('every corpus file (HLO_TM_FULL_CORPUS=1)', { skip: process.env.HLO_TM_FULL_CORPUS !== '1' }, (t) => {
  if (!fs.existsSync(CORPUS)) return t.skip('shared corpus not present');
  const files = [];
  for (const dir of [CORPUS, path.join(CORPUS, 'gpu-from-seeds')]) {
    for (const f of fs.readdirSync(dir)) {
      if (/\.(hlo|txt|hlotxt)$/.test(f) && !/^(README|SOURCES)/.test(f)) files.push(path.join(dir, f));
    }
  }
  const failures = [];
  let bytes = 0;
  let seconds = 0;
  for (const f of files) {
    const r = scan(f);
    bytes += r.bytes;
    seconds += r.seconds;
    // protobuf text dumps that happen to sit in the corpus are not HLO text
    if (r.problems.length && !/^\s*hlo_module\s*\{/m.test(fs.readFileSync(f, 'utf8'))) failures.push(`${path.basename(f)}: ${r.problems.slice(0, 3).join('; ')}`);
  }
  t.diagnostic(`${files.length} files, ${(bytes / 1e6).toFixed(2)} MB, ${(seconds / (bytes / 1e6)).toFixed(2)} s/MB`);
  assert.deepEqual(failures, []);
});
