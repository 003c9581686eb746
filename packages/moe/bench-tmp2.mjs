import * as native from '@mlxcel/core-native';
import { randomFillSync } from 'node:crypto';
const N = 6400, K = 4096, G = 64;
const ws = [];
for (let i = 0; i < 24; i++) {
  const data = new Uint8Array(N * K / 2); randomFillSync(data);
  const scales = new Float32Array(N * K / G).fill(0.01), biases = new Float32Array(N * K / G).fill(-0.08);
  ws.push({ dtype: 3, data, rows: N, cols: K, scales, biases, scaleDtype: 0, bits: 4, groupSize: G });
}
const x = new Float32Array(K).fill(0.5), y = new Float32Array(N);
for (const w of ws) native.matmul(x, 1, w, null, y);
const reps = 96;
const t0 = performance.now();
for (let i = 0; i < reps; i++) native.matmul(x, 1, ws[i % 24], null, y);
const ms = (performance.now() - t0) / reps;
console.log(`M=1 streaming: ${ms.toFixed(2)} ms/call, ${((N*K/2 + N*K/G*8)/ms/1e6).toFixed(2)} GB/s`);
