import * as native from '@mlxcel/core-native';
import * as cache from '/work/main/packages/cache/dist/index.js';
native.setThreads(1);
const D = Number(process.argv[3] || 128), ctx = Number(process.argv[4] || 4096), H = 8;
const storage = process.argv[2] || 'f16';
const caches = [];
for (let l = 0; l < 8; l++) {
  const c = cache.createLayerCache({ nKvHeads: H, headDim: D }, storage);
  const k = Float32Array.from({length: ctx*H*D}, () => Math.random()-0.5);
  c.update(k, k, ctx); caches.push(c);
}
const q = Float32Array.from({length: 64*D}, () => Math.random()-0.5);
const qPos = Int32Array.of(ctx-1);
for (const c of caches) c.attend(q, 1, 64, qPos, { scale: 0.1 });
const u0 = process.cpuUsage(); let n = 0; const t0 = performance.now();
while (performance.now() - t0 < 3000) { for (const c of caches) c.attend(q, 1, 64, qPos, { scale: 0.1 }); n += caches.length; }
const cpu = (process.cpuUsage(u0).user) / 1e3 / n;
const f = cache.storeFormat(storage, D, D);
const bytes = f.quantized ? ctx*H*(D + D*f.vBits/8 + 8*(2*D/f.groupSize)) : ctx*H*2*D*f.kBits/8;
console.log(storage, D, ctx, 'cpu ms/call', cpu.toFixed(3), 'GB/s per core', (bytes/(cpu/1e3)/1e9).toFixed(1), 'wall ms', ((performance.now()-t0)/n).toFixed(3));
