/**
 * Opening user-named files safely: only regular files are read (a FIFO would block `open()` until a
 * writer appears, a directory gives a bare EISDIR, a device can stream forever), and paths that a
 * checkpoint names (shards in model.safetensors.index.json) stay inside the checkpoint folder.
 */
import { readFileSync, statSync } from 'node:fs';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { MlxcelError } from './errors.js';

/** What a path is, for messages ("a directory", "a FIFO", ...); null when it is a regular file. */
function notRegular(path: string): string | null {
  const st = statSync(path);  // follows symlinks: a Hugging Face cache snapshot links to its blobs
  if (st.isFile()) return null;
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  return 'not a regular file';
}

/**
 * Throws MlxcelError E_FILE unless `path` exists and is a regular file (symlinks to one are fine).
 * `what` names the role ("config.json", "tokenizer file", "WAV file") in the message.
 */
export function assertRegularFile(path: string, what: string): void {
  let kind: string | null;
  try {
    kind = notRegular(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new MlxcelError('E_FILE', code === 'ENOENT' ? `${what} ${path} does not exist` : `cannot read ${what} ${path}: ${(e as Error).message}`);
  }
  if (kind) throw new MlxcelError('E_FILE', `${what} ${path} is ${kind}, not a regular file`);
}

/** readFileSync for a regular file only, with a message naming `what` on any failure. */
export function readRegularFile(path: string, what: string): Buffer;
export function readRegularFile(path: string, what: string, encoding: 'utf8'): string;
export function readRegularFile(path: string, what: string, encoding?: 'utf8'): Buffer | string {
  assertRegularFile(path, what);
  try {
    return encoding ? readFileSync(path, encoding) : readFileSync(path);
  } catch (e) {
    throw new MlxcelError('E_FILE', `cannot read ${what} ${path}: ${(e as Error).message}`);
  }
}

/**
 * Resolves `name` (a file name a checkpoint's index gives) inside `dir`, refusing absolute paths and
 * any `..` that leaves the folder: an index is data from the download, not a licence to open
 * `../../../../etc/passwd`. The check is on the name, so shards that are symlinks into a cache's blob
 * store (the Hugging Face layout) still load.
 */
export function confinedPath(dir: string, name: string, what: string): string {
  if (typeof name !== 'string' || name === '' || name.includes('\0'))
    throw new MlxcelError('E_CHECKPOINT', `${what}: ${JSON.stringify(name)} is not a file name`);
  const full = resolve(dir, name);
  const rel = relative(resolve(dir), full);
  if (isAbsolute(name) || rel === '' || rel.startsWith(`..${sep}`) || rel === '..' || isAbsolute(rel))
    throw new MlxcelError('E_CHECKPOINT', `${what}: ${JSON.stringify(name)} points outside the model folder ${dir}`);
  return full;
}
