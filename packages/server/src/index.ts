/**
 * @mlxcel/server: an OpenAI-compatible HTTP server (fastify) over the mlxcel engine. The model, the
 * continuous-batching scheduler and detokenization run on an engine worker thread, chat templates and
 * tokenization on a tokenizer worker thread; the HTTP thread parses, validates and streams.
 *
 *   const server = await startServer({ model: 'mlx-community/gemma-3n-E2B-it-4bit', port: 8080 });
 *   await server.ready;            // /health answers 503 until the model is loaded
 *   await server.close(30);        // drain: finish in-flight requests within 30 s
 */
import { readFileSync, realpathSync, statSync } from 'node:fs';
import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { buildApp, defaultModelName } from './app.js';
import { EngineClient, type DownloadProgress } from './worker/client.js';

export interface ServerOptions {
  /** Model folder or Hugging Face repo id (downloaded into the HF cache on the engine thread). */
  model: string;
  host?: string;
  /** Default 8080; 0 = any free port. */
  port?: number;
  /** Name reported by /v1/models and in responses. Default: the repo id or the folder's name. */
  modelName?: string;
  /** Other names requests may use for the model (the default name is always one). */
  aliases?: string[];
  /** Requests decoded together (continuous batching). Default 8. */
  maxBatch?: number;
  /** Sequences that may wait for a batch slot; beyond that requests get 429 + Retry-After. Default 64. */
  maxQueue?: number;
  /** Seconds from arrival to the last token; 0 = none (default). */
  requestTimeout?: number;
  /** Require `Authorization: Bearer <apiKey>` on /v1/* and /metrics. */
  apiKey?: string;
  /** Origins allowed by CORS (`['*']` = any); default none (no CORS headers). */
  cors?: string[];
  /** Include prompts in request log lines. Default false. */
  logPrompts?: boolean;
  /** fastify/pino logger options, or false for none. Default: info level to stdout. */
  logger?: boolean | Record<string, unknown>;
  /** Largest request body in bytes. Default 16 MiB. */
  maxBodyBytes?: number;
  /** Serve the web UI on GET / (when this build has one). Default true. */
  webui?: boolean;
  chatTemplateFile?: string;
  /** KV cache storage ('f32', 'f16', 'bf16', 'q8', 'k8v4' where the model supports it). */
  kvCache?: string;
  /**
   * A folder `image_url` parts may name files in (a path or file: URL; regular files only, confined to
   * the folder after symlinks are followed). Default: none (data: URLs only). Remote URLs are never fetched.
   */
  allowLocalFiles?: string;
  /** KV memory budget in MiB for the running sequences and the prefix cache. Default: half the available memory. */
  kvBudgetMiB?: number;
  /** Reuse the KV of prompt prefixes across requests (a shared system prompt is prefilled once). Default true. */
  prefixCache?: boolean;
  /** Download progress while the model is fetched. */
  onProgress?: (p: DownloadProgress) => void;
}

export interface RunningServer {
  host: string;
  port: number;
  /** The served model name. */
  modelName: string;
  /** Resolves when the model is loaded and requests are served; rejects with the load error. */
  ready: Promise<void>;
  app: FastifyInstance;
  /**
   * Graceful shutdown: stop accepting, let in-flight requests finish within `graceSeconds`, then end
   * each remaining stream with a final chunk, an error event and [DONE]; stops the worker threads.
   */
  close(graceSeconds?: number): Promise<void>;
}

const version = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

export async function startServer(opts: ServerOptions): Promise<RunningServer> {
  const maxBatch = opts.maxBatch ?? 8;
  const allowLocalFiles = opts.allowLocalFiles === undefined ? undefined : localFilesFolder(opts.allowLocalFiles);
  const budget = opts.kvBudgetMiB;
  if (budget !== undefined && !(typeof budget === 'number' && Number.isFinite(budget) && budget > 0))
    throw new RangeError(`kvBudgetMiB must be a positive number of MiB, got ${String(budget)}`);
  const engine = new EngineClient({
    model: opts.model, maxBatch, chatTemplateFile: opts.chatTemplateFile, kvCache: opts.kvCache, allowLocalFiles,
    kvBudgetBytes: budget === undefined ? undefined : Math.floor(budget * 1024 * 1024), prefixCache: opts.prefixCache ?? true,
  }, opts.onProgress);
  const fallbackName = defaultModelName(opts.model);
  const name = opts.modelName ?? fallbackName;
  const aliases = [...new Set([...(opts.aliases ?? []), fallbackName])].filter((a) => a !== name);
  const fingerprint = `fp_${createHash('sha256').update(`mlxcel ${version} ${opts.model} ${opts.kvCache ?? ''}`).digest('hex').slice(0, 10)}`;
  const { app, drain } = await buildApp(engine, {
    served: { name, aliases },
    maxBatch,
    maxQueue: opts.maxQueue ?? 64,
    requestTimeout: opts.requestTimeout ?? 0,
    apiKey: opts.apiKey,
    cors: opts.cors,
    logPrompts: opts.logPrompts ?? false,
    logger: opts.logger ?? { level: 'info' },
    maxBodyBytes: opts.maxBodyBytes ?? 16 * 1024 * 1024,
    webui: opts.webui ?? true,
    fingerprint,
    allowLocalFiles: allowLocalFiles !== undefined,
  });
  try {
    await app.listen({ host: opts.host ?? '127.0.0.1', port: opts.port ?? 8080 });
  } catch (e) {
    await engine.close(); // the worker threads would otherwise keep the process alive
    throw e;
  }
  const addr = app.server.address() as { address: string; port: number };
  let closing: Promise<void> | null = null;
  return {
    host: addr.address,
    port: addr.port,
    modelName: name,
    ready: engine.ready,
    app,
    close: (graceSeconds = 30) =>
      (closing ??= drain(graceSeconds * 1000).finally(() => engine.close())),
  };
}

/** The resolved folder of `allowLocalFiles` (symlinks followed); throws naming the option when it is not a folder. */
function localFilesFolder(dir: string): string {
  let real: string;
  try {
    real = realpathSync(dir);
  } catch {
    throw Object.assign(new Error(`allowLocalFiles: ${dir} does not exist`), { code: 'BAD_OPTION' });
  }
  if (!statSync(real).isDirectory()) throw Object.assign(new Error(`allowLocalFiles: ${dir} is not a folder`), { code: 'BAD_OPTION' });
  return real;
}

export { ApiError, type ErrorBody } from './errors.js';
export { samplingOptions, type EngineSamplingOptions } from './sampling-options.js';
export * as schemas from './schemas.js';
export type { DownloadProgress } from './worker/client.js';
