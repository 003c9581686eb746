/**
 * mlxcel bench: same-process throughput harness. Load once, warm up, then a measured run on a fresh
 * state: prefill `--prompt-tokens` random ids (chunked as generate does), then greedy decode of
 * `--gen-tokens` tokens (EOS ignored so every run decodes the same count).
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { BatchScheduler, DEFAULT_PREFILL_CHUNK, kvReadBytesPerStep, preallocateKv, prefill, randomModel, readJson, releaseKv, type LoadedModel } from '@mlxcel/engine';
import { ops, weightArena, weightLayout, weightPlacement, type LanguageModel } from '@mlxcel/tensor';
import { cpuInfo, matmulPrecision, startProfile, stopProfile, type OpProfile } from '@mlxcel/core-native';
import { UsageError } from '../errors.js';
import { int, quantFlag } from '../parse.js';
import { KV_CACHE_HELP, kvCacheFlag, kvCacheFor } from '../kv-cache-flag.js';
import { formatBytes, info } from '../ui/output.js';
import { openModel } from './model-arg.js';
import { addMatmulFlag, applyMatmulPrecision } from '../matmul-precision.js';
import { addWeightMemoryFlag, applyWeightMemory } from '../weight-memory-flag.js';

export interface BenchResult {
  model: string;
  prompt_tokens: number;
  gen_tokens: number;
  prefill_tok_s: number;
  decode_tok_s: number;
  ttft_ms: number;
  peak_rss_bytes: number;
  weight_bytes: number;
  threads: number;
  isa: string;
  matmul: string;
  /** Where the streamed weights lived (--weight-memory). */
  weight_memory: string;
  /** --weight-layout, and the bytes of weights loaded in the 16-row tile layout (0: all in rows). */
  weight_layout: string;
  weight_tiled_bytes: number;
  /** KV cache storage the run used (--kv-cache, else defaultKvStorage of the matmul precision). */
  kv_cache: string;
  /**
   * KV bytes a measured decode step read, on average (every layer's attention over the positions it
   * sees, in the cache's storage): with weight_bytes, what one decode token reads from memory.
   */
  kv_read_bytes_per_token: number;
  /** With `profile`: native time per op kind in the measured prefill and decode (wall ms alongside). */
  profile?: { prefill: OpProfile; prefill_ms: number; decode: OpProfile; decode_ms: number };
}

function randomIds(n: number, vocab: number, seed: number): Int32Array {
  let s = seed >>> 0 || 1;
  const out = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    out[i] = s % vocab;
  }
  return out;
}

/**
 * warmupTokens: the warm-up prompt's length (default 16). A warm-up as long as the measured prompt also
 * backs the activation memory (layer arenas, scratch) a prompt of that length needs, so the measured
 * prefill is the steady state a server reaches after its first long request instead of the first one
 * (which pays the OS's first-touch of that memory: docs/benchmarks.md, "Steady-state prefill").
 */
export function runBench(
  model: LanguageModel, name: string, promptTokens: number, genTokens: number, kvCacheOpt?: string, profile: boolean | 'shapes' = false, warmupTokens = 16,
): BenchResult {
  // 'shapes' (--profile-shapes): each matmul kind split by weight shape as well.
  const profileOptions = { matmulShapes: profile === 'shapes' };
  const kvCache = kvCacheFor(kvCacheOpt);
  const chunk = model.prefillChunk === null ? 0 : model.prefillChunk || DEFAULT_PREFILL_CHUNK;
  const V = model.vocabSize;
  // Warm-up: touches every weight page and JIT-compiles the JS paths.
  {
    const st = model.newState({ kvCache });
    let last = prefill(model, st, randomIds(Math.max(1, Math.min(warmupTokens, promptTokens)), V, 7), chunk);
    for (let i = 0; i < 3; i++) last = model.forward([{ ids: Int32Array.of(ops.argmax(last, V)[0]!), state: st }], { logits: 'last' })[0]!;
    // The measured sequence then runs on KV memory the OS has already backed, as llama.cpp's context
    // (allocated and cleared when it is created) does: first-touch faults cost ~2.3 ms per MiB on the
    // development VM, 0.9 s for Phi-3.5-mini's 384 MiB f32 page set, and would otherwise land inside the
    // measured prefill (and, where decode crosses a page, inside decode).
    preallocateKv(st, promptTokens + genTokens);
    releaseKv(st);
  }
  const ids = randomIds(promptTokens, V, 1234);
  const state = model.newState({ kvCache });
  if (profile) startProfile(profileOptions);
  const t0 = performance.now();
  let logits = prefill(model, state, ids, chunk);
  const t1 = performance.now();
  const prefillOps = profile ? stopProfile() : undefined;
  if (profile) startProfile(profileOptions);
  let tok = ops.argmax(logits, V)[0]!;
  const tFirst = performance.now();
  for (let i = 1; i < genTokens; i++) {
    logits = model.forward([{ ids: Int32Array.of(tok), state }], { logits: 'last' })[0]!;
    tok = ops.argmax(logits, V)[0]!;
  }
  const t2 = performance.now();
  const decodeOps = profile ? stopProfile() : undefined;
  // Decode step i (1 .. genTokens - 1) attends over promptTokens + i positions.
  let kvRead = 0;
  for (let i = 1; i < genTokens; i++) kvRead += kvReadBytesPerStep(state, promptTokens + i);
  const info0 = cpuInfo();
  return {
    model: name,
    prompt_tokens: promptTokens,
    gen_tokens: genTokens,
    prefill_tok_s: promptTokens / ((t1 - t0) / 1000),
    decode_tok_s: genTokens > 1 ? (genTokens - 1) / ((t2 - tFirst) / 1000) : 0,
    ttft_ms: tFirst - t0,
    peak_rss_bytes: process.resourceUsage().maxRSS * 1024,
    weight_bytes: model.stats.weightBytes,
    threads: info0.threads,
    isa: info0.isa,
    matmul: matmulPrecision(),
    weight_memory: weightPlacement(),
    weight_layout: weightLayout(),
    weight_tiled_bytes: weightArena.tiledBytes,
    kv_cache: kvCache,
    kv_read_bytes_per_token: genTokens > 1 ? kvRead / (genTokens - 1) : 0,
    ...(prefillOps && decodeOps ? { profile: { prefill: prefillOps, prefill_ms: t1 - t0, decode: decodeOps, decode_ms: t2 - tFirst } } : {}),
  };
}

/** The --profile table: native ms per op kind and its share of the phase's wall time; the rest is JS and N-API. */
export function profileTable(p: NonNullable<BenchResult['profile']>, genTokens: number): string {
  const kinds = [...new Set([...Object.keys(p.prefill), ...Object.keys(p.decode)])];
  // The first column fits the longest kind (shape-split matmul kinds are longer than the op names).
  const w = Math.max(26, ...kinds.map((k) => k.length));
  kinds.sort((a, b) => (p.prefill[b]?.ms ?? 0) + (p.decode[b]?.ms ?? 0) - (p.prefill[a]?.ms ?? 0) - (p.decode[a]?.ms ?? 0));
  const steps = Math.max(1, genTokens - 1);
  const pct = (ms: number, of: number) => `${((100 * ms) / Math.max(1e-9, of)).toFixed(1)}%`;
  const rows = [`${'op kind'.padEnd(w)} prefill ms  (share)  calls | decode ms/token  (share)  calls/token`];
  const line = (k: string, a: { calls: number; ms: number } | undefined, b: { calls: number; ms: number } | undefined) =>
    `${k.padEnd(w)} ${(a?.ms ?? 0).toFixed(1).padStart(10)} ${pct(a?.ms ?? 0, p.prefill_ms).padStart(8)} ${String(a?.calls ?? 0).padStart(6)} | ` +
    `${((b?.ms ?? 0) / steps).toFixed(3).padStart(15)} ${pct(b?.ms ?? 0, p.decode_ms).padStart(8)} ${((b?.calls ?? 0) / steps).toFixed(1).padStart(12)}`;
  for (const k of kinds) rows.push(line(k, p.prefill[k], p.decode[k]));
  const sum = (o: OpProfile) => Object.values(o).reduce((a, e) => a + e.ms, 0);
  rows.push(line('(JS, N-API and the rest)', { calls: 0, ms: p.prefill_ms - sum(p.prefill) }, { calls: 0, ms: p.decode_ms - sum(p.decode) }));
  rows.push(line('total (wall)', { calls: 0, ms: p.prefill_ms }, { calls: 0, ms: p.decode_ms }));
  return rows.join('\n');
}

export interface BatchBenchResult {
  model: string;
  concurrency: number;
  prompt_tokens: number;
  gen_tokens: number;
  /** Generated tokens of all requests per second, from the moment every request has its first token. */
  aggregate_decode_tok_s: number;
  per_request_decode_tok_s: number;
  /** Time until the last request had its first token (all prompts prefilled). */
  all_first_token_ms: number;
  threads: number;
  isa: string;
  /** KV cache storage the run used. */
  kv_cache: string;
}

/**
 * `concurrency` requests through the engine's continuous-batching scheduler (as `mlxcel serve` runs
 * them), each with its own random prompt, greedy, EOS ignored; after one warm-up round.
 */
export async function runBatchBench(
  model: LanguageModel, name: string, promptTokens: number, genTokens: number, concurrency: number, kvCacheOpt?: string,
): Promise<BatchBenchResult> {
  const kvCache = kvCacheFor(kvCacheOpt);
  const loaded: LoadedModel = { dir: name, config: {}, model, tokenizer: null, chatTemplate: null, eosIds: [], generationConfig: {} };
  const V = model.vocabSize;
  const round = async (gen: number) => {
    const sched = new BatchScheduler(loaded, { maxBatch: concurrency });
    const t0 = performance.now();
    let tAll = 0;
    const gens = Array.from({ length: concurrency }, (_, k) =>
      sched.submit(randomIds(promptTokens, V, 1234 + k), { maxTokens: gen, temperature: 0, kvCache }));
    await Promise.all(gens.map(async (g) => {
      let n = 0;
      for await (const _ of g) if (++n === 1) tAll = Math.max(tAll, performance.now());
    }));
    return { t0, tAll, tEnd: performance.now() };
  };
  await round(Math.min(genTokens, 3)); // warm-up
  const { t0, tAll, tEnd } = await round(genTokens);
  const agg = (concurrency * Math.max(0, genTokens - 1)) / Math.max(1e-9, (tEnd - tAll) / 1000);
  const info0 = cpuInfo();
  return {
    model: name, concurrency, prompt_tokens: promptTokens, gen_tokens: genTokens,
    aggregate_decode_tok_s: agg, per_request_decode_tok_s: agg / concurrency, all_first_token_ms: tAll - t0,
    threads: info0.threads, isa: info0.isa, kv_cache: kvCache,
  };
}

export function registerBench(program: Command): void {
  const cmd = program
    .command('bench')
    .description('measure prefill and decode throughput (load once, warm up, measured run)')
    .option('-m, --model <dir|repo>', 'model folder or Hugging Face repo id')
    .option('--random <config.json>', 'build a random-weight model from this config.json (no weights needed)')
    .option('--quantize <q>', 'with --random: q4 | q8 (MLX affine, group 64; q4:32 for group 32)', quantFlag)
    .option('--layers <n>', 'with --random: keep only the first n layers', int('--layers', 1))
    .option('--prompt-tokens <n>', 'prompt length', int('--prompt-tokens', 1), 128)
    .option('--warmup-tokens <n>', 'warm-up prompt length (the prompt length: measure the steady state after a first long prompt)', int('--warmup-tokens', 1), 16)
    .option('--gen-tokens <n>', 'tokens to generate', int('--gen-tokens', 1), 32)
    .option('--kv-cache <kind>', KV_CACHE_HELP, kvCacheFlag)
    .option('--concurrency <n>', 'run n requests together through the continuous-batching scheduler (as mlxcel serve does)', int('--concurrency', 1, 256), 1)
    .option('--profile', 'also print native time per op kind in the measured prefill and decode')
    .option('--profile-shapes', 'as --profile, with each matmul kind split by weight shape [rows x cols]')
    .option('--json', 'print the result as JSON');
  addWeightMemoryFlag(addMatmulFlag(cmd, 'balanced'))
    .action(async (o: Record<string, unknown>) => {
      // Before any model is built: --profile times one stream, and is never dropped silently.
      if ((o.profile || o.profileShapes) && (o.concurrency as number) > 1) throw new UsageError('--profile measures one stream: drop --concurrency');
      applyMatmulPrecision(o);
      applyWeightMemory(o);
      let model: LanguageModel;
      let name: string;
      if (o.random) {
        if (o.model) throw new UsageError('pass either --model or --random, not both');
        const path = resolve(o.random as string);
        const config = readJson(path, '--random config');
        model = randomModel(config, { layers: o.layers as number | undefined, quantize: o.quantize as never, seed: 0 });
        name = `random:${path}${o.quantize ? `:q${(o.quantize as { bits: number }).bits}` : ''}${o.layers ? `:${o.layers}L` : ''}`;
      } else {
        if (o.quantize || o.layers) throw new UsageError('--quantize and --layers only apply with --random');
        const loaded = await openModel(o as never);
        model = loaded.model;
        name = loaded.dir;
      }
      if ((o.promptTokens as number) + (o.genTokens as number) > model.maxContext)
        throw new UsageError(`--prompt-tokens + --gen-tokens exceed the model's ${model.maxContext}-token context`);
      if ((o.concurrency as number) > 1) {
        const b = await runBatchBench(model, name, o.promptTokens as number, o.genTokens as number, o.concurrency as number, o.kvCache as string | undefined);
        if (o.json) process.stdout.write(`${JSON.stringify(b)}\n`);
        else
          info(
            `${b.model}\n${b.concurrency} concurrent requests: aggregate decode ${b.aggregate_decode_tok_s.toFixed(2)} tok/s ` +
              `(${b.per_request_decode_tok_s.toFixed(2)} per request, ${b.gen_tokens} tokens each) | all first tokens after ` +
              `${b.all_first_token_ms.toFixed(0)} ms (${b.prompt_tokens}-token prompts) | ${b.threads} threads, ${b.isa}, --kv-cache ${b.kv_cache}`,
          );
        return;
      }
      const profile = o.profileShapes ? 'shapes' : Boolean(o.profile);
      const r = runBench(model, name, o.promptTokens as number, o.genTokens as number, o.kvCache as string | undefined, profile, o.warmupTokens as number);
      if (o.json) process.stdout.write(`${JSON.stringify(r)}\n`);
      else
        info(
          `${r.model}\nprefill ${r.prefill_tok_s.toFixed(1)} tok/s (${r.prompt_tokens} tokens) | decode ${r.decode_tok_s.toFixed(2)} tok/s ` +
            `(${r.gen_tokens} tokens) | TTFT ${r.ttft_ms.toFixed(0)} ms | peak RSS ${formatBytes(r.peak_rss_bytes)} | ` +
            `weights ${formatBytes(r.weight_bytes)} + KV ${formatBytes(r.kv_read_bytes_per_token)} read per token | ${r.threads} threads, ${r.isa}, --matmul ${r.matmul}, --weight-memory ${r.weight_memory}, --weight-layout ${r.weight_layout} (${formatBytes(r.weight_tiled_bytes)} in tiles), --kv-cache ${r.kv_cache}`,
        );
      if (!o.json && r.profile) info(profileTable(r.profile, r.gen_tokens));
    });
}
