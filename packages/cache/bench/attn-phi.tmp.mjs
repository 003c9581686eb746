import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
const here = dirname(fileURLToPath(import.meta.url));
const native = await import(pathToFileURL(join(here, '../node_modules/@mlxcel/core-native/lib/index.js')).href);
const cache = await import(pathToFileURL(join(here, '../dist/index.js')).href);
const now = () => Number(process.hrtime.bigint()) / 1e9;
const fill = (a, s) => { let x = s; for (let i = 0; i < a.length; i++) { x = (x * 1103515245 + 12345) >>> 0; a[i] = (x / 2 ** 32 - 0.5); } };
for (const [T, KV, nH, D] of [[512, 32, 32, 96], [512, 8, 32, 128], [2048, 8, 32, 128], [256, 1, 8, 256]]) for (const dt of ['f32', 'f16']) {
  const c = cache.createLayerCache({ nKvHeads: KV, headDim: D }, dt);
  const k = new Float32Array(T * KV * D), v = new Float32Array(T * KV * D), q = new Float32Array(T * nH * D);
  fill(k, 1); fill(v, 2); fill(q, 3);
  c.update(k, v, T);
  const qPos = Int32Array.from({ length: T }, (_, i) => i);
  c.attend(q, T, nH, qPos, { scale: 1 / Math.sqrt(D) });
  const ts = [];
  for (let r = 0; r < 7; r++) { const t0 = now(); c.attend(q, T, nH, qPos, { scale: 1 / Math.sqrt(D) }); ts.push(now() - t0); }
  ts.sort((a, b) => a - b); const t = ts[3];
  const flops = 4 * nH * D * (T * (T + 1)) / 2;
  console.log(`T=${T} kv=${KV} heads=${nH} D=${D} ${dt}: ${(t * 1e3).toFixed(2)} ms, ${(flops / t / 1e9).toFixed(1)} GFLOP/s`);
}
