#!/usr/bin/env node
// `pnpm bench prefix`: prefix reuse across requests. Two requests through one BatchScheduler share a
// 2,000-token prefix (a system prompt) and differ in a short suffix; the first prefills everything,
// the second restores the shared rows from the prefix cache and prefills only its suffix. Prints, per
// model, both times to first token measured in the same run and their ratio, then checks that the
// second request's first logits equal a fresh prefill of the same prompt (max |Δ|). A third number:
// the first request's time with the prefix cache off (--no-prefix-cache), which prefills in the
// model's own chunks instead of the prefix cache's 64-token grid: what that grid costs a cold prompt.
//
//   node packages/engine/bench/prefix.mjs [--model gemma3n,phi35,gemma4] [--layers N] [--prefix 2000] [--suffix 16] [--no-check] [--no-baseline]
//
// Random q4 weights (group 64) at the real shapes of the configs in fixtures/configs; --layers keeps
// only the first N layers (the ratio hardly depends on it: both requests scale with the layer count).
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BatchScheduler, PromptPrefill, prefillChunkFor, randomModel, readJson } from '../dist/index.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '../../..');
const CONFIGS = {
  gemma3n: 'fixtures/configs/unsloth--gemma-3n-E2B-it.json',
  phi35: 'fixtures/configs/Phi-3.5-mini-instruct.json',
  gemma4: 'fixtures/configs/gemma-4-E2B-it.json',
};
const args = process.argv.slice(2);
const flag = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : dflt;
};
const positive = (name, dflt) => {
  const v = flag(name, dflt);
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, got ${v}`);
  return n;
};
const names = flag('model', 'gemma3n,phi35').split(',');
for (const n of names) if (!CONFIGS[n]) throw new Error(`unknown model ${n} (known: ${Object.keys(CONFIGS).join(', ')})`);
const layers = flag('layers') ? positive('layers') : undefined;
const prefixLen = positive('prefix', '2000');
const suffixLen = positive('suffix', '16');
const check = !args.includes('--no-check');
const baseline = !args.includes('--no-baseline');

const ids = (n, seed, vocab) => Int32Array.from({ length: n }, (_, i) => (i * 7919 + seed * 104729 + ((i * seed) % 13)) % vocab);
const cat = (a, b) => {
  const r = new Int32Array(a.length + b.length);
  r.set(a);
  r.set(b, a.length);
  return r;
};

async function ttft(sched, prompt) {
  const gen = sched.submit(prompt, { maxTokens: 1, temperature: 0 });
  for await (const _ of gen);
  const s = await gen.stats;
  return { ms: s.timeToFirstTokenMs, cached: s.cachedTokens };
}

console.log(`prefix reuse: two requests sharing a ${prefixLen}-token prefix, suffixes of ${suffixLen} tokens; random q4 weights` +
  `${layers ? `, first ${layers} layers` : ''} (2 shared cores, other jobs running: figures are noisy, the ratio is what counts)`);
for (const name of names) {
  const model = randomModel(readJson(join(root, CONFIGS[name]), name), { layers, quantize: { bits: 4, groupSize: 64 }, seed: 0 });
  const loaded = { dir: name, config: {}, model, tokenizer: null, chatTemplate: null, eosIds: [], generationConfig: {} };
  const sched = new BatchScheduler(loaded, { maxBatch: 4 });
  const V = model.vocabSize;
  await ttft(sched, ids(64, 99, V)); // warm-up: threads, pages of the weights
  const prefix = ids(prefixLen, 1, V);
  const first = cat(prefix, ids(suffixLen, 2, V)), second = cat(prefix, ids(suffixLen, 3, V));
  const a = await ttft(sched, first);
  const b = await ttft(sched, second);
  const pool = sched.prefixStats();
  console.log(`  ${name}: first request ${a.ms.toFixed(0)} ms to first token (${a.cached} cached), second ${b.ms.toFixed(0)} ms (${b.cached} cached): ` +
    `${(a.ms / b.ms).toFixed(1)}x sooner; pool ${pool.blocks} blocks, ${(pool.bytes / 2 ** 20).toFixed(0)} MiB`);
  if (baseline) {
    const off = new BatchScheduler(loaded, { maxBatch: 4, prefixCache: false });
    const c = await ttft(off, first);
    console.log(`    first request with the prefix cache off (prefill chunk ${prefillChunkFor(model, {})} instead of ${sched.prefixCache.chunk}): ` +
      `${c.ms.toFixed(0)} ms (the grid costs a cold prompt ${(((a.ms - c.ms) / c.ms) * 100).toFixed(1)} %)`);
  }
  if (!check) continue;
  // The second request's path (restore from the same pool, prefill the rest on its grid) against a
  // fresh prefill on the same grid.
  const chunk = sched.prefixCache.chunk;
  const reusedState = model.newState();
  const use = sched.prefixCache.begin(reusedState, second, {});
  const reused = new PromptPrefill(model, reusedState, second, { chunk });
  if (use.cachedTokens) reused.skip(use.cachedTokens);
  const got = reused.runAll().slice();
  use.track?.release();
  const want = new PromptPrefill(model, model.newState(), second, { chunk }).runAll();
  let d = 0;
  for (let i = 0; i < want.length; i++) d = Math.max(d, Math.abs(got[i] - want[i]));
  console.log(`    logits after reuse (${use.cachedTokens} restored) vs a fresh prefill of the same ${second.length} tokens: max |Δ| ${d.toExponential(2)}`);
}
