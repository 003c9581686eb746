/**
 * The engine thread: loads the model, owns the continuous-batching scheduler and streams tokens back.
 * All compute (prefill, batched decode, sampling, detokenization) happens here, so the HTTP thread's
 * event loop only ever parses, validates and writes.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { BatchScheduler, loadModel, releaseKv, type LoadedModel } from '@mlxcel/engine';
import type { EngineWorkerInit, FromEngine, SubmitRequest, ToEngine, TokenLogprob, TokenOut } from './protocol.js';

type State = ReturnType<LoadedModel['model']['newState']>;
const port = parentPort!;
const init = workerData as EngineWorkerInit;
const post = (m: FromEngine) => port.postMessage(m);

/** Running requests: one abort per request (every choice listens), the states for KV accounting. */
const running = new Map<number, { abort: AbortController; states: State[] }>();

function errorFields(e: unknown): { code: string; message: string } {
  const code = (e as { code?: unknown }).code;
  return { code: typeof code === 'string' ? code : 'INTERNAL', message: (e as Error)?.message ?? String(e) };
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

/** Queue depth, active sequences and KV bytes, sent when they change (at most every 200 ms). */
let lastLoad = '';
function reportLoad(): void {
  let kvBytes = 0;
  for (const r of running.values()) for (const s of r.states) kvBytes += s.nbytes;
  const { active, waiting } = scheduler.load;
  const key = `${active}/${waiting}/${kvBytes}`;
  if (key === lastLoad) return;
  lastLoad = key;
  post({ type: 'load', active, waiting, kvBytes });
}
setInterval(reportLoad, 200).unref();

/**
 * Generates one choice from `state` (which already holds ids[0, start)), feeding ids[start..].
 * `cachedBefore`: prompt tokens of ids[0, start) that came from the prefix cache.
 */
async function runChoice(req: SubmitRequest, choice: number, state: State, start: number, signal: AbortSignal, cachedBefore = 0): Promise<void> {
  const index = req.firstIndex + choice;
  try {
    // n > 1 with a seed: each choice gets its own stream (seed + index), so choices differ but the
    // request as a whole is reproducible.
    const seed = req.options.seed === undefined ? undefined : (req.options.seed + choice) >>> 0;
    const gen = scheduler.submit(req.ids.subarray(start), {
      ...req.options, seed, state, signal, noChatTemplate: true, topLogprobs: req.logprobs ?? 0,
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
function canSharePrefill(req: SubmitRequest, probe: State): boolean {
  const o = req.options;
  const penalties = (o.presencePenalty ?? 0) !== 0 || (o.frequencyPenalty ?? 0) !== 0 || (o.repetitionPenalty ?? 1) !== 1;
  return req.n > 1 && req.ids.length > 1 && typeof probe.fork === 'function' && !penalties;
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
    const base = fresh();
    if (!canSharePrefill(req, base)) {
      await Promise.all(Array.from({ length: req.n }, (_, c) => runChoice(req, c, c === 0 ? base : fresh(), 0, abort.signal)));
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
    await Promise.all(forks.map((s, c) => runChoice(req, c, s, last, abort.signal, cached)));
  } finally {
    running.delete(req.id);
    for (const s of states) releaseKv(s); // their KV memory serves the next requests (no page faults)
    reportLoad();
  }
}

port.on('message', (m: ToEngine) => {
  if (m.type === 'submit') void run(m);
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
  },
});
