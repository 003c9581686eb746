/**
 * Every kernel variant this binary has and this CPU runs (cpuInfo().variants, none skipped) against the
 * naive reference: all masks and storages, decode and prefill, GQA 1 and 8, f32 rows and tiles. Also
 * checks the variants agree with each other closely (same math, different vector widths).
 */
import * as native from '@mlxcel/core-native';
import { afterAll, describe, expect, it } from 'vitest';
import { createLayerCache, KvCacheBase, type AttendOptions, type KvStorage } from '../src/index.js';
import { naiveAttention, randArray, relErr } from './helpers.js';

const initial = native.cpuInfo().isa;
afterAll(() => {
  native.setIsa(initial);
});

const STORAGES: KvStorage[] = ['f32', 'f16', 'bf16', 'q8', 'k8v4'];
const H = 2, D = 64;
const OPTS: Record<string, AttendOptions> = {
  causal: { scale: 0.125 },
  none: { scale: 0.125, causal: false },
  window: { scale: 0.125, window: 19 },
  spans: { scale: 0.125, spans: Int32Array.of(40, 52, 280, 300) },
  blockSparse: { scale: 0.125, blockSparse: { blockSize: 8, localBlocks: 2, vertStride: 3, headStep: 1 } },
  softcap: { scale: 0.7, softcap: 2 },
};

function run(storage: KvStorage, mask: string, g: number, decode: boolean) {
  const n = decode ? 300 : 90;
  const cache = createLayerCache({ nKvHeads: H, headDim: D }, storage);
  cache.update(randArray(n * H * D, 7 + g), randArray(n * H * D, 8 + g), n);
  const nHeads = H * g, Tq = decode ? 1 : 50;
  const qPos = Int32Array.from({ length: Tq }, (_, i) => n - Tq + i - (decode && mask === 'spans' ? 10 : 0));
  const q = randArray(Tq * nHeads * D, 9 + g);
  const o = OPTS[mask]!;
  const out = cache.attend(q, Tq, nHeads, qPos, o);
  const rows = (cache as KvCacheBase).storedRows();
  const ref = naiveAttention({ q, nQ: Tq, nHeads, headDim: D, vDim: D, qPos, k: rows.k, v: rows.v, kPos: rows.pos, nKvHeads: H, ...o });
  return { out, ref };
}

const variants = native.cpuInfo().variants;

describe('every ISA variant', () => {
  it('at least the scalar variant is available', () => {
    expect(variants).toContain('scalar');
  });

  const outputs = new Map<string, Float32Array>();
  for (const isa of variants)
    it(`${isa}: all masks × storages × {prefill, decode} × GQA {1, 8}`, async () => {
      expect(native.setIsa(isa)).toBe(isa);
      for (const storage of STORAGES)
        for (const mask of Object.keys(OPTS)) {
          // Yield to the event loop between cases: the naive reference keeps this test busy for seconds
          // on a loaded machine, and a worker that never yields misses vitest's RPC deadline.
          await new Promise((r) => setImmediate(r));
          for (const g of [1, 8])
            for (const decode of [false, true]) {
              const { out, ref } = run(storage, mask, g, decode);
              expect(relErr(out, ref), `${isa} ${storage} ${mask} gqa ${g} ${decode ? 'decode' : 'prefill'}`).toBeLessThan(3e-5);
              const key = `${storage} ${mask} ${g} ${decode}`;
              const first = outputs.get(key);
              if (first) expect(relErr(out, first), `${isa} vs ${variants[0]}: ${key}`).toBeLessThan(3e-5);
              else outputs.set(key, out);
            }
        }
      // The single-sequence row-layout form too.
      const q = randArray(3 * 4 * 48, 1), k = randArray(30 * 2 * 48, 2), v = randArray(30 * 2 * 48, 3);
      const kPos = Int32Array.from({ length: 30 }, (_, i) => i), qPos = Int32Array.of(27, 28, 29);
      const out = new Float32Array(3 * 4 * 48);
      native.attention({ q, nQ: 3, nHeads: 4, headDim: 48, qPos, k, v, kvDtype: 0, nKv: 30, nKvHeads: 2, kPos, scale: 0.2, window: 9, out });
      const ref = naiveAttention({ q, nQ: 3, nHeads: 4, headDim: 48, vDim: 48, qPos, k, v, kPos, nKvHeads: 2, scale: 0.2, window: 9 });
      expect(relErr(out, ref), `${isa} row layout`).toBeLessThan(3e-5);
    });
});
