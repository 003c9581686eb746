#!/usr/bin/env node
// matmulShared against one matmul per weight, in the same process and run: a layer's projections that
// share x (Gemma 3n E2B's q / k / v: 2048 + 512 + 512 rows, and gate / up: 8192 + 8192, over 2048
// columns; or --parts / --k) as random q4 weights in the 16-row tile layout, cycled over >= 512 MiB of
// copies so every call reads DRAM as a decode step does. Each repetition times one pass over all copies
// both ways (turns alternating which goes first); the median per-layer times and the median of the
// paired ratios are printed, with the largest output difference (0: the same bits).
//   node bench/shared-gemv.mjs [--m 1,8] [--k 2048] [--parts 2048+512+512,8192+8192] [--precision fast] [--reps 9]
import { q4Weight } from './q4-weight.mjs';
import { flag, native, requireTileLayout } from './tile-bench.mjs';

requireTileLayout('shared-gemv', ', where matmulShared runs one matmul per weight');
const precision = native.setMatmulPrecision(flag('precision', 'fast'));
const K = Number(flag('k', 2048));
const reps = Number(flag('reps', 9));
const median = (a) => [...a].sort((u, v) => u - v)[a.length >> 1];

// One tiled q4 weight of N x K in arena memory (its own scales so none stay cached for the next copy).
function tiled(N) {
  const w = q4Weight(N, K, new Uint8Array(native.alloc((N * K) / 2)));
  const t = { ...w, data: new Uint8Array(native.alloc((N * K) / 2)), scales: new Uint8Array(w.scales.length), biases: new Uint8Array(w.biases.length), layout: 1 };
  native.packWeightTiles(w, t);
  return t;
}

console.log(`matmulShared vs one matmul per weight: ${native.cpuInfo().isa}, --matmul ${precision}, K = ${K}, random q4 (group 64) in the tile layout, from DRAM`);
for (const spec of flag('parts', '2048+512+512,8192+8192').split(',')) {
  const parts = spec.split('+').map(Number);
  const total = parts.reduce((a, b) => a + b, 0);
  const layers = Math.max(2, Math.ceil((512 << 20) / ((total * K) / 2)));
  const copies = Array.from({ length: layers }, () => parts.map(tiled));
  for (const M of flag('m', '1,8').split(',').map(Number)) {
    const x = Float32Array.from({ length: M * K }, (_, i) => Math.sin(i * 0.37));
    const ySep = parts.map((n) => new Float32Array(M * n)), yShared = parts.map((n) => new Float32Array(M * n));
    const separate = () => {
      const t = performance.now();
      for (const ws of copies) ws.forEach((w, j) => native.matmul(x, M, w, null, ySep[j]));
      return ((performance.now() - t) / layers) * 1000;
    };
    const shared = () => {
      const t = performance.now();
      for (const ws of copies) native.matmulShared(x, M, ws, null, yShared);
      return ((performance.now() - t) / layers) * 1000;
    };
    separate();
    shared();
    const a = [], b = [], ratio = [];
    for (let r = 0; r < reps; r++) {
      let s, h;
      if (r & 1) { h = shared(); s = separate(); }
      else { s = separate(); h = shared(); }
      a.push(s);
      b.push(h);
      ratio.push(h / s);
    }
    let maxd = 0;
    ySep.forEach((y, j) => y.forEach((v, i) => (maxd = Math.max(maxd, Math.abs(v - yShared[j][i])))));
    console.log(`  [${parts.join(' + ')}] x ${K}, M = ${M}: separate ${median(a).toFixed(1)} us, shared ${median(b).toFixed(1)} us per layer, shared/separate ${median(ratio).toFixed(3)} (paired), max |dy| ${maxd}`);
  }
}
