/**
 * A fuzz case: what to run (an executor name and its structured-clone-able arguments), and the outcome
 * it must have. Cases are built by the generators in gen/ from the repo's fixtures and run by runner.ts,
 * each inside a child process (worker.ts, or the CLI binary itself) under a time and memory limit.
 */
export type Expect =
  /** Must fail with an MlxcelError of this code ('*': any code) and a message matching `message` when given. */
  | { error: string; message?: RegExp }
  /** Must succeed; the executor checks the output is valid (finite logits, round-trip text, ...). */
  | { ok: true }
  /** Either a valid output, or an MlxcelError (any code) whose message matches `names` (the key/tensor at fault). */
  | { cleanErrorOrOk: RegExp }
  /** Either outcome is acceptable, but an error must be a JS error whose message starts with `prefix`. */
  | { namedErrorOrOk: string }
  /** A CLI run: exit code, one stderr line matching `stderr` (when non-zero). */
  | { exit: number; stderr?: RegExp };

export interface FuzzCase {
  id: string;
  /** Mutation class, for the report (native, config, checkpoint, tokenizer, template, wav, cli, ids). */
  cls: string;
  /** Executor in worker.ts, or 'cli' (spawned directly). */
  op: string;
  args: unknown;
  expect: Expect;
  /** Per-case limits (defaults in runner.ts). */
  timeoutMs?: number;
}

/** What a worker reports for one case. */
export interface CaseResult {
  ok: boolean;
  /** Error fields when !ok. */
  name?: string;
  code?: string;
  message?: string;
  /** Set by executors whose output was checked and found wrong (silently wrong). */
  wrong?: string;
}

export type Verdict = 'pass' | 'crash' | 'hang' | 'oom' | 'silently-wrong' | 'unclear-error';
