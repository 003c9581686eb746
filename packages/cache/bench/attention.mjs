#!/usr/bin/env node
// `pnpm bench attention`: decode attention over f16 / q8 / k8v4 caches as a fraction of the read
// bandwidth measured in the same run, and prefill attention GFLOP/s.
//
//   node packages/cache/bench/attention.mjs [--threads N] [--isa NAME] [--runs R] [--quick] [--json]
//     [--kv-heads 8] [--group 8] [--head-dims 128,256] [--contexts 4096,16384] [--storages f16,q8,k8v4] [--no-prefill]
//     [--prefill T:kvHeads:group:headDim:storage,...] [--no-decode]
// (--kv-heads 32 --group 1 --head-dims 96: Phi-3.5-mini's multi-head attention; --kv-heads 2 --group 4
// --head-dims 256: Gemma 3n E2B's.)
//
// Read bandwidth: core-native streamSum over a 1 GiB buffer on all pool threads (as bench kernels).
// Decode: one query row, by default 8 query heads per KV head (8 KV heads, 64 query heads), head_dim 128
// and 256, contexts 4096 and 16384. Each configuration builds enough caches (one per "layer") that one pass
// touches >= 512 MiB, far beyond the last-level cache, and times a pass over all of them, so every call
// streams its KV from DRAM. KV bytes = every byte the kernel must read: codes, scales and biases.
// Prefill: by default 2048 tokens, causal, 32 query heads over 8 KV heads, head_dim 128, f32 cache;
// --prefill lists other shapes (512:1:8:256:f16 is a Gemma 4 E2B sliding layer's 512-token prompt,
// 512:32:1:96:f16 Phi-3.5-mini's). GFLOP/s counts the multiply-adds of the visible (causal) half:
// 4 * heads * headDim * T(T+1)/2 / t.
// Every figure is the median of several timed passes after a warm-up pass.
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { randomFillSync } from 'node:crypto';

const here = dirname(fileURLToPath(import.meta.url));
const native = await import(pathToFileURL(join(here, '../node_modules/@mlxcel/core-native/lib/index.js')).href);
const cache = await import(pathToFileURL(join(here, '../dist/index.js')).href);
const tensor = await import(pathToFileURL(join(here, '../node_modules/@mlxcel/tensor/dist/index.js')).href);

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
};
const quick = args.includes('--quick');
const asJson = args.includes('--json');
const runs = Math.max(3, Number(opt('runs', quick ? 3 : 7)));
if (opt('isa')) native.setIsa(opt('isa'));
const info = native.cpuInfo();
const threads = Number(opt('threads', info.physicalCores));
native.setThreads(threads);
const log = asJson ? () => {} : (s = '') => console.log(s);
const GiB = 1024 ** 3, MiB = 1024 ** 2;

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const now = () => Number(process.hrtime.bigint()) / 1e9;
function timeIt(fn) {
  fn();
  const t = [];
  for (let r = 0; r < runs; r++) {
    const t0 = now();
    fn();
    t.push(now() - t0);
  }
  return median(t);
}

/** Deterministic pseudo-random floats in [-1, 1) (fast enough for hundreds of MiB of rows). */
function fillRandom(a, seed) {
  let x = seed >>> 0 || 1;
  for (let i = 0; i < a.length; i++) {
    x ^= x << 13; x ^= x >>> 17; x ^= x << 5;
    a[i] = ((x >>> 0) / 4294967296) * 2 - 1;
  }
}

// --- read bandwidth -----------------------------------------------------------------------------
const probe = new Uint8Array(native.alloc(GiB));
randomFillSync(probe.subarray(0, 64 * MiB));
for (let off = 64 * MiB; off < GiB; off += 64 * MiB) probe.copyWithin(off, 0, 64 * MiB);
const bandwidth = GiB / timeIt(() => native.streamSum(probe)) / 1e9;

log(`@mlxcel/cache attention bench — ${info.isa}, ${threads} threads (${info.physicalCores} physical cores), load ${loadavg()[0].toFixed(2)}`);
log(`read bandwidth (streamSum, 1 GiB): ${bandwidth.toFixed(1)} GB/s`);
log('');

const list = (name, dflt) => String(opt(name, dflt)).split(',').filter(Boolean);
const KV_HEADS = Number(opt('kv-heads', 8)), GROUP = Number(opt('group', 8));
const HEAD_DIMS = list('head-dims', '128,256').map(Number);
const CONTEXTS = list('contexts', quick ? '4096' : '4096,16384').map(Number);
const STORAGES = list('storages', 'f16,q8,k8v4');
for (const [name, v] of [['kv-heads', KV_HEADS], ['group', GROUP], ...HEAD_DIMS.map((d) => ['head-dims', d]), ...CONTEXTS.map((c) => ['contexts', c])])
  if (!Number.isInteger(v) || v < 1) throw new Error(`--${name} must be positive integers, got ${opt(name)}`);
const results = { isa: info.isa, threads, bandwidthGBs: bandwidth, decode: [], prefill: null };

/** A cache of `ctx` random tokens (written in chunks so the f32 source stays small). */
function makeCache(storage, D, ctx, seed) {
  const c = cache.createLayerCache({ nKvHeads: KV_HEADS, headDim: D }, storage);
  const chunk = 1024;
  const k = new Float32Array(chunk * KV_HEADS * D), v = new Float32Array(chunk * KV_HEADS * D);
  for (let t = 0; t < ctx; t += chunk) {
    fillRandom(k, seed + t);
    fillRandom(v, seed + t + 7);
    c.update(k, v, Math.min(chunk, ctx - t));
  }
  return c;
}

/** Bytes the kernel reads per context slot (all KV heads): codes + scales + biases. */
function bytesPerSlot(storage, D) {
  const f = cache.storeFormat(storage, D, D);
  if (!f.quantized) return (KV_HEADS * 2 * D * f.kBits) / 8;
  return KV_HEADS * (D + (D * f.vBits) / 8 + 8 * (2 * D / f.groupSize));
}

if (!args.includes('--no-decode')) {
  log(`decode attention (1 query row, ${KV_HEADS * GROUP} query heads over ${KV_HEADS} KV heads):`);
  log('  ctx     hd   storage   time/layer   KV GB/s   of read bw   vs f16');
  for (const D of HEAD_DIMS) {
    for (const ctx of CONTEXTS) {
      let f16Time = 0;
      for (const storage of STORAGES) {
        const perLayer = bytesPerSlot(storage, D) * ctx;
        const layers = Math.max(2, Math.ceil((quick ? 128 * MiB : 512 * MiB) / perLayer));
        const caches = [];
        for (let l = 0; l < layers; l++) caches.push(makeCache(storage, D, ctx, 1000 * l + 1));
        const q = new Float32Array(KV_HEADS * GROUP * D);
        fillRandom(q, 99);
        const qPos = Int32Array.of(ctx - 1);
        const opts = { scale: 1 / Math.sqrt(D) };
        const t = timeIt(() => {
          for (const c of caches) c.attend(q, 1, KV_HEADS * GROUP, qPos, opts);
        }) / layers;
        if (storage === 'f16' || !f16Time) f16Time = t;
        const gbs = perLayer / t / 1e9;
        results.decode.push({ ctx, headDim: D, storage, layerSeconds: t, kvGBs: gbs, fractionOfBandwidth: gbs / bandwidth, vsF16: t / f16Time });
        log(`  ${String(ctx).padEnd(7)} ${String(D).padEnd(4)} ${storage.padEnd(9)} ${(t * 1e3).toFixed(3).padStart(8)} ms ${gbs.toFixed(1).padStart(8)} ${(100 * gbs / bandwidth).toFixed(1).padStart(10)} % ${(t / f16Time).toFixed(2).padStart(7)}x`);
        caches.length = 0;
      }
    }
  }
}

// --- prefill ------------------------------------------------------------------------------------
// Shapes as tokens:kvHeads:group:headDim:storage (causal, one sequence, the whole prompt in one call).
// The calls run inside a layer-arena scope, as a model's layers do, so the output is reused memory
// rather than fresh pages (whose first-touch faults would be counted otherwise).
if (!args.includes('--no-prefill')) {
  const shapes = list('prefill', '2048:8:4:128:f32').map((spec) => {
    const [T, kv, g, D, storage = 'f32'] = spec.split(':');
    const shape = { T: Number(T), kv: Number(kv), g: Number(g), D: Number(D), storage };
    for (const k of ['T', 'kv', 'g', 'D'])
      if (!Number.isInteger(shape[k]) || shape[k] < 1) throw new Error(`--prefill: '${spec}' is not tokens:kvHeads:group:headDim[:storage] with positive integers`);
    return shape;
  });
  results.prefill = [];
  log('');
  log('prefill attention (causal, one call over the whole prompt):');
  log('  tokens  heads (q/kv)  hd    storage   time       GFLOP/s');
  for (const { T, kv, g, D, storage } of shapes) {
    const nH = kv * g;
    const c = cache.createLayerCache({ nKvHeads: kv, headDim: D }, storage);
    const k = new Float32Array(T * kv * D), v = new Float32Array(T * kv * D), q = new Float32Array(T * nH * D);
    fillRandom(k, 1); fillRandom(v, 2); fillRandom(q, 3);
    c.update(k, v, T);
    const qPos = Int32Array.from({ length: T }, (_, i) => i);
    const t = timeIt(() => tensor.withLayerArenas((nextLayer) => {
      nextLayer();
      c.attend(q, T, nH, qPos, { scale: 1 / Math.sqrt(D) });
    }));
    // Multiply-adds of the visible (causal) half, QK and PV: 4 * heads * headDim * T(T+1)/2.
    const flops = 4 * nH * D * (T * (T + 1)) / 2;
    results.prefill.push({ tokens: T, heads: nH, kvHeads: kv, headDim: D, storage, seconds: t, gflops: flops / t / 1e9 });
    log(`  ${String(T).padEnd(7)} ${`${nH}/${kv}`.padEnd(13)} ${String(D).padEnd(5)} ${storage.padEnd(9)} ${(t * 1e3).toFixed(2).padStart(8)} ms ${(flops / t / 1e9).toFixed(1).padStart(8)}`);
  }
}

if (asJson) console.log(JSON.stringify(results, null, 2));
