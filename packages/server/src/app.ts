/**
 * The fastify application: routes, schema validation, auth, CORS, request logs and metrics. It only
 * parses, validates and streams; tokenization and compute are on the worker threads (EngineClient).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { existsSync } from 'node:fs';
import { basename } from 'node:path';
import cors from '@fastify/cors';
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { ApiError, fromEngineError, fromValidation } from './errors.js';
import { GenerationRun, type EndReason, type PromptJob } from './generation.js';
import { ServerMetrics } from './metrics.js';
import { checkModel, parseChat, parseCompletion, type ChatRequest, type CompletionRequest, type ParsedRequest, type ServedModel } from './requests.js';
import { samplingOptions } from './sampling-options.js';
import { chatRequestSchema, completionRequestSchema } from './schemas.js';
import { refuseUnsupported } from './unsupported.js';
import { loadWebui } from './webui-route.js';
import type { EngineClient } from './worker/client.js';
import { EngineError } from './worker/client.js';
import type { OutputStructure } from './worker/protocol.js';

export interface AppOptions {
  served: ServedModel;
  maxBatch: number;
  /** Sequences allowed to wait for a batch slot; more get 429. */
  maxQueue: number;
  /** Seconds a request may take from arrival to its last token; 0 = no limit. */
  requestTimeout: number;
  apiKey?: string;
  /** Allowed origins ('*' = any); undefined = no CORS headers. */
  cors?: string[];
  logPrompts: boolean;
  /** pino options or false (fastify's logger). */
  logger: boolean | Record<string, unknown>;
  maxBodyBytes: number;
  webui: boolean;
  fingerprint: string;
  /** image_url parts may name files in the folder the engine thread was given (`--allow-local-files`). */
  allowLocalFiles: boolean;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The generation of a chat / completions request, for its log line's token counts. */
    run?: GenerationRun;
    promptLog?: unknown;
  }
}

/** Compares a Bearer token with the key in constant time (digests have equal length whatever the input). */
function keyMatches(header: string | undefined, key: Buffer): boolean {
  const m = /^Bearer\s+(.+)$/i.exec(header ?? '');
  const given = createHash('sha256').update(m ? m[1]!.trim() : '').digest();
  return timingSafeEqual(given, key) && m !== null;
}

const ROUTES: Record<string, string[]> = {
  '/health': ['GET'],
  '/metrics': ['GET'],
  '/v1/models': ['GET'],
  '/v1/models/:model': ['GET'],
  '/v1/chat/completions': ['POST'],
  '/v1/completions': ['POST'],
};

export interface BuiltApp {
  app: FastifyInstance;
  metrics: ServerMetrics;
  /** Stop taking generation requests (503), end the running ones after `graceMs`. */
  drain(graceMs: number): Promise<void>;
}

export async function buildApp(engine: EngineClient, o: AppOptions): Promise<BuiltApp> {
  let nextId = 0;
  const app = Fastify({
    logger: o.logger as never,
    // One log line per request, written in onResponse with its token counts (not fastify's two).
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: o.maxBodyBytes,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    genReqId: () => `req-${(++nextId).toString(36)}`,
    ajv: { customOptions: { coerceTypes: false, useDefaults: false, removeAdditional: false, allErrors: false, strict: false } },
  });
  const metrics = new ServerMetrics(engine);
  const apiKey = o.apiKey ? createHash('sha256').update(o.apiKey).digest() : null;
  const runs = new Set<GenerationRun>();
  let draining = false;
  /** Sequences accepted and not yet finished (prefilling, decoding or waiting). */
  let outstanding = 0;
  const created = Math.floor(Date.now() / 1000);

  // Any content type is read as JSON: `curl -d` sends x-www-form-urlencoded, fetch sends text/plain.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_req, text, done) => {
    const s = String(text);
    if (!s.trim()) return done(new ApiError(400, 'the request body is empty; send a JSON object'), undefined);
    try {
      const v = JSON.parse(s);
      if (typeof v !== 'object' || v === null || Array.isArray(v)) return done(new ApiError(400, 'the request body must be a JSON object'), undefined);
      done(null, v);
    } catch (e) {
      done(new ApiError(400, `the request body is not valid JSON (${(e as Error).message})`, { code: 'invalid_json' }), undefined);
    }
  });

  if (o.cors) await app.register(cors, { origin: o.cors.includes('*') ? true : o.cors, allowedHeaders: ['authorization', 'content-type', 'x-stainless-*'] as never, maxAge: 600 });

  app.addHook('onRequest', async (req) => {
    (req as { t0?: number }).t0 = performance.now();
    if (!apiKey || req.method === 'OPTIONS') return;
    const path = req.url.split('?')[0]!;
    // /health stays open for load balancers; the web UI's static files hold no data.
    if (path === '/health' || !(path.startsWith('/v1/') || path === '/metrics')) return;
    if (!keyMatches(req.headers.authorization, apiKey))
      throw new ApiError(401, 'missing or invalid API key: send "Authorization: Bearer <key>"', { type: 'authentication_error', code: 'invalid_api_key' });
  });

  app.addHook('onResponse', async (req, reply) => {
    const route = req.routeOptions.url ?? 'unmatched';
    metrics.requests.inc({ route, status: String(reply.statusCode) });
    const ms = performance.now() - ((req as { t0?: number }).t0 ?? performance.now());
    req.log.info({ method: req.method, url: req.url, status: reply.statusCode, ms: Math.round(ms * 10) / 10, ...req.run?.counts, ...(o.logPrompts && req.promptLog ? { prompt: req.promptLog } : {}) }, 'request');
  });

  app.setErrorHandler((err: Error & { statusCode?: number; validation?: unknown[]; code?: string }, req, reply) => {
    let e: ApiError;
    if (err instanceof ApiError) e = err;
    else if (err.validation) e = fromValidation(err.validation as never);
    else if (err instanceof EngineError) e = fromEngineError(err, req.url.includes('chat') ? 'messages' : 'prompt');
    // The engine's request mapper (a range the schema did not narrow): a 400 naming the field.
    else if (err.code === 'REQUEST_FIELD_INVALID') e = new ApiError(400, err.message, { param: String((err as { field?: string }).field ?? '').replace(/"/g, '') || null, code: 'invalid_value' });
    else if (err.statusCode && err.statusCode < 500) e = new ApiError(err.statusCode, err.message, { code: err.code?.toLowerCase() ?? null });
    else {
      req.log.error({ err }, 'server fault');
      e = new ApiError(500, `internal server error: ${err.message}`, { code: 'internal_error' });
    }
    void reply.code(e.status).headers(e.headers).send(e.body());
  });
  app.setNotFoundHandler((req, reply) => {
    void reply.code(404).send(new ApiError(404, `no route for ${req.method} ${req.url.split('?')[0]}`, { type: 'not_found_error', code: 'route_not_found' }).body());
  });

  // ---- operations ----
  app.get('/health', async (_req, reply) => {
    if (engine.status !== 'ready') return reply.code(503).send({ status: engine.status === 'loading' ? 'loading' : 'failed' });
    if (draining) return reply.code(503).send({ status: 'shutting_down' });
    return {
      status: 'ok', model: o.served.name, context_length: engine.model!.maxContext, queue_depth: engine.load.waiting, active_sequences: engine.load.active,
      // What content parts the model takes (the chat page shows its image button only where it does).
      image_input: engine.model!.imageInput, audio_input: engine.model!.audioInput,
    };
  });
  app.get('/metrics', async (_req, reply) => reply.type(metrics.registry.contentType).send(await metrics.registry.metrics()));

  // ---- models ----
  const modelObject = (id: string) => ({ id, object: 'model' as const, created, owned_by: 'mlxcel' });
  app.get('/v1/models', async () => ({ object: 'list', data: [modelObject(o.served.name)] }));
  app.get<{ Params: { model: string } }>('/v1/models/*', async (req) => {
    const id = (req.params as Record<string, string>)['*']!;
    checkModel(id, o.served);
    return modelObject(o.served.name);
  });

  // ---- generation ----
  const generation = (kind: 'chat' | 'completions') => async (req: FastifyRequest, reply: FastifyReply) => {
    const body = req.body as ChatRequest & CompletionRequest;
    checkModel(body.model, o.served);
    if (draining) throw new ApiError(503, 'the server is shutting down', { code: 'server_shutdown' });
    if (engine.status !== 'ready' || !engine.model || !engine.text)
      throw new ApiError(503, 'the model is still loading', { code: 'model_loading', headers: { 'retry-after': '5' } });
    const info = engine.model;
    const parsed = kind === 'chat' ? parseChat(body, info, engine.text, { allowLocalFiles: o.allowLocalFiles }) : parseCompletion(body, info, engine.text);
    if (o.logPrompts) req.promptLog = kind === 'chat' ? loggedMessages(body.messages) : body.prompt;
    const seqs = parsed.prompts.length * Math.max(parsed.n, parsed.bestOf);
    if (outstanding + seqs > o.maxBatch + o.maxQueue)
      throw new ApiError(429, `the server is busy: ${Math.max(0, outstanding - o.maxBatch)} sequences are already waiting (--max-queue ${o.maxQueue}); retry later`, {
        type: 'rate_limit_error', code: 'queue_full', headers: { 'retry-after': '1' },
      });
    outstanding += seqs;
    let released = false;
    let started = false;
    /** A media prompt prepared on the engine thread and not yet handed to a run (released if the request is refused). */
    let media: number | null = null;
    const release = () => {
      if (!released) outstanding -= seqs;
      released = true;
    };
    try {
      const promptParam = kind === 'chat' ? 'messages' : 'prompt';
      const asApi = (e: EngineError) => fromEngineError(e, promptParam);
      const prompts = await preparePrompts(engine, parsed).catch((e: unknown) => {
        throw e instanceof EngineError ? asApi(e) : e;
      });
      media = prompts.media;
      const jobs: PromptJob[] = [];
      for (const [i, { ids: p, structure }] of prompts.list.entries()) {
        const param = prompts.list.length > 1 ? `${promptParam}[${i}]` : promptParam;
        if (p.length === 0) throw new ApiError(400, `'${param}' has no tokens`, { param, code: 'empty_prompt' });
        if (p.length + 1 > info.maxContext)
          throw new ApiError(400, `'${param}' is ${p.length} tokens, which leaves no room in this model's ${info.maxContext}-token context`, { param, code: 'context_length_exceeded' });
        const spec = parsed.prompts[i]!;
        const echo = !parsed.echo ? '' : spec.kind === 'text' ? spec.text : await engine.decode(Array.from(p));
        const echoLogprobs = parsed.echo && parsed.logprobs !== null ? await engine.promptLogprobs(p, parsed.logprobs).catch((e: EngineError) => { throw asApi(e); }) : undefined;
        jobs.push({
          ids: p, options: samplingOptions(body, info.maxContext - p.length), echo, echoLogprobs,
          grammar: structure.grammar, suppressedIds: structure.suppressedIds, toolFormat: structure.parsesCalls ? structure.toolFormat : null,
          singleCall: parsed.plan?.parallel_tool_calls === false,
          media: prompts.media ?? undefined,
        });
      }
      media = null; // the run's submit takes the prepared media prompt over
      const run = new GenerationRun(engine, metrics, { id: `${kind === 'chat' ? 'chatcmpl' : 'cmpl'}-${req.id}-${Date.now().toString(36)}`, created: Math.floor(Date.now() / 1000), model: o.served.name, system_fingerprint: o.fingerprint }, kind, parsed, jobs, (req as { t0?: number }).t0 ?? performance.now());
      started = true;
      req.run = run;
      runs.add(run);
      // The clock started at arrival: time spent tokenizing counts.
      const arrived = (req as { t0?: number }).t0 ?? performance.now();
      const timer = o.requestTimeout > 0
        ? setTimeout(
          () => run.terminate({ code: 'request_timeout', message: `the request did not finish within --request-timeout ${o.requestTimeout}s` }),
          Math.max(0, o.requestTimeout * 1000 - (performance.now() - arrived)),
        )
        : null;
      reply.raw.on('close', () => {
        if (!reply.raw.writableFinished) run.cancel();
      });
      // A client that left while its prompt was tokenized or its images encoded gets no generation.
      if (reply.raw.destroyed) run.cancel();
      void run.result.finally(() => {
        runs.delete(run);
        if (timer) clearTimeout(timer);
        release();
      });
      if (run.stream) {
        return reply.code(200).headers({ 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' }).send(run.stream);
      }
      const result = await run.result;
      if (result instanceof ApiError) throw result;
      return result;
    } catch (e) {
      // A request refused before its run started frees its queue slots here (a run frees them itself).
      if (!started) release();
      if (media !== null) engine.release(media);
      throw e;
    }
  };
  app.post('/v1/chat/completions', {
    schema: { body: chatRequestSchema },
    preValidation: async (req) => refuseUnsupported(req.body as Record<string, unknown>, 'chat'),
  }, generation('chat'));
  app.post('/v1/completions', {
    schema: { body: completionRequestSchema },
    preValidation: async (req) => refuseUnsupported(req.body as Record<string, unknown>, 'completions'),
  }, generation('completions'));

  // Known routes answer other methods with 405 and an Allow header.
  for (const [url, allowed] of Object.entries(ROUTES)) {
    const path = url === '/v1/models/:model' ? '/v1/models/*' : url;
    const others = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH'].filter((m) => !allowed.includes(m));
    app.route({
      method: others as never,
      url: path,
      handler: async (req) => {
        throw new ApiError(405, `${req.method} is not allowed on ${url}; use ${allowed.join(', ')}`, { code: 'method_not_allowed', headers: { allow: allowed.join(', ') } });
      },
    });
  }

  // Everything else under GET: the web UI where it is built in (and not turned off), else 404.
  const webui = o.webui ? await loadWebui() : null;
  app.get('/*', async (req, reply) => {
    const page = webui?.(req.url.split('?')[0]!) ?? null;
    if (!page) throw new ApiError(404, `no route for GET ${req.url.split('?')[0]}`, { type: 'not_found_error', code: 'route_not_found' });
    return reply.code(page.status).headers(page.headers).send(page.body);
  });

  // While draining, every response tells the client to drop its keep-alive connection.
  app.addHook('onSend', async (_req, reply) => {
    if (draining) void reply.header('connection', 'close');
  });

  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const drain = async (graceMs: number) => {
    draining = true;
    const closing = app.close(); // stops accepting; resolves once every connection has ended
    let closed = false;
    void closing.finally(() => (closed = true));
    const deadline = Date.now() + graceMs;
    while (runs.size && Date.now() < deadline) await sleep(50);
    const reason: EndReason = { code: 'server_shutdown', message: 'the server is shutting down; the generation was cut short' };
    for (const run of runs) run.terminate(reason);
    // Ended runs flush their last chunk and [DONE] within a scheduler step. Connections that became
    // idle after close() began (keep-alive sockets whose response just ended) are closed here, else
    // close() would wait out the keep-alive timeout.
    const flushBy = Date.now() + 5000;
    while (!closed && Date.now() < flushBy) {
      app.server.closeIdleConnections();
      await sleep(50);
    }
    if (!closed) app.server.closeAllConnections();
    await closing;
  };
  return { app, metrics, drain };
}

/** Messages for a `--log-prompts` line: image and audio payloads replaced by their size (a data: URL can be megabytes). */
function loggedMessages(messages: ChatRequest['messages']): unknown {
  return messages.map((m) => {
    if (!Array.isArray(m.content)) return m;
    const content = m.content.map((p) => {
      if (p.type === 'image_url' && p.image_url?.url.startsWith('data:')) return { ...p, image_url: { ...p.image_url, url: `${p.image_url.url.slice(0, p.image_url.url.indexOf(',') + 1)}<${p.image_url.url.length} characters>` } };
      if (p.type === 'input_audio' && p.input_audio) return { ...p, input_audio: { ...p.input_audio, data: `<${p.input_audio.data.length} base64 characters>` } };
      return p;
    });
    return { ...m, content };
  });
}

/** The token ids of each prompt of a request and how its output is shaped (grammar, tool calls). */
interface PreparedPrompts {
  list: { ids: Int32Array; structure: OutputStructure }[];
  /** Handle of the media prompt prepared on the engine thread (chat with images / audio). */
  media: number | null;
}

const FREE: OutputStructure = { grammar: null, suppressedIds: [], toolFormat: null, parsesCalls: false };

/**
 * Tokenizes (or plans, or encodes the media of) a request's prompts on the worker threads; a grammar
 * built apart from the prompt is built alongside. Worker errors reject with their EngineError.
 */
async function preparePrompts(engine: EngineClient, parsed: ParsedRequest): Promise<PreparedPrompts> {
  const grammar = parsed.grammar ? engine.grammar(parsed.grammar) : Promise.resolve(null);
  if (parsed.plan) {
    const planned = await engine.plan(parsed.plan);
    return { list: [planned], media: null };
  }
  if (parsed.media) {
    // The grammar first: a bad schema is refused before any image is decoded.
    const g = await grammar;
    const m = await engine.prepareMedia(parsed.media);
    return { list: [{ ids: m.ids, structure: { ...FREE, grammar: g } }], media: m.handle };
  }
  const [g, ids] = await Promise.all([grammar, Promise.all(parsed.prompts.map((p) => engine.tokenize(p, parsed.raw)))]);
  return { list: ids.map((p) => ({ ids: p, structure: { ...FREE, grammar: g } })), media: null };
}

/** The model name a request may use by default: the repo id or the folder's name, never a full path. */
export function defaultModelName(spec: string): string {
  const looksLocal = existsSync(spec) || spec.startsWith('/') || spec.startsWith('.') || /^[A-Za-z]:[\\/]/.test(spec);
  return looksLocal ? basename(spec.replace(/[\\/]+$/, '')) : spec.replace(/@.*$/, '');
}
