import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { generate, prefill } from '../src/generate.js';
import type { LoadedModel } from '../src/load.js';
import { StopMatcher } from '../src/stop.js';
import { compareTraces, perplexity, traceModel, writeTrace } from '../src/trace.js';
import { loadTokenizer } from '../src/tokenizer/index.js';
import { LLAMA2_DIR } from './helpers/paths.js';
import { ToyModel } from './helpers/toy-model.js';

function loaded(model: ToyModel, eos: number[] = [], withTokenizer = false): LoadedModel {
  return {
    dir: 'toy', config: {}, model, tokenizer: withTokenizer ? loadTokenizer(LLAMA2_DIR) : null,
    chatTemplate: null, eosIds: eos, generationConfig: {},
  };
}

async function collect(g: ReturnType<typeof generate>) {
  const toks: number[] = [];
  let text = '';
  for await (const t of g) {
    if (t.token >= 0) toks.push(t.token);
    text += t.text;
  }
  return { toks, text, stats: await g.stats };
}

describe('generate', () => {
  it('greedy decode follows the model and stops at max tokens', async () => {
    const m = new ToyModel(50);
    const { toks, stats } = await collect(generate(loaded(m), [1, 2, 3], { maxTokens: 5 }));
    // expected chain from the toy rule: next = (last * 7 + 3) % 50
    const want: number[] = [];
    let last = 3;
    for (let i = 0; i < 5; i++) want.push((last = (last * 7 + 3) % 50));
    expect(toks).toEqual(want);
    expect(stats.finishReason).toBe('length');
    expect(stats.promptTokens).toBe(3);
    expect(stats.generatedTokens).toBe(5);
  });

  it('prefills in chunks of the model preference and the option overrides it', async () => {
    const m = new ToyModel(50);
    await collect(generate(loaded(m), Array.from({ length: 10 }, (_, i) => i), { maxTokens: 1 }));
    expect(m.forwardCalls).toEqual([4, 4, 2]);
    const m2 = new ToyModel(50);
    await collect(generate(loaded(m2), Array.from({ length: 10 }, (_, i) => i), { maxTokens: 2, prefillChunk: 0 }));
    expect(m2.forwardCalls).toEqual([10, 1]);
  });

  it('chunked prefill gives the same last logits as one pass', () => {
    const ids = Int32Array.from({ length: 11 }, (_, i) => (i * 5) % 50);
    const a = new ToyModel(50), b = new ToyModel(50);
    const la = prefill(a, a.newState(), ids, 3), lb = prefill(b, b.newState(), ids, 0);
    expect(Array.from(la)).toEqual(Array.from(lb));
  });

  it('stops at an EOS id', async () => {
    const m = new ToyModel(50, 1024, { 5: 42 });
    const { toks, stats } = await collect(generate(loaded(m, [42]), [1, 2, 3, 4], { maxTokens: 10 }));
    expect(toks.at(-1)).toBe(42);
    expect(toks.length).toBe(2);
    expect(stats.finishReason).toBe('eos');
  });

  it('never samples suppressed ids even when they are the top logit', async () => {
    const m = new ToyModel(50, 1024, { 4: 9 }, [9]);
    const { toks } = await collect(generate(loaded(m), [1, 2, 3], { maxTokens: 1 }));
    expect(toks[0]).not.toBe(9);
  });

  it('rejects a prompt longer than the context with a clear error', async () => {
    const m = new ToyModel(50, 8);
    await expect(collect(generate(loaded(m), Array.from({ length: 8 }, () => 1)))).rejects.toThrow(/context/);
  });

  it('stops when the signal aborts', async () => {
    const m = new ToyModel(50);
    const ac = new AbortController();
    const g = generate(loaded(m), [1], { maxTokens: 100, signal: ac.signal });
    let n = 0;
    for await (const _ of g) if (++n === 3) ac.abort();
    const s = await g.stats;
    expect(s.finishReason).toBe('abort');
    expect(s.generatedTokens).toBe(3);
  });

  it('same seed gives the same sampled tokens; another seed differs', async () => {
    const run = async (seed: number) => (await collect(generate(loaded(new ToyModel(50)), [1, 2], { maxTokens: 12, temperature: 3, seed }))).toks;
    expect(await run(7)).toEqual(await run(7));
    expect(await run(7)).not.toEqual(await run(8));
  });

  it('streams text through the tokenizer and honours stop strings', async () => {
    const tok = loadTokenizer(LLAMA2_DIR);
    const hello = tok.encode('Hello world, how are you', { addSpecialTokens: false });
    const script: Record<number, number> = {};
    hello.forEach((id, i) => (script[1 + i] = id));
    const m = new ToyModel(32000, 1024, script);
    const all = await collect(generate(loaded(m, [], true), [1], { maxTokens: hello.length }));
    expect(all.text).toBe('Hello world, how are you');
    const m2 = new ToyModel(32000, 1024, script);
    const cut = await collect(generate(loaded(m2, [], true), [1], { maxTokens: hello.length, stop: [', how'] }));
    expect(cut.text).toBe('Hello world');
    expect(cut.stats.finishReason).toBe('stop');
  });
});

describe('StopMatcher', () => {
  it('holds back a possible stop prefix and releases it when it does not match', () => {
    const s = new StopMatcher(['</s>']);
    expect(s.push('ab<')).toEqual({ emit: 'ab', stopped: false });
    expect(s.push('/x')).toEqual({ emit: '</x', stopped: false });
    expect(s.push('y</')).toEqual({ emit: 'y', stopped: false });
    expect(s.push('s>tail')).toEqual({ emit: '', stopped: true });
  });
});

describe('trace', () => {
  it('writes the fixture-contract tensors and compares traces', () => {
    const m = new ToyModel(20);
    const ids = Int32Array.from([1, 2, 3, 4, 5, 6]);
    const r = traceModel(m, ids, { decode: 3, chunk: 4 });
    expect(r.logits.length).toBe(6 * 20);
    expect(r.greedyIds).toEqual(Int32Array.from([(6 * 7 + 3) % 20, (((6 * 7 + 3) % 20) * 7 + 3) % 20, ((((6 * 7 + 3) % 20) * 7 + 3) % 20 * 7 + 3) % 20]));
    // greedy_logits row 0 is the last prompt row
    expect(Array.from(r.greedyLogits!.subarray(0, 20))).toEqual(Array.from(r.logits.subarray(5 * 20)));
    const dir = mkdtempSync(join(tmpdir(), 'mlxcel-trace-'));
    writeTrace(join(dir, 'a.safetensors'), r, 20);
    const r2 = { ...r, logits: r.logits.slice() };
    r2.logits[0] += 0.5;
    r2.logits[3 * 20 + 7] += 100; // flips row 3's argmax decisively
    writeTrace(join(dir, 'b.safetensors'), r2, 20);
    const c = compareTraces(join(dir, 'a.safetensors'), join(dir, 'b.safetensors'));
    const logits = c.tensors.find((t) => t.name === 'logits')!;
    expect(logits.maxAbsDiff).toBeCloseTo(100, 4);
    expect(logits.argmaxDisagreements).toBe(1);
    expect(logits.decidedDisagreements).toBe(1);
    expect(c.tensors.find((t) => t.name === 'greedy_ids')!.equal).toBe(true);
    expect(c.perplexity!.a).toBeCloseTo(perplexity(r.logits, ids, 20), 6);
  });
});
