/**
 * The page's only way to the server: the public API (/health, /v1/models, /v1/chat/completions with
 * SSE). Paths are relative, so the page also works behind a reverse proxy under a sub-path.
 */
import { SseParser } from './sse.js';
import type { Usage } from './types.js';

const KEY_STORAGE = 'mlxcel.apiKey';

/** A failed request, with the text the page shows for it. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code: string | null = null,
  ) {
    super(message);
  }
}

/** Asks the user for an API key (reason says why: first time, or the last key was refused); null = cancelled. */
export type KeyPrompt = (reason: string) => Promise<string | null>;

export interface ServerInfo {
  /** Name to show: /health's model name, else the id /v1/models lists. */
  model: string | null;
  /** Id to send as "model" in requests: the first (only) one /v1/models lists. */
  modelId: string | null;
  contextLength: number | null;
  /** /health said the model is still loading (503). */
  loading: boolean;
  /** /health said the server cannot answer for another reason (model failed to load, shutting down). */
  unavailable: string | null;
  /** The model takes image parts (/health's image_input). */
  imageInput: boolean;
}

export interface StreamCallbacks {
  onDelta(text: string): void;
  onUsage(usage: Usage): void;
}

export interface StreamResult {
  finishReason: string | null;
}

interface ErrorBody {
  error?: { message?: unknown; code?: unknown; type?: unknown } | string;
  message?: unknown;
}

function errorFields(body: unknown): { message: string | null; code: string | null } {
  const b = (body ?? {}) as ErrorBody;
  const e = typeof b.error === 'object' && b.error !== null ? b.error : null;
  const message = e && typeof e.message === 'string' ? e.message : typeof b.error === 'string' ? b.error : typeof b.message === 'string' ? b.message : null;
  const code = e && typeof e.code === 'string' ? e.code : null;
  return { message, code };
}

/** Turns an error status (and the server's OpenAI-shaped error body) into the message shown in the chat. */
export function describeError(status: number, body: unknown, retryAfter: string | null): ApiError {
  const { message, code } = errorFields(body);
  const detail = message ? ` Server said: ${message}` : '';
  if (status === 429) {
    const wait = retryAfter && /^\d+$/.test(retryAfter) ? ` Try again in ${retryAfter} s.` : ' Try again shortly.';
    return new ApiError(status, `The server is busy (429 Too Many Requests).${wait}${detail}`, code);
  }
  if (status === 503 && (code === 'server_shutdown' || /shutting down/i.test(message ?? '')))
    return new ApiError(status, `The server is shutting down (503).${detail}`, code);
  if (status === 503) return new ApiError(status, `The model is still loading (503). Try again in a moment.${detail}`, code);
  if (status === 400 && (code === 'context_length_exceeded' || /context/i.test(message ?? '')))
    return new ApiError(status, `This conversation is too long for the model's context (400). Start a new chat or shorten the system prompt.${detail}`, code);
  if (status === 401) return new ApiError(status, `The server refused the API key (401).${detail}`, code);
  return new ApiError(status, `Request failed (${status}).${detail}`, code);
}

function numberField(o: Record<string, unknown>, keys: string[]): number | null {
  for (const k of keys) if (typeof o[k] === 'number' && Number.isFinite(o[k])) return o[k] as number;
  return null;
}

function stringField(o: Record<string, unknown>, keys: string[]): string | null {
  for (const k of keys) if (typeof o[k] === 'string' && o[k]) return o[k] as string;
  return null;
}

const CONTEXT_KEYS = ['context_length', 'max_model_len', 'n_ctx', 'context_window', 'max_context_length'];
// Field names other servers use too, so the page also reads a /health that is not mlxcel's.
const MODEL_KEYS = ['model', 'model_name', 'model_id'];

export class ApiClient {
  constructor(private readonly askKey: KeyPrompt) {}

  private key(): string | null {
    return sessionStorage.getItem(KEY_STORAGE);
  }

  /** fetch() with the Bearer key; on 401 asks for a key (once per refusal) and retries. */
  private async authorized(path: string, init: RequestInit = {}): Promise<Response> {
    for (;;) {
      const key = this.key();
      const headers = new Headers(init.headers);
      if (key) headers.set('authorization', `Bearer ${key}`);
      const res = await fetch(path, { ...init, headers });
      if (res.status !== 401) return res;
      await res.body?.cancel();
      const entered = await this.askKey(key ? 'The server refused that key. Enter the correct API key.' : 'This server needs an API key. It is kept in this tab\'s session storage only.');
      if (entered === null) throw new ApiError(401, 'This server needs an API key (401), and none was entered. Reload the page to enter one.', 'invalid_api_key');
      sessionStorage.setItem(KEY_STORAGE, entered);
    }
  }

  private static async fail(res: Response): Promise<never> {
    let body: unknown = null;
    try {
      body = await res.json();
    } catch {
      // not JSON: the status alone has to do
    }
    throw describeError(res.status, body, res.headers.get('retry-after'));
  }

  /**
   * Model name and context length from /health and /v1/models, whichever has them; fields that neither
   * reports stay null (an older server's /health is just {status: "ok"}).
   */
  async serverInfo(): Promise<ServerInfo> {
    const info: ServerInfo = { model: null, modelId: null, contextLength: null, loading: false, unavailable: null, imageInput: false };
    try {
      const h = await fetch('health');
      const body = (await h.json().catch(() => null)) as Record<string, unknown> | null;
      const status = body && typeof body.status === 'string' ? body.status : null;
      if (h.status === 503) {
        if (status === 'failed') info.unavailable = 'the model failed to load (see the server log)';
        else if (status === 'shutting_down') info.unavailable = 'the server is shutting down';
        else info.loading = true;
      }
      if (body && typeof body === 'object') {
        info.model = stringField(body, MODEL_KEYS);
        info.contextLength = numberField(body, CONTEXT_KEYS);
        info.imageInput = body.image_input === true;
      }
    } catch {
      // no /health: /v1/models below may still answer
    }
    if (info.loading || info.unavailable) return info;
    const res = await this.authorized('v1/models');
    if (!res.ok) await ApiClient.fail(res);
    const list = (await res.json()) as { data?: Record<string, unknown>[] };
    const first = list.data?.[0];
    if (first) {
      info.modelId = stringField(first, ['id']);
      info.model ??= info.modelId;
      info.contextLength ??= numberField(first, CONTEXT_KEYS);
    }
    return info;
  }

  /** POST /v1/chat/completions with stream: true; resolves when the stream ends (or rejects on abort/error). */
  async streamChat(body: Record<string, unknown>, signal: AbortSignal, cb: StreamCallbacks): Promise<StreamResult> {
    const res = await this.authorized('v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ ...body, stream: true, stream_options: { include_usage: true } }),
      signal,
    });
    if (!res.ok) await ApiClient.fail(res);
    if (!res.body) throw new ApiError(0, 'The server sent no response body.');
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    const parser = new SseParser();
    let finishReason: string | null = null;
    const handle = (data: string): boolean => {
      if (data === '[DONE]') return true;
      let chunk: { choices?: { delta?: { content?: unknown }; finish_reason?: unknown }[]; usage?: Usage; error?: unknown };
      try {
        chunk = JSON.parse(data);
      } catch {
        throw new ApiError(0, `The server sent a malformed stream event: ${data.slice(0, 80)}`);
      }
      if (chunk.error) {
        const { message } = errorFields(chunk);
        throw new ApiError(0, `The server ended the answer with an error: ${message ?? JSON.stringify(chunk.error)}`);
      }
      const choice = chunk.choices?.[0];
      if (choice && typeof choice.delta?.content === 'string' && choice.delta.content) cb.onDelta(choice.delta.content);
      if (choice && typeof choice.finish_reason === 'string') finishReason = choice.finish_reason;
      if (chunk.usage && typeof chunk.usage.completion_tokens === 'number') cb.onUsage(chunk.usage);
      return false;
    };
    for (;;) {
      const { value, done } = await reader.read();
      const events = done ? parser.end() : parser.push(value);
      for (const data of events) {
        if (handle(data)) {
          await reader.cancel().catch(() => undefined);
          return { finishReason };
        }
      }
      if (done) {
        // No [DONE] and no finish_reason: the connection ended mid-answer (server stopped or crashed).
        if (finishReason === null) throw new ApiError(0, 'The server closed the stream before the answer was finished.');
        return { finishReason };
      }
    }
  }
}
