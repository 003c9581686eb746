#!/usr/bin/env node
// mlxcel vs llama.cpp (node-llama-cpp's prebuilt CPU build) on this machine, in one run: both engines get
// the same random weights at the real shapes (our q4/q8 MLX affine checkpoint, written to GGUF as
// Q4_0/Q8_0 with the same codes and scales), the same prompt and generation lengths and the same
// thread count, and run alternately, model by model, each run in its own process with a read-bandwidth
// probe just before it. Reports the best repetition of each engine (this machine's noise only ever
// slows a run down) and the ratios.
//   pnpm bench peers [--models gemma3n,gemma4,phi35] [--quant q4,q8] [--layers N] [--prompt 512]
//                    [--gen 128] [--reps 2] [--threads N] [--matmul balanced|fast|exact|int8|mixed[,...]] [--warmup 16|N|prompt]
//                    [--kv-cache f32|f16|bf16|q8|k8v4] [--llama-kv-cache F16|F32|Q8_0] [--json]
// --kv-cache: our KV cache storage (as `mlxcel bench --kv-cache`; default as there: f16, f32 with --matmul exact);
// --llama-kv-cache: llama.cpp's K and V cache type (default F16, node-llama-cpp's and llama.cpp's own).
// Both default to 16-bit caches (ours f16 on the fast paths, llama.cpp F16).
// --matmul: our matmul precision (as `mlxcel bench`; balanced by default: 8-bit integer activations in
// the MLP's gate/up projections, 16-bit elsewhere; fast: 16-bit everywhere; int8: 8-bit everywhere, like
// llama.cpp's Q8 activations; mixed: 8-bit in all MLP projections, 16-bit elsewhere). A comma list measures ours in each precision within every repetition, against the
// same llama.cpp runs: one row per model and precision.
// node-llama-cpp is a dependency of this benchmark only (bench/peers/package.json), installed here on
// first use into the node_modules folder of bench/peers/. GGUF files are cached under ~/.cache/mlxcel/peers
// (MLXCEL_CACHE), keyed by model, quantization and depth.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuInfo, MATMUL_PRECISIONS } from '../packages/core-native/lib/index.js';
import { KV_STORAGES } from '../packages/cache/dist/index.js';
import { defaultCacheDir } from '../packages/engine/dist/index.js';
import { MODELS } from './peers/models.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const peersDir = join(root, 'bench', 'peers');
const LLAMA_VERSION = '3.21.1';

const args = process.argv.slice(2);
const flag = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  if (i < 0) return dflt;
  if (i + 1 >= args.length) throw new Error(`--${name} needs a value`);
  return args[i + 1];
};
const positiveInt = (name, dflt) => {
  const v = flag(name, dflt);
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) {
    console.error(`--${name} must be a positive integer, got '${v}'`);
    process.exit(2);
  }
  return n;
};
const names = flag('models', 'gemma3n,gemma4,phi35').split(',');
for (const n of names)
  if (!MODELS[n]) {
    console.error(`--models: unknown model '${n}' (known: ${Object.keys(MODELS).join(', ')})`);
    process.exit(2);
  }
const quants = flag('quant', 'q4').split(',').map((q) => {
  if (q !== 'q4' && q !== 'q8') {
    console.error(`--quant: '${q}' is not q4 or q8`);
    process.exit(2);
  }
  return q === 'q4' ? 4 : 8;
});
const layers = flag('layers') === undefined ? 0 : positiveInt('layers');
// Gemma's KV sharing needs a full-attention layer among the layers that own a cache (the first is layer
// 4), and llama.cpp asserts at least two such layers: a cut below 6 layers runs in neither engine alike.
if (layers && layers < 6 && names.some((n) => n.startsWith('gemma'))) {
  console.error(`--layers ${layers}: the Gemma models need at least 6 layers (KV sharing reads a full-attention layer, the first is layer 4)`);
  process.exit(2);
}
const prompt = positiveInt('prompt', '512');
const gen = positiveInt('gen', '128');
const reps = positiveInt('reps', '2');
const threads = positiveInt('threads', String(cpuInfo().threads));
const json = args.includes('--json');
// --warmup: the warm-up prompt's length for both engines (16 by default; `prompt` = the prompt length:
// both then run their measured prompt on activation memory a first prompt of that length has already
// backed, the steady state of a server; docs/benchmarks.md, "Steady-state prefill").
const warmupFlag = flag('warmup', '16');
const warmup = warmupFlag === 'prompt' ? prompt : Number(warmupFlag);
if (!Number.isInteger(warmup) || warmup < 1) {
  console.error(`--warmup must be a positive integer or 'prompt', got '${warmupFlag}'`);
  process.exit(2);
}
const matmul = flag('matmul', 'balanced');
const matmuls = matmul.split(',');
if (!matmuls.length || matmuls.some((m) => !MATMUL_PRECISIONS.includes(m)) || new Set(matmuls).size !== matmuls.length) {
  console.error(`--matmul must be one of ${MATMUL_PRECISIONS.join(', ')} (or a comma list of distinct ones), got '${matmul}'`);
  process.exit(2);
}
const kvCache = flag('kv-cache');
if (kvCache !== undefined && !KV_STORAGES.includes(kvCache)) {
  console.error(`--kv-cache must be one of ${KV_STORAGES.join(', ')}, got '${kvCache}'`);
  process.exit(2);
}
const LLAMA_KV = ['F16', 'F32', 'BF16', 'Q8_0', 'Q4_0'];
const llamaKv = flag('llama-kv-cache', 'F16');
if (!LLAMA_KV.includes(llamaKv)) {
  console.error(`--llama-kv-cache must be one of ${LLAMA_KV.join(', ')}, got '${llamaKv}'`);
  process.exit(2);
}
const log = (s) => process.stderr.write(`[peers] ${s}\n`);

function installLlama() {
  if (existsSync(join(peersDir, 'node_modules', 'node-llama-cpp', 'package.json'))) return;
  const plat = `@node-llama-cpp/${process.platform === 'darwin' ? 'mac' : process.platform === 'win32' ? 'win' : process.platform}-${process.arch}${process.platform === 'darwin' && process.arch === 'arm64' ? '-metal' : ''}`;
  log(`installing node-llama-cpp ${LLAMA_VERSION} and ${plat} (prebuilt CPU binary) into the node_modules folder of bench/peers/`);
  // --omit=optional skips the GPU builds; the platform package is then added explicitly. Install scripts
  // are skipped: the prebuilt binary is used as shipped (getLlama with build: 'never').
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  // bench/peers/package-lock.json pins the whole tree (npm ci).
  for (const cmd of [['ci'], ['install', '--no-save', `${plat}@${LLAMA_VERSION}`]]) {
    const r = spawnSync(npm, [...cmd, '--omit=optional', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: peersDir, stdio: ['ignore', 'inherit', 'inherit'] });
    if (r.status !== 0) throw new Error(`npm install in bench/peers failed (exit ${r.status})`);
  }
}

function worker(jobArgs) {
  const r = spawnSync(process.execPath, [join(peersDir, 'worker.mjs'), ...jobArgs.map(String)], {
    cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, MLXCEL_THREADS: String(threads) },
  });
  const line = (r.stdout || '').trim().split('\n').pop();
  if (r.status !== 0 || !line) throw new Error(`worker ${jobArgs[0]} failed (exit ${r.status}${r.signal ? `, ${r.signal}` : ''})`);
  return JSON.parse(line);
}

installLlama();
const cacheDir = join(defaultCacheDir(), 'peers');
mkdirSync(cacheDir, { recursive: true });
const rows = [];
for (const bits of quants)
  for (const key of names) {
    const m = MODELS[key];
    const path = join(cacheDir, `${key}-${bits === 4 ? 'Q4_0' : 'Q8_0'}-${layers || 'full'}.gguf`);
    if (!existsSync(path)) {
      log(`writing ${path}`);
      worker(['gguf', key, bits, layers, path]);
    }
    // Runs in each repetition: llama.cpp, then ours once per precision (key "ours:<precision>").
    const engines = [{ key: 'llama' }, ...matmuls.map((mm) => ({ key: `ours:${mm}`, matmul: mm }))];
    const best = Object.fromEntries(engines.map((e) => [e.key, null]));
    const bw = [], load = [];
    let error = null;
    for (let rep = 0; rep < reps && !error; rep++)
      for (const { key: engine, matmul: mm } of engines) {
        const b = worker(['bandwidth']).gb_s;
        bw.push(b);
        load.push(loadavg()[0]);
        log(`${m.label} q${bits} rep ${rep + 1}/${reps}: ${engine} (bandwidth ${b.toFixed(1)} GB/s, load average ${loadavg()[0].toFixed(1)})`);
        const r = engine === 'llama' ? worker(['llama', path, prompt, gen, threads, warmup, llamaKv]) : worker(['ours', key, bits, layers, prompt, gen, mm, warmup, kvCache ?? '']);
        if (r.error) {
          error = r;
          log(`${r.error}\n${(r.log || []).join('\n')}`);
          break;
        }
        r.bandwidth_gb_s = b;
        const cur = best[engine];
        best[engine] = cur
          ? { ...r, prefill_tok_s: Math.max(cur.prefill_tok_s, r.prefill_tok_s), decode_tok_s: Math.max(cur.decode_tok_s, r.decode_tok_s), peak_rss_bytes: Math.min(cur.peak_rss_bytes, r.peak_rss_bytes) }
          : r;
      }
    const bwMax = Math.max(...bw);
    const l = best.llama;
    for (const mm of matmuls) {
      const o = best[`ours:${mm}`];
      rows.push({
        model: m.label, quant: `q${bits} / ${bits === 4 ? 'Q4_0' : 'Q8_0'}`, matmul: mm, layers: o?.layers ?? layers, error: error?.error ?? null, error_log: error?.log ?? null,
        llama: l, ours: o, bandwidth_gb_s: { min: Math.min(...bw), max: bwMax }, load_average: { min: Math.min(...load), max: Math.max(...load) },
        prefill_ratio: o && l ? o.prefill_tok_s / l.prefill_tok_s : null,
        decode_ratio: o && l ? o.decode_tok_s / l.decode_tok_s : null,
        // Decode streams every weight once per token and reads the KV of every position it attends: the
        // ceiling is bandwidth / (weight bytes + the measured steps' average KV bytes) per token.
        ours_decode_of_ceiling: o ? (o.decode_tok_s * (o.weight_bytes + (o.kv_read_bytes_per_token ?? 0))) / 1e9 / bwMax : null,
      });
    }
  }

if (json) console.log(JSON.stringify({ threads, prompt, gen, reps, matmul, kv_cache: kvCache ?? 'default (f16; f32 with --matmul exact)', llama_kv_cache: llamaKv, layers: layers || 'full', rows }));
else {
  const mib = (b) => (b / 2 ** 20).toFixed(0);
  console.log(`mlxcel (--matmul ${matmul}, KV ${kvCache ?? 'default: f16, f32 with --matmul exact'}) vs llama.cpp (node-llama-cpp ${LLAMA_VERSION}, prebuilt CPU, KV ${llamaKv}), ${threads} threads, prompt ${prompt}, gen ${gen}, warm-up ${warmup} tokens, best of ${reps}; ratios = ours / llama.cpp`);
  const col = matmuls.length > 1; // a column for our precision when there is more than one
  console.log(`| model | quant |${col ? ' ours --matmul |' : ''} layers | prefill tok/s llama.cpp / ours | ratio | decode tok/s llama.cpp / ours | ratio | ours decode / bandwidth ceiling (weights + KV) | peak RSS MiB llama.cpp / ours | bandwidth GB/s | load avg |`);
  console.log(`|---|---|${col ? '---|' : ''}---|---|---|---|---|---|---|---|---|`);
  for (const r of rows) {
    if (r.error) {
      console.log(`| ${r.model} | ${r.quant} |${col ? ` ${r.matmul} |` : ''} ${r.layers} | ${r.error} |`);
      continue;
    }
    console.log(
      `| ${r.model} | ${r.quant} |${col ? ` ${r.matmul} |` : ''} ${r.layers} | ${r.llama.prefill_tok_s.toFixed(1)} / ${r.ours.prefill_tok_s.toFixed(1)} | ${r.prefill_ratio.toFixed(2)}x ` +
        `| ${r.llama.decode_tok_s.toFixed(2)} / ${r.ours.decode_tok_s.toFixed(2)} | ${r.decode_ratio.toFixed(2)}x | ${(100 * r.ours_decode_of_ceiling).toFixed(0)}% ` +
        `| ${mib(r.llama.peak_rss_bytes)} / ${mib(r.ours.peak_rss_bytes)} | ${r.bandwidth_gb_s.min.toFixed(1)}-${r.bandwidth_gb_s.max.toFixed(1)} | ${r.load_average.min.toFixed(1)}-${r.load_average.max.toFixed(1)} |`,
    );
  }
  console.log(`(load average = runnable threads on this machine's ${cpus().length} CPUs; above ${cpus().length} other jobs compete for the cores, and spin-waiting thread pools suffer most. Compare only within one run.)`);
}
