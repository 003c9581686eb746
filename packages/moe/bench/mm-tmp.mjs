import native from '@mlxcel/core-native';
import { randomFillSync } from 'node:crypto';
const N = 6400, K = 4096, G = 64, M = +(process.argv[2] ?? 64);
const data = new Uint8Array(N * K / 2); randomFillSync(data);
const scales = new Float32Array(N * K / G).fill(0.01), biases = new Float32Array(N * K / G).fill(-0.08);
const w = { dtype: 3, data, rows: N, cols: K, scales, biases, scaleDtype: 0, bits: 4, groupSize: G };
const wf = { dtype: 0, data: new Float32Array(N * K).fill(0.01), rows: N, cols: K };
const x = new Float32Array(M * K).fill(0.5), y = new Float32Array(M * N);
const ids = new Int32Array(M).fill(0), wts = new Float32Array(M).fill(1);
const down = { dtype: 0, data: new Float32Array(K * N), rows: K, cols: N }; // unused shape-wise; T*k pairs
const bench = (name, f) => { f(); let best = 1e9; for (let i = 0; i < 5; i++) { const t0 = performance.now(); f(); best = Math.min(best, performance.now() - t0); } console.log(name, best.toFixed(1), 'ms', (2 * M * N * K / best / 1e6).toFixed(0), 'GFLOPS'); };
bench('matmul q4', () => native.matmul(x, M, w, null, y));
bench('matmul f32', () => native.matmul(x, M, wf, null, y));
// one expert, E=1, k=1: gate+up+down = 3 GEMMs of the same size (I = N, H = K)
const gate = w, up = w, dn = { dtype: 3, data: new Uint8Array(N * K / 2), rows: K, cols: N, scales, biases, scaleDtype: 0, bits: 4, groupSize: G };
randomFillSync(dn.data);
const out = new Float32Array(M * K);
bench('moe q4 x3', () => native.moeSwitchGLU({ x, T: M, k: 1, numExperts: 1, ids, weights: wts, gate, up, down: dn, activation: 0, path: 2, out }));
const gf = wf, df = { dtype: 0, data: new Float32Array(N * K).fill(0.01), rows: K, cols: N };
bench('moe f32 x3', () => native.moeSwitchGLU({ x, T: M, k: 1, numExperts: 1, ids, weights: wts, gate: gf, up: gf, down: df, activation: 0, path: 2, out }));
