/**
 * Runs fuzz cases in child processes with a time and a memory limit and classifies each outcome:
 * - crash: the child died (signal, abort, non-zero exit) while running the case;
 * - hang: it ran past the case's time limit;
 * - oom: its resident memory passed the limit, or V8 ran out of heap;
 * - silently-wrong: an expected error did not happen, or a valid-output check failed;
 * - unclear-error: it failed, but not with the expected code / a message naming what is wrong;
 * - pass.
 * Worker children are reused across cases (forking one per case would cost ~0.3 s each); after any
 * crash, hang or OOM the child is replaced, so every case starts in a healthy process.
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { CaseResult, Expect, FuzzCase, Verdict } from './types.js';

const WORKER = fileURLToPath(new URL('./worker.js', import.meta.url));
export const CLI_BIN = fileURLToPath(new URL('../../cli/dist/bin.js', import.meta.url));

export interface Limits {
  timeoutMs: number;
  /** Resident set size limit of a case's process, bytes. */
  rssBytes: number;
  heapMb: number;
}
export const DEFAULT_LIMITS: Limits = { timeoutMs: 20_000, rssBytes: 1.5 * 2 ** 30, heapMb: 1024 };

export interface Outcome {
  c: FuzzCase;
  verdict: Verdict;
  detail: string;
  ms: number;
}

function rssOf(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** Judges a worker result against the case's expectation. */
export function judge(e: Expect, r: CaseResult): [Verdict, string] {
  if ('error' in e) {
    if (r.ok) return ['silently-wrong', `expected ${e.error}, but it succeeded${r.wrong ? ` (${r.wrong})` : ''}`];
    if (e.error === '*' ? !r.code : r.code !== e.error) return ['unclear-error', `expected ${e.error}, got ${r.code ?? r.name}: ${r.message}`];
    if (e.message && !e.message.test(r.message ?? '')) return ['unclear-error', `${r.code}: message ${JSON.stringify(r.message)} does not match ${e.message}`];
    return ['pass', `${r.code}: ${r.message}`];
  }
  if ('ok' in e) {
    if (!r.ok) return ['unclear-error', `expected success, got ${r.code ?? r.name}: ${r.message}`];
    if (r.wrong) return ['silently-wrong', r.wrong];
    return ['pass', 'ok'];
  }
  if ('cleanErrorOrOk' in e) {
    if (r.ok) return r.wrong ? ['silently-wrong', r.wrong] : ['pass', 'ok'];
    if (!r.code || !e.cleanErrorOrOk.test(r.message ?? '')) return ['unclear-error', `${r.code ?? r.name}: ${r.message} (expected a coded error matching ${e.cleanErrorOrOk})`];
    return ['pass', `${r.code}: ${r.message}`];
  }
  if ('namedErrorOrOk' in e) {
    if (r.ok) return r.wrong ? ['silently-wrong', r.wrong] : ['pass', 'ok'];
    if (!(r.message ?? '').startsWith(e.namedErrorOrOk)) return ['unclear-error', `${r.name}: ${r.message} (expected a message starting "${e.namedErrorOrOk}")`];
    return ['pass', `${r.name}: ${r.message}`];
  }
  return ['unclear-error', 'a CLI expectation reached a worker'];
}

class Worker {
  child!: ChildProcess;
  ready!: Promise<void>;
  constructor(private readonly limits: Limits) {
    this.start();
  }
  start(): void {
    this.child = fork(WORKER, [], {
      serialization: 'advanced',
      execArgv: [`--max-old-space-size=${this.limits.heapMb}`],
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      env: { ...process.env, MLXCEL_THREADS: '1' },  // one thread per worker: the pool runs workers in parallel
    });
    this.child.stderr!.on('data', () => {});
    this.ready = new Promise((res) => this.child.once('message', () => res()));
  }
  kill(): void {
    this.child.removeAllListeners();
    this.child.kill('SIGKILL');
  }
  async run(c: FuzzCase): Promise<Outcome> {
    await this.ready;
    const t0 = Date.now();
    const timeoutMs = c.timeoutMs ?? this.limits.timeoutMs;
    let stderr = '';
    const onErr = (d: Buffer) => { stderr += d.toString(); if (stderr.length > 8192) stderr = stderr.slice(-8192); };
    this.child.stderr!.on('data', onErr);
    const outcome = await new Promise<[Verdict, string] | CaseResult>((resolve) => {
      const timer = setTimeout(() => done(['hang', `no result after ${timeoutMs} ms`]), timeoutMs);
      const poll = setInterval(() => {
        const rss = rssOf(this.child.pid!);
        if (rss > this.limits.rssBytes) done(['oom', `resident memory ${Math.round(rss / 2 ** 20)} MB passed the ${Math.round(this.limits.rssBytes / 2 ** 20)} MB limit`]);
      }, 50);
      const onMessage = (m: { result: CaseResult }) => done(m.result);
      const onExit = (code: number | null, signal: string | null) => {
        const heap = /heap out of memory|Allocation failed/.test(stderr);
        done([heap ? 'oom' : 'crash', `worker exited (code ${code}, signal ${signal})${heap ? ': V8 heap exhausted' : ''} ${stderr.trim().split('\n').slice(-2).join(' | ')}`]);
      };
      const done = (v: [Verdict, string] | CaseResult) => {
        clearTimeout(timer);
        clearInterval(poll);
        this.child.off('message', onMessage);
        this.child.off('exit', onExit);
        resolve(v);
      };
      this.child.once('message', onMessage);
      this.child.once('exit', onExit);
      this.child.send(c);
    });
    this.child.stderr!.off('data', onErr);
    const ms = Date.now() - t0;
    if (Array.isArray(outcome)) {
      this.kill();
      this.start();
      return { c, verdict: outcome[0], detail: outcome[1], ms };
    }
    const [verdict, detail] = judge(c.expect, outcome);
    return { c, verdict, detail, ms };
  }
}

/** A CLI case: the CLI process is the case's child; its exit code and stderr are checked. */
export function runCli(c: FuzzCase, limits: Limits): Promise<Outcome> {
  const { argv, env, input } = c.args as { argv: string[]; env?: Record<string, string>; input?: string };
  const e = c.expect as { exit: number; stderr?: RegExp };
  const t0 = Date.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [`--max-old-space-size=${limits.heapMb}`, CLI_BIN, ...argv], {
      env: { ...process.env, NO_COLOR: '1', MLXCEL_THREADS: '1', ...env }, stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stderr = '';
    let verdict: [Verdict, string] | null = null;
    child.stderr.on('data', (d) => (stderr += d));
    child.stdout.on('data', () => {});
    const timer = setTimeout(() => { verdict = ['hang', `no exit after ${c.timeoutMs ?? limits.timeoutMs} ms`]; child.kill('SIGKILL'); }, c.timeoutMs ?? limits.timeoutMs);
    const poll = setInterval(() => {
      if (rssOf(child.pid!) > limits.rssBytes) { verdict = ['oom', 'resident memory passed the limit']; child.kill('SIGKILL'); }
    }, 50);
    child.on('close', (code, signal) => {
      clearTimeout(timer); clearInterval(poll);
      const ms = Date.now() - t0;
      if (verdict) return resolve({ c, verdict: verdict[0], detail: verdict[1], ms });
      if (signal) return resolve({ c, verdict: 'crash', detail: `killed by ${signal}: ${stderr.slice(-300)}`, ms });
      if (/heap out of memory/.test(stderr)) return resolve({ c, verdict: 'oom', detail: 'V8 heap exhausted', ms });
      if (code !== e.exit) {
        const v: Verdict = e.exit === 0 ? 'unclear-error' : code === 0 ? 'silently-wrong' : 'unclear-error';
        return resolve({ c, verdict: v, detail: `exit ${code} (expected ${e.exit}): ${stderr.trim().slice(-300)}`, ms });
      }
      if (e.exit !== 0) {
        const lines = stderr.trim().split('\n').filter((l) => !l.startsWith('(run with --verbose'));
        if (/\n\s+at /.test(stderr)) return resolve({ c, verdict: 'unclear-error', detail: `stack trace on stderr: ${stderr.slice(0, 300)}`, ms });
        if (e.stderr && !lines.some((l) => e.stderr!.test(l))) return resolve({ c, verdict: 'unclear-error', detail: `stderr ${JSON.stringify(stderr.slice(0, 300))} does not match ${e.stderr}`, ms });
      }
      resolve({ c, verdict: 'pass', detail: stderr.trim().split('\n')[0] ?? '', ms });
    });
    child.stdin.end(input ?? '');
  });
}

/** Runs every case with `parallel` workers; `onDone` sees each outcome as it arrives. */
export async function runAll(cases: FuzzCase[], parallel: number, limits: Limits, onDone: (o: Outcome) => void): Promise<Outcome[]> {
  const queue = [...cases];
  const out: Outcome[] = [];
  const lanes = Array.from({ length: parallel }, async () => {
    const w = new Worker(limits);
    try {
      for (let c = queue.shift(); c; c = queue.shift()) {
        const o = c.op === 'cli' ? await runCli(c, limits) : await w.run(c);
        out.push(o);
        onDone(o);
      }
    } finally {
      w.kill();
    }
  });
  await Promise.all(lanes);
  return out;
}
