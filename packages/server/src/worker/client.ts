/**
 * The HTTP thread's handle on the two worker threads: starts them, relays prompts to the tokenizer
 * thread and requests to the engine thread, and routes their answers back to the request that asked.
 */
import { Worker } from 'node:worker_threads';
import type { ChatRequestFields, ResponseFormat } from '@mlxcel/engine';
import type {
  ChoiceStats, EngineWorkerInit, FromEngine, FromTokenizer, GrammarSpec, MediaMessage, ModelInfo, OutputStructure, PrefixLoad, PromptSpec, SubmitRequest,
  ToEngine, ToTokenizer, TokenizerInfo, TokenOut,
} from './protocol.js';

/**
 * An error the engine or tokenizer reported, with the engine's code (mapped to a status in
 * errors.ts) and, where the worker knew it, the request field at fault.
 */
export class EngineError extends Error {
  constructor(readonly code: string, message: string, readonly param?: string) {
    super(message);
  }
}

/** A prompt planned on the tokenizer thread (tools, response formats): its ids and how its output is shaped. */
export interface PlannedPrompt {
  ids: Int32Array;
  structure: OutputStructure;
}

type Distribute<T> = T extends unknown ? Omit<T, 'id'> : never;

export interface ChoiceEvents {
  tokens(index: number, items: TokenOut[]): void;
  end(index: number, stats: ChoiceStats): void;
  error(index: number, err: EngineError): void;
}

export interface EngineLoad {
  active: number;
  waiting: number;
  kvBytes: number;
  /** The prefix cache (null when disabled or not reported yet). */
  prefix: PrefixLoad | null;
}

export type DownloadProgress = Extract<FromEngine, { type: 'progress' }>;

const workerUrl = (name: string) => new URL(`./worker/${name}.js`, import.meta.url);

export class EngineClient {
  status: 'loading' | 'ready' | 'failed' = 'loading';
  model: ModelInfo | null = null;
  text: TokenizerInfo | null = null;
  load: EngineLoad = { active: 0, waiting: 0, kvBytes: 0, prefix: null };
  /** Resolves when both threads are ready; rejects with the load error. */
  readonly ready: Promise<void>;

  private readonly engine: Worker;
  private tokenizer: Worker | null = null;
  private nextId = 1;
  private readonly pendingText = new Map<number, { resolve(v: never): void; reject(e: EngineError): void }>();
  private readonly requests = new Map<number, ChoiceEvents>();
  /** Engine-thread answers that are not generation events (prepared media, prompt logprobs). */
  private readonly pendingEngine = new Map<number, { resolve(v: never): void; reject(e: EngineError): void }>();

  constructor(init: EngineWorkerInit, onProgress?: (p: DownloadProgress) => void) {
    this.engine = new Worker(workerUrl('engine-worker'), { workerData: init });
    this.ready = new Promise<void>((resolve, reject) => {
      const fail = (e: EngineError) => {
        this.status = 'failed';
        reject(e);
      };
      this.engine.on('message', (m: FromEngine) => {
        if (m.type === 'progress') onProgress?.(m);
        else if (m.type === 'fatal') fail(new EngineError(m.code, m.message));
        else if (m.type === 'ready') {
          this.model = m.info;
          this.startTokenizer(m.info.dir, init.chatTemplateFile).then(() => {
            this.status = 'ready';
            resolve();
          }, fail);
        } else this.fromEngine(m);
      });
      this.engine.on('error', (e) => fail(new EngineError('WORKER_CRASHED', `engine thread failed: ${e.message}`)));
      this.engine.on('exit', (code) => {
        if (this.status !== 'failed' && code !== 0) fail(new EngineError('WORKER_CRASHED', `engine thread exited with code ${code}`));
        this.failAll(new EngineError('WORKER_CRASHED', 'the engine thread stopped'));
      });
    });
    this.ready.catch(() => undefined);
  }

  private startTokenizer(dir: string, chatTemplateFile: string | undefined): Promise<void> {
    const w = new Worker(workerUrl('tokenizer-worker'), { workerData: { dir, chatTemplateFile } });
    this.tokenizer = w;
    return new Promise<void>((resolve, reject) => {
      w.on('message', (m: FromTokenizer) => {
        if (m.type === 'ready') {
          this.text = m.info;
          resolve();
        } else if (m.type === 'fatal') reject(new EngineError(m.code, m.message));
        else {
          const p = this.pendingText.get(m.id);
          if (!p) return;
          this.pendingText.delete(m.id);
          if (m.type === 'error') p.reject(new EngineError(m.code, m.message, m.param));
          else if (m.type === 'tokenized') p.resolve(m.ids as never);
          else if (m.type === 'planned') p.resolve({ ids: m.ids, structure: m.structure } as never);
          else if (m.type === 'grammar') p.resolve(m.grammar as never);
          else p.resolve(m.text as never);
        }
      });
      w.on('error', (e) => reject(new EngineError('WORKER_CRASHED', `tokenizer thread failed: ${e.message}`)));
    });
  }

  private fromEngine(m: FromEngine): void {
    if (m.type === 'load') {
      this.load = { active: m.active, waiting: m.waiting, kvBytes: m.kvBytes, prefix: m.prefix };
      return;
    }
    if (m.type === 'prepared' || m.type === 'promptLogprobs' || (m.type === 'error' && this.pendingEngine.has(m.id))) {
      const p = this.pendingEngine.get(m.id);
      this.pendingEngine.delete(m.id);
      if (m.type === 'prepared') p?.resolve(m.ids as never);
      else if (m.type === 'promptLogprobs') p?.resolve(m.items as never);
      else p?.reject(new EngineError(m.code, m.message, m.param));
      return;
    }
    if (m.type !== 'tokens' && m.type !== 'end' && m.type !== 'error') return;
    const r = this.requests.get(m.id);
    if (!r) return;
    if (m.type === 'tokens') r.tokens(m.index, m.items);
    else if (m.type === 'end') r.end(m.index, m.stats);
    else r.error(m.index, new EngineError(m.code, m.message, m.param));
  }

  private failAll(e: EngineError): void {
    for (const p of this.pendingText.values()) p.reject(e);
    this.pendingText.clear();
    for (const p of this.pendingEngine.values()) p.reject(e);
    this.pendingEngine.clear();
    for (const r of this.requests.values()) r.error(-1, e);
    this.requests.clear();
  }

  private askTokenizer<T>(msg: Distribute<ToTokenizer>): Promise<T> {
    if (!this.tokenizer) return Promise.reject(new EngineError('MODEL_LOADING', 'the model is still loading'));
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pendingText.set(id, { resolve: resolve as (v: never) => void, reject });
      this.tokenizer!.postMessage({ ...msg, id });
    });
  }

  /** Prompt -> token ids on the tokenizer thread (`raw`: no chat template, the tokenizer's own specials). */
  tokenize(prompt: PromptSpec, raw: boolean): Promise<Int32Array> {
    return this.askTokenizer({ type: 'tokenize', prompt, raw });
  }

  decode(ids: number[]): Promise<string> {
    return this.askTokenizer({ type: 'decode', ids });
  }

  /** A chat request with tools / response_format / grammar, planned on the tokenizer thread. */
  plan(request: ChatRequestFields): Promise<PlannedPrompt> {
    return this.askTokenizer({ type: 'plan', request });
  }

  /** The grammar of a response format or a GBNF text, built on the tokenizer thread (null: free text). */
  grammar(spec: { responseFormat?: ResponseFormat; grammar?: string }): Promise<GrammarSpec | null> {
    return this.askTokenizer({ type: 'grammar', ...spec });
  }

  /**
   * Encodes a chat request's images / audio on the engine thread and renders its prompt; resolves
   * with the prompt ids and a handle to pass as `media` to submit() (or to release()).
   */
  async prepareMedia(messages: MediaMessage[]): Promise<{ handle: number; ids: Int32Array }> {
    const id = this.nextId++;
    const ids = await this.askEngine<Int32Array>(id, { type: 'prepareMedia', id, messages });
    return { handle: id, ids };
  }

  /**
   * Completions `echo` with `logprobs`: each prompt token's logprob given the ones before it (the
   * first has none) and the `top` most likely tokens there, from one extra pass over the prompt.
   */
  promptLogprobs(ids: Int32Array, top: number): Promise<TokenOut[]> {
    const id = this.nextId++;
    return this.askEngine(id, { type: 'promptLogprobs', id, ids, top });
  }

  private askEngine<T>(id: number, msg: ToEngine): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.pendingEngine.set(id, { resolve: resolve as (v: never) => void, reject });
      this.engine.postMessage(msg);
    });
  }

  /** Drops a prepared media prompt that will not be submitted. */
  release(handle: number): void {
    this.engine.postMessage({ type: 'release', id: handle });
  }

  /** Starts generation; events arrive until every choice has ended or failed. Returns the cancel function. */
  submit(req: Omit<SubmitRequest, 'type' | 'id'>, events: ChoiceEvents): () => void {
    const id = this.nextId++;
    let left = req.n;
    const done = () => {
      if (--left === 0) this.requests.delete(id);
    };
    this.requests.set(id, {
      tokens: events.tokens,
      end: (i, s) => { done(); events.end(i, s); },
      error: (i, e) => { if (i < 0) left = 1; done(); events.error(i, e); },
    });
    this.engine.postMessage({ ...req, type: 'submit', id } satisfies SubmitRequest);
    return () => {
      if (this.requests.has(id)) this.engine.postMessage({ type: 'cancel', id });
    };
  }

  async close(): Promise<void> {
    await Promise.all([this.engine.terminate(), this.tokenizer?.terminate()]);
  }
}
