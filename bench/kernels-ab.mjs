#!/usr/bin/env node
// Two builds of the core-native addon, side by side in one process: the same q4 matmul (random codes,
// bf16 scales, group 64) through each, calls alternating, median of 7, and the largest difference of
// their outputs. For kernel work: copy build/Release/mlxcel_core.node aside, rebuild, compare.
//   node bench/kernels-ab.mjs <a.node> <b.node> [--m 512] [--n 4096] [--k 4096] [--precisions fast,int8] [--isa avx2 | --isa a,b] [--threads N] [--calls N] [--dram] [--tiles] [--reps 7]
// --tiles: the weight repacked into the 16-row tile layout (packWeightTiles), as a resident model's
// 4-bit weights are where the running variant reads tiles (avx512vnni); the default is the row layout.
// --reps: timed calls per build (median; the builds take turns going first).
// --dram (for decode GEMVs, M = 1): both builds cycle over the same weight copies, >= 512 MiB of them in
// one huge-page block, so every call reads its weight from DRAM as in a model's decode step; each
// repetition is one pass over all copies, the ratio the median of the paired per-repetition ratios
// (the two builds take turns going first) and the GB/s count codes, scales and biases.
// The first build loaded tends to run a little faster (compare a build with itself to see the bias on
// this machine: 0.88-0.92 at M = 64 on the development VM), so ratios under ~10 % need both orders.
import { copyFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { q4Weight } from './q4-weight.mjs';

const args = process.argv.slice(2);
const flag = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : dflt;
};
const [pathA, pathB] = args.filter((a, i) => !a.startsWith('--') && !(i > 0 && args[i - 1].startsWith('--')));
if (!pathA || !pathB) {
  console.error('usage: node bench/kernels-ab.mjs <a.node> <b.node> [--m 512] [--n 4096] [--k 4096] [--precisions fast,int8] [--isa NAME] [--threads N] [--calls N] [--dram]');
  process.exit(2);
}
const load = (p) => {
  const m = { exports: {} };
  process.dlopen(m, p);
  return m.exports;
};
// One path loaded twice is one module (setIsa would switch both): the second gets a private copy.
const copyB = resolve(pathA) === resolve(pathB) ? join(tmpdir(), `kernels-ab-${process.pid}.node`) : null;
if (copyB) {
  copyFileSync(pathB, copyB);
  process.on('exit', () => rmSync(copyB, { force: true }));
}
const A = load(pathA), B = load(copyB ?? pathB);
if (flag('threads')) for (const X of [A, B]) X.setThreads(Number(flag('threads'))); // e.g. one core's rate
// --isa NAME: one kernel variant in both builds (e.g. avx2 on an AVX-512 machine); --isa A,B: variant A in
// the first build and B in the second (two variants of one build: pass its .node file twice).
if (flag('isa')) {
  const [ia, ib = ia] = flag('isa').split(',');
  A.setIsa(ia);
  B.setIsa(ib);
}
const M = Number(flag('m', 512)), N = Number(flag('n', 4096)), K = Number(flag('k', 4096));
const dram = args.includes('--dram');
const codeBytes = (N * K) / 2;
const copies = dram ? Math.max(2, Math.ceil((512 << 20) / codeBytes)) : 1;
const block = dram ? new Uint8Array(A.alloc(copies * codeBytes)) : null; // huge pages, as model weights
const weight = (i = 0) => q4Weight(N, K, block ? block.subarray(i * codeBytes, (i + 1) * codeBytes) : undefined);
const tiles = args.includes('--tiles');
if (tiles && dram) throw new Error('--tiles and --dram: not supported together');
if (tiles && !A.weightTileLayout()) throw new Error(`--tiles: the ${A.cpuInfo().isa} kernels do not read the tile layout`);
// The tile repack of a weight (both builds read the same packed bytes: the layout is part of the format).
const tiled = (w) => {
  const out = { data: new Uint8Array(w.data.length), scales: new Uint8Array(w.scales.length), biases: new Uint8Array(w.biases.length) };
  A.packWeightTiles(w, out);
  return { ...w, ...out, layout: 1 };
};
const wA = tiles ? tiled(weight()) : weight(), wB = dram || tiles ? wA : weight();
const ws = dram ? [wA, ...Array.from({ length: copies - 1 }, (_, i) => weight(i + 1))] : null;
const x = new Float32Array(M * K).map((_, i) => Math.sin(i * 0.37));
const yA = new Float32Array(M * N), yB = new Float32Array(M * N);
const median = (a) => [...a].sort((u, v) => u - v)[a.length >> 1];
for (const p of flag('precisions', 'fast,int8').split(',')) {
  A.setMatmulPrecision(p);
  B.setMatmulPrecision(p);
  if (dram) {
    const ra = [], rb = [], ratio = [];
    const pass = (X, y) => {
      const t = performance.now();
      for (const w of ws) X.matmul(x, M, w, null, y);
      return performance.now() - t;
    };
    for (let r = 0; r < 9; r++) {
      let a, b;
      if (r & 1) {
        b = pass(B, yB);
        a = pass(A, yA);
      } else {
        a = pass(A, yA);
        b = pass(B, yB);
      }
      ra.push(a);
      rb.push(b);
      ratio.push(a / b);
    }
    const bytes = copies * (codeBytes + ((N * K) / 64) * 4);
    let maxd = 0;
    for (let i = 0; i < yA.length; i++) maxd = Math.max(maxd, Math.abs(yA[i] - yB[i]));
    const gbs = (ms) => (bytes / ms / 1e6).toFixed(1);
    console.log(`${p} M=${M} ${N}x${K} from DRAM (${copies} copies): a ${gbs(median(ra))} GB/s, b ${gbs(median(rb))} GB/s, b/a ${median(ratio).toFixed(3)}x (paired), max |dy| ${maxd}`);
    continue;
  }
  const ta = [], tb = [];
  const calls = Number(flag('calls', 1)); // back-to-back calls per timing: a warm small GEMV takes microseconds
  const timed = (X, w, y) => {
    const t = performance.now();
    for (let c = 0; c < calls; c++) X.matmul(x, M, w, null, y);
    return (performance.now() - t) / calls;
  };
  const reps = Number(flag('reps', 7));
  for (let r = 0; r < reps; r++) {
    if (r & 1) {
      tb.push(timed(B, wB, yB));
      ta.push(timed(A, wA, yA));
    } else {
      ta.push(timed(A, wA, yA));
      tb.push(timed(B, wB, yB));
    }
  }
  let maxd = 0;
  for (let i = 0; i < yA.length; i++) maxd = Math.max(maxd, Math.abs(yA[i] - yB[i]));
  const gflops = (ms) => ((2 * M * N * K) / ms / 1e6).toFixed(0);
  // Weight bytes per second too: at M = 1 with a weight that fits L2 that is the GEMV's own rate.
  const gbs = (ms) => ((codeBytes + ((N * K) / 64) * 4) / ms / 1e6).toFixed(1);
  console.log(`${p} M=${M} ${N}x${K}: a ${gflops(median(ta))} GFLOP/s (${gbs(median(ta))} GB/s of weight), b ${gflops(median(tb))} GFLOP/s (${gbs(median(tb))} GB/s), b/a ${(median(ta) / median(tb)).toFixed(2)}x, max |dy| ${maxd}`);
}
