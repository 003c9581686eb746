// The thread pool under concurrent callers: several JS threads (worker_threads) running kernels at the
// same time must each get correct results (one owns the pool per region, the others run inline), and
// results must not depend on which path ran.
import { Worker } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as native from '../lib/index.js';

const lib = fileURLToPath(new URL('../lib/index.js', import.meta.url));

// Each worker computes GEMVs and a big elementwise op many times and returns the last outputs.
const workerCode = `
const { parentPort, workerData } = require('node:worker_threads');
import(workerData.lib).then((m) => {
  const K = 1024, N = 700;
  const x = new Float32Array(K).map((_, i) => Math.sin(i + workerData.seed));
  const w = { dtype: 0, data: new Float32Array(N * K).map((_, i) => Math.cos(i * 0.5)), rows: N, cols: K };
  const y = new Float32Array(N), big = new Float32Array(100000).map((_, i) => i % 97), out = new Float32Array(100000);
  for (let i = 0; i < 200; i++) { m.matmul(x, 1, w, null, y); m.affine(big, 2, workerData.seed, out); }
  parentPort.postMessage({ y, out });
});`;

function runWorker(seed: number): Promise<{ y: Float32Array; out: Float32Array }> {
  return new Promise((resolve, reject) => {
    const w = new Worker(workerCode, { eval: true, workerData: { lib, seed } });
    w.once('message', (m) => {
      resolve(m);
      void w.terminate();
    });
    w.once('error', reject);
  });
}

describe('thread pool with concurrent JS threads', () => {
  it('three worker threads and the main thread computing at once all get the single-threaded results', async () => {
    const seeds = [1, 2, 3];
    const pending = Promise.all(seeds.map(runWorker));
    // The main thread keeps the pool busy meanwhile.
    const big = new Float32Array(1 << 20).fill(1);
    const o = new Float32Array(1 << 20);
    for (let i = 0; i < 50; i++) native.affine(big, 3, 1, o);
    const results = await pending;
    expect(o.every((v) => v === 4)).toBe(true);
    const before = native.cpuInfo().threads;
    native.setThreads(1);
    try {
      for (const [i, seed] of seeds.entries()) {
        const K = 1024, N = 700;
        const x = new Float32Array(K).map((_, j) => Math.sin(j + seed));
        const w: native.NativeWeight = { dtype: 0, data: new Float32Array(N * K).map((_, j) => Math.cos(j * 0.5)), rows: N, cols: K };
        const y = new Float32Array(N);
        native.matmul(x, 1, w, null, y);
        expect(Buffer.from(results[i]!.y.buffer).equals(Buffer.from(y.buffer))).toBe(true);
        const out = results[i]!.out;
        for (let j = 0; j < out.length; j += 997) expect(out[j]).toBe(Math.fround((j % 97) * 2 + seed));
      }
    } finally {
      native.setThreads(before);
    }
  });
});
