/**
 * OpenAI-compatible HTTP server over the engine: /v1/models, /v1/chat/completions and
 * /v1/completions (JSON or SSE streaming), /health. Requests go through the engine's continuous-batching
 * scheduler: up to `maxBatch` of them are decoded together (one forward pass per step for all), the rest
 * wait in arrival order; a client that disconnects cancels its request.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BatchScheduler, type GenerateOptions, type LoadedModel, type PromptInput } from '@mlxcel/engine';
import { webuiResponse } from './webui.js';

export { webuiResponse, WEBUI_CSP, type WebuiResponse } from './webui.js';

export interface ServerOptions {
  host?: string;
  port?: number;
  /** Name reported by /v1/models and in responses (default: the model folder). */
  modelName?: string;
  /** Largest accepted request body (bytes). Default 4 MiB. */
  maxBodyBytes?: number;
  /** Requests decoded together (continuous batching). Default 8; 1 = one at a time. */
  maxBatch?: number;
  /** Serve the chat page at / (default true). */
  webui?: boolean;
  /** When set, every route except /health and the chat page needs `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
}

export interface RunningServer {
  host: string;
  port: number;
  close(): Promise<void>;
}

class HttpError extends Error {
  constructor(readonly status: number, message: string, readonly type = 'invalid_request_error') {
    super(message);
  }
}

async function readBody(req: IncomingMessage, limit: number): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > limit) throw new HttpError(413, `request body exceeds ${limit} bytes`);
    chunks.push(c as Buffer);
  }
  try {
    const v = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('not an object');
    return v as Record<string, unknown>;
  } catch (e) {
    throw new HttpError(400, `request body is not a JSON object (${(e as Error).message})`);
  }
}

function numField(body: Record<string, unknown>, key: string, min: number, max: number): number | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max)
    throw new HttpError(400, `"${key}" must be a number in [${min}, ${max}]`);
  return v;
}

/** Maps OpenAI request fields onto generate() options, rejecting malformed values by name. */
export function requestOptions(body: Record<string, unknown>): GenerateOptions {
  const stop = body.stop;
  if (stop !== undefined && stop !== null && typeof stop !== 'string' && !(Array.isArray(stop) && stop.every((s) => typeof s === 'string')))
    throw new HttpError(400, '"stop" must be a string or a list of strings');
  const bias = body.logit_bias;
  if (bias !== undefined && bias !== null && (typeof bias !== 'object' || Array.isArray(bias)))
    throw new HttpError(400, '"logit_bias" must be an object of token id -> bias');
  const maxTokens = numField(body, 'max_completion_tokens', 0, 1e7) ?? numField(body, 'max_tokens', 0, 1e7);
  return {
    maxTokens: maxTokens ?? 256,
    temperature: numField(body, 'temperature', 0, 100) ?? 1,
    topP: numField(body, 'top_p', 0, 1) ?? 1,
    topK: numField(body, 'top_k', 0, 1e9) ?? 0,
    minP: numField(body, 'min_p', 0, 1) ?? 0,
    presencePenalty: numField(body, 'presence_penalty', -2, 2) ?? 0,
    frequencyPenalty: numField(body, 'frequency_penalty', -2, 2) ?? 0,
    repetitionPenalty: numField(body, 'repetition_penalty', 1e-6, 100) ?? 1,
    seed: numField(body, 'seed', 0, 2 ** 32 - 1),
    stop: stop === undefined || stop === null ? [] : typeof stop === 'string' ? [stop] : (stop as string[]),
    logitBias: bias ? Object.fromEntries(Object.entries(bias as Record<string, number>).map(([k, v]) => [Number(k), Number(v)])) : undefined,
  };
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

export async function startServer(loaded: LoadedModel, opts: ServerOptions = {}): Promise<RunningServer> {
  const modelName = opts.modelName ?? loaded.dir;
  const limit = opts.maxBodyBytes ?? 4 * 1024 * 1024;
  const scheduler = new BatchScheduler(loaded, { maxBatch: opts.maxBatch ?? 8 });
  let served = 0;
  const created = () => Math.floor(Date.now() / 1000);

  async function complete(req: IncomingMessage, res: ServerResponse, chat: boolean): Promise<void> {
    const body = await readBody(req, limit);
    let prompt: PromptInput;
    if (chat) {
      const msgs = body.messages;
      if (!Array.isArray(msgs) || msgs.length === 0) throw new HttpError(400, '"messages" must be a non-empty list');
      for (const [i, m] of msgs.entries())
        if (typeof m !== 'object' || m === null || typeof (m as { role?: unknown }).role !== 'string')
          throw new HttpError(400, `messages[${i}] must be an object with a "role"`);
      prompt = msgs as never;
    } else {
      if (typeof body.prompt !== 'string') throw new HttpError(400, '"prompt" must be a string');
      prompt = body.prompt;
    }
    const options = requestOptions(body);
    const stream = body.stream === true;
    const id = `${chat ? 'chatcmpl' : 'cmpl'}-${Date.now().toString(36)}${(served++).toString(36)}`;
    const abort = new AbortController();
    res.on('close', () => abort.abort());
    const gen = scheduler.submit(prompt, { ...options, noChatTemplate: !chat, signal: abort.signal });
    // SSE headers go out with the first token, so a request that fails before it (a bad prompt) still
    // gets a JSON error with its status code.
    const startStream = () => {
      if (!res.headersSent) res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    };
    let text = '';
    for await (const t of gen) {
      if (stream) startStream();
      text += t.text;
      if (stream && t.text) {
        const delta = chat
          ? { id, object: 'chat.completion.chunk', created: created(), model: modelName, choices: [{ index: 0, delta: { content: t.text }, finish_reason: null }] }
          : { id, object: 'text_completion', created: created(), model: modelName, choices: [{ index: 0, text: t.text, finish_reason: null }] };
        res.write(`data: ${JSON.stringify(delta)}\n\n`);
      }
    }
    const s = await gen.stats;
    const finish = s.finishReason === 'length' ? 'length' : 'stop';
    const usage = { prompt_tokens: s.promptTokens, completion_tokens: s.generatedTokens, total_tokens: s.promptTokens + s.generatedTokens };
    if (stream) {
      startStream();
      const last = chat
        ? { id, object: 'chat.completion.chunk', created: created(), model: modelName, choices: [{ index: 0, delta: {}, finish_reason: finish }], usage }
        : { id, object: 'text_completion', created: created(), model: modelName, choices: [{ index: 0, text: '', finish_reason: finish }], usage };
      res.write(`data: ${JSON.stringify(last)}\n\ndata: [DONE]\n\n`);
      res.end();
    } else if (chat) {
      send(res, 200, { id, object: 'chat.completion', created: created(), model: modelName, choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: finish }], usage });
    } else {
      send(res, 200, { id, object: 'text_completion', created: created(), model: modelName, choices: [{ index: 0, text, finish_reason: finish }], usage });
    }
  }

  // Constant-time key check: compare fixed-length digests so neither content nor length leaks through timing.
  const keyDigest = opts.apiKey ? createHash('sha256').update(opts.apiKey).digest() : null;
  const authorized = (req: IncomingMessage) => {
    if (!keyDigest) return true;
    const m = /^Bearer (.+)$/.exec(req.headers.authorization ?? '');
    return !!m && timingSafeEqual(createHash('sha256').update(m[1]!).digest(), keyDigest);
  };

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const handle = async () => {
      if (req.method === 'GET' && url.pathname === '/health') return send(res, 200, { status: 'ok' });
      const page = opts.webui !== false && (req.method === 'GET' || req.method === 'HEAD') ? webuiResponse(url.pathname) : null;
      if (page) {
        res.writeHead(page.status, page.headers);
        return void res.end(req.method === 'HEAD' ? undefined : page.body);
      }
      if (!authorized(req)) throw new HttpError(401, 'missing or wrong API key (send "Authorization: Bearer <key>")', 'authentication_error');
      if (req.method === 'GET' && url.pathname === '/v1/models')
        return send(res, 200, { object: 'list', data: [{ id: modelName, object: 'model', created: created(), owned_by: 'mlxcel' }] });
      if (req.method === 'POST' && url.pathname === '/v1/chat/completions') return complete(req, res, true);
      if (req.method === 'POST' && url.pathname === '/v1/completions') return complete(req, res, false);
      throw new HttpError(404, `no route for ${req.method} ${url.pathname}`, 'not_found_error');
    };
    handle().catch((e: unknown) => {
      const status = e instanceof HttpError ? e.status : 500;
      const type = e instanceof HttpError ? e.type : 'server_error';
      if (!res.headersSent) send(res, status, { error: { message: (e as Error).message, type, code: (e as { code?: string }).code ?? null } });
      else res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 8080, opts.host ?? '127.0.0.1', () => resolve());
  });
  const addr = server.address() as AddressInfo;
  return {
    host: addr.address,
    port: addr.port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
