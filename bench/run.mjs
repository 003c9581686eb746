#!/usr/bin/env node
// `pnpm bench <name> [args...]`: runs one benchmark script of the monorepo in a child node process.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Benchmark name -> script (relative to the repository root) and what it measures. */
export const BENCHES = {
  kernels: { script: 'bench/kernels.mjs', about: 'read bandwidth, GEMV (q4/q8/bf16) vs bandwidth, GEMM f32 vs q4 (@mlxcel/core-native)' },
  attention: { script: 'packages/cache/bench/attention.mjs', about: 'attention kernels and KV caches (@mlxcel/cache)' },
  moe: { script: 'packages/moe/bench/moe.mjs', about: 'MoE routing and expert matmuls (@mlxcel/moe)' },
  audio: { script: 'packages/audio/bench/audio.mjs', about: 'log-mel features and audio encoders (@mlxcel/audio)' },
  decode: { script: 'bench/decode.mjs', about: 'end-to-end decode at real shapes (random q4) vs the read-bandwidth ceiling' },
  sampler: { script: 'packages/engine/bench/sampler.mjs', about: 'Sampler.sample over a 262k vocabulary: logits read in place vs the copy path, same run (@mlxcel/engine)' },
  structured: { script: 'packages/engine/bench/structured.mjs', about: 'structured output: schema compile time and per-token mask cost vs the decode step (@mlxcel/engine)' },
  vision: { script: 'packages/vision/bench/vision.mjs', about: 'vision towers per image at real shapes (random bf16) vs the GEMM rate, TTFT with an image (@mlxcel/vision)' },
  memory: { script: 'bench/fresh-memory.mjs', about: 'writing into fresh vs reused memory (why activations come from layer arenas, @mlxcel/tensor)' },
  accuracy: { script: 'bench/accuracy.mjs', about: 'what --matmul fast (int8 activations) costs in accuracy: every fixture, and random real-shape models' },
  peers: { script: 'bench/peers.mjs', about: 'mlxcel vs llama.cpp (node-llama-cpp, installed on demand) on the same random weights, same run, with ratios' },
  server: { script: 'packages/server/bench/server.mjs', about: '/health latency idle / during 8 streams / during a 4000-token prefill; 8 streams via HTTP vs the scheduler directly (@mlxcel/server)' },
  'shared-gemv': { script: 'bench/shared-gemv.mjs', about: 'matmulShared (q / k / v, gate / up in one pass) vs one matmul per weight, same run, from DRAM (@mlxcel/core-native)' },
  batch: { script: 'packages/engine/bench/batch.mjs', about: 'continuous batching: aggregate decode tok/s with 1-8 concurrent requests (@mlxcel/engine)' },
  prefix: { script: 'packages/engine/bench/prefix.mjs', about: 'prefix reuse: time to first token of two requests sharing a 2,000-token prefix, and their logits vs a fresh prefill (@mlxcel/engine)' },
};

function usage(out) {
  out('usage: pnpm bench <name> [args...]\n\nbenchmarks:');
  for (const [name, b] of Object.entries(BENCHES)) out(`  ${name.padEnd(10)} ${b.about}  (${b.script})`);
}

const [name, ...args] = process.argv.slice(2);
if (!name || name === '--help' || name === '-h' || name === 'list') {
  usage(console.log);
  process.exit(name ? 0 : 2);
}
const bench = Object.prototype.hasOwnProperty.call(BENCHES, name) ? BENCHES[name] : undefined;
if (!bench) {
  console.error(`unknown benchmark '${name}'\n`);
  usage(console.error);
  process.exit(2);
}
const script = join(root, bench.script);
if (!existsSync(script)) {
  console.error(`benchmark '${name}': ${bench.script} does not exist yet (its package has not added it)`);
  process.exit(1);
}
const r = spawnSync(process.execPath, [script, ...args], { stdio: 'inherit', cwd: root });
if (r.error) {
  console.error(`benchmark '${name}': ${r.error.message}`);
  process.exit(1);
}
process.exit(r.status ?? (r.signal ? 1 : 0));
