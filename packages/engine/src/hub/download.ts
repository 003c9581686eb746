import { existsSync, statSync } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { MlxcelError } from '../errors.js';
import { acquireLock, type FileLock } from './lock.js';
import { type HubEnv, RepoCache, isOfflineEnv, resolveHubCacheDir } from './cache.js';
import { HubClient, type HubClientOptions } from './client.js';
import { DEFAULT_ALLOW_PATTERNS, isSafeRepoPath, selectFiles } from './files.js';
import { isCommitHash, looksLikeRepoId, parseRepoId } from './repo-id.js';

/** One progress report for one file (the CLI draws a bar per file from these). */
export interface DownloadProgress {
  file: string;
  /** Bytes of the file present so far (a resumed download starts above 0). */
  downloaded: number;
  /** File size, when known. */
  total: number | null;
  /** The file is complete (downloaded now, or already in the cache). */
  done: boolean;
}

export interface DownloadModelOptions extends HubClientOptions {
  /** Cache folder; default from `HF_HUB_CACHE` / `HF_HOME` (see resolveHubCacheDir). */
  cacheDir?: string;
  /** Cache only, no network; default `HF_HUB_OFFLINE`. */
  offline?: boolean;
  /** Which repo files to fetch (globs, `*` does not cross `/`); default {@link DEFAULT_ALLOW_PATTERNS}. */
  allowPatterns?: readonly string[];
  onProgress?: (progress: DownloadProgress) => void;
  signal?: AbortSignal;
  /** Files downloaded at once. Default 4. */
  concurrency?: number;
}

export interface DownloadedModel {
  /** `snapshots/<commit>` folder: load the model from here. */
  path: string;
  repoId: string;
  revision: string;
  commit: string;
  /** Repo paths present in the snapshot that this call asked for (or found, offline). */
  files: string[];
  /** true when the result came from the cache without asking the hub. */
  fromCache: boolean;
}

const INDEX_FILE = 'model.safetensors.index.json';

/**
 * Download a model repo (`org/name` or `org/name@revision`) into the standard Hugging
 * Face cache and return its snapshot folder. Files already in the cache are not fetched
 * again; interrupted downloads resume from their `.incomplete` file with an HTTP Range
 * request. Respects `HF_ENDPOINT`, `HF_TOKEN`, `HF_HUB_CACHE` / `HF_HOME` and
 * `HF_HUB_OFFLINE`. When the hub cannot be reached but the revision is cached, the cached
 * snapshot is used (as huggingface_hub does).
 *
 * Errors (`MlxcelError.code`): HUB_REPO_ID_INVALID, HUB_NOT_CACHED (offline and missing),
 * HUB_UNAUTHORIZED, HUB_NOT_FOUND, HUB_NETWORK_ERROR, HUB_REQUEST_FAILED, HUB_BAD_RESPONSE,
 * HUB_NO_FILES, HUB_DOWNLOAD_FAILED.
 */
export async function downloadModel(spec: string, options: DownloadModelOptions = {}): Promise<DownloadedModel> {
  const { repoId, revision } = parseRepoId(spec);
  const env: HubEnv = options.env ?? process.env;
  const cacheDir = options.cacheDir ?? resolveHubCacheDir(env);
  const cache = new RepoCache(cacheDir, repoId);
  const patterns = options.allowPatterns ?? DEFAULT_ALLOW_PATTERNS;

  if (options.offline ?? isOfflineEnv(env)) {
    const cached = await cachedSnapshot(cache, repoId, revision, patterns);
    if (cached === null) {
      throw new MlxcelError(
        'HUB_NOT_CACHED',
        `${repoId}@${revision} is not in the Hugging Face cache (${cache.root}) and offline mode is on (HF_HUB_OFFLINE); ` +
          'download it once without HF_HUB_OFFLINE, or pass a local folder',
      );
    }
    return cached;
  }

  const client = new HubClient({ ...options, env });
  let info;
  try {
    info = await client.modelInfo(repoId, revision, options.signal);
  } catch (err) {
    if (err instanceof MlxcelError && err.code === 'HUB_NETWORK_ERROR') {
      const cached = await cachedSnapshot(cache, repoId, revision, patterns);
      if (cached !== null) return cached;
    }
    throw err;
  }
  const commit = info.sha;
  if (!isCommitHash(commit)) throw new MlxcelError('HUB_BAD_RESPONSE', `${client.modelInfoUrl(repoId, revision)} gave an invalid commit "${commit}"`);
  if (revision !== commit) await cache.writeRef(revision, commit);

  const job: FileJob = { client, cache, repoId, commit, onProgress: options.onProgress, signal: options.signal };
  let files = selectFiles(info.siblings, patterns);
  if (files.includes(INDEX_FILE)) {
    // Fetch the shard index first so that only the shards it names are downloaded.
    await downloadFile(job, INDEX_FILE);
    files = selectFiles(info.siblings, patterns, await shardNames(cache.snapshotPath(commit, INDEX_FILE)));
  }
  if (files.length === 0) {
    throw new MlxcelError(
      'HUB_NO_FILES',
      `${repoId}@${revision} has none of the files a model needs (looked for ${patterns.join(', ')}; the repo has ${info.siblings.length} files)`,
    );
  }
  const queue = files.filter((f) => f !== INDEX_FILE);
  const workers = Math.max(1, Math.min(options.concurrency ?? 4, queue.length));
  // The first failure stops the other downloads (their partial files stay, to be resumed) and is
  // the error reported; the others' abort errors are not.
  const stop = new AbortController();
  const onAbort = () => stop.abort(options.signal!.reason);
  options.signal?.addEventListener('abort', onAbort, { once: true });
  const parallelJob: FileJob = { ...job, signal: stop.signal };
  let next = 0;
  let first: unknown = null;
  try {
    await Promise.all(
      Array.from({ length: workers }, async () => {
        try {
          while (next < queue.length && !stop.signal.aborted) await downloadFile(parallelJob, queue[next++]!);
        } catch (err) {
          if (first === null) first = err;
          stop.abort(err);
        }
      }),
    );
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
  }
  if (first !== null) throw first;
  if (options.signal?.aborted) throw options.signal.reason;
  return { path: cache.snapshotDir(commit), repoId, revision, commit, files, fromCache: false };
}

/**
 * A local model folder as is, or a repo id downloaded with {@link downloadModel}.
 * Throws `MODEL_NOT_FOUND` when `spec` is neither an existing folder nor a repo id.
 */
export async function resolveModelPath(spec: string, options: DownloadModelOptions = {}): Promise<string> {
  if (existsSync(spec)) {
    if (!statSync(spec).isDirectory()) throw new MlxcelError('MODEL_NOT_FOUND', `${spec} is a file, not a model folder`);
    return resolve(spec);
  }
  if (!looksLikeRepoId(spec)) {
    throw new MlxcelError('MODEL_NOT_FOUND', `${spec} is neither a model folder nor a Hugging Face repo id (org/name[@revision])`);
  }
  return (await downloadModel(spec, options)).path;
}

interface FileJob {
  client: HubClient;
  cache: RepoCache;
  repoId: string;
  commit: string;
  onProgress?: (progress: DownloadProgress) => void;
  signal?: AbortSignal;
}

/** Download one file of a commit into the cache (resuming), and link it into the snapshot. */
async function downloadFile(job: FileJob, file: string): Promise<void> {
  const { client, cache, repoId, commit } = job;
  const report = (downloaded: number, total: number | null, done: boolean): void => job.onProgress?.({ file, downloaded, total, done });

  // Files of a commit never change: a snapshot entry that resolves to a blob is final.
  const link = cache.snapshotPath(commit, file);
  if (existsSync(link)) {
    const size = statSync(link).size;
    report(size, size, true);
    return;
  }
  const meta = await client.fileMetadata(repoId, commit, file, job.signal);
  const blob = cache.blobPath(meta.etag);
  if (!existsSync(blob)) {
    // One process at a time per blob; a process that waited finds the blob done and uses it.
    await mkdir(dirname(blob), { recursive: true });
    const lock = await acquireLock(`${blob}.lock`, { signal: job.signal, done: () => existsSync(blob), what: `${repoId}: ${file}` });
    try {
      if (lock && !existsSync(blob)) await fetchBlob(job, file, meta.etag, meta.size, report, lock);
    } finally {
      await lock?.release();
    }
  }
  if (existsSync(blob)) {
    const size = statSync(blob).size;
    report(size, size, true);
  }
  await cache.linkSnapshot(commit, file, meta.etag);
}

async function fetchBlob(
  job: FileJob,
  file: string,
  etag: string,
  size: number | null,
  report: (downloaded: number, total: number | null, done: boolean) => void,
  lock: FileLock,
): Promise<void> {
  const { client, cache } = job;
  const blob = cache.blobPath(etag);
  const partial = cache.incompletePath(etag);
  await mkdir(dirname(blob), { recursive: true });
  const url = client.resolveUrl(job.repoId, job.commit, file);

  let restarts = 0, breaks = 0;
  for (;;) {
    let start = existsSync(partial) ? (await stat(partial)).size : 0;
    if (size !== null && start > size) {
      await rm(partial, { force: true });
      start = 0;
    }
    if (size === null || start < size) {
      const res = await client.request(url, {
        signal: job.signal,
        headers: start > 0 ? { range: `bytes=${start}-`, 'accept-encoding': 'identity' } : { 'accept-encoding': 'identity' },
      });
      if (res.status === 416) {
        // Our partial file does not fit the server's: start over once.
        await res.body?.cancel();
        if (restarts++ >= 1) throw new MlxcelError('HUB_DOWNLOAD_FAILED', `${file}: ${url} refused to resume the download twice`);
        await rm(partial, { force: true });
        continue;
      }
      if (!res.ok) throw client.statusError(res, url, `${job.repoId}@${job.commit}: ${file}`);
      if (start > 0 && (res.status !== 206 || !contentRangeStartsAt(res.headers.get('content-range'), start))) {
        start = 0; // the server sent the whole file
      }
      const total = size ?? totalFromHeaders(res, start);
      try {
        await writeBody(res, partial, start, total, file, url, report, lock);
      } catch (err) {
        // A transfer that broke off resumes from what reached the disk.
        if (err instanceof BrokenTransfer && breaks < client.retries) {
          await client.backoff(++breaks, job.signal);
          continue;
        }
        throw err instanceof BrokenTransfer ? err.error : err;
      }
    }
    const got = (await stat(partial)).size;
    if (size !== null && got !== size) {
      throw new MlxcelError(
        'HUB_DOWNLOAD_FAILED',
        `${file}: got ${got} of ${size} bytes from ${url}; run again to resume from ${partial}`,
      );
    }
    await rename(partial, blob);
    report(got, got, true);
    return;
  }
}

/** writeBody's "the connection broke off" (retryable by resuming), carrying the error to report. */
class BrokenTransfer extends Error {
  constructor(readonly error: MlxcelError) {
    super(error.message);
  }
}

async function writeBody(
  res: Response,
  partial: string,
  start: number,
  total: number | null,
  file: string,
  url: string,
  report: (downloaded: number, total: number | null, done: boolean) => void,
  lock: FileLock,
): Promise<void> {
  const fh = await open(partial, start > 0 ? 'a' : 'w');
  let downloaded = start;
  let touched = Date.now();
  report(downloaded, total, false);
  try {
    if (res.body === null) return;
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      await fh.write(chunk);
      downloaded += chunk.byteLength;
      report(downloaded, total, false);
      if (Date.now() - touched > 10_000) {
        touched = Date.now();
        await lock.touch(); // a lock seen from another host is stale only when it stops moving
      }
    }
  } catch (err) {
    if ((err as Error).name === 'AbortError') throw err;
    throw new BrokenTransfer(new MlxcelError(
      'HUB_DOWNLOAD_FAILED',
      `download of ${file} from ${url} broke off after ${downloaded} bytes (${(err as Error).message}); run again to resume`,
    ));
  } finally {
    await fh.close();
  }
}

function contentRangeStartsAt(header: string | null, start: number): boolean {
  const m = header === null ? null : /^bytes (\d+)-\d+\/(\d+|\*)$/.exec(header.trim());
  return m !== null && Number(m[1]) === start;
}

function totalFromHeaders(res: Response, start: number): number | null {
  const range = res.headers.get('content-range');
  const m = range === null ? null : /\/(\d+)$/.exec(range.trim());
  if (m !== null) return Number(m[1]);
  const len = res.headers.get('content-length');
  return len !== null && /^\d+$/.test(len) ? start + Number(len) : null;
}

async function shardNames(indexPath: string): Promise<Set<string>> {
  let index: { weight_map?: Record<string, unknown> };
  try {
    index = JSON.parse(await readFile(indexPath, 'utf8')) as { weight_map?: Record<string, unknown> };
  } catch (err) {
    throw new MlxcelError('HUB_BAD_RESPONSE', `${indexPath} is not valid JSON: ${(err as Error).message}`);
  }
  const names = new Set<string>();
  for (const v of Object.values(index.weight_map ?? {})) if (typeof v === 'string') names.add(v);
  if (names.size === 0) throw new MlxcelError('HUB_BAD_RESPONSE', `${indexPath} has an empty "weight_map"`);
  return names;
}

/** The cached snapshot of a revision (offline path), or null. */
async function cachedSnapshot(
  cache: RepoCache,
  repoId: string,
  revision: string,
  patterns: readonly string[],
): Promise<DownloadedModel | null> {
  const commit = isCommitHash(revision) ? revision : await cache.readRef(revision);
  if (commit === undefined) return null;
  const dir = cache.snapshotDir(commit);
  if (!existsSync(dir)) return null;
  const all = await listFiles(dir);
  const files = selectFiles(all, patterns);
  if (files.length === 0) return null;
  return { path: dir, repoId, revision, commit, files, fromCache: true };
}

async function listFiles(dir: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(join(dir, prefix), { withFileTypes: true })) {
    const rel = prefix === '' ? entry.name : `${prefix}/${entry.name}`;
    if (entry.isDirectory()) out.push(...(await listFiles(dir, rel)));
    else if (isSafeRepoPath(rel) && existsSync(join(dir, rel))) out.push(rel);
  }
  return out;
}
