#!/usr/bin/env node
// End-to-end decode throughput at real model shapes (random q4 weights) as a fraction of the
// machine's read bandwidth measured in the same run. Decode is memory-bound: the ceiling is
// bandwidth / bytes read per token (the weights streamed, plus the KV the step's attention reads in the
// run's KV storage), so `fraction` = achieved GB/s / measured GB/s.
//   pnpm bench decode [--models gemma3n,gemma4,phi35] [--layers N] [--prompt 64] [--gen 16] [--matmul fast|exact|int8] [--json]
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuInfo, setMatmulPrecision } from '../packages/core-native/lib/index.js';
import { readBandwidth } from './bandwidth.mjs';
import { randomModel, readJson } from '../packages/engine/dist/index.js';
import { runBench } from '../packages/cli/dist/index.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const MODELS = {
  gemma3n: { config: 'fixtures/configs/unsloth--gemma-3n-E2B-it.json', label: 'Gemma 3n E2B' },
  gemma4: { config: 'fixtures/configs/gemma-4-E2B-it.json', label: 'Gemma 4 E2B' },
  phi35: { config: 'fixtures/configs/Phi-3.5-mini-instruct.json', label: 'Phi-3.5-mini' },
};

const args = process.argv.slice(2);
const flag = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : dflt;
};
const names = flag('models', 'gemma3n,gemma4,phi35').split(',');
const layers = flag('layers') ? Number(flag('layers')) : undefined;
const promptTokens = Number(flag('prompt', '64'));
const genTokens = Number(flag('gen', '16'));
const json = args.includes('--json');
const matmul = flag('matmul', 'balanced'); // as `mlxcel bench`: integer-activation matmuls unless --matmul exact
setMatmulPrecision(matmul);

const info = cpuInfo();
const bw = readBandwidth();
const rows = [];
for (const name of names) {
  const m = MODELS[name];
  if (!m) throw new Error(`unknown model ${name} (known: ${Object.keys(MODELS).join(', ')})`);
  const config = readJson(join(root, m.config), m.label);
  const t0 = performance.now();
  const model = randomModel(config, { layers, quantize: { bits: 4, groupSize: 64 }, seed: 0 });
  const buildS = (performance.now() - t0) / 1000;
  const r = runBench(model, m.label, promptTokens, genTokens);
  const perToken = r.weight_bytes + r.kv_read_bytes_per_token;
  const gbs = (r.decode_tok_s * perToken) / 1e9;
  rows.push({
    model: m.label, layers: model.numLayers, weight_gb_per_token: r.weight_bytes / 1e9, kv_gb_per_token: r.kv_read_bytes_per_token / 1e9, kv_cache: r.kv_cache,
    decode_tok_s: r.decode_tok_s, prefill_tok_s: r.prefill_tok_s, achieved_gb_s: gbs, bandwidth_gb_s: bw,
    fraction_of_ceiling: gbs / bw, ceiling_tok_s: bw / (perToken / 1e9), build_s: buildS,
  });
}
if (json) console.log(JSON.stringify({ isa: info.isa, threads: info.threads, bandwidth_gb_s: bw, rows }));
else {
  console.log(`read bandwidth ${bw.toFixed(1)} GB/s (streaming sum over 1 GiB, ${info.threads} threads, ${info.isa})`);
  for (const r of rows)
    console.log(
      `${r.model.padEnd(14)} ${String(r.layers).padStart(2)} layers q4 | ${r.weight_gb_per_token.toFixed(2)} GB weights + ${r.kv_gb_per_token.toFixed(3)} GB ${r.kv_cache} KV per token | decode ${r.decode_tok_s.toFixed(2)} tok/s ` +
        `(ceiling ${r.ceiling_tok_s.toFixed(2)}) = ${(100 * r.fraction_of_ceiling).toFixed(0)}% of bandwidth (target 85%) | prefill ${r.prefill_tok_s.toFixed(1)} tok/s`,
    );
}
