#!/usr/bin/env node
// Sampler.sample over a 262,144-token logits row (Gemma's vocabulary), greedy, in one process: without
// logit edits (the log-softmax reads the row in place) beside the same options plus a zero logit bias,
// which takes the copy path (a copy of the row, then the same log-softmax), so the copy's cost is the
// difference measured in the same run. Median of 5 rounds of 200 calls each, after 50 warm-up calls.
//   node packages/engine/bench/sampler.mjs [--vocab 262144]
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const { Sampler } = await import(pathToFileURL(join(here, '../dist/index.js')).href);
const args = process.argv.slice(2);
const i = args.indexOf('--vocab');
const V = i >= 0 ? Number(args[i + 1]) : 262144;
if (!Number.isInteger(V) || V < 1) throw new Error(`--vocab must be a positive integer, got ${args[i + 1]}`);
const z = new Float32Array(V).map((_, k) => Math.sin(k * 0.001) * 5);
const cases = [
  ['greedy, no logit edits (in place)', { temperature: 0 }],
  ['greedy, logitBias {0: 0} (copy path)', { temperature: 0, logitBias: { 0: 0 } }],
];
for (const [name, opts] of cases) {
  const s = new Sampler(opts);
  for (let k = 0; k < 50; k++) s.sample(z);
  const rounds = [];
  for (let r = 0; r < 5; r++) {
    const t = performance.now();
    for (let k = 0; k < 200; k++) s.sample(z);
    rounds.push((performance.now() - t) / 200);
  }
  rounds.sort((a, b) => a - b);
  console.log(`${name}: ${(rounds[2] * 1000).toFixed(0)} µs per sample (vocabulary ${V})`);
}
