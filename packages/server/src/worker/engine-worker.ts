/**
 * The engine thread: loads the model, owns the continuous-batching scheduler and streams tokens back.
 * All compute (prefill, batched decode, sampling, detokenization) happens here, so the HTTP thread's
 * event loop only ever parses, validates and writes.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { BatchScheduler, compileConstraint, loadModel, releaseKv, supportsImages, vocabularyOf, type GenerateOptions, type LoadedModel } from '@mlxcel/engine';
import { prepareMediaPrompt, type MediaPrompt } from './media.js';
import type { EngineWorkerInit, FromEngine, PrefixLoad, PrepareMediaRequest, SubmitRequest, ToEngine, TokenLogprob, TokenOut } from './protocol.js';

type State = ReturnType<LoadedModel['model']['newState']>;
const port = parentPort!;
const init = workerData as EngineWorkerInit;
const post = (m: FromEngine) => port.postMessage(m);

/** Running requests: one abort per request (every choice listens), the states for KV accounting. */
const running = new Map<number, { abort: AbortController; states: State[] }>();

/** Media prompts prepared and not yet submitted (or released), by request id. */
const preparedMedia = new Map<number, MediaPrompt>();

function errorFields(e: unknown): { code: string; message: string; param?: string } {
  const code = (e as { code?: unknown }).code;
  const param = (e as { param?: unknown }).param;
  return { code: typeof code === 'string' ? code : 'INTERNAL', message: (e as Error)?.message ?? String(e), ...(typeof param === 'string' ? { param } : {}) };
}

let loaded: LoadedModel;
try {
  loaded = await loadModel(init.model, {
    chatTemplateFile: init.chatTemplateFile,
    onProgress: (p) => post({ type: 'progress', file: p.file, downloaded: p.downloaded, total: p.total ?? null, done: p.done }),
  });
} catch (e) {
  post({ type: 'fatal', ...errorFields(e) });
  process.exit(1);
}
const scheduler = new BatchScheduler(loaded, { maxBatch: init.maxBatch, kvBudgetBytes: init.kvBudgetBytes, prefixCache: init.prefixCache ?? true });
const tokenizer = loaded.tokenizer;
// The vocabulary index constrained decoding needs (every token's bytes, a trie over them) is built
// before the server takes requests: built on the first response_format / grammar / forced tool call
// instead, it would stall every running stream (about 2 s for a 262k vocabulary).
if (tokenizer) vocabularyOf(tokenizer, loaded.model.vocabSize);
const encoder = new TextEncoder();

// A token's text as the detokenizer writes it. Mid-sequence, decoding a token alone would drop a
// SentencePiece word-start space ("▁Hello" -> "Hello"), so it is decoded after a fixed token whose
// text is then cut off; the first generated token is decoded alone, as the detokenizer does.
const anchor = tokenizer?.encode('a', { addSpecialTokens: false }) ?? [];
const anchorText = tokenizer ? tokenizer.decode(anchor) : '';
function tokenLogprob(id: number, logprob: number, first: boolean): TokenLogprob {
  let token = String(id);
  if (tokenizer && first) token = tokenizer.decode([id]);
  else if (tokenizer) {
    const joined = tokenizer.decode([...anchor, id]);
    token = joined.startsWith(anchorText) ? joined.slice(anchorText.length) : tokenizer.decode([id]);
  }
  return { token, logprob, bytes: Array.from(encoder.encode(token)) };
}

/** Queue depth, active sequences, KV bytes and the prefix cache's counters, sent when they change (at most every 200 ms). */
let lastLoad = '';
function reportLoad(): void {
  let kvBytes = 0;
  for (const r of running.values()) for (const s of r.states) kvBytes += s.nbytes;
  const { active, waiting } = scheduler.load;
  const p = scheduler.prefixStats();
  const prefix: PrefixLoad | null = p && {
    blocks: p.blocks, bytes: p.bytes, budgetBytes: p.budgetBytes, lookups: p.lookups, hits: p.restores,
    restoredTokens: p.restoredTokens, evictedBlocks: p.evictedBlocks, refusedBlocks: p.refusedBlocks,
  };
  const key = `${active}/${waiting}/${kvBytes}/${prefix ? Object.values(prefix).join(',') : ''}`;
  if (key === lastLoad) return;
  lastLoad = key;
  post({ type: 'load', active, waiting, kvBytes, prefix });
}
setInterval(reportLoad, 200).unref();

/** Options every choice of a request shares beyond sampling: its constraint, banned ids, media rows. */
type RequestExtras = Pick<GenerateOptions, 'constraint' | 'suppressedIds' | 'embeddingOverrides' | 'atomicSpans' | 'decodeEmbedding'>;

/**
 * Generates one choice from `state` (which already holds ids[0, start)), feeding ids[start..].
 * `cachedBefore`: prompt tokens of ids[0, start) that came from the prefix cache.
 */
async function runChoice(req: SubmitRequest, extras: RequestExtras, choice: number, state: State, start: number, signal: AbortSignal, cachedBefore = 0): Promise<void> {
  const index = req.firstIndex + choice;
  try {
    // n > 1 with a seed: each choice gets its own stream (seed + index), so choices differ but the
    // request as a whole is reproducible.
    const seed = req.options.seed === undefined ? undefined : (req.options.seed + choice) >>> 0;
    const gen = scheduler.submit(req.ids.subarray(start), {
      ...req.options, ...extras, seed, state, signal, noChatTemplate: true, topLogprobs: req.logprobs ?? 0,
    });
    let first = true;
    for await (const t of gen) {
      const item: TokenOut = { token: t.token, text: t.text };
      if (req.logprobs !== null && t.token >= 0) {
        item.logprob = { ...tokenLogprob(t.token, t.logprob, first), top: (t.topLogprobs ?? []).map((x) => tokenLogprob(x.token, x.logprob, first)) };
        first = false;
      }
      post({ type: 'tokens', id: req.id, index, items: [item] });
    }
    const s = await gen.stats;
    post({ type: 'end', id: req.id, index, stats: { promptTokens: req.ids.length, cachedTokens: cachedBefore + s.cachedTokens, generatedTokens: s.generatedTokens, finishReason: s.finishReason, timeToFirstTokenMs: s.timeToFirstTokenMs } });
  } catch (e) {
    post({ type: 'error', id: req.id, index, ...errorFields(e) });
  }
}

/**
 * Whether the choices of a request can share one prefill: the model's states must fork, and no
 * penalty may look at the prompt (a forked choice's sampler only sees the prompt's last token).
 */
function canSharePrefill(req: SubmitRequest, extras: RequestExtras, probe: State): boolean {
  const o = req.options;
  const penalties = (o.presencePenalty ?? 0) !== 0 || (o.frequencyPenalty ?? 0) !== 0 || (o.repetitionPenalty ?? 1) !== 1;
  // A media prompt's override rows and image spans are prefilled whole by each choice.
  const media = extras.embeddingOverrides !== undefined;
  return req.n > 1 && req.ids.length > 1 && typeof probe.fork === 'function' && !penalties && !media;
}

/** The request's constraint (compiled against this model's vocabulary; cached by key), media rows, banned ids. */
function extrasOf(req: SubmitRequest): RequestExtras {
  const extras: RequestExtras = {};
  if (req.grammar) {
    if (!tokenizer) throw Object.assign(new Error('this model has no tokenizer, so its output cannot follow a grammar'), { code: 'TOKENIZER_MISSING' });
    extras.constraint = compileConstraint({ grammar: req.grammar.grammar, key: req.grammar.key }, tokenizer, { vocabSize: loaded.model.vocabSize, eosIds: loaded.eosIds });
  }
  if (req.suppressedIds?.length) extras.suppressedIds = req.suppressedIds;
  if (req.media !== undefined) {
    const m = preparedMedia.get(req.media);
    preparedMedia.delete(req.media);
    if (!m) throw Object.assign(new Error(`media prompt ${req.media} was not prepared`), { code: 'INTERNAL' });
    extras.embeddingOverrides = m.overrides;
    extras.atomicSpans = m.spans;
    extras.decodeEmbedding = m.decodeEmbedding;
  }
  return extras;
}

async function run(req: SubmitRequest): Promise<void> {
  const abort = new AbortController();
  const states: State[] = [];
  running.set(req.id, { abort, states });
  reportLoad();
  const fresh = () => {
    const s = loaded.model.newState({ kvCache: init.kvCache });
    states.push(s);
    return s;
  };
  try {
    let extras: RequestExtras;
    try {
      extras = extrasOf(req);
    } catch (e) {
      for (let c = 0; c < req.n; c++) post({ type: 'error', id: req.id, index: req.firstIndex + c, ...errorFields(e) });
      return;
    }
    const base = fresh();
    if (!canSharePrefill(req, extras, base)) {
      await Promise.all(Array.from({ length: req.n }, (_, c) => runChoice(req, extras, c, c === 0 ? base : fresh(), 0, abort.signal)));
      return;
    }
    // n choices, one prefill: the scheduler prefills all but the last prompt token into `base`
    // (maxTokens 0: prefill only), then each choice continues a fork of it from the last token.
    const last = req.ids.length - 1;
    const prefill = scheduler.submit(req.ids.subarray(0, last), { state: base, signal: abort.signal, noChatTemplate: true, maxTokens: 0 });
    let cached = 0;
    try {
      for await (const _ of prefill);
      cached = (await prefill.stats).cachedTokens;
    } catch (e) {
      for (let c = 0; c < req.n; c++) post({ type: 'error', id: req.id, index: req.firstIndex + c, ...errorFields(e) });
      return;
    }
    const forks = Array.from({ length: req.n }, (_, c) => {
      if (c === req.n - 1) return base;
      const s = base.fork!();
      states.push(s);
      return s;
    });
    await Promise.all(forks.map((s, c) => runChoice(req, extras, c, s, last, abort.signal, cached)));
  } finally {
    running.delete(req.id);
    for (const s of states) releaseKv(s); // their KV memory serves the next requests (no page faults)
    reportLoad();
  }
}

/** Images / audio of a chat request: decoded and run through their towers here, the prompt rendered. */
async function prepare(m: PrepareMediaRequest): Promise<void> {
  try {
    const p = await prepareMediaPrompt(loaded, m.messages, { allowLocalFiles: init.allowLocalFiles });
    preparedMedia.set(m.id, p);
    const ids = p.ids.slice();
    post({ type: 'prepared', id: m.id, ids });
  } catch (e) {
    post({ type: 'error', id: m.id, index: -1, ...errorFields(e) });
  }
}

/** Rows of prompt logits computed per forward pass ([PROMPT_LOGPROB_CHUNK, vocab] f32 at a time). */
const PROMPT_LOGPROB_CHUNK = 64;

/**
 * Each prompt token's logprob given those before it, and the `top` most likely tokens there: a pass
 * over the prompt on a fresh state, in chunks, yielding to the scheduler between chunks so running
 * streams keep decoding. Logprobs are the model's raw distribution (log-softmax of the logits).
 */
async function promptLogprobs(m: { id: number; ids: Int32Array; top: number }): Promise<void> {
  try {
    const state = loaded.model.newState({ kvCache: init.kvCache });
    const V = loaded.model.vocabSize;
    const items: TokenOut[] = [];
    const first = tokenLogprob(m.ids[0]!, Number.NaN, true);
    items.push({ token: m.ids[0]!, text: first.token, logprob: { ...first, top: [] } });
    for (let start = 0; start + 1 < m.ids.length; start += PROMPT_LOGPROB_CHUNK) {
      const end = Math.min(m.ids.length - 1, start + PROMPT_LOGPROB_CHUNK);
      const logits = loaded.model.forward([{ ids: m.ids.subarray(start, end), state }], { logits: 'all' })[0]!; // [end - start, V]
      for (let r = 0; r < end - start; r++) {
        const row = logits.subarray(r * V, (r + 1) * V);
        let max = -Infinity;
        for (let i = 0; i < V; i++) if (row[i]! > max) max = row[i]!;
        let sum = 0;
        for (let i = 0; i < V; i++) sum += Math.exp(row[i]! - max);
        const lse = max + Math.log(sum);
        const id = m.ids[start + r + 1]!;
        const top: { id: number; v: number }[] = [];
        for (let i = 0; i < V && m.top > 0; i++) {
          const v = row[i]!;
          if (top.length < m.top || v > top[top.length - 1]!.v) {
            top.push({ id: i, v });
            top.sort((a, b) => b.v - a.v);
            if (top.length > m.top) top.pop();
          }
        }
        const entry = tokenLogprob(id, row[id]! - lse, false);
        items.push({ token: id, text: entry.token, logprob: { ...entry, top: top.map((t) => tokenLogprob(t.id, t.v - lse, false)) } });
      }
      await new Promise((r) => setImmediate(r));
    }
    post({ type: 'promptLogprobs', id: m.id, items });
  } catch (e) {
    post({ type: 'error', id: m.id, index: -1, ...errorFields(e) });
  }
}

port.on('message', (m: ToEngine) => {
  if (m.type === 'submit') void run(m);
  else if (m.type === 'promptLogprobs') void promptLogprobs(m);
  else if (m.type === 'prepareMedia') void prepare(m);
  else if (m.type === 'release') preparedMedia.delete(m.id);
  else if (m.type === 'cancel') running.get(m.id)?.abort.abort();
});

post({
  type: 'ready',
  info: {
    dir: loaded.dir,
    modelType: loaded.model.modelType,
    maxContext: loaded.model.maxContext,
    vocabSize: loaded.model.vocabSize,
    audioInput: Boolean(loaded.config.audio_config),
    imageInput: supportsImages(loaded),
  },
});
