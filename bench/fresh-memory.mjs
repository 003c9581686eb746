#!/usr/bin/env node
// What writing into fresh memory costs next to reused memory, in one run (the figures behind
// @mlxcel/tensor buffers.ts, the layer arenas):
//   1. first write to every 4 KiB page of 32 MiB: a fresh Float32Array (the JS heap / 4 KiB pages),
//      fresh core-native `alloc` memory (huge pages where Linux offers them), and the same arrays again;
//   2. a [512, 2048] f32 add into a reused, a fresh and a fresh `alloc` output;
//   3. a q4 GEMM [512, 3072] x [16384, 3072]^T (--matmul fast) into a reused and a fresh output.
// Median of 7 per case, cases alternating.   node bench/fresh-memory.mjs
import * as native from '../packages/core-native/lib/index.js';
import { q4Weight } from './q4-weight.mjs';

const median = (a) => [...a].sort((u, v) => u - v)[a.length >> 1];
function time(cases, reps = 7) {
  const t = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
  for (let r = 0; r < reps; r++)
    for (const [k, f] of Object.entries(cases)) {
      const t0 = performance.now();
      f();
      t[k].push(performance.now() - t0);
    }
  return Object.fromEntries(Object.entries(t).map(([k, v]) => [k, median(v)]));
}
const touch = (a) => { for (let i = 0; i < a.length; i += 1024) a[i] = 1; };

const MiB = 32, n = (MiB << 20) / 4;
const kept = new Float32Array(n), keptAlloc = new Float32Array(native.alloc(n * 4));
touch(kept); touch(keptAlloc);
const t1 = time({
  fresh: () => touch(new Float32Array(n)),
  freshAlloc: () => touch(new Float32Array(native.alloc(n * 4))),
  reused: () => touch(kept),
});
console.log(`first write per page, ${MiB} MiB: fresh Float32Array ${(t1.fresh / MiB).toFixed(3)} ms/MiB, fresh alloc ${(t1.freshAlloc / MiB).toFixed(3)} ms/MiB, reused ${(t1.reused / MiB).toFixed(3)} ms/MiB`);

const M = 512, H = 2048;
const x = new Float32Array(M * H).map((_, i) => Math.sin(i)), y = new Float32Array(M * H);
const t2 = time({
  reused: () => native.binary(native.BinaryOp.ADD, x, x, y),
  fresh: () => native.binary(native.BinaryOp.ADD, x, x, new Float32Array(M * H)),
  freshAlloc: () => native.binary(native.BinaryOp.ADD, x, x, new Float32Array(native.alloc(M * H * 4))),
});
console.log(`[${M}, ${H}] add: into a reused output ${t2.reused.toFixed(2)} ms, fresh ${t2.fresh.toFixed(2)} ms, fresh alloc ${t2.freshAlloc.toFixed(2)} ms`);

const N = 16384, K = 3072;
const w = q4Weight(N, K);
const gx = new Float32Array(M * K).map((_, i) => Math.sin(i * 0.37)), gy = new Float32Array(M * N);
native.setMatmulPrecision('fast');
const t3 = time({ reused: () => native.matmul(gx, M, w, null, gy), fresh: () => native.matmul(gx, M, w, null, new Float32Array(M * N)) }, 5);
console.log(`q4 GEMM [${M}, ${K}] x [${N}, ${K}]^T: into a reused output ${t3.reused.toFixed(1)} ms, fresh ${t3.fresh.toFixed(1)} ms`);
