import * as native from '@mlxcel/core-native';
import * as cache from '/work/main/packages/cache/dist/index.js';
native.setThreads(1);
const D = 128, ctx = 4096, H = 8;
const c = cache.createLayerCache({ nKvHeads: H, headDim: D }, process.argv[2] || 'f16');
const k = Float32Array.from({length: ctx*H*D}, () => Math.random()-0.5);
c.update(k, k, ctx);
const q = Float32Array.from({length: 64*D}, () => Math.random()-0.5);
const qPos = Int32Array.of(ctx-1);
let t0 = performance.now(); let n = 0;
while (performance.now() - t0 < 3000) { c.attend(q, 1, 64, qPos, { scale: 0.1 }); n++; }
console.log('ms/call', (performance.now()-t0)/n, 'GB/s', ctx*H*D*2*2/((performance.now()-t0)/n/1e3)/1e9);
