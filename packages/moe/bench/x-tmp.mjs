import { randomFillSync } from 'node:crypto';
import { fromF32 } from '@mlxcel/core-native';
import { QuantizedWeight, Tensor } from '@mlxcel/tensor';
const { SwitchGLU, softmaxTopK } = await import('../dist/index.js');
const [E, K, H, I] = (process.argv[2] ?? '8,2,4096,6400').split(',').map(Number);
const G = 64;
let seed = 1; const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296);
const rf = (n, lo, hi) => { const a = new Float32Array(n); for (let i = 0; i < n; i++) a[i] = lo + (hi - lo) * rand(); return a; };
const bf = (a) => { const h = new Uint16Array(a.length); fromF32(a, 2, h); return new Uint8Array(h.buffer); };
function q4(rows, cols) { const p = new Uint8Array(E * rows * cols / 2); for (let o = 0; o < p.length; o += 65536) randomFillSync(p, o, Math.min(65536, p.length - o)); const ng = E * rows * cols / G;
  return QuantizedWeight.fromTensors(new Tensor('U32', [E, rows, cols / 8], p), new Tensor('BF16', [E, rows, cols / G], bf(rf(ng, .002, .02))), new Tensor('BF16', [E, rows, cols / G], bf(rf(ng, -.1, 0))), { bits: 4, groupSize: G }); }
const glu = new SwitchGLU({ gate: q4(I, H), up: q4(I, H), down: q4(H, I) }, 'silu');
for (const T of [1, 2, 4, 8, 16, 32]) {
  const x = rf(T * H, -1, 1), rt = softmaxTopK(rf(T * E, -2, 2), E, K);
  const res = {};
  for (const path of ['gather', 'grouped']) { glu.forward(x, T, rt.ids, rt.weights, { path }); let best = 1e9; for (let r = 0; r < 5; r++) { const c0 = process.cpuUsage(), t0 = performance.now(); glu.forward(x, T, rt.ids, rt.weights, { path }); best = Math.min(best, performance.now() - t0); } res[path] = best.toFixed(2); }
  console.log(`T=${T} pairs=${T * K}: gather ${res.gather} ms, grouped ${res.grouped} ms`);
}
