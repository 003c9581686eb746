#!/usr/bin/env node
// Single-stream decode and prefill with the streamed 4-bit weights in the row layout and in the 16-row
// tile layout (@mlxcel/tensor setWeightLayout), in one process: the same random weights at a real
// model's shapes loaded twice (resident, one copy per layout), then turns alternating (each layout goes
// first in half the repetitions), greedy decode from the same prompt, and the median of the paired
// per-repetition ratios, so the machine's bandwidth swings hit both layouts alike.
//   node bench/layouts-decode.mjs [--model gemma3n|gemma4|phi35] [--layers N] [--prompt 64] [--gen 32] [--reps 6] [--matmul balanced]
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { weightTileLayout, setMatmulPrecision } from '../packages/core-native/lib/index.js';
import { ops, setWeightLayout, setWeightPlacement, weightArena } from '../packages/tensor/dist/index.js';
import { randomModel, readJson } from '../packages/engine/dist/index.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
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
if (!weightTileLayout()) {
  console.error('layouts-decode: the running kernels do not read the tile layout');
  process.exit(1);
}
const layers = flag('layers') ? Number(flag('layers')) : undefined;
const promptLen = Number(flag('prompt', '64')), gen = Number(flag('gen', '32')), reps = Number(flag('reps', '6'));
const precision = setMatmulPrecision(flag('matmul', 'balanced'));
setWeightPlacement('resident');
const config = readJson(join(root, CONFIGS[name]), name);
const load = (layout) => {
  setWeightLayout(layout);
  return randomModel(config, { layers, quantize: { bits: 4, groupSize: 64 }, seed: 0 });
};
const rows = load('rows');
const tiled0 = weightArena.tiledBytes;
const tiles = load('auto');
console.log(`${name}${layers ? ` (${layers} layers)` : ''}, random q4, --matmul ${precision}, prompt ${promptLen}, ${gen} tokens, ${((weightArena.tiledBytes - tiled0) / 2 ** 30).toFixed(2)} GiB in tiles`);

const prompt = Int32Array.from({ length: promptLen }, (_, i) => (i * 7919) % rows.vocabSize);
function run(model) {
  const state = model.newState();
  const t0 = performance.now();
  let logits = model.forward([{ ids: prompt, state }], { logits: 'last' })[0];
  const t1 = performance.now();
  const ids = [];
  for (let s = 0; s < gen; s++) {
    const tok = ops.argmax(logits, model.vocabSize)[0];
    ids.push(tok);
    logits = model.forward([{ ids: Int32Array.of(tok), state }], { logits: 'last' })[0];
  }
  const t2 = performance.now();
  return { prefill: promptLen / ((t1 - t0) / 1000), decode: gen / ((t2 - t1) / 1000), ids };
}
run(rows);
run(tiles);
const median = (a) => [...a].sort((u, v) => u - v)[a.length >> 1];
const r = { rows: [], tiles: [], pre: [], dec: [] };
let firstDiff = -1; // first decode step whose greedy id differs (random weights leave near-tied logits)
for (let i = 0; i < reps; i++) {
  let a, b;
  if (i & 1) { b = run(tiles); a = run(rows); }
  else { a = run(rows); b = run(tiles); }
  r.rows.push(a);
  r.tiles.push(b);
  r.pre.push(b.prefill / a.prefill);
  r.dec.push(b.decode / a.decode);
  const d = a.ids.findIndex((t, k) => t !== b.ids[k]);
  if (d >= 0 && (firstDiff < 0 || d < firstDiff)) firstDiff = d;
}
const best = (xs, k) => Math.max(...xs.map((x) => x[k]));
console.log(`prefill tok/s: rows best ${best(r.rows, 'prefill').toFixed(1)}, tiles best ${best(r.tiles, 'prefill').toFixed(1)}, tiles/rows ${median(r.pre).toFixed(3)}x (median of ${reps} paired)`);
console.log(`decode tok/s: rows best ${best(r.rows, 'decode').toFixed(2)}, tiles best ${best(r.tiles, 'decode').toFixed(2)}, tiles/rows ${median(r.dec).toFixed(3)}x (median of ${reps} paired)`);
console.log(firstDiff < 0 ? 'greedy ids identical between the layouts' : `greedy ids first differ at decode step ${firstDiff} (random weights: near-tied logits; the fixtures' check is packages/engine/test/weight-memory.test.ts)`);
