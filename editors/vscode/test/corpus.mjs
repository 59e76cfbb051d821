// Where the real HLO text used by the tests lives. /work/shared (the read-only corpus,
// a sibling of the repository) is optional; examples/ in the repository is always there.
import fs from 'node:fs';
import path from 'node:path';
import { REPO } from './tm.mjs';

export const SHARED = process.env.HLO_SHARED_DIR || path.resolve(REPO, '..', 'shared');
export const CORPUS = path.join(SHARED, 'corpus');
export const EXAMPLES = path.join(REPO, 'examples');

export const GPU_FILES = [
  'jit_matmul_fn.fp8_cublaslt.sm90_gpu_after_optimizations.txt',
  'jit_matmul_fn_with_scale.fp8_cublaslt_fused.gpu_after_optimizations.txt',
  'jit_matmul_fn_with_scale.fp8_gemm_fusion.gpu_after_optimizations.txt',
];

/** A GPU seed dump: from /work/shared/corpus/gpu-from-seeds if present, else the byte copy in examples/gpu. */
export function gpuFile(name) {
  const shared = path.join(CORPUS, 'gpu-from-seeds', name);
  if (fs.existsSync(shared)) return shared;
  const local = path.join(EXAMPLES, 'gpu', name);
  if (fs.existsSync(local)) return local;
  throw new Error(`${name}: neither in ${path.dirname(shared)} nor in ${path.dirname(local)}`);
}

/** A file of the shared corpus, or undefined when the corpus is not on this machine. */
export function corpusFile(name) {
  const p = path.join(CORPUS, name);
  return fs.existsSync(p) ? p : undefined;
}

/** The CPU dump in examples/cpu_dump, or undefined when it has not been generated. */
export function cpuDumpFile(name) {
  const p = path.join(EXAMPLES, 'cpu_dump', name);
  return fs.existsSync(p) ? p : undefined;
}

export function readLines(file) {
  return fs.readFileSync(file, 'utf8').split(/\r?\n/);
}
