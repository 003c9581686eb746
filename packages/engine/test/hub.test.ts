import { createHash, randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir, hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MlxcelError } from '../src/errors.js';
import { isOfflineEnv, resolveHubCacheDir } from '../src/hub/cache.js';
import { type DownloadProgress, downloadModel, resolveModelPath } from '../src/hub/download.js';
import { DEFAULT_ALLOW_PATTERNS, selectFiles } from '../src/hub/files.js';
import { looksLikeRepoId, parseRepoId, repoFolderName } from '../src/hub/repo-id.js';
import { loadTokenizer } from '../src/tokenizer/load.js';
import { FakeHub } from './helpers/fake-hub.js';
import { LLAMA2_DIR } from './helpers/paths.js';

const REPO = 'test-org/tiny-model';
const COMMIT = 'a'.repeat(8) + '0123456789abcdef0123456789abcdef';
const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

async function rejection(p: Promise<unknown>): Promise<MlxcelError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(MlxcelError);
    return err as MlxcelError;
  }
  throw new Error('expected a rejection');
}

/** A repo folder the way the hub stores it, with files that must and must not be fetched. */
function makeRepo(): { dir: string; shard1: Buffer; shard2: Buffer } {
  const dir = mkdtempSync(join(tmpdir(), 'mlxcel-repo-'));
  const shard1 = randomBytes(700_000);
  const shard2 = randomBytes(90_000);
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ model_type: 'llama', eos_token_id: 2 }));
  writeFileSync(join(dir, 'generation_config.json'), JSON.stringify({ eos_token_id: [2] }));
  copyFileSync(join(LLAMA2_DIR, 'tokenizer.json'), join(dir, 'tokenizer.json'));
  writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify({ bos_token: '<s>', eos_token: '</s>', chat_template: '{{ bos_token }}' }));
  writeFileSync(
    join(dir, 'model.safetensors.index.json'),
    JSON.stringify({ weight_map: { 'a.weight': 'model-00001-of-00002.safetensors', 'b.weight': 'model-00002-of-00002.safetensors' } }),
  );
  writeFileSync(join(dir, 'model-00001-of-00002.safetensors'), shard1);
  writeFileSync(join(dir, 'model-00002-of-00002.safetensors'), shard2);
  writeFileSync(join(dir, 'consolidated.safetensors'), randomBytes(1000)); // not in the index: skipped
  writeFileSync(join(dir, 'README.md'), '# tiny');
  mkdirSync(join(dir, 'original'));
  writeFileSync(join(dir, 'original', 'params.json'), '{}');
  return { dir, shard1, shard2 };
}

describe('repo ids, cache folder, environment', () => {
  it('parses org/name[@revision]', () => {
    expect(parseRepoId('google/gemma-3n-E2B-it')).toEqual({ repoId: 'google/gemma-3n-E2B-it', revision: 'main' });
    expect(parseRepoId('mlx-community/Phi-3.5-mini-instruct-4bit@refs/pr/3')).toEqual({
      repoId: 'mlx-community/Phi-3.5-mini-instruct-4bit',
      revision: 'refs/pr/3',
    });
    expect(parseRepoId(`org/name@${COMMIT}`).revision).toBe(COMMIT);
    for (const bad of ['', 'a/b/c', 'org/', '/name', 'org/na me', 'org/name@', 'org/../x', 'org/name@../x', 'a--b/c']) {
      expect(() => parseRepoId(bad), bad).toThrow(MlxcelError);
    }
    expect(looksLikeRepoId('google/gemma')).toBe(true);
    expect(looksLikeRepoId('./models/gemma')).toBe(false);
    expect(looksLikeRepoId('/abs/path')).toBe(false);
    expect(looksLikeRepoId('gpt2')).toBe(false);
    expect(repoFolderName('google/gemma-3n-E2B-it')).toBe('models--google--gemma-3n-E2B-it');
  });

  it('resolves the cache folder like huggingface_hub', () => {
    expect(resolveHubCacheDir({ HF_HUB_CACHE: '/c', HF_HOME: '/h' })).toBe('/c');
    expect(resolveHubCacheDir({ HF_HOME: '/h', XDG_CACHE_HOME: '/x' })).toBe(join('/h', 'hub'));
    expect(resolveHubCacheDir({ XDG_CACHE_HOME: '/x' })).toBe(join('/x', 'huggingface', 'hub'));
    expect(resolveHubCacheDir({})).toBe(join(homedir(), '.cache', 'huggingface', 'hub'));
    expect(isOfflineEnv({ HF_HUB_OFFLINE: '1' })).toBe(true);
    expect(isOfflineEnv({ HF_HUB_OFFLINE: 'TRUE' })).toBe(true);
    expect(isOfflineEnv({ HF_HUB_OFFLINE: '0' })).toBe(false);
    expect(isOfflineEnv({})).toBe(false);
  });

  it('selects the files a model needs', () => {
    const siblings = ['config.json', 'README.md', 'model.safetensors', 'original/model.safetensors', 'tokenizer.model', 'cl100k_base.tiktoken', '../evil.json', 'chat_template.jinja', '.gitattributes'];
    expect(selectFiles(siblings, DEFAULT_ALLOW_PATTERNS)).toEqual(['config.json', 'model.safetensors', 'tokenizer.model', 'cl100k_base.tiktoken', 'chat_template.jinja']);
  });
});

describe('downloadModel against a local hub', () => {
  const repo = makeRepo();
  const hub = new FakeHub(repo.dir, { repoId: REPO, commit: COMMIT });
  beforeAll(async () => {
    await hub.start();
  });
  afterAll(async () => {
    await hub.close();
  });

  it('downloads into the HF cache layout, honouring HF_ENDPOINT and HF_HUB_CACHE', async () => {
    const cacheDir = mkdtempSync(join(tmpdir(), 'mlxcel-cache-'));
    const env = { HF_ENDPOINT: hub.url, HF_HUB_CACHE: cacheDir };
    const events: DownloadProgress[] = [];
    const result = await downloadModel(REPO, { env, onProgress: (p) => events.push({ ...p }) });

    const root = join(cacheDir, 'models--test-org--tiny-model');
    expect(result.path).toBe(join(root, 'snapshots', COMMIT));
    expect(result.commit).toBe(COMMIT);
    expect(result.revision).toBe('main');
    expect(result.fromCache).toBe(false);
    expect([...result.files].sort()).toEqual([
      'config.json',
      'generation_config.json',
      'model-00001-of-00002.safetensors',
      'model-00002-of-00002.safetensors',
      'model.safetensors.index.json',
      'tokenizer.json',
      'tokenizer_config.json',
    ]);
    expect(readFileSync(join(root, 'refs', 'main'), 'utf8')).toBe(COMMIT);
    // LFS files are stored under their sha256, regular files under their git blob sha1
    const shardLink = join(result.path, 'model-00001-of-00002.safetensors');
    expect(lstatSync(shardLink).isSymbolicLink()).toBe(true);
    expect(readlinkSync(shardLink)).toBe(join('..', '..', 'blobs', sha256(repo.shard1)));
    expect(sha256(readFileSync(shardLink))).toBe(sha256(repo.shard1));
    expect(readlinkSync(join(result.path, 'config.json'))).toBe(join('..', '..', 'blobs', hub.gitSha1('config.json')));
    expect(existsSync(join(result.path, 'README.md'))).toBe(false);
    expect(existsSync(join(result.path, 'consolidated.safetensors'))).toBe(false);
    expect(existsSync(join(result.path, 'original'))).toBe(false);

    // progress: one final event per file with downloaded == total == size
    const finals = events.filter((e) => e.done);
    expect(new Set(finals.map((e) => e.file))).toEqual(new Set(result.files));
    const shardFinal = finals.find((e) => e.file === 'model-00001-of-00002.safetensors')!;
    expect(shardFinal.downloaded).toBe(repo.shard1.length);
    expect(shardFinal.total).toBe(repo.shard1.length);
    const shardEvents = events.filter((e) => e.file === 'model-00001-of-00002.safetensors');
    expect(shardEvents.length).toBeGreaterThan(2);
    for (let i = 1; i < shardEvents.length; i++) expect(shardEvents[i]!.downloaded).toBeGreaterThanOrEqual(shardEvents[i - 1]!.downloaded);

    // the snapshot is a usable model folder
    expect(loadTokenizer(result.path).encode('Hello world')).toEqual([1, 15043, 3186]);

    // a second call only asks for the listing: nothing is downloaded again
    const before = hub.requests.length;
    const again = await downloadModel(`${REPO}@main`, { env });
    expect(again.path).toBe(result.path);
    expect(hub.requests.slice(before).map((r) => r.path)).toEqual([`/api/models/${REPO}/revision/main`]);

    // offline: no request at all, found through refs/main (or the commit itself)
    const offline = await downloadModel(REPO, { env: { ...env, HF_HUB_OFFLINE: '1' } });
    expect(offline.fromCache).toBe(true);
    expect(offline.path).toBe(result.path);
    expect(new Set(offline.files)).toEqual(new Set(result.files));
    expect((await downloadModel(`${REPO}@${COMMIT}`, { env, offline: true })).path).toBe(result.path);
    expect(hub.requests.length).toBe(before + 1);

    // hub unreachable but cached: the cached snapshot is used
    const unreachable = await downloadModel(REPO, { env: { HF_HUB_CACHE: cacheDir, HF_ENDPOINT: 'http://127.0.0.1:9' } });
    expect(unreachable.fromCache).toBe(true);

    // resolveModelPath: folders as they are, repo ids through the cache
    expect(await resolveModelPath(REPO, { env: { ...env, HF_HUB_OFFLINE: '1' } })).toBe(result.path);
    expect(await resolveModelPath(LLAMA2_DIR)).toBe(LLAMA2_DIR.replace(/\/$/, ''));
  });

  it('fails clearly when offline and not cached, or unreachable and not cached', async () => {
    const cacheDir = mkdtempSync(join(tmpdir(), 'mlxcel-cache-'));
    const err = await rejection(downloadModel(REPO, { env: { HF_HUB_CACHE: cacheDir, HF_HUB_OFFLINE: '1', HF_ENDPOINT: hub.url } }));
    expect(err.code).toBe('HUB_NOT_CACHED');
    expect(err.message).toContain(`${REPO}@main`);
    expect(err.message).toContain(join(cacheDir, 'models--test-org--tiny-model'));
    const net = await rejection(downloadModel(REPO, { env: { HF_HUB_CACHE: cacheDir, HF_ENDPOINT: 'http://127.0.0.1:9' } }));
    expect(net.code).toBe('HUB_NETWORK_ERROR');
    expect(net.message).toContain('HF_HUB_OFFLINE');
    expect((await rejection(resolveModelPath('not a repo!', { env: { HF_HUB_CACHE: cacheDir } }))).code).toBe('MODEL_NOT_FOUND');
  });

  it('reports unknown repos and revisions', async () => {
    const env = { HF_ENDPOINT: hub.url, HF_HUB_CACHE: mkdtempSync(join(tmpdir(), 'mlxcel-cache-')) };
    expect((await rejection(downloadModel('other/repo', { env }))).code).toBe('HUB_NOT_FOUND');
    expect((await rejection(downloadModel(`${REPO}@v9`, { env }))).code).toBe('HUB_NOT_FOUND');
    const onlyReadme = await rejection(downloadModel(REPO, { env, allowPatterns: ['*.gguf'] }));
    expect(onlyReadme.code).toBe('HUB_NO_FILES');
  });

  it('resumes an interrupted download with an HTTP Range request', async () => {
    const cacheDir = mkdtempSync(join(tmpdir(), 'mlxcel-cache-'));
    const env = { HF_ENDPOINT: hub.url, HF_HUB_CACHE: cacheDir };
    const shard = 'model-00001-of-00002.safetensors';
    hub.cutAfter.set(shard, 300_000);
    // Without retries the broken transfer is an error, and the next call resumes it.
    const err = await rejection(downloadModel(REPO, { env, concurrency: 1, retries: 0 }));
    expect(err.code).toBe('HUB_DOWNLOAD_FAILED');
    expect(err.message).toContain(shard);
    const partial = join(cacheDir, 'models--test-org--tiny-model', 'blobs', `${sha256(repo.shard1)}.incomplete`);
    const have = statSync(partial).size;
    expect(have).toBeGreaterThan(0);
    expect(have).toBeLessThanOrEqual(300_000);
    expect(readFileSync(partial).equals(repo.shard1.subarray(0, have))).toBe(true);

    const events: DownloadProgress[] = [];
    const before = hub.requests.length;
    const result = await downloadModel(REPO, { env, onProgress: (p) => events.push({ ...p }) });
    const rangeRequests = hub.requests.slice(before).filter((r) => r.path.startsWith('/cdn/') && r.range !== undefined);
    expect(rangeRequests.map((r) => r.range)).toEqual([`bytes=${have}-`]);
    expect(events.find((e) => e.file === shard)!.downloaded).toBe(have); // progress starts where it stopped
    expect(sha256(readFileSync(join(result.path, shard)))).toBe(sha256(repo.shard1));
    expect(existsSync(partial)).toBe(false);
  });

  it('retries transient failures: a cut transfer resumes within the call, 503s are retried, 404s are not', async () => {
    const cacheDir = mkdtempSync(join(tmpdir(), 'mlxcel-cache-'));
    const env = { HF_ENDPOINT: hub.url, HF_HUB_CACHE: cacheDir };
    const shard = 'model-00001-of-00002.safetensors';
    hub.cutAfter.set(shard, 250_000);
    hub.failNext.set(`/api/models/${REPO}/`, 2);
    hub.failNext.set(`/${REPO}/resolve/${COMMIT}/config.json`, 1);
    hub.dropNext.set(`/${REPO}/resolve/${COMMIT}/tokenizer.json`, 2); // connection reset, twice
    const before = hub.requests.length;
    const result = await downloadModel(REPO, { env, retryBaseMs: 1 });
    expect(readFileSync(join(result.path, shard)).equals(repo.shard1)).toBe(true);
    const mine = hub.requests.slice(before);
    expect(mine.filter((r) => r.path.startsWith('/api/models/')).length).toBe(3); // 2 x 503, then 200
    const ranges = mine.filter((r) => r.path.startsWith('/cdn/') && r.range !== undefined).map((r) => r.range);
    expect(ranges.length).toBe(1);
    expect(ranges[0]).toMatch(/^bytes=\d+-$/);
    // A hub that keeps failing is reported after the retries, naming the status.
    hub.failNext.set(`/api/models/${REPO}/`, 10);
    try {
      const err = await rejection(downloadModel(REPO, { env: { ...env, HF_HUB_CACHE: mkdtempSync(join(tmpdir(), 'mlxcel-cache-')) }, retries: 2, retryBaseMs: 1 }));
      expect(err.code).toBe('HUB_REQUEST_FAILED');
      expect(err.message).toMatch(/HTTP 503/);
    } finally {
      hub.failNext.clear();
    }
    const n404 = hub.requests.length;
    expect((await rejection(downloadModel('test-org/missing', { env, retryBaseMs: 1 }))).code).toBe('HUB_NOT_FOUND');
    expect(hub.requests.length - n404).toBe(1);
  });

  it('waits for another live process downloading the same blob; takes over a lock whose process is gone', async () => {
    const cacheDir = mkdtempSync(join(tmpdir(), 'mlxcel-cache-'));
    const env = { HF_ENDPOINT: hub.url, HF_HUB_CACHE: cacheDir };
    const blobs = join(cacheDir, 'models--test-org--tiny-model', 'blobs');
    mkdirSync(blobs, { recursive: true });
    const lock1 = join(blobs, `${sha256(repo.shard1)}.lock`);
    writeFileSync(lock1, `${process.pid}@${hostname()}`); // a live holder: this very process
    writeFileSync(join(blobs, `${sha256(repo.shard2)}.lock`), `${2 ** 22 + 4321}@${hostname()}`); // a dead one
    const before = hub.requests.length;
    const pending = downloadModel(REPO, { env });
    await new Promise((r) => setTimeout(r, 700));
    const cdn = () => hub.requests.slice(before).filter((r) => r.path.startsWith('/cdn/')).map((r) => r.path.slice(5));
    expect(cdn()).not.toContain(sha256(repo.shard1)); // still waiting for the live lock
    expect(cdn()).toContain(sha256(repo.shard2)); // the dead lock was taken over
    rmSync(lock1);
    const result = await pending;
    expect(readFileSync(join(result.path, 'model-00001-of-00002.safetensors')).equals(repo.shard1)).toBe(true);
    expect(readFileSync(join(result.path, 'model-00002-of-00002.safetensors')).equals(repo.shard2)).toBe(true);
    expect(readdirSync(blobs).filter((f) => f.endsWith('.lock'))).toEqual([]);
  });

  it('starts over when the server ignores the Range header', async () => {
    const cacheDir = mkdtempSync(join(tmpdir(), 'mlxcel-cache-'));
    const env = { HF_ENDPOINT: hub.url, HF_HUB_CACHE: cacheDir };
    const shard = 'model-00002-of-00002.safetensors';
    const blobs = join(cacheDir, 'models--test-org--tiny-model', 'blobs');
    mkdirSync(blobs, { recursive: true });
    writeFileSync(join(blobs, `${sha256(repo.shard2)}.incomplete`), Buffer.alloc(5000, 0xee)); // wrong bytes
    hub.ignoreRange.add(shard);
    try {
      const result = await downloadModel(REPO, { env });
      expect(readFileSync(join(result.path, shard)).equals(repo.shard2)).toBe(true);
    } finally {
      hub.ignoreRange.delete(shard);
    }
  });
});

describe('HF_TOKEN', () => {
  const repo = makeRepo();
  const hub = new FakeHub(repo.dir, { repoId: REPO, commit: COMMIT, token: 'hf_secret' });
  beforeAll(async () => {
    await hub.start();
  });
  afterAll(async () => {
    await hub.close();
  });

  it('is sent as a Bearer token; its absence is a clear error', async () => {
    const cacheDir = mkdtempSync(join(tmpdir(), 'mlxcel-cache-'));
    const denied = await rejection(downloadModel(REPO, { env: { HF_ENDPOINT: hub.url, HF_HUB_CACHE: cacheDir } }));
    expect(denied.code).toBe('HUB_UNAUTHORIZED');
    expect(denied.message).toContain('HF_TOKEN');
    const wrong = await rejection(downloadModel(REPO, { env: { HF_ENDPOINT: hub.url, HF_HUB_CACHE: cacheDir, HF_TOKEN: 'nope' } }));
    expect(wrong.message).toContain('rejected');
    const ok = await downloadModel(REPO, { env: { HF_ENDPOINT: hub.url, HF_HUB_CACHE: cacheDir, HF_TOKEN: 'hf_secret' } });
    expect(existsSync(join(ok.path, 'config.json'))).toBe(true);
    const api = hub.requests.filter((r) => r.path.startsWith('/api/') && r.authorization === 'Bearer hf_secret');
    expect(api.length).toBe(1);
  });
});
