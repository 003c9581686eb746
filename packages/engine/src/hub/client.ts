import { MlxcelError } from '../errors.js';
import type { HubEnv } from './cache.js';

export interface HubClientOptions {
  /** Hub base URL; default `$HF_ENDPOINT` or `https://huggingface.co`. */
  endpoint?: string;
  /** Access token; default `$HF_TOKEN`. Sent as `Authorization: Bearer …`. */
  token?: string;
  env?: HubEnv;
  /** A fetch implementation (default: the global `fetch` of Node 20). */
  fetch?: typeof fetch;
  /**
   * Retries of a request that failed transiently (connection reset or timed out, HTTP 429/500/502/
   * 503/504, a download that broke off mid-file and is resumed). Default 4. An unreachable host
   * (DNS failure, connection refused) is not retried: it is usually offline, and the cache may serve.
   */
  retries?: number;
  /** First retry delay in ms, doubled per retry (capped at 8 s; `Retry-After` is honoured up to 30 s). Default 500. */
  retryBaseMs?: number;
}

/** HTTP statuses worth retrying: rate limiting and server-side hiccups. */
const RETRY_STATUS = new Set([429, 500, 502, 503, 504]);
/**
 * Network errors worth retrying: a connection that was reset or timed out. Anything else (DNS failure,
 * connection refused, a blocked port, no route) means the hub is not reachable from here at all.
 */
const RETRY_CODES = new Set([
  'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ECONNABORTED',
  'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CLOSED',
]);

const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/** What the hub says about one file at one commit. */
export interface FileMetadata {
  /** Content id used as the blob name: the LFS sha256 or the git blob sha1, unquoted. */
  etag: string;
  /** Size in bytes when the hub says (`X-Linked-Size` / `Content-Length`). */
  size: number | null;
  /** The commit the file was resolved at (`X-Repo-Commit`). */
  commit: string | null;
}

export interface ModelInfo {
  /** Commit hash the revision resolves to. */
  sha: string;
  /** Repo paths of all files. */
  siblings: string[];
}

/** Strip the weak-validator prefix and quotes from an ETag value. */
export function normalizeEtag(value: string | null): string | null {
  if (value === null) return null;
  const v = value.trim().replace(/^W\//, '').replace(/^"(.*)"$/, '$1');
  return v.length > 0 ? v : null;
}

/** Minimal client for the Hugging Face hub HTTP API (model listing and file resolve). */
export class HubClient {
  readonly endpoint: string;
  private readonly token: string | undefined;
  private readonly fetchImpl: typeof fetch;
  readonly retries: number;
  private readonly retryBaseMs: number;

  constructor(options: HubClientOptions = {}) {
    this.retries = options.retries ?? 4;
    this.retryBaseMs = options.retryBaseMs ?? 500;
    if (!Number.isInteger(this.retries) || this.retries < 0) throw new MlxcelError('BAD_OPTION', `retries must be a non-negative integer, got ${options.retries}`);
    const env = options.env ?? process.env;
    this.endpoint = (options.endpoint ?? env.HF_ENDPOINT ?? 'https://huggingface.co').replace(/\/+$/, '');
    const token = options.token ?? env.HF_TOKEN;
    this.token = token !== undefined && token.length > 0 ? token : undefined;
    this.fetchImpl = options.fetch ?? globalThis.fetch;
  }

  headers(extra: Record<string, string> = {}): Record<string, string> {
    const h: Record<string, string> = { 'user-agent': 'mlxcel', ...extra };
    if (this.token !== undefined) h.authorization = `Bearer ${this.token}`;
    return h;
  }

  modelInfoUrl(repoId: string, revision: string): string {
    return `${this.endpoint}/api/models/${repoId}/revision/${encodeURIComponent(revision)}`;
  }

  resolveUrl(repoId: string, revision: string, file: string): string {
    return `${this.endpoint}/${repoId}/resolve/${encodeURIComponent(revision)}/${file.split('/').map(encodeURIComponent).join('/')}`;
  }

  /** Waits before retry number `attempt` (1-based): exponential, or what `Retry-After` asks for. */
  async backoff(attempt: number, signal?: AbortSignal, retryAfter?: string | null): Promise<void> {
    let ms = Math.min(8000, this.retryBaseMs * 2 ** (attempt - 1));
    if (retryAfter && /^\d+$/.test(retryAfter.trim())) ms = Math.min(30_000, Number(retryAfter) * 1000);
    await sleep(ms, signal);
  }

  /**
   * `fetch` with transient failures retried (see `retries`) and network errors turned into
   * `HUB_NETWORK_ERROR` naming the URL. A response that is still an error after the retries is
   * returned for the caller to report.
   */
  async request(url: string, init: RequestInit): Promise<Response> {
    const signal = init.signal ?? undefined;
    for (let attempt = 0; ; attempt++) {
      let res: Response;
      try {
        res = await this.fetchImpl(url, { ...init, headers: { ...this.headers(), ...(init.headers as Record<string, string>) } });
      } catch (err) {
        if ((err as Error).name === 'AbortError') throw err;
        const cause = (err as { cause?: { message?: string; code?: string } }).cause;
        if (attempt < this.retries && RETRY_CODES.has(cause?.code ?? '')) {
          await this.backoff(attempt + 1, signal);
          continue;
        }
        const tries = attempt > 0 ? ` after ${attempt + 1} attempts` : '';
        throw new MlxcelError(
          'HUB_NETWORK_ERROR',
          `cannot reach ${url}${tries}: ${(err as Error).message}${cause?.message ? ` (${cause.message})` : ''}; set HF_HUB_OFFLINE=1 to use the local cache only`,
        );
      }
      if (RETRY_STATUS.has(res.status) && attempt < this.retries) {
        await res.body?.cancel();
        await this.backoff(attempt + 1, signal, res.headers.get('retry-after'));
        continue;
      }
      return res;
    }
  }

  /** `GET /api/models/{repo}/revision/{rev}`: the commit and the file list. */
  async modelInfo(repoId: string, revision: string, signal?: AbortSignal): Promise<ModelInfo> {
    const url = this.modelInfoUrl(repoId, revision);
    const res = await this.request(url, { signal });
    if (!res.ok) throw this.statusError(res, url, `${repoId}@${revision}`);
    let body: unknown;
    try {
      body = await res.json();
    } catch (err) {
      throw new MlxcelError('HUB_BAD_RESPONSE', `${url} did not return JSON: ${(err as Error).message}`);
    }
    const info = body as { sha?: unknown; siblings?: unknown };
    if (typeof info.sha !== 'string' || !Array.isArray(info.siblings)) {
      throw new MlxcelError('HUB_BAD_RESPONSE', `${url} returned no "sha" / "siblings"`);
    }
    const siblings = info.siblings
      .map((s) => (s as { rfilename?: unknown }).rfilename)
      .filter((f): f is string => typeof f === 'string');
    return { sha: info.sha, siblings };
  }

  /**
   * `HEAD /{repo}/resolve/{rev}/{file}` without following redirects: for LFS files the hub
   * answers 302 to its CDN with `X-Linked-Etag` / `X-Linked-Size`; relative redirects
   * (renamed repos) are followed.
   */
  async fileMetadata(repoId: string, revision: string, file: string, signal?: AbortSignal): Promise<FileMetadata> {
    let url = this.resolveUrl(repoId, revision, file);
    for (let hops = 0; hops < 5; hops++) {
      const res = await this.request(url, { method: 'HEAD', redirect: 'manual', signal, headers: { 'accept-encoding': 'identity' } });
      const linkedEtag = normalizeEtag(res.headers.get('x-linked-etag'));
      const location = res.headers.get('location');
      if (res.status >= 300 && res.status < 400 && linkedEtag === null && location !== null && location.startsWith('/')) {
        url = new URL(location, url).toString();
        continue;
      }
      if (res.status >= 400) throw this.statusError(res, url, `${repoId}@${revision}: ${file}`);
      const etag = linkedEtag ?? normalizeEtag(res.headers.get('etag'));
      if (etag === null || !/^[A-Za-z0-9._-]+$/.test(etag)) {
        throw new MlxcelError('HUB_BAD_RESPONSE', `${url} gave no usable ETag (got ${JSON.stringify(res.headers.get('etag'))})`);
      }
      const sizeHeader = res.headers.get('x-linked-size') ?? (linkedEtag === null ? res.headers.get('content-length') : null);
      const size = sizeHeader !== null && /^\d+$/.test(sizeHeader) ? Number(sizeHeader) : null;
      return { etag, size, commit: res.headers.get('x-repo-commit') };
    }
    throw new MlxcelError('HUB_BAD_RESPONSE', `${url}: too many redirects`);
  }

  statusError(res: Response, url: string, what: string): MlxcelError {
    if (res.status === 401 || res.status === 403) {
      const hint =
        this.token === undefined
          ? 'the repo is private, gated or does not exist: set HF_TOKEN to an access token'
          : 'HF_TOKEN was rejected or has no access (gated models need their license accepted on the model page)';
      return new MlxcelError('HUB_UNAUTHORIZED', `${what}: HTTP ${res.status} from ${url}; ${hint}`);
    }
    if (res.status === 404) return new MlxcelError('HUB_NOT_FOUND', `${what} not found (HTTP 404 from ${url})`);
    return new MlxcelError('HUB_REQUEST_FAILED', `${what}: HTTP ${res.status} ${res.statusText} from ${url}`);
  }
}
