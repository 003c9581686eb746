import * as native from '@mlxcel/core-native';
import { randomFillSync } from 'node:crypto';
console.log(native.cpuInfo());
const N = 6400, K = 4096, G = 64;
const data = new Uint8Array(N * K / 2); randomFillSync(data);
const scales = new Float32Array(N * K / G).fill(0.01), biases = new Float32Array(N * K / G).fill(-0.08);
const w = { dtype: 3, data, rows: N, cols: K, scales, biases, scaleDtype: 0, bits: 4, groupSize: G };
for (const M of [1, 8, 128]) {
  const x = new Float32Array(M * K).fill(0.5), y = new Float32Array(M * N);
  native.matmul(x, M, w, null, y);
  const reps = M === 1 ? 64 : M === 8 ? 16 : 3;
  const t0 = performance.now();
  for (let i = 0; i < reps; i++) native.matmul(x, M, w, null, y);
  const ms = (performance.now() - t0) / reps;
  console.log(`M=${M}: ${ms.toFixed(2)} ms/call, ${(ms / M).toFixed(3)} ms/row, ${(2 * M * N * K / ms / 1e6).toFixed(1)} GFLOPS, ${(N*K/2/ms/1e6).toFixed(2)} GB/s weights`);
}
