#!/usr/bin/env node
// Batched decode attention over short contexts, as a continuous-batching step runs it: one query row per
// sequence, every layer's caches of all sequences in one attendBatch call, at Phi-3.5-mini's geometry
// (32 query heads over 32 KV heads, head_dim 96) by default. Prints the median step time over all layers
// and the time per (sequence, head) unit.
//   node packages/cache/bench/attention-batch.mjs [--ctx 48] [--seqs 8] [--layers 32] [--heads 32] [--kv-heads 32] [--head-dim 96] [--storage f32|f16|bf16|q8|k8v4] [--steps 15]
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const cache = await import(pathToFileURL(join(here, '../dist/index.js')).href);
const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
};
const ctx = Number(opt('ctx', 48)), S = Number(opt('seqs', 8)), L = Number(opt('layers', 32));
const H = Number(opt('heads', 32)), KV = Number(opt('kv-heads', 32)), D = Number(opt('head-dim', 96));
const storage = opt('storage', 'f32'), steps = Number(opt('steps', 15));
let seed = 1;
const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32) - 0.5;
const layers = [];
for (let l = 0; l < L; l++) {
  const seqs = [];
  for (let s = 0; s < S; s++) {
    const c = cache.createLayerCache({ nKvHeads: KV, headDim: D }, storage);
    c.update(new Float32Array(ctx * KV * D).map(rand), new Float32Array(ctx * KV * D).map(rand), ctx);
    seqs.push(c);
  }
  layers.push(seqs);
}
const q = new Float32Array(S * H * D).map(rand);
const qPos = Int32Array.of(ctx);
const step = () => {
  for (const seqs of layers) cache.attendBatch(q, seqs.map((c) => ({ cache: c, rows: 1, qPos })), H, { scale: 1 / Math.sqrt(D) });
};
for (let i = 0; i < 5; i++) step();
const ts = [];
for (let r = 0; r < steps; r++) {
  const t = performance.now();
  step();
  ts.push(performance.now() - t);
}
ts.sort((a, b) => a - b);
const med = ts[ts.length >> 1];
console.log(`${storage} KV, ${ctx} keys, ${S} sequences, ${L} layers, ${H}/${KV} heads x ${D}: ${med.toFixed(2)} ms per step, ${((med / L / S / H) * 1000).toFixed(2)} us per (sequence, head)`);
