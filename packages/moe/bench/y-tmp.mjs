import { randomFillSync } from 'node:crypto';
import { QuantizedWeight, Tensor } from '@mlxcel/tensor';
const { SwitchGLU, softmaxTopK } = await import('../dist/index.js');
const [E, K, H, I] = [128, 8, 2816, 704], G = 64, path = process.argv[2], T = +process.argv[3];
let seed = 1; const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296);
const rf = (n, lo, hi) => { const a = new Float32Array(n); for (let i = 0; i < n; i++) a[i] = lo + (hi - lo) * rand(); return a; };
function q4(rows, cols) { const p = new Uint8Array(E * rows * cols / 2); for (let o = 0; o < p.length; o += 65536) randomFillSync(p, o, Math.min(65536, p.length - o)); const ng = E * rows * cols / G;
  return QuantizedWeight.fromTensors(new Tensor('U32', [E, rows, cols / 8], p), Tensor.fromF32(rf(ng, .002, .02), [E, rows, cols / G]), Tensor.fromF32(rf(ng, -.1, 0), [E, rows, cols / G]), { bits: 4, groupSize: G }); }
const glu = new SwitchGLU({ gate: q4(I, H), up: q4(I, H), down: q4(H, I) }, 'silu');
const x = rf(T * H, -1, 1), rt = softmaxTopK(rf(T * E, -2, 2), E, K);
const c0 = process.cpuUsage(), t0 = performance.now();
for (let i = 0; i < 200; i++) glu.forward(x, T, rt.ids, rt.weights, { path });
const c = process.cpuUsage(c0);
console.log(path, ((performance.now() - t0) / 200).toFixed(2), 'ms wall', ((c.user + c.system) / 1000 / 200).toFixed(2), 'ms cpu');
