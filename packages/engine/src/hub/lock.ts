/**
 * A lock file next to a blob being downloaded, so that two processes fetching the same model (a CLI
 * run while a server starts, two test workers) do not both append to one `.incomplete` file. The
 * file holds `pid@host`; a lock whose process is gone (same host) or that has not been touched for
 * `staleMs` (another host, e.g. a shared cache on NFS) is taken over. The holder touches it while it
 * downloads.
 */
import { hostname } from 'node:os';
import { open, readFile, rm, stat, utimes } from 'node:fs/promises';
import { MlxcelError } from '../errors.js';

export interface FileLock {
  /** Marks the lock as alive (call while working). */
  touch(): Promise<void>;
  release(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'; // exists, owned by someone else
  }
}

async function isStale(path: string, staleMs: number): Promise<boolean> {
  let text: string, mtime: number;
  try {
    [text, mtime] = await Promise.all([readFile(path, 'utf8'), stat(path).then((s) => s.mtimeMs)]);
  } catch {
    return false; // gone already: the next attempt takes it
  }
  const m = /^(\d+)@(.*)$/.exec(text.trim());
  if (m && m[2] === hostname()) return !processAlive(Number(m[1]));
  return Date.now() - mtime > staleMs;
}

/**
 * Takes `path` (exclusive create), waiting while another live holder has it. `done()` is checked
 * while waiting: when it turns true (the other holder finished the work) this resolves to null.
 */
export async function acquireLock(
  path: string,
  opts: { signal?: AbortSignal; staleMs?: number; pollMs?: number; done?: () => boolean; what: string },
): Promise<FileLock | null> {
  const staleMs = opts.staleMs ?? 10 * 60_000;
  for (;;) {
    if (opts.signal?.aborted) throw opts.signal.reason;
    if (opts.done?.()) return null;
    try {
      const fh = await open(path, 'wx');
      await fh.writeFile(`${process.pid}@${hostname()}`);
      await fh.close();
      return {
        touch: async () => {
          const now = new Date();
          await utimes(path, now, now).catch(() => undefined);
        },
        release: () => rm(path, { force: true }),
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST')
        throw new MlxcelError('HUB_DOWNLOAD_FAILED', `cannot create the lock ${path} for ${opts.what}: ${(err as Error).message}`);
    }
    if (await isStale(path, staleMs)) {
      await rm(path, { force: true });
      continue;
    }
    await sleep(opts.pollMs ?? 500);
  }
}
