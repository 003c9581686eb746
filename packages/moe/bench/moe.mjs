// Prefill throughput of the MoE expert block: grouped path (sort by expert, one GEMM per expert) vs
// per-token path (gather-GEMV per token and selected expert), PhiMoE-sized experts:
// 8 experts, top-2, hidden 4096, intermediate 6400, MLX 4-bit (group 64, bf16 scales), 512 tokens.
// Usage: node bench/moe.mjs [--tokens N] [--reps N]   (needs `npx tsup` first: reads dist/)
import { randomFillSync } from 'node:crypto';
import { existsSync } from 'node:fs';
import { cpuInfo, fromF32 } from '@mlxcel/core-native';
import { QuantizedWeight, Tensor } from '@mlxcel/tensor';

const dist = new URL('../dist/index.js', import.meta.url);
if (!existsSync(dist)) {
  console.error('bench/moe.mjs: dist/ is missing; run `npx tsup` in packages/moe first');
  process.exit(1);
}
const { SwitchGLU, softmaxTopK } = await import(dist.href);

const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const E = 8, K = 2, H = 4096, I = 6400, G = 64, BITS = 4;
const T = arg('tokens', 512), REPS = arg('reps', 2);

let seed = 12345;
const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296);
const randomF32 = (n, lo, hi) => { const a = new Float32Array(n); for (let i = 0; i < n; i++) a[i] = lo + (hi - lo) * rand(); return a; };
const bf16 = (a) => { const h = new Uint16Array(a.length); fromF32(a, 2, h); return new Uint8Array(h.buffer); };

// Random codes and plausible scales: the timing does not depend on the values, and quantizing 630M
// random floats would dominate the run.
function q4Stack(rows, cols) {
  const packed = new Uint8Array((E * rows * cols * BITS) / 8);
  for (let o = 0; o < packed.length; o += 65536) randomFillSync(packed, o, Math.min(65536, packed.length - o));
  const ng = (E * rows * cols) / G;
  const scales = new Tensor('BF16', [E, rows, cols / G], bf16(randomF32(ng, 0.002, 0.02)));
  const biases = new Tensor('BF16', [E, rows, cols / G], bf16(randomF32(ng, -0.15, -0.01)));
  return QuantizedWeight.fromTensors(new Tensor('U32', [E, rows, (cols * BITS) / 32], packed), scales, biases, { bits: BITS, groupSize: G });
}

const info = cpuInfo();
console.log(`moe bench: ${E} experts, top-${K}, hidden ${H}, intermediate ${I}, q${BITS} group ${G}; ${T} tokens; isa ${info.isa}, ${info.threads} threads`);
const glu = new SwitchGLU({ gate: q4Stack(I, H), up: q4Stack(I, H), down: q4Stack(H, I) }, 'silu');
console.log(`expert weights: ${(glu.nbytes / 2 ** 20).toFixed(0)} MiB`);

const x = randomF32(T * H, -1, 1);
const route = softmaxTopK(randomF32(T * E, -2, 2), E, K);
const perExpert = new Array(E).fill(0);
for (const e of route.ids) perExpert[e]++;
console.log(`tokens per expert: ${perExpert.join(' ')}`);

function time(path, t, reps) {
  const xs = x.subarray(0, t * H), ids = route.ids.subarray(0, t * K), w = route.weights.subarray(0, t * K);
  let best = Infinity, out;
  for (let r = 0; r < reps; r++) {
    const t0 = process.hrtime.bigint();
    out = glu.forward(xs, t, ids, w, { path });
    best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1e9);
  }
  return { s: best, out };
}

time('grouped', 16, 1);
time('gather', 4, 1);
const g = time('grouped', T, REPS);
const p = time('gather', T, REPS);
let d = 0, m = 0;
for (let i = 0; i < g.out.length; i++) { d = Math.max(d, Math.abs(g.out[i] - p.out[i])); m = Math.max(m, Math.abs(p.out[i])); }
const dec = time('gather', 1, 5);
console.log(`grouped  : ${(T / g.s).toFixed(1)} tokens/s (${(g.s * 1000).toFixed(0)} ms for ${T} tokens)`);
console.log(`per-token: ${(T / p.s).toFixed(1)} tokens/s (${(p.s * 1000).toFixed(0)} ms for ${T} tokens)`);
console.log(`speed-up : ${(p.s / g.s).toFixed(2)}x (target >= 3x)   max |grouped - per-token| / max |y| = ${(d / m).toExponential(2)}`);
console.log(`decode   : ${(dec.s * 1000).toFixed(2)} ms per token (gather path, ${K} experts)`);
