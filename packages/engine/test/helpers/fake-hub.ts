import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

export interface RecordedRequest {
  method: string;
  path: string;
  range: string | undefined;
  authorization: string | undefined;
}

export interface FakeHubOptions {
  repoId: string;
  commit: string;
  /** When set, every request must carry `Authorization: Bearer <token>`. */
  token?: string;
  /** Repo paths served as LFS files (redirect to /cdn/<sha256>); default: *.safetensors. */
  isLfs?: (file: string) => boolean;
}

/**
 * A local stand-in for the Hugging Face hub serving one folder as one repo, the way the
 * hub does: `GET /api/models/{repo}/revision/{rev}` (JSON with `sha` and `siblings`),
 * `HEAD|GET /{repo}/resolve/{rev}/{file}` (regular files: 200 with the git blob sha1 as
 * ETag; LFS files: 302 to a CDN URL with `X-Linked-Etag` = sha256 and `X-Linked-Size`),
 * `X-Repo-Commit` on every resolve answer, and HTTP Range on downloads.
 */
export class FakeHub {
  readonly requests: RecordedRequest[] = [];
  url = '';
  /** Bytes after which the next download of a file is cut off (socket destroyed). */
  readonly cutAfter = new Map<string, number>();
  /** Files whose downloads ignore the Range header (answer 200 with the whole file). */
  readonly ignoreRange = new Set<string>();
  /** Request paths starting with a key get HTTP 503 that many more times. */
  readonly failNext = new Map<string, number>();
  /** Request paths starting with a key have their connection destroyed (no answer) that many more times. */
  readonly dropNext = new Map<string, number>();
  private server: Server | null = null;
  private readonly files: Map<string, Buffer>;

  constructor(
    private readonly dir: string,
    private readonly options: FakeHubOptions,
  ) {
    this.files = new Map(listFiles(dir).map((f) => [f, readFileSync(join(dir, f))]));
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => this.handle(req, res));
    await new Promise<void>((ok) => this.server!.listen(0, '127.0.0.1', ok));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((ok) => this.server?.close(() => ok()));
  }

  sha256(file: string): string {
    return createHash('sha256').update(this.files.get(file)!).digest('hex');
  }

  gitSha1(file: string): string {
    const data = this.files.get(file)!;
    return createHash('sha1').update(`blob ${data.length}\0`).update(data).digest('hex');
  }

  private isLfs(file: string): boolean {
    return (this.options.isLfs ?? ((f: string) => f.endsWith('.safetensors')))(file);
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const path = decodeURIComponent(new URL(req.url!, 'http://x').pathname);
    this.requests.push({ method: req.method!, path, range: req.headers.range, authorization: req.headers.authorization });
    for (const [prefix, n] of this.dropNext)
      if (n > 0 && path.startsWith(prefix)) {
        this.dropNext.set(prefix, n - 1);
        req.socket.destroy();
        return;
      }
    for (const [prefix, n] of this.failNext)
      if (n > 0 && path.startsWith(prefix)) {
        this.failNext.set(prefix, n - 1);
        res.writeHead(503, { 'retry-after': '0' }).end('busy');
        return;
      }
    if (this.options.token !== undefined && req.headers.authorization !== `Bearer ${this.options.token}`) {
      res.writeHead(401, { 'x-error-code': 'RepoNotFound' }).end('unauthorized');
      return;
    }
    const { repoId, commit } = this.options;
    const revOk = (rev: string): boolean => rev === 'main' || rev === commit;
    const apiPrefix = `/api/models/${repoId}/revision/`;
    if (path.startsWith(apiPrefix) && req.method === 'GET') {
      if (!revOk(path.slice(apiPrefix.length))) return void res.writeHead(404).end('{"error":"Invalid rev id"}');
      const body = JSON.stringify({ id: repoId, sha: commit, siblings: [...this.files.keys()].map((rfilename) => ({ rfilename })) });
      res.writeHead(200, { 'content-type': 'application/json' }).end(body);
      return;
    }
    const resolvePrefix = `/${repoId}/resolve/`;
    if (path.startsWith(resolvePrefix)) {
      const rest = path.slice(resolvePrefix.length);
      const slash = rest.indexOf('/');
      const rev = rest.slice(0, slash);
      const file = rest.slice(slash + 1);
      if (!revOk(rev) || !this.files.has(file)) return void res.writeHead(404, { 'x-error-code': 'EntryNotFound' }).end();
      const common = { 'x-repo-commit': commit };
      if (this.isLfs(file)) {
        res.writeHead(302, {
          ...common,
          location: `${this.url}/cdn/${this.sha256(file)}`,
          'x-linked-etag': `"${this.sha256(file)}"`,
          'x-linked-size': String(this.files.get(file)!.length),
          etag: `"${this.gitSha1(file)}"`,
        });
        res.end();
        return;
      }
      this.serveBytes(req, res, file, { ...common, etag: `W/"${this.gitSha1(file)}"` });
      return;
    }
    if (path.startsWith('/cdn/')) {
      const hash = path.slice('/cdn/'.length);
      const file = [...this.files.keys()].find((f) => this.sha256(f) === hash);
      if (file === undefined) return void res.writeHead(404).end();
      this.serveBytes(req, res, file, { etag: `"${hash}"` });
      return;
    }
    res.writeHead(404).end();
  }

  private serveBytes(req: IncomingMessage, res: ServerResponse, file: string, headers: Record<string, string>): void {
    const data = this.files.get(file)!;
    let start = 0;
    const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    if (range !== null && !this.ignoreRange.has(file)) {
      start = Number(range[1]);
      if (start >= data.length) return void res.writeHead(416, { 'content-range': `bytes */${data.length}` }).end();
      res.writeHead(206, { ...headers, 'content-length': String(data.length - start), 'content-range': `bytes ${start}-${data.length - 1}/${data.length}` });
    } else {
      res.writeHead(200, { ...headers, 'content-length': String(data.length) });
    }
    if (req.method === 'HEAD') return void res.end();
    const cut = this.cutAfter.get(file);
    if (cut !== undefined) {
      this.cutAfter.delete(file);
      res.write(data.subarray(start, start + cut), () => setTimeout(() => res.socket?.destroy(), 50));
      return;
    }
    res.end(data.subarray(start));
  }
}

function listFiles(dir: string, prefix = ''): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(dir, prefix))) {
    const rel = prefix === '' ? name : `${prefix}/${name}`;
    if (statSync(join(dir, rel)).isDirectory()) out.push(...listFiles(dir, rel));
    else out.push(rel);
  }
  return out.sort();
}
