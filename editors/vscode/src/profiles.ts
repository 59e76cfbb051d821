// The pure part of *HLO: Load Profile...* (docs/protocol.md, "Profiles"): the server's
// `hlo/profileRuns` answer validated, the runs offered newest first, and the arguments
// of the server command `hlo.loadProfile`. No `vscode` import (tested in Node).

export const LOAD_PROFILE = 'hlo.loadProfile';
export const PROFILE_RUNS_METHOD = 'hlo/profileRuns';

/** One capture of jax.profiler: its directory and name (the capture time). */
export interface ProfileRun {
  path: string;
  name: string;
}

/** `hlo/profileRuns`: the runs oldest first, the run loaded now, a sentence for the user. */
export interface ProfileRuns {
  runs: ProfileRun[];
  loaded: string | null;
  message: string;
}

/** The argument of `hlo.loadProfile`: the document and a run or a directory of runs (none: the newest near it). */
export interface LoadProfileArgument {
  uri: string;
  path?: string;
}

/** The `hlo/profileRuns` result, or undefined when it is not one. */
export function parseProfileRuns(result: unknown): ProfileRuns | undefined {
  if (!result || typeof result !== 'object') return undefined;
  const r = result as Record<string, unknown>;
  if (!Array.isArray(r.runs)) return undefined;
  const runs = r.runs.filter(
    (x): x is ProfileRun => !!x && typeof x === 'object' && typeof (x as ProfileRun).path === 'string' && typeof (x as ProfileRun).name === 'string',
  );
  return {
    runs,
    loaded: typeof r.loaded === 'string' ? r.loaded : null,
    message: typeof r.message === 'string' ? r.message : '',
  };
}

/**
 * The command's argument when the caller gave one (`[{uri, path?}]`, or `[uri, path?]`
 * with strings or Uris); undefined when it gave no document.
 */
export function loadProfileArgument(args: readonly unknown[]): LoadProfileArgument | undefined {
  const first = args[0];
  const str = (v: unknown): string | undefined =>
    typeof v === 'string' ? v : v && typeof v === 'object' && 'scheme' in v ? String(v) : undefined;
  if (first && typeof first === 'object' && 'uri' in first) {
    const o = first as Record<string, unknown>;
    const uri = str(o.uri);
    if (!uri) return undefined;
    return typeof o.path === 'string' && o.path ? { uri, path: o.path } : { uri };
  }
  const uri = str(first);
  if (!uri) return undefined;
  return typeof args[1] === 'string' && args[1] ? { uri, path: args[1] } : { uri };
}

/** True when the user is to choose (from the palette or a menu: no directory given). */
export function profileNeedsChoice(args: readonly unknown[]): boolean {
  return loadProfileArgument(args)?.path === undefined;
}

/** `2026_11_29_06_10_12` -> `2026-11-29 06:10:12`; other names as they are. */
export function runLabel(name: string): string {
  const m = /^(\d{4})_(\d\d)_(\d\d)_(\d\d)_(\d\d)_(\d\d)$/.exec(name);
  return m ? `${m[1]}-${m[2]}-${m[3]} ${m[4]}:${m[5]}:${m[6]}` : name;
}

/** The runs as QuickPick items, newest first (the first is the one preselected). */
export function runItems(found: ProfileRuns): { label: string; description: string; detail: string; run: ProfileRun }[] {
  const runs = [...found.runs].reverse();
  return runs.map((run, i) => ({
    label: runLabel(run.name),
    description: [i === 0 ? 'newest' : '', run.path === found.loaded ? 'loaded now' : ''].filter(Boolean).join(', '),
    detail: run.path,
    run,
  }));
}
