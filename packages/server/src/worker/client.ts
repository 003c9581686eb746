/**
 * The HTTP thread's handle on the two worker threads: starts them, relays prompts to the tokenizer
 * thread and requests to the engine thread, and routes their answers back to the request that asked.
 */
import { Worker } from 'node:worker_threads';
import type {
  ChoiceStats, EngineWorkerInit, FromEngine, FromTokenizer, ModelInfo, PromptSpec, SubmitRequest, TokenizerInfo, TokenOut,
} from './protocol.js';

/** An error the engine or tokenizer reported, with the engine's code (mapped to a status in errors.ts). */
export class EngineError extends Error {
  constructor(readonly code: string, message: string) {
    super(message);
  }
}

export interface ChoiceEvents {
  tokens(index: number, items: TokenOut[]): void;
  end(index: number, stats: ChoiceStats): void;
  error(index: number, err: EngineError): void;
}

export interface EngineLoad {
  active: number;
  waiting: number;
  kvBytes: number;
}

export type DownloadProgress = Extract<FromEngine, { type: 'progress' }>;

const workerUrl = (name: string) => new URL(`./worker/${name}.js`, import.meta.url);

export class EngineClient {
  status: 'loading' | 'ready' | 'failed' = 'loading';
  model: ModelInfo | null = null;
  text: TokenizerInfo | null = null;
  load: EngineLoad = { active: 0, waiting: 0, kvBytes: 0 };
  /** Resolves when both threads are ready; rejects with the load error. */
  readonly ready: Promise<void>;

  private readonly engine: Worker;
  private tokenizer: Worker | null = null;
  private nextId = 1;
  private readonly pendingText = new Map<number, { resolve(v: never): void; reject(e: EngineError): void }>();
  private readonly requests = new Map<number, ChoiceEvents>();

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
          if (m.type === 'error') p.reject(new EngineError(m.code, m.message));
          else p.resolve((m.type === 'tokenized' ? m.ids : m.text) as never);
        }
      });
      w.on('error', (e) => reject(new EngineError('WORKER_CRASHED', `tokenizer thread failed: ${e.message}`)));
    });
  }

  private fromEngine(m: FromEngine): void {
    if (m.type === 'load') {
      this.load = { active: m.active, waiting: m.waiting, kvBytes: m.kvBytes };
      return;
    }
    if (m.type !== 'tokens' && m.type !== 'end' && m.type !== 'error') return;
    const r = this.requests.get(m.id);
    if (!r) return;
    if (m.type === 'tokens') r.tokens(m.index, m.items);
    else if (m.type === 'end') r.end(m.index, m.stats);
    else r.error(m.index, new EngineError(m.code, m.message));
  }

  private failAll(e: EngineError): void {
    for (const p of this.pendingText.values()) p.reject(e);
    this.pendingText.clear();
    for (const r of this.requests.values()) r.error(-1, e);
    this.requests.clear();
  }

  private askTokenizer<T>(msg: { type: 'tokenize'; prompt: PromptSpec; raw: boolean } | { type: 'decode'; ids: number[] }): Promise<T> {
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
