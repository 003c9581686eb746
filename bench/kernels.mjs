#!/usr/bin/env node
// `pnpm bench kernels`: memory read bandwidth, GEMV (decode) throughput as a fraction of it, and GEMM
// (prefill) GFLOP/s, all measured in the same run on this machine.
//
//   node bench/kernels.mjs [--threads N] [--isa scalar|avx2|avx512|avx512vnni|neon] [--runs R] [--json]
//                          [--only gemv|gemm|small] [--kinds q4,q8,bf16] [--gemv-precision exact|fast|int8]
//
// Read bandwidth: a streaming sum (kernels' streamSum) over a 1 GiB buffer on all pool threads.
// GEMV: y[1, rows] = x[1, cols] . W^T for W = 4096x4096 and 4096x14336 ([rows, cols]) in MLX affine q4
// (group 64, bf16 scales/biases, as mlx-community ships), q8 (group 64, bf16) and bf16. Each weight is
// replicated into enough copies that one pass touches >= 512 MiB (far beyond the L3), and the copies are
// used round-robin, so every call streams its weight from DRAM. GB/s counts every byte the kernel must
// read (packed codes + scales + biases, or the bf16 elements).
// The fraction of bandwidth is measured in pairs: each timed GEMV pass is preceded by a bandwidth pass,
// and the reported fraction is the median of the per-pair ratios, so load from other processes that
// changes during the run affects both sides of a ratio alike.
// GEMM: M = 512 rows (the target shape) and M = 64 (a short prompt) against a 4096x4096 weight, f32,
// q4 and q8 (group 64, bf16), the quantized ones exact and with integer activations (matmul precisions
// "fast": 16-bit, "int8": 8-bit), as GFLOP/s = 2*M*N*K / t, timed alternately; each ratio is the median of the per-pair ratios.
// Small ops: per-call latency of kernels that run inline (below the pool's grain) and of small parallel
// regions, on 1 thread and on the GEMV thread count (thread-pool overhead for decode-sized work).
// Every figure is the median of several timed passes after a warm-up pass; the 1-min load average is
// printed because other processes on the machine skew the figures.
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { randomFillSync } from 'node:crypto';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const native = await import(pathToFileURL(join(root, 'packages/core-native/lib/index.js')).href);

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
};
const GiB = 1024 ** 3, MiB = 1024 ** 2;
const runs = Math.max(3, Number(opt('runs', 7)));
const gemvThreads = Number(opt('threads', 2));
const asJson = args.includes('--json');
const only = opt('only');
const kinds = opt('kinds', 'q4,q8,bf16').split(',');
// The matmul precision of the GEMV passes (exact by default; fast / int8 take the integer-activation GEMV
// where the variant has one: the decode path of generate / serve / bench).
const gemvPrecision = opt('gemv-precision', 'exact');
if (opt('isa')) native.setIsa(opt('isa'));

const info = native.cpuInfo();
const allThreads = info.physicalCores;
const log = asJson ? () => {} : (s = '') => console.log(s);

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const now = () => Number(process.hrtime.bigint()) / 1e9;
/** Median seconds per call of fn(i) over `reps` consecutive calls, `runs` timed passes after one warm-up. */
function timeIt(fn, reps) {
  for (let i = 0; i < reps; i++) fn(i);
  const t = [];
  for (let r = 0; r < runs; r++) {
    const t0 = now();
    for (let i = 0; i < reps; i++) fn(i);
    t.push((now() - t0) / reps);
  }
  return median(t);
}

// One arena for everything: it is the bandwidth probe's buffer and then holds the weight copies.
const ARENA = GiB;
const arena = new Uint8Array(native.alloc(ARENA));

// --- read bandwidth ---------------------------------------------------------------------------
native.setThreads(allThreads);
randomFillSync(arena.subarray(0, 64 * MiB));
for (let off = 64 * MiB; off < ARENA; off += 64 * MiB) arena.copyWithin(off, 0, 64 * MiB);
const tBw = timeIt(() => native.streamSum(arena), 1);
const bandwidth = ARENA / tBw / 1e9;

// --- GEMV -------------------------------------------------------------------------------------
native.setThreads(gemvThreads);
const BF16_SCALE = 0x3c23; // ~0.00995 as bf16
/** Fills a bf16 region with finite values of magnitude ~2^-7..2^-6, random signs. */
function fillBf16(u8, seedOff) {
  const u16 = new Uint16Array(u8.buffer, u8.byteOffset, u8.byteLength / 2);
  const tile = new Uint16Array(1 << 16);
  for (let i = 0; i < tile.length; i++) tile[i] = 0x3c00 | ((i * 2654435761 + seedOff) >>> 20 & 0x7f) | (i & 1 ? 0x8000 : 0);
  for (let i = 0; i < u16.length; i += tile.length) u16.set(tile.subarray(0, Math.min(tile.length, u16.length - i)), i);
}

/** Lays out `copies` weights of one kind in the arena; returns their native descriptors and bytes each. */
function makeWeights(kind, rows, cols) {
  const align = (n) => Math.ceil(n / 64) * 64;
  let dataBytes, scaleBytes = 0;
  if (kind === 'bf16') dataBytes = rows * cols * 2;
  else {
    const bits = kind === 'q4' ? 4 : 8;
    dataBytes = (rows * cols * bits) / 8;
    scaleBytes = rows * (cols / 64) * 2;
  }
  const each = dataBytes + 2 * scaleBytes;
  const stride = align(dataBytes) + 2 * align(scaleBytes);
  const copies = Math.max(2, Math.min(Math.floor(ARENA / stride), Math.ceil((512 * MiB) / each)));
  const first = arena.subarray(0, stride);
  if (kind === 'bf16') fillBf16(first.subarray(0, dataBytes), 7);
  else {
    randomFillSync(first.subarray(0, dataBytes));
    const s = first.subarray(align(dataBytes), align(dataBytes) + scaleBytes);
    new Uint16Array(s.buffer, s.byteOffset, s.byteLength / 2).fill(BF16_SCALE);
    fillBf16(first.subarray(align(dataBytes) + align(scaleBytes), align(dataBytes) + align(scaleBytes) + scaleBytes), 3);
  }
  for (let c = 1; c < copies; c++) arena.copyWithin(c * stride, 0, stride);
  const ws = [];
  for (let c = 0; c < copies; c++) {
    const base = c * stride;
    const data = arena.subarray(base, base + dataBytes);
    if (kind === 'bf16') ws.push({ dtype: native.DType.BF16, data, rows, cols });
    else {
      const s0 = base + align(dataBytes), b0 = s0 + align(scaleBytes);
      ws.push({
        dtype: native.DType.QAFFINE, data, rows, cols, bits: kind === 'q4' ? 4 : 8, groupSize: 64, scaleDtype: native.DType.BF16,
        scales: arena.subarray(s0, s0 + scaleBytes), biases: arena.subarray(b0, b0 + scaleBytes),
      });
    }
  }
  return { ws, each };
}

const setPool = (n) => {
  if (native.cpuInfo().threads !== n) native.setThreads(n);
};
const bwPass = () => {
  setPool(allThreads);
  const t0 = now();
  native.streamSum(arena);
  return ARENA / (now() - t0) / 1e9;
};

const gemv = [];
for (const [rows, cols] of only && only !== 'gemv' ? [] : [[4096, 4096], [4096, 14336]]) {
  const x = new Float32Array(cols);
  for (let i = 0; i < cols; i++) x[i] = Math.sin(i * 0.37) * 0.5;
  const y = new Float32Array(rows);
  for (const kind of kinds) {
    const { ws, each } = makeWeights(kind, rows, cols);
    const pass = () => {
      setPool(gemvThreads);
      native.setMatmulPrecision(gemvPrecision);
      const t0 = now();
      for (let i = 0; i < ws.length; i++) native.matmul(x, 1, ws[i], null, y);
      return (now() - t0) / ws.length;
    };
    pass(); // warm-up
    const ts = [], ratios = [];
    for (let r = 0; r < runs; r++) {
      const bw = bwPass();
      const t = pass();
      ts.push(t);
      ratios.push(each / t / 1e9 / bw);
    }
    const t = median(ts);
    gemv.push({ shape: `${rows}x${cols}`, kind, us: t * 1e6, gbs: each / t / 1e9, fraction: median(ratios), copies: ws.length, mib: each / MiB });
  }
}

// --- GEMM -------------------------------------------------------------------------------------
// M = 512 is the target shape; M = 64 is a short prompt's prefill, where per-weight costs
// (decoding the weight) are shared by few rows of x.
const N = 4096, K = 4096;
const gemmMs = [512, 64];
const gemms = [];
if (!only || only === 'gemm') {
  // One weight each in its own buffer (a GEMM reads its weight from cache-sized panels; no copies needed).
  const wf32 = new Float32Array(N * K);
  for (let i = 0; i < wf32.length; i++) wf32[i] = ((i * 2654435761) >>> 0) / 2 ** 32 - 0.5;
  setPool(gemvThreads);
  const wF32 = { dtype: native.DType.F32, data: wf32, rows: N, cols: K };
  const quantWeight = (bits) => {
    const data = randomFillSync(new Uint8Array((N * K * bits) / 8));
    const scales = new Uint8Array(N * (K / 64) * 2), biases = new Uint8Array(N * (K / 64) * 2);
    new Uint16Array(scales.buffer).fill(BF16_SCALE);
    fillBf16(biases, 3);
    return [{ dtype: native.DType.QAFFINE, data, rows: N, cols: K, bits, groupSize: 64, scaleDtype: native.DType.BF16, scales, biases }];
  };
  const q4w = quantWeight(4), q8w = quantWeight(8);
  // Each case: a weight and the matmul precision (exact: f32 activations; fast: int8 activations, see
  // setMatmulPrecision). All timed alternately in the same loop, so each ratio pairs like with like.
  const cases = [
    ['f32', wF32, 'exact'], ['q4', q4w[0], 'exact'], ['q4_fast', q4w[0], 'fast'], ['q4_int8', q4w[0], 'int8'],
    ['q8', q8w[0], 'exact'], ['q8_fast', q8w[0], 'fast'], ['q8_int8', q8w[0], 'int8'],
  ];
  for (const M of gemmMs) {
    const gx = new Float32Array(M * K);
    for (let i = 0; i < gx.length; i++) gx[i] = Math.cos(i * 0.011) * 0.5;
    const gy = new Float32Array(M * N);
    const gemmOnce = (w, mode) => {
      native.setMatmulPrecision(mode);
      const t0 = now();
      native.matmul(gx, M, w, null, gy);
      return now() - t0;
    };
    for (const [, w, mode] of cases) gemmOnce(w, mode);
    const times = cases.map(() => []), ratios = [];
    // Small M is fast: several calls per timing so each sample is well above timer noise.
    const reps = Math.max(1, Math.round(512 / M));
    for (let r = 0; r < runs; r++) {
      const t = cases.map(([, w, mode]) => {
        let a = 0;
        for (let i = 0; i < reps; i++) a += gemmOnce(w, mode);
        return a / reps;
      });
      t.forEach((v, i) => times[i].push(v));
      ratios.push({ q4: t[0] / t[1], q4_fast: t[1] / t[2], q4_int8: t[1] / t[3], q8_fast: t[4] / t[5], q8_int8: t[4] / t[6] });
    }
    native.setMatmulPrecision('exact');
    const flop = 2 * M * N * K;
    const g = { M, N, K };
    cases.forEach(([name], i) => { g[name] = flop / median(times[i]) / 1e9; });
    g.ratio = median(ratios.map((x) => x.q4));
    // Speed-ups over the exact path of the same weight, each the median of per-pass ratios.
    for (const k of ['q4_fast', 'q4_int8', 'q8_fast', 'q8_int8']) g[`${k}_speedup`] = median(ratios.map((x) => x[k]));
    gemms.push(g);
  }
}
const gemm = gemms.find((g) => g.M === 512) ?? null;

// --- small ops: inline work and small parallel regions -----------------------------------------
function perCall(fn, reps) {
  for (let i = 0; i < reps; i++) fn();
  const t = [];
  for (let r = 0; r < runs; r++) {
    const t0 = now();
    for (let i = 0; i < reps; i++) fn();
    t.push((now() - t0) / reps);
  }
  return median(t) * 1e6;
}
const small = [];
if (!only || only === 'small') {
  const h = new Float32Array(2048).map((_, i) => Math.sin(i)), hw = new Float32Array(2048).fill(1), ho = new Float32Array(2048);
  const big = new Float32Array(65536).fill(1), bigo = new Float32Array(65536);
  const { ws: smallQ } = makeWeights('q4', 2048, 2048);
  const sx = new Float32Array(2048).fill(0.5), sy = new Float32Array(2048);
  for (const [name, fn, reps] of [
    ['rmsNorm 1x2048 (inline)', () => native.rmsNorm(h, 1, 2048, hw, 1e-6, false, ho), 20000],
    ['add 65536 (4 chunks)', () => native.binary(0, big, big, bigo), 5000],
    ['q4 GEMV 2048x2048 (cache-resident)', () => native.matmul(sx, 1, smallQ[0], null, sy), 2000],
  ]) {
    const row = { name };
    for (const t of [1, gemvThreads]) {
      setPool(t);
      row[t] = perCall(fn, reps);
    }
    small.push(row);
  }
}
setPool(gemvThreads);

const result = {
  machine: { cpu: cpus()[0]?.model ?? 'unknown', logicalCpus: cpus().length, physicalCores: info.physicalCores, memGiB: totalmem() / GiB, isa: native.cpuInfo().isa, loadavg1: loadavg()[0] },
  bandwidth: { gbs: bandwidth, threads: allThreads, bytes: ARENA },
  gemvThreads,
  gemv,
  gemm: gemm && { ...gemm, threads: gemvThreads },
  gemms: gemms.map((g) => ({ ...g, threads: gemvThreads })),
  smallOps: small,
  runs,
};

if (asJson) console.log(JSON.stringify(result, null, 2));
else {
  const m = result.machine;
  log(`mlxcel kernels bench — ${m.cpu}, ${m.physicalCores} cores, ISA ${m.isa}, load avg ${m.loadavg1.toFixed(2)}, median of ${runs}`);
  log(`read bandwidth (streaming sum, 1 GiB, ${allThreads} threads): ${bandwidth.toFixed(1)} GB/s`);
  log('');
  if (gemv.length) {
    log(`GEMV (M = 1, ${gemvThreads} threads, --matmul ${gemvPrecision}; weights cycled over copies totalling >= 512 MiB; fraction = median of paired ratios)`);
    log('  weight        kind   MiB/weight   us/call     GB/s   of bandwidth');
    for (const g of gemv)
      log(`  ${g.shape.padEnd(12)}  ${g.kind.padEnd(5)} ${g.mib.toFixed(1).padStart(10)} ${g.us.toFixed(0).padStart(9)} ${g.gbs.toFixed(1).padStart(8)}   ${(100 * g.fraction).toFixed(0).padStart(5)}%`);
    log('');
  }
  for (const g of gemms)
    log(
      `GEMM (M = ${g.M}, ${N}x${K} weight, ${gemvThreads} threads): f32 ${g.f32.toFixed(1)} GFLOP/s, q4 ${g.q4.toFixed(1)} GFLOP/s, q4/f32 = ${(100 * g.ratio).toFixed(0)}% | ` +
        `integer activations: q4 fast ${g.q4_fast.toFixed(1)} (${g.q4_fast_speedup.toFixed(2)}x exact) / int8 ${g.q4_int8.toFixed(1)} (${g.q4_int8_speedup.toFixed(2)}x); ` +
        `q8 exact ${g.q8.toFixed(1)}, fast ${g.q8_fast.toFixed(1)} (${g.q8_fast_speedup.toFixed(2)}x) / int8 ${g.q8_int8.toFixed(1)} (${g.q8_int8_speedup.toFixed(2)}x) GFLOP/s`,
    );
  if (gemms.length) log('');
  if (small.length) {
    log(`small ops, us per call (1 thread / ${gemvThreads} threads):`);
    for (const r of small) log(`  ${r.name.padEnd(36)} ${r[1].toFixed(2).padStart(8)} / ${r[gemvThreads].toFixed(2).padStart(8)}`);
    log('');
  }
  log(`targets: GEMV >= 80% of bandwidth; q4 GEMM >= 60% of f32 GEMM`);
  const below = [
    ...gemv.filter((g) => g.fraction < 0.8).map((g) => `${g.shape} ${g.kind} GEMV ${(100 * g.fraction).toFixed(0)}%`),
    ...(gemm && gemm.ratio < 0.6 ? [`q4 GEMM ${(100 * gemm.ratio).toFixed(0)}% of f32`] : []),
  ];
  if (gemv.length || gemm) log(below.length ? `below target: ${below.join(', ')}` : 'all targets met in this run');
}
