// The continuous-batching scheduler: every request gets exactly what generate() gives it alone
// (tokens, text, finish reason), sequences really share forward passes, and requests that fail,
// abort or are abandoned do not disturb the others.
import { fileURLToPath } from 'node:url';
import type { ForwardInput, ForwardOptions, LanguageModel } from '@mlxcel/tensor';
import { setMatmulPrecision } from '@mlxcel/core-native';
import { describe, expect, it } from 'vitest';
import { BatchScheduler } from '../src/batch.js';
import { generate } from '../src/generate.js';
import type { GenerateOptions, PromptInput } from '../src/types.js';
import { loadModelFromDir, readJson, type LoadedModel } from '../src/load.js';
import { randomModel } from '../src/random.js';
import { loadTokenizer } from '../src/tokenizer/index.js';
import { LLAMA2_DIR } from './helpers/paths.js';
import { ToyModel } from './helpers/toy-model.js';

/** A toy model that records how many sequences each forward pass carried. */
class CountingToy extends ToyModel {
  batchSizes: number[] = [];
  override forward(batch: ForwardInput[], opts?: ForwardOptions): Float32Array[] {
    this.batchSizes.push(batch.length);
    return super.forward(batch, opts);
  }
}

function loaded(model: ToyModel, eos: number[] = [], withTokenizer = false): LoadedModel {
  return {
    dir: 'toy', config: {}, model, tokenizer: withTokenizer ? loadTokenizer(LLAMA2_DIR) : null,
    chatTemplate: null, eosIds: eos, generationConfig: {},
  };
}

async function drain(g: AsyncIterable<{ token: number; text: string }> & { stats: Promise<unknown> }) {
  const toks: number[] = [];
  let text = '';
  for await (const t of g) {
    if (t.token >= 0) toks.push(t.token);
    text += t.text;
  }
  return { toks, text, stats: (await g.stats) as { finishReason: string; generatedTokens: number; promptTokens: number } };
}

const REQUESTS: [PromptInput, GenerateOptions][] = [
  [[1, 2, 3], { maxTokens: 7 }],
  [Array.from({ length: 11 }, (_, i) => (i * 5) % 50), { maxTokens: 3 }],
  [[9], { maxTokens: 12, temperature: 0.8, seed: 5 }],
  [[4, 4, 4, 4, 4], { maxTokens: 0 }],
  [[7, 1], { maxTokens: 9, stop: [] }],
];

describe('BatchScheduler', () => {
  it('each request gets the tokens generate() gives it alone, with passes shared between sequences', async () => {
    const want = await Promise.all(REQUESTS.map(([p, o]) => drain(generate(loaded(new ToyModel(50), [49]), p, o))));
    const m = new CountingToy(50);
    const sched = new BatchScheduler(loaded(m, [49]), { maxBatch: 3 });
    const got = await Promise.all(REQUESTS.map(([p, o]) => drain(sched.submit(p, o))));
    for (let i = 0; i < REQUESTS.length; i++) {
      expect(got[i]!.toks, `request ${i}`).toEqual(want[i]!.toks);
      expect(got[i]!.stats.finishReason).toBe(want[i]!.stats.finishReason);
      expect(got[i]!.stats.generatedTokens).toBe(want[i]!.stats.generatedTokens);
    }
    expect(Math.max(...m.batchSizes)).toBe(3); // maxBatch sequences in one pass, never more
    expect(sched.load).toEqual({ active: 0, waiting: 0 });
  });

  it('text, stop strings and EOS match generate() with a real tokenizer', async () => {
    const tok = loadTokenizer(LLAMA2_DIR);
    const ids = Array.from(tok.encode('Hello world, this is a test'));
    const reqs: [PromptInput, GenerateOptions][] = [
      [ids, { maxTokens: 20 }],
      [ids.slice(2), { maxTokens: 20, stop: ['e'] }],
      [ids.slice(4), { maxTokens: 20, temperature: 1, seed: 3 }],
    ];
    const want = await Promise.all(reqs.map(([p, o]) => drain(generate(loaded(new ToyModel(32000), [2], true), p, o))));
    const sched = new BatchScheduler(loaded(new ToyModel(32000), [2], true));
    const got = await Promise.all(reqs.map(([p, o]) => drain(sched.submit(p, o))));
    for (let i = 0; i < reqs.length; i++) {
      expect(got[i]!.text).toBe(want[i]!.text);
      expect(got[i]!.stats.finishReason).toBe(want[i]!.stats.finishReason);
    }
  });

  it('a failing request (prompt too long, empty) fails alone; an aborted or abandoned one ends and frees its slot', async () => {
    const m = new CountingToy(50, 16);
    const sched = new BatchScheduler(loaded(m), { maxBatch: 2 });
    const tooLong = sched.submit(Array.from({ length: 40 }, () => 1), { maxTokens: 3 });
    const empty = sched.submit(new Int32Array(0), { maxTokens: 3 });
    const ac = new AbortController();
    const aborted = sched.submit([1, 2], { maxTokens: 10, signal: ac.signal });
    const abandoned = sched.submit([3], { maxTokens: 10 });
    const fine = sched.submit([5, 6], { maxTokens: 4 });
    await expect(drain(tooLong)).rejects.toThrow(/PROMPT_TOO_LONG|leaves no room/);
    await expect(drain(empty)).rejects.toThrow(/no tokens/);
    let n = 0;
    for await (const t of aborted) if (t.token >= 0 && ++n === 2) ac.abort();
    expect((await aborted.stats).finishReason).toBe('abort');
    for await (const _ of abandoned) break; // the consumer walks away after one token
    expect((await abandoned.stats).finishReason).toBe('abort');
    const r = await drain(fine);
    expect(r.stats.finishReason).toBe('length');
    expect(r.toks).toEqual((await drain(generate(loaded(new ToyModel(50, 16)), [5, 6], { maxTokens: 4 }))).toks);
  });

  it('rejects a bad maxBatch / sharedPrefillChunk', () => {
    expect(() => new BatchScheduler(loaded(new ToyModel(5)), { maxBatch: 0 })).toThrow(/maxBatch must be a positive integer/);
    expect(() => new BatchScheduler(loaded(new ToyModel(5)), { sharedPrefillChunk: 1.5 })).toThrow(/sharedPrefillChunk must be a positive integer/);
  });

  it('a prompt arriving while others decode is prefilled in shared-size chunks, alone in its own chunk size', async () => {
    const m = new ToyModel(50); // prefers chunks of 4
    const sched = new BatchScheduler(loaded(m), { sharedPrefillChunk: 2 });
    const first = sched.submit([1, 2, 3, 4, 5, 6, 7, 8], { maxTokens: 30 });
    const it = first[Symbol.asyncIterator]();
    await it.next(); // the first request is decoding now
    m.forwardCalls = [];
    const second = sched.submit([9, 8, 7, 6, 5], { maxTokens: 2 });
    const got = await drain(second);
    // prefill rows of the second request go in as 2 + 2 + 1 (the decode steps of the first are 1s)
    expect(m.forwardCalls.filter((n) => n > 1)).toEqual([2, 2]);
    expect(got.toks).toEqual((await drain(generate(loaded(new ToyModel(50)), [9, 8, 7, 6, 5], { maxTokens: 2 }))).toks);
    while (!(await it.next()).done);
  });

  it('real model (phi3-tiny-short): three concurrent greedy generations equal three single runs', async () => {
    const dir = fileURLToPath(new URL('../../../fixtures/phi3-tiny-short/', import.meta.url));
    const model = await loadModelFromDir(dir);
    const prompts = [[1, 45, 96, 173], [1, 31, 298], [1, 35, 290, 258, 50, 13]];
    const want: number[][] = [];
    for (const p of prompts) want.push((await drain(generate(model, p, { maxTokens: 12, temperature: 0 }))).toks);
    const sched = new BatchScheduler(model);
    const got = await Promise.all(prompts.map((p) => drain(sched.submit(p, { maxTokens: 12, temperature: 0 }))));
    expect(got.map((g) => g.toks)).toEqual(want);
  });
  // 16 sequences per decode step: the multi-row GEMV (one pass over each weight for all 16 rows, integer-dot
  // path for 4-bit weights with K % 128 == 0), the batched attention call, Gemma 3n's AltUp mixes and the
  // fused soft-cap. Random q4 weights at small real-layout shapes (hidden 256 / 128).
  const configs: [string, Record<string, unknown>][] = [
    ['gemma3n', (() => {
      const c = readJson(fileURLToPath(new URL('../../../fixtures/configs/gemma3n-tiny.json', import.meta.url)), 'gemma3n-tiny');
      const t = (c.text_config ?? c) as Record<string, unknown>;
      const text = { ...t, hidden_size: 256, head_dim: 64, intermediate_size: Array(6).fill(512), hidden_size_per_layer_input: 128, laurel_rank: 64, vocab_size: 512, vocab_size_per_layer_input: 512 };
      return c.text_config ? { ...c, text_config: text } : text;
    })()],
    ['phi3', { ...readJson(fileURLToPath(new URL('../../../fixtures/configs/phi3-tiny-short.json', import.meta.url)), 'phi3-tiny-short'), vocab_size: 512 }],
  ];
  const prompts16 = Array.from({ length: 16 }, (_, i) => Int32Array.from({ length: 1 + (i % 7) }, (_, t) => (i * 37 + t * 11 + 1) % 500));
  const asLoaded = (model: LanguageModel): LoadedModel => ({ dir: 'random', config: {}, model, tokenizer: null, chatTemplate: null, eosIds: [], generationConfig: {} });

  for (const [name, cfg] of configs)
    it(`${name} random q4: a decode step of 16 sequences gives each the logits it gets alone (bit for bit), and 16 concurrent greedy streams equal 16 single runs`, async () => {
      const model = randomModel(cfg, { quantize: { bits: 4, groupSize: 64 }, seed: 2 });
      // In every matmul precision (fast / int8 / mixed / balanced: integer activations in the GEMV on avx512vnni).
      try {
        for (const precision of ['exact', 'fast', 'int8', 'mixed', 'balanced'] as const) {
          setMatmulPrecision(precision);
          const together = prompts16.map(() => model.newState()), alone = prompts16.map(() => model.newState());
          prompts16.forEach((p, i) => {
            model.forward([{ ids: p, state: together[i]! }], { logits: 'last' });
            model.forward([{ ids: p, state: alone[i]! }], { logits: 'last' });
          });
          for (let step = 0; step < 2; step++) {
            const next = prompts16.map((_, i) => Int32Array.of((i * 13 + step * 7 + 5) % 500));
            const batched = model.forward(next.map((ids, i) => ({ ids, state: together[i]! })), { logits: 'last' });
            next.forEach((ids, i) => {
              const one = model.forward([{ ids, state: alone[i]! }], { logits: 'last' })[0]!;
              expect(new Uint32Array(batched[i]!.slice().buffer), `${name} ${precision} step ${step} sequence ${i}`).toEqual(new Uint32Array(one.slice().buffer));
            });
          }
        }
      } finally {
        setMatmulPrecision('exact');
      }
      const loadedRandom = asLoaded(model);
      const want: number[][] = [];
      for (const p of prompts16) want.push((await drain(generate(loadedRandom, p, { maxTokens: 6, temperature: 0 }))).toks);
      const sched = new BatchScheduler(loadedRandom, { maxBatch: 16 });
      const got = await Promise.all(prompts16.map((p) => drain(sched.submit(p, { maxTokens: 6, temperature: 0 }))));
      expect(got.map((g) => g.toks)).toEqual(want);
    });
});
