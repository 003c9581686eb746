/**
 * Direct native calls with one argument mutated at a time (the long form also mutates pairs): every
 * outcome must be a JS error whose message starts with the function's name, or a normal return. A crash
 * (std::bad_alloc, a segfault) kills the worker and is counted. Plus NaN-propagation checks of the
 * transcendental kernels in every ISA variant (a NaN in must be a NaN out: "silently wrong" otherwise).
 */
import type { FuzzCase } from '../types.js';

const f32 = (n: number) => new Float32Array(n).map((_, i) => Math.sin(i + 1));
const i32 = (n: number) => new Int32Array(n);
const w44 = () => ({ dtype: 0, data: f32(16), rows: 4, cols: 4 });
/** A 4-bit weight [16, 128], group 64, f32 scales: the smallest shape the 16-row tile layout takes. */
const q4w = (layout?: 1) => ({
  dtype: 3, data: new Uint8Array(1024).map((_, i) => i), rows: 16, cols: 128, bits: 4, groupSize: 64, scaleDtype: 0,
  scales: new Uint8Array(new Float32Array(32).fill(0.01).buffer), biases: new Uint8Array(new Float32Array(32).fill(-0.05).buffer),
  ...(layout ? { layout } : {}),
});

/** Valid calls: [function, arguments]. A single object argument is mutated key by key. */
function bases(): [string, unknown[]][] {
  return [
    ['matmul', [f32(4), 1, w44(), null, f32(4)]],
    ['gather', [new Int32Array([1, 3]), w44(), f32(8)]],
    ['packWeightTiles', [q4w(), { data: new Uint8Array(1024), scales: new Uint8Array(128), biases: new Uint8Array(128) }]],
    // A tiled descriptor: read where the kernels take tiles, a named RangeError elsewhere.
    ['matmul', [f32(128), 1, q4w(1), null, f32(16)]],
    ['rmsNorm', [f32(8), 2, 4, f32(4), 1e-6, false, f32(8)]],
    ['layerNorm', [f32(8), 2, 4, f32(4), f32(4), 1e-5, f32(8)]],
    ['softmax', [f32(8), 2, 4, f32(8)]],
    ['unary', [4, f32(8), f32(8)]],
    ['binary', [0, f32(8), f32(4), f32(8)]],
    ['affine', [f32(8), 2, 1, f32(8)]],
    ['rope', [f32(8), 1, 2, 4, i32(1), f32(8), f32(8), 4, false]],
    ['argmax', [f32(8), 2, 4, i32(2)]],
    ['topk', [f32(8), 3, i32(3), f32(3)]],
    ['toF32', [new Uint8Array(16), 0, 4, f32(4)]],
    ['fromF32', [f32(4), 1, new Uint16Array(4)]],
    ['quantize', [f32(128), 4, 32, 4, 32, new Uint32Array(16), f32(4), f32(4)]],
    ['glu', [f32(16), 2, 4, f32(8)]],
    ['clamp', [f32(8), -1, 1, f32(8)]],
    ['dwconv1dCausal', [f32(8), 4, 2, f32(4), 2, f32(8)]],
    ['conv2d', [{ x: f32(16), h: 4, w: 4, cin: 1, weight: f32(9), cout: 1, kh: 3, kw: 3, strideH: 1, strideW: 1, padTop: 0, padBottom: 0, padLeft: 0, padRight: 0, out: f32(16) }]],
    ['localAttention', [{ q: f32(8), k: f32(8), v: f32(8), n: 2, nHeads: 1, headDim: 4, nRel: 0, relDist0: 0, maxPast: 1, maxFuture: 0, softcap: 0, out: f32(8) }]],
    ['attention', [{ q: f32(4), nQ: 1, nHeads: 1, headDim: 4, qPos: new Int32Array([1]), k: f32(8), v: f32(8), kvDtype: 0, nKv: 2, nKvHeads: 1, kPos: new Int32Array([0, 1]), scale: 0.5, softcap: 0, out: f32(4) }]],
    ['moeSwitchGLU', [{ numExperts: 2, T: 1, k: 1, gate: { dtype: 0, data: f32(32), rows: 8, cols: 4 }, up: { dtype: 0, data: f32(32), rows: 8, cols: 4 },
      down: { dtype: 0, data: f32(32), rows: 8, cols: 4 }, x: f32(4), ids: new Int32Array([1]), weights: new Float32Array([1]), out: f32(4) }]],
  ];
}

const NUMBERS: unknown[] = [-1, 0, 2 ** 31, 2 ** 33, 2 ** 53, -(2 ** 53), NaN, Infinity, -Infinity, 1.5, '4', null, undefined, {}, true];
const ARRAYS = (): unknown[] => [new Float32Array(0), new Float32Array(1), new Float64Array(16), new Int32Array(16), new Uint8Array(3), null, 3, 'x', {}, [1, 2]];
const OBJECTS = (): unknown[] => [null, 7, 'w', {}, { dtype: 0 }, { ...w44(), rows: 2 ** 40 }, { ...w44(), cols: 2 ** 33 }, { ...w44(), dtype: 3 }];

function badValuesFor(v: unknown): unknown[] {
  if (ArrayBuffer.isView(v)) return ARRAYS();
  if (v !== null && typeof v === 'object') return OBJECTS();
  if (typeof v === 'boolean') return ['yes', 1, {}];
  return NUMBERS;
}

function clone(v: unknown): unknown {
  if (ArrayBuffer.isView(v)) return (v as Float32Array).slice();
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, clone(x)]));
  return v;
}

export function nativeCases(full: boolean): FuzzCase[] {
  const out: FuzzCase[] = [];
  for (const [fn, args] of bases()) {
    const expect = { namedErrorOrOk: `${fn}:` };
    out.push({ id: `native/${fn}/valid`, cls: 'native', op: 'native', args: { fn, args: args.map(clone) }, expect });
    const obj = args.length === 1 && !ArrayBuffer.isView(args[0]) ? (args[0] as Record<string, unknown>) : null;
    const slots: [string, unknown][] = obj ? Object.entries(obj) : args.map((a, i) => [String(i), a]);
    for (const [slot, v] of slots)
      badValuesFor(v).forEach((bad, j) => {
        const mutated = obj ? [{ ...(clone(obj) as object), [slot]: bad }] : args.map((a, i) => (String(i) === slot ? bad : clone(a)));
        out.push({ id: `native/${fn}/${slot}#${j}`, cls: 'native', op: 'native', args: { fn, args: mutated }, expect });
      });
    if (full && obj) {
      // Pairs of size fields at huge values: products that overflow int64 only together.
      const sizes = slots.filter(([, v]) => typeof v === 'number').map(([k]) => k);
      for (const a of sizes) for (const b of sizes) if (a < b)
        for (const big of [2 ** 31, 2 ** 33])
          out.push({ id: `native/${fn}/${a}+${b}=${big}`, cls: 'native', op: 'native', args: { fn, args: [{ ...(clone(obj) as object), [a]: big, [b]: big }] }, expect });
    }
  }
  // The two crashes, verbatim.
  out.push({ id: 'native/conv2d/h=w=2^31', cls: 'native', op: 'native', expect: { namedErrorOrOk: 'conv2d:' },
    args: { fn: 'conv2d', args: [{ x: f32(16), h: 2 ** 31, w: 2 ** 31, cin: 4, weight: f32(9), cout: 1, kh: 3, kw: 3, strideH: 1, strideW: 1, padTop: 0, padBottom: 0, padLeft: 0, padRight: 0, out: f32(16) }] } });
  out.push({ id: 'native/glu/2^33x2^30', cls: 'native', op: 'native', expect: { namedErrorOrOk: 'glu:' }, args: { fn: 'glu', args: [f32(16), 2 ** 33, 2 ** 30, f32(16)] } });
  // NaN in, NaN out, for every unary op in every ISA variant.
  out.push({ id: 'native/nan-propagation', cls: 'native', op: 'nanprop', args: {}, expect: { ok: true } });
  return out;
}
