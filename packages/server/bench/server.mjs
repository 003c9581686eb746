#!/usr/bin/env node
// `pnpm bench server`: what the HTTP layer costs and whether it stays responsive, from one run.
//   1. /health latency p50 / p99: idle, while 8 streams decode, while a 4000-token prompt prefills
//      (target: p99 < 50 ms in all three: compute is on the engine thread, not the event loop);
//   2. aggregate decode tok/s of 8 concurrent streams through HTTP (a spawned `mlxcel serve`) vs the
//      same 8 requests through the engine's BatchScheduler directly, in this process, same model
//      (target: HTTP costs < 5 %).
// The model: Phi-3.5-mini's shapes with random q4 weights, cut to --layers (default 2), and the
// demo's real tokenizer (same 32064 vocabulary), written once to the OS temp folder.
//
//   node packages/server/bench/server.mjs [--layers 1] [--gen 64] [--prefill 4000] [--probes 200] [--rounds 3]
//
// The tok/s comparison alternates HTTP and direct rounds (the server idles during direct ones) and
// reports the best of each, so a burst of load from other jobs on the machine hits both sides alike.
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BatchScheduler, architectureFor, loadModel, readJson, shrinkLayers } from '@mlxcel/engine';
import { writeSafetensors } from '@mlxcel/tensor';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '../../..');
const args = process.argv.slice(2);
const flag = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : dflt;
};
const layers = Number(flag('layers', '1'));
const rounds = Number(flag('rounds', '3'));
const gen = Number(flag('gen', '64'));
const prefillTokens = Number(flag('prefill', '4000'));
const probes = Number(flag('probes', '200'));
const STREAMS = 8;

function checkpoint() {
  const dir = join(tmpdir(), `mlxcel-bench-server-phi35-q4-${layers}l`);
  if (existsSync(join(dir, 'model.safetensors'))) return dir;
  console.log(`writing a ${layers}-layer random q4 Phi-3.5-mini checkpoint to ${dir} (once)`);
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const demo = join(root, 'packages/engine/assets/demo');
  for (const f of ['tokenizer.json', 'tokenizer_config.json', 'generation_config.json']) copyFileSync(join(demo, f), join(tmp, f));
  const config = { ...shrinkLayers(readJson(join(root, 'fixtures/configs/Phi-3.5-mini-instruct.json'), 'phi35'), layers), quantization: { group_size: 64, bits: 4, mode: 'affine' } };
  writeFileSync(join(tmp, 'config.json'), JSON.stringify(config, null, 2));
  const store = architectureFor(config).randomWeights(config, { seed: 0, quantize: { bits: 4, groupSize: 64 } });
  const tensors = {};
  for (const k of store.keys().sort()) tensors[k] = store.get(k);
  writeSafetensors(join(tmp, 'model.safetensors'), tensors, { format: 'pt' });
  renameSync(tmp, dir);
  return dir;
}

const dir = checkpoint();
// Token-id prompts (no tokenization in the measurement); EOS suppressed so every request runs `gen` tokens.
const prompt = (k) => Array.from({ length: 32 }, (_, i) => 100 + ((i * 7919 + k * 104729) % 30000));
const noEos = { 32000: -100, 32007: -100, 2: -100 };

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

async function startServer() {
  const cli = join(root, 'packages/cli/dist/bin.js');
  const proc = spawn(process.execPath, [cli, 'serve', '--model', dir, '--port', '0', '--max-batch', String(STREAMS), '--log-level', 'warn', '--no-webui'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  const base = await new Promise((resolve, reject) => {
    proc.stderr.on('data', (d) => {
      err += d;
      const m = /listening on (http:\/\/\S+)/.exec(err);
      if (m && /mlxcel serving/.test(err)) resolve(m[1]);
    });
    proc.on('exit', (c) => reject(new Error(`server exited (${c}): ${err}`)));
  });
  return { proc, base };
}

/** /health round trips until `until()` says stop (or `probes` of them when idle). */
async function healthLatencies(base, until) {
  const ms = [];
  while (until ? !until() : ms.length < probes) {
    const t = performance.now();
    const r = await fetch(`${base}/health`);
    await r.arrayBuffer();
    ms.push(performance.now() - t);
    if (until) await new Promise((r) => setTimeout(r, 5));
  }
  return ms;
}

/** 8 streamed completions; decode rate counted from the moment the last stream has its first token. */
async function httpStreams(base) {
  let lastFirst = 0, tokens = 0;
  const one = async (k) => {
    const r = await fetch(`${base}/v1/completions`, {
      method: 'POST',
      body: JSON.stringify({ prompt: prompt(k), max_tokens: gen, temperature: 0, logit_bias: noEos, stream: true, stream_options: { include_usage: true } }),
    });
    const reader = r.body.getReader();
    const dec = new TextDecoder();
    let raw = '', first = false;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      raw += dec.decode(value, { stream: true });
      if (!first && raw.includes('"text"')) {
        first = true;
        lastFirst = Math.max(lastFirst, performance.now());
      }
    }
    tokens += JSON.parse(/data: (\{"[^\n]*"usage":\{[^\n]*)\n/.exec(raw)[1]).usage.completion_tokens;
  };
  await Promise.all(Array.from({ length: STREAMS }, (_, k) => one(k)));
  const t1 = performance.now();
  return { tokS: (tokens - STREAMS) / ((t1 - lastFirst) / 1000), tokens };
}

async function directScheduler(sched) {
  let lastFirst = 0, tokens = 0;
  await Promise.all(Array.from({ length: STREAMS }, async (_, k) => {
    let i = 0;
    for await (const _t of sched.submit(Int32Array.from(prompt(k)), { maxTokens: gen, temperature: 0, logitBias: noEos })) {
      if (++i === 1) lastFirst = Math.max(lastFirst, performance.now());
      tokens++;
    }
  }));
  return { tokS: (tokens - STREAMS) / ((performance.now() - lastFirst) / 1000), tokens };
}

const { proc, base } = await startServer();
const line = (label, ms) => console.log(`  ${label.padEnd(34)} p50 ${pct(ms, 50).toFixed(1).padStart(6)} ms   p99 ${pct(ms, 99).toFixed(1).padStart(6)} ms   (${ms.length} probes)`);
try {
  console.log(`mlxcel serve, Phi-3.5-mini shapes, ${layers} layer(s), random q4; ${STREAMS} streams x ${gen} tokens`);
  console.log('(the machine may be shared with other jobs: absolute figures are noisy, compare within this run)');
  const sched = new BatchScheduler(await loadModel(dir), { maxBatch: STREAMS });
  await httpStreams(base); // warm-up (first allocations, JIT) on both sides
  await directScheduler(sched);
  const http = [], direct = [];
  for (let r = 0; r < rounds; r++) {
    http.push((await httpStreams(base)).tokS);
    direct.push((await directScheduler(sched)).tokS);
  }
  console.log('/health latency:');
  line('idle', await healthLatencies(base));
  let done = false;
  const during = healthLatencies(base, () => done);
  await httpStreams(base).finally(() => (done = true));
  line(`during ${STREAMS} decoding streams`, await during);
  done = false;
  const duringPrefill = healthLatencies(base, () => done);
  const t0 = performance.now();
  const long = await fetch(`${base}/v1/completions`, { method: 'POST', body: JSON.stringify({ prompt: Array.from({ length: prefillTokens }, (_, i) => 100 + ((i * 31) % 30000)), max_tokens: 1 }) });
  await long.json();
  done = true;
  line(`during a ${prefillTokens}-token prefill (${((performance.now() - t0) / 1000).toFixed(1)} s)`, await duringPrefill);
  const best = (xs) => Math.max(...xs);
  console.log(`aggregate decode, ${STREAMS} concurrent requests (${rounds} alternating rounds each):`);
  console.log(`  through HTTP (SSE)        best ${best(http).toFixed(1)} tok/s   rounds ${http.map((x) => x.toFixed(1)).join(' / ')}`);
  console.log(`  BatchScheduler directly   best ${best(direct).toFixed(1)} tok/s   rounds ${direct.map((x) => x.toFixed(1)).join(' / ')}`);
  console.log(`  HTTP cost                 ${((1 - best(http) / best(direct)) * 100).toFixed(1)} % of the direct rate (target < 5 %)`);
} finally {
  proc.kill('SIGKILL');
}
