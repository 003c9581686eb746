// One measurement of `pnpm bench peers` in its own process (so each engine's peak RSS is its own):
//   worker.mjs bandwidth                                  read bandwidth (GB/s), streaming sum over 1 GiB
//   worker.mjs gguf  <model> <bits> <layers|0> <path>      write the model's random checkpoint as GGUF
//   worker.mjs ours  <model> <bits> <layers|0> <prompt> <gen> <exact|fast|int8|mixed|balanced> [warmup] [kv-cache]
//   worker.mjs llama <gguf> <prompt> <gen> <threads> [warmup] [F16|F32|BF16|Q8_0|Q4_0]
// Prints one JSON line.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { readBandwidth } from '../bandwidth.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const [job, ...a] = process.argv.slice(2);

/** The prompt both engines get: fixed pseudo-random ids below 32000 (ordinary pieces in every vocabulary here). */
export function promptIds(n) {
  let x = 1234;
  return Array.from({ length: n }, () => {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    return 100 + (x % 31000);
  });
}

async function bandwidth() {
  return { gb_s: readBandwidth() };
}

async function gguf(key, bits, layers, path) {
  const { benchCheckpoint } = await import('./models.mjs');
  const { GGUF_ARCHS } = await import('./archs.mjs');
  const { writeGguf } = await import('./gguf.mjs');
  const ck = benchCheckpoint(root, key, bits, layers || undefined);
  const { meta, tensors } = GGUF_ARCHS[ck.model.arch](ck.text, ck.weights, bits, root);
  const t0 = performance.now();
  writeGguf(path, meta, tensors);
  return { path, tensors: tensors.length, seconds: (performance.now() - t0) / 1000 };
}

async function ours(key, bits, layers, prompt, gen, matmul, warmup, kvCache) {
  const { setMatmulPrecision } = await import('../../packages/core-native/lib/index.js');
  setMatmulPrecision(matmul);
  const { benchCheckpoint } = await import('./models.mjs');
  const { architectureFor } = await import('../../packages/engine/dist/index.js');
  const { runBench } = await import('../../packages/cli/dist/index.js');
  const ck = benchCheckpoint(root, key, bits, layers || undefined);
  const model = architectureFor(ck.config).load(ck);
  // runBench's own prompt (random ids) and warm-up; the same lengths as the llama.cpp run.
  const r = runBench(model, ck.model.label, prompt, gen, kvCache || undefined, false, warmup);
  return { prefill_tok_s: r.prefill_tok_s, decode_tok_s: r.decode_tok_s, weight_bytes: r.weight_bytes, kv_read_bytes_per_token: r.kv_read_bytes_per_token, peak_rss_bytes: r.peak_rss_bytes, threads: r.threads, isa: r.isa, layers: model.numLayers, weight_memory: r.weight_memory, kv_cache: r.kv_cache };
}

async function llama(path, prompt, gen, threads, warmup, kvType = 'F16') {
  const entry = join(here, 'node_modules', 'node-llama-cpp', 'dist', 'index.js');
  if (!existsSync(entry)) throw new Error(`node-llama-cpp is not installed in ${join(here, 'node_modules')} (bench/peers.mjs installs it)`);
  const { getLlama, LlamaLogLevel } = await import(pathToFileURL(entry).href);
  const logs = [];
  // Prebuilt CPU binary only: never build from source or download at run time.
  const lib = await getLlama({
    gpu: false, build: 'never', skipDownload: true, usePrebuiltBinaries: true, progressLogs: false,
    logLevel: LlamaLogLevel.warn, logger: (level, message) => { logs.push(`${level}: ${message.trim()}`); },
  });
  let model;
  try {
    model = await lib.loadModel({ modelPath: path, gpuLayers: 0 });
  } catch (e) {
    return { error: `llama.cpp could not load ${path}: ${e.message}`, log: logs.filter((l) => /error|fail|missing|wrong|unknown/i.test(l)).slice(-8) };
  }
  const ctx = await model.createContext({
    contextSize: prompt + gen + 32, batchSize: 512, threads: { ideal: threads, min: threads }, sequences: 1,
    experimentalKvCacheKeyType: kvType, experimentalKvCacheValueType: kvType,
  });
  const seq = ctx.getSequence();
  const ids = promptIds(prompt);
  // Warm-up as runBench does (`warmup` prompt tokens + 3 decode steps), then a fresh sequence.
  {
    const g = seq.evaluate(ids.slice(0, Math.max(1, Math.min(warmup, prompt))), { temperature: 0 });
    for (let i = 0; i < 3; i++) await g.next();
    await g.return();
    await seq.clearHistory();
  }
  const t0 = performance.now();
  await seq.evaluateWithoutGeneratingNewTokens(ids.slice(0, -1));
  const g = seq.evaluate(ids.slice(-1), { temperature: 0 });
  await g.next(); // first generated token: the prompt is done
  const t1 = performance.now();
  for (let i = 1; i < gen; i++) await g.next();
  const t2 = performance.now();
  await g.return();
  const out = {
    prefill_tok_s: prompt / ((t1 - t0) / 1000),
    decode_tok_s: gen > 1 ? (gen - 1) / ((t2 - t1) / 1000) : 0,
    peak_rss_bytes: process.resourceUsage().maxRSS * 1024,
    threads,
    file_bytes: model.size,
    kv_cache: kvType,
  };
  await ctx.dispose();
  await model.dispose();
  return out;
}

const jobs = {
  bandwidth: () => bandwidth(),
  gguf: () => gguf(a[0], Number(a[1]), Number(a[2]), a[3]),
  ours: () => ours(a[0], Number(a[1]), Number(a[2]), Number(a[3]), Number(a[4]), a[5] ?? 'balanced', Number(a[6] ?? 16), a[7] ?? ''),
  llama: () => llama(a[0], Number(a[1]), Number(a[2]), Number(a[3]), Number(a[4] ?? 16), a[5] ?? 'F16'),
};
if (!jobs[job]) {
  console.error(`worker.mjs: unknown job '${job}' (${Object.keys(jobs).join(', ')})`);
  process.exit(2);
}
console.log(JSON.stringify(await jobs[job]()));
