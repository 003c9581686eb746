#!/usr/bin/env node
// One decode step's KV writes, alone: a slot of every layer's TiledStore written per step (one
// kvWrite per layer, as decode does), with the store lines either still in cache ("hot") or evicted by
// a 256 MiB streaming read between steps ("evicted": what a decode step's weight stream does to them).
// Prints microseconds per kvWrite call for each case, alternating.
//   node packages/cache/bench/kv-write.mjs [--heads 32] [--head-dim 96] [--layers 32] [--storage f32|f16|bf16|q8|k8v4] [--steps 64]
import { storeFormat, TiledStore } from '../dist/index.js';
import * as native from '@mlxcel/core-native';

const args = process.argv.slice(2);
const flag = (n, d) => {
  const i = args.indexOf(`--${n}`);
  return i >= 0 ? args[i + 1] : d;
};
const H = Number(flag('heads', '32')), D = Number(flag('head-dim', '96')), L = Number(flag('layers', '32'));
const storage = flag('storage', 'f32'), steps = Number(flag('steps', '64'));
const group = storage === 'q8' || storage === 'k8v4' ? 32 : undefined;
const stores = Array.from({ length: L }, () => {
  const s = new TiledStore(H, D, D, storeFormat(storage, D, D, group));
  s.reserve(steps);
  s.touch();
  return s;
});
const k = Float32Array.from({ length: H * D }, (_, i) => Math.sin(i)), v = Float32Array.from({ length: H * D }, (_, i) => Math.cos(i));
const big = new Uint8Array(native.alloc(256 << 20));
for (let i = 0; i < big.length; i += 4096) big[i] = 1;
const slot = new Int32Array(1), pos = new Int32Array(1);
console.log(`kvWrite, ${H} heads x ${D}, ${storage}, ${L} layers, one slot per layer and step, ${steps} steps`);
for (const evict of [false, true, false, true]) {
  let ms = 0;
  for (let step = 0; step < steps; step++) {
    if (evict) native.streamSum(big);
    slot[0] = pos[0] = step;
    const t = performance.now();
    for (const s of stores) s.write(slot, k, v, pos);
    ms += performance.now() - t;
  }
  console.log(`${evict ? 'evicted' : 'hot    '}: ${((ms / (steps * L)) * 1000).toFixed(1)} us per kvWrite`);
}
