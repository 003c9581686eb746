#!/usr/bin/env node
// Two builds of the core-native addon, side by side in one process: the same q4 matmul (random codes,
// bf16 scales, group 64) through each, calls alternating, median of 7, and the largest difference of
// their outputs. For kernel work: copy build/Release/mlxcel_core.node aside, rebuild, compare.
//   node bench/kernels-ab.mjs <a.node> <b.node> [--m 512] [--n 4096] [--k 4096] [--precisions fast,int8] [--isa avx2]
// The first build loaded tends to run a little faster (compare a build with itself to see the bias on
// this machine: 0.88-0.92 at M = 64 on the development VM), so ratios under ~10 % need both orders.
const args = process.argv.slice(2);
const flag = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : dflt;
};
const [pathA, pathB] = args.filter((a, i) => !a.startsWith('--') && !(i > 0 && args[i - 1].startsWith('--')));
if (!pathA || !pathB) {
  console.error('usage: node bench/kernels-ab.mjs <a.node> <b.node> [--m 512] [--n 4096] [--k 4096] [--precisions fast,int8] [--isa NAME]');
  process.exit(2);
}
const load = (p) => {
  const m = { exports: {} };
  process.dlopen(m, p);
  return m.exports;
};
const A = load(pathA), B = load(pathB);
if (flag('isa')) for (const X of [A, B]) X.setIsa(flag('isa')); // compare one kernel variant (e.g. avx2 on an AVX-512 machine)
const M = Number(flag('m', 512)), N = Number(flag('n', 4096)), K = Number(flag('k', 4096));
const QAFFINE = 3, BF16 = 2;
const weight = () => ({
  dtype: QAFFINE, rows: N, cols: K, bits: 4, groupSize: 64, scaleDtype: BF16,
  data: new Uint8Array((N * K) / 2).map((_, i) => (i * 2654435761) >>> 24),
  scales: new Uint8Array(new Uint16Array((N * K) / 64).fill(0x3c23).buffer),
  biases: new Uint8Array(new Uint16Array((N * K) / 64).fill(0xbc23).buffer),
});
const wA = weight(), wB = weight();
const x = new Float32Array(M * K).map((_, i) => Math.sin(i * 0.37));
const yA = new Float32Array(M * N), yB = new Float32Array(M * N);
const median = (a) => [...a].sort((u, v) => u - v)[a.length >> 1];
for (const p of flag('precisions', 'fast,int8').split(',')) {
  A.setMatmulPrecision(p);
  B.setMatmulPrecision(p);
  const ta = [], tb = [];
  for (let r = 0; r < 7; r++) {
    let t = performance.now();
    A.matmul(x, M, wA, null, yA);
    ta.push(performance.now() - t);
    t = performance.now();
    B.matmul(x, M, wB, null, yB);
    tb.push(performance.now() - t);
  }
  let maxd = 0;
  for (let i = 0; i < yA.length; i++) maxd = Math.max(maxd, Math.abs(yA[i] - yB[i]));
  const gflops = (ms) => ((2 * M * N * K) / ms / 1e6).toFixed(0);
  console.log(`${p} M=${M} ${N}x${K}: a ${gflops(median(ta))} GFLOP/s, b ${gflops(median(tb))} GFLOP/s, b/a ${(median(ta) / median(tb)).toFixed(2)}x, max |dy| ${maxd}`);
}
