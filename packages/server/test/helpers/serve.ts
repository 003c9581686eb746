/** Spawns a real `mlxcel serve` (the built CLI) on loopback and waits until its model is loaded. */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { tinyModel } from './tiny-model.js';

const CLI = fileURLToPath(new URL('../../../cli/dist/bin.js', import.meta.url));

export interface Served {
  base: string;
  proc: ChildProcess;
  /** Everything the server wrote so far (stdout: pino JSON lines; stderr: CLI notices). */
  stdout: () => string;
  stderr: () => string;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
  stop(): Promise<void>;
}

/** `model`: the checkpoint folder to serve (default the tiny Phi-3 model). */
export async function serve(args: string[] = [], env: Record<string, string> = {}, model: string = tinyModel()): Promise<Served> {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: build the CLI first (pnpm -r build)`);
  const proc = spawn(process.execPath, [CLI, 'serve', '--model', model, '--port', '0', '--log-level', 'info', ...args], {
    env: { ...process.env, MLXCEL_THREADS: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '', err = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (err += d));
  const exited = new Promise<number | null>((r) => proc.on('exit', (code) => r(code)));
  const base = await new Promise<string>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`server did not start:\n${err}`)), 30_000);
    const check = () => {
      const m = /listening on (http:\/\/[^\s]+)/.exec(err);
      if (m && /mlxcel serving/.test(err)) {
        clearTimeout(t);
        resolve(m[1]!);
      }
    };
    proc.stderr!.on('data', check);
    void exited.then((code) => reject(new Error(`server exited with ${code}:\n${err}`)));
  });
  return {
    base,
    proc,
    stdout: () => out,
    stderr: () => err,
    exited,
    stop: async () => {
      if (proc.exitCode === null) proc.kill('SIGKILL');
      await exited;
    },
  };
}

/** POST JSON (any string body) and return status, headers and parsed JSON. */
export async function post(base: string, path: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; json: any }> {
  const r = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await r.text();
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: r.status, headers: r.headers, json };
}

/** The `data:` payloads of an SSE body, [DONE] included as the string. */
export function sseEvents(text: string): any[] {
  return text.split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => {
    const d = e.slice('data: '.length);
    return d === '[DONE]' ? d : JSON.parse(d);
  });
}
