#!/usr/bin/env node
// The row layout and the 16-row tile layout (packWeightTiles) of the same q4 weights, side by side in one
// process and one build: the same matmul through each, turns alternating (each layout goes first in
// half the repetitions), median of the paired per-repetition ratios, and the largest difference of the
// outputs. Weights cycle over >= 512 MiB of copies in huge-page blocks (one set per layout), so every
// call reads DRAM as a model's decode step does; --l2 uses one small copy instead (the kernel's own rate).
//   node bench/layouts-ab.mjs [--m 1,8] [--n 6144] [--k 1536] [--bits 4|8] [--precisions fast,int8,exact] [--threads N] [--l2]
import { q4Weight } from './q4-weight.mjs';
import { flag, has, native, requireTileLayout } from './tile-bench.mjs';

requireTileLayout('layouts-ab');
if (flag('threads')) native.setThreads(Number(flag('threads')));
const N = Number(flag('n', 6144)), K = Number(flag('k', 1536));
const l2 = has('l2');
const bits = Number(flag('bits', 4));
if (bits !== 4 && bits !== 8) throw new Error(`--bits must be 4 or 8, got ${bits}`);
const codeBytes = (N * K * bits) / 8, scaleBytes = (N * K) / 64 * 2;
// The 8-bit weight: the q4 bench weight's byte pattern over N x K bytes, same scales (group 64, bf16).
const weightAt = (data) => {
  if (bits === 4) return q4Weight(N, K, data);
  for (let i = 0; i < data.length; i++) data[i] = (i * 2654435761) >>> 24;
  return { ...q4Weight(1, 64), rows: N, cols: K, bits: 8, data, scales: new Uint8Array(new Uint16Array((N * K) / 64).fill(0x3b23).buffer), biases: new Uint8Array(new Uint16Array((N * K) / 64).fill(0xbc23).buffer) };
};
const copies = l2 ? 1 : Math.max(2, Math.ceil((512 << 20) / codeBytes));
const rowsBlock = new Uint8Array(native.alloc(copies * codeBytes)), tilesBlock = new Uint8Array(native.alloc(copies * codeBytes));
const rows = [], tiles = [];
for (let i = 0; i < copies; i++) {
  const w = weightAt(rowsBlock.subarray(i * codeBytes, (i + 1) * codeBytes));
  // Distinct scales per copy so no copy's scales stay cached for the next.
  w.scales = new Uint8Array(w.scales);
  w.biases = new Uint8Array(w.biases);
  const t = { ...w, data: tilesBlock.subarray(i * codeBytes, (i + 1) * codeBytes), scales: new Uint8Array(scaleBytes), biases: new Uint8Array(scaleBytes), layout: 1 };
  native.packWeightTiles(w, t);
  rows.push(w);
  tiles.push(t);
}
const median = (a) => [...a].sort((u, v) => u - v)[a.length >> 1];
const reps = l2 ? 15 : 9;
for (const M of flag('m', '1,8').split(',').map(Number)) {
  const x = new Float32Array(M * K).map((_, i) => Math.sin(i * 0.37));
  const yR = new Float32Array(M * N), yT = new Float32Array(M * N);
  for (const p of flag('precisions', 'fast,int8,exact').split(',')) {
    native.setMatmulPrecision(p);
    const calls = l2 ? 20 : 1;
    const pass = (ws, y) => {
      const t = performance.now();
      for (let c = 0; c < calls; c++) for (const w of ws) native.matmul(x, M, w, null, y);
      return performance.now() - t;
    };
    pass(rows, yR);
    pass(tiles, yT);
    const tr = [], tt = [], ratio = [];
    for (let r = 0; r < reps; r++) {
      let a, b;
      if (r & 1) { b = pass(tiles, yT); a = pass(rows, yR); }
      else { a = pass(rows, yR); b = pass(tiles, yT); }
      tr.push(a);
      tt.push(b);
      ratio.push(a / b);
    }
    let maxd = 0, maxy = 0;
    for (let i = 0; i < yR.length; i++) {
      maxd = Math.max(maxd, Math.abs(yR[i] - yT[i]));
      maxy = Math.max(maxy, Math.abs(yR[i]));
    }
    const bytes = calls * copies * (codeBytes + 2 * scaleBytes);
    const gbs = (ms) => (bytes / ms / 1e6).toFixed(1);
    console.log(`${p} q${bits} M=${M} ${N}x${K} ${l2 ? 'in L2' : `from DRAM (${copies} copies)`}: rows ${gbs(median(tr))} GB/s, tiles ${gbs(median(tt))} GB/s, tiles/rows ${median(ratio).toFixed(3)}x (paired), max |dy| ${maxd.toExponential(2)} of max |y| ${maxy.toExponential(2)}`);
  }
}
native.setMatmulPrecision('exact');
