#!/usr/bin/env node
// `pnpm bench batch`: aggregate decode throughput of the continuous-batching scheduler with 1, 2, 4
// and 8 concurrent requests against the same model (random q4 weights at a real model's shapes),
// measured in the same run. Decode streams every weight once per step whatever the batch, so the
// aggregate rate should grow almost linearly until the per-row arithmetic or attention shows.
//
// Matmul precision as `mlxcel serve` runs it (balanced: integer activations in quantized matmuls, decode
// GEMVs included, 8-bit in the MLP's gate/up projections and 16-bit elsewhere) unless --matmul says
// otherwise; every precision keeps batched == single.
//
//   node packages/engine/bench/batch.mjs [--model gemma3n|gemma4|phi35] [--layers N] [--prompt 32] [--gen 32] [--batches 1,2,4,8] [--matmul balanced|fast|exact|int8|mixed] [--weight-memory resident|mapped] [--weight-layout auto|rows] [--bits 4|8] [--kv-cache f32|f16|bf16|q8|k8v4] [--profile] [--profile-shapes] [--profile-rows 12]
// --profile: per batch size, the native kernel time per op kind over the decode steps (prefill
// excluded: counting starts once every prompt has its first token) and what is left of the wall time
// (JS, scheduling, waiting), per decode step. --profile-shapes: the same with each matmul kind split by
// weight shape (as `mlxcel bench --profile-shapes`). Each op kind shows its ms and native calls per step;
// --profile-rows: how many op kinds (the costliest first; default 12).
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setMatmulPrecision, startProfile, stopProfile } from '@mlxcel/core-native';
import { setWeightLayout, setWeightPlacement, weightLayout, weightPlacement } from '@mlxcel/tensor';
import { BatchScheduler, defaultKvStorage, randomModel, readJson } from '../dist/index.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '../../..');
const CONFIGS = {
  gemma3n: 'fixtures/configs/unsloth--gemma-3n-E2B-it.json',
  gemma4: 'fixtures/configs/gemma-4-E2B-it.json',
  phi35: 'fixtures/configs/Phi-3.5-mini-instruct.json',
};
const args = process.argv.slice(2);
const flag = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : dflt;
};
const name = flag('model', 'gemma3n');
if (!CONFIGS[name]) throw new Error(`unknown model ${name} (known: ${Object.keys(CONFIGS).join(', ')})`);
const layers = flag('layers') ? Number(flag('layers')) : undefined;
const promptLen = Number(flag('prompt', '32'));
const gen = Number(flag('gen', '32'));
const batches = flag('batches', '1,2,4,8').split(',').map(Number);
const precision = setMatmulPrecision(flag('matmul', 'balanced'));
if (flag('weight-memory')) setWeightPlacement(flag('weight-memory'));
if (flag('weight-layout')) setWeightLayout(flag('weight-layout'));
const profileShapes = args.includes('--profile-shapes');
const profile = profileShapes || args.includes('--profile');
const profileRows = Number(flag('profile-rows', '12'));
// KV storage as `mlxcel serve` picks it: --kv-cache, else f16 on the fast paths and f32 with exact.
const kvCache = flag('kv-cache', defaultKvStorage(precision));

const bits = Number(flag('bits', '4'));
if (bits !== 4 && bits !== 8) throw new Error(`--bits must be 4 or 8, got ${bits}`);
const model = randomModel(readJson(join(root, CONFIGS[name]), name), { layers, quantize: { bits, groupSize: 64 }, seed: 0 });
const loaded = { dir: name, config: {}, model, tokenizer: null, chatTemplate: null, eosIds: [], generationConfig: {} };
const prompt = (k) => Int32Array.from({ length: promptLen }, (_, i) => (i * 7919 + k * 104729) % model.vocabSize);

async function run(n) {
  const sched = new BatchScheduler(loaded, { maxBatch: n });
  let first = 0, firsts = 0;
  const t0 = performance.now();
  const gens = Array.from({ length: n }, (_, k) => sched.submit(prompt(k), { maxTokens: gen, temperature: 0, kvCache }));
  // Decode time starts when the last request has its first token (all prompts prefilled).
  await Promise.all(gens.map(async (g) => {
    let i = 0;
    for await (const _ of g)
      if (++i === 1) {
        first = Math.max(first, performance.now());
        // The last prompt's first token: every later step is decode only.
        if (profile && ++firsts === n) startProfile({ matmulShapes: profileShapes });
      }
  }));
  const t1 = performance.now();
  const ops = profile ? stopProfile() : undefined;
  return { n, total: (t1 - t0) / 1000, decodeTokS: (n * (gen - 1)) / ((t1 - first) / 1000), ops, decodeMs: t1 - first };
}

await run(1); // warm-up
console.log(`${name}${layers ? ` (${layers} layers)` : ''}, random q${bits}, prompt ${promptLen}, ${gen} tokens each, --matmul ${precision}, --weight-memory ${weightPlacement()}, --weight-layout ${weightLayout()}, --kv-cache ${kvCache}`);
let base = 0;
for (const n of batches) {
  const r = await run(n);
  if (n === batches[0]) base = r.decodeTokS / n;
  console.log(`  ${String(n).padStart(2)} concurrent: aggregate decode ${r.decodeTokS.toFixed(1)} tok/s (${(r.decodeTokS / n).toFixed(1)} per request) = ${(r.decodeTokS / base).toFixed(2)}x one request`);
  if (r.ops) {
    // Approximately gen - 1 steps after the profile starts (a late first token shortens it a little).
    const steps = gen - 1, nativeMs = Object.values(r.ops).reduce((a, o) => a + o.ms, 0);
    const rows = Object.entries(r.ops).slice(0, profileRows).map(([k, o]) => `${k} ${(o.ms / steps).toFixed(2)} (${(o.calls / steps).toFixed(0)} calls)`);
    console.log(`     per decode step (ms): wall ${(r.decodeMs / steps).toFixed(2)}, native ${(nativeMs / steps).toFixed(2)} [${rows.join(', ')}], rest ${((r.decodeMs - nativeMs) / steps).toFixed(2)}`);
  }
}
