import { describe, expect, it } from 'vitest';
import {
  gemma3nProcessorSettings, gemma4ProcessorSettings, gemma4TargetSize, processGemma3n, processGemma4, resizeRgb, type RgbImage,
} from '../src/index.js';

/** Deterministic test picture: smooth gradients plus a hard-edged checkerboard and noise (stress for the filters). */
function picture(w: number, h: number, seed = 1): RgbImage {
  const data = new Uint8Array(w * h * 3);
  let s = seed;
  for (let y = 0; y < h; y++)
    for (let x = 0; x < w; x++) {
      s = (s * 1103515245 + 12345) >>> 0;
      const o = (y * w + x) * 3;
      data[o] = Math.round((255 * x) / Math.max(1, w - 1));
      data[o + 1] = ((x >> 3) + (y >> 3)) & 1 ? 230 : 20;
      data[o + 2] = (s >>> 24) & 255;
    }
  return { data, width: w, height: h };
}

/**
 * The spec's rule computed directly in float64: a separable antialiased filter (support × max(1, scale),
 * centre (i + 0.5)·scale, weights normalised), horizontal then vertical, each pass rounded and clipped
 * to 8 bits (both HF backends keep a uint8 intermediate, which matters where bicubic overshoots), but
 * with exact float64 weights instead of Pillow's 22-bit fixed point.
 */
function referenceResize(img: RgbImage, oh: number, ow: number, filter: 'bilinear' | 'bicubic'): Uint8Array {
  const f = filter === 'bilinear'
    ? { s: 1, k: (x: number) => Math.max(0, 1 - Math.abs(x)) }
    : { s: 2, k: (x: number) => { x = Math.abs(x); const a = -0.5; return x < 1 ? ((a + 2) * x - (a + 3)) * x * x + 1 : x < 2 ? (((x - 5) * x + 8) * x - 4) * a : 0; } };
  const weights = (n: number, m: number) => {
    const scale = n / m, fs = Math.max(1, scale), sup = f.s * fs;
    return Array.from({ length: m }, (_, i) => {
      const c = (i + 0.5) * scale;
      const lo = Math.max(0, Math.floor(c - sup + 0.5)), hi = Math.min(n, Math.floor(c + sup + 0.5));
      const w: [number, number][] = [];
      let t = 0;
      for (let j = lo; j < hi; j++) { const v = f.k((j - c + 0.5) / fs); w.push([j, v]); t += v; }
      return w.map(([j, v]) => [j, v / t] as [number, number]);
    });
  };
  const wx = weights(img.width, ow), wy = weights(img.height, oh);
  const tmp = new Float64Array(img.height * ow * 3);
  for (let y = 0; y < img.height; y++)
    for (let x = 0; x < ow; x++)
      for (let c = 0; c < 3; c++) {
        let a = 0;
        for (const [j, v] of wx[x]!) a += v * img.data[(y * img.width + j) * 3 + c]!;
        tmp[(y * ow + x) * 3 + c] = Math.min(255, Math.max(0, Math.round(a)));
      }
  const out = new Uint8Array(oh * ow * 3);
  for (let y = 0; y < oh; y++)
    for (let x = 0; x < ow; x++)
      for (let c = 0; c < 3; c++) {
        let a = 0;
        for (const [j, v] of wy[y]!) a += v * tmp[(j * ow + x) * 3 + c]!;
        out[(y * ow + x) * 3 + c] = Math.min(255, Math.max(0, Math.round(a)));
      }
  return out;
}

describe('antialiased resize', () => {
  const cases: [number, number, number, number, 'bilinear' | 'bicubic'][] = [
    [100, 80, 48, 40, 'bilinear'], // downscale, both axes
    [37, 53, 96, 80, 'bilinear'], // upscale
    [120, 90, 96, 144, 'bicubic'], // mixed: shrink one axis, grow the other
    [64, 200, 48, 48, 'bicubic'], // strong downscale
  ];
  for (const [h, w, oh, ow, f] of cases) {
    it(`${h}x${w} -> ${oh}x${ow} ${f} is within 1 LSB of the float64 rule (max per-pixel diff measured)`, () => {
      const img = picture(w, h);
      const got = resizeRgb(img, oh, ow, f);
      const ref = referenceResize(img, oh, ow, f);
      let md = 0;
      for (let i = 0; i < ref.length; i++) md = Math.max(md, Math.abs(got.data[i]! - ref[i]!));
      console.log(`resize ${h}x${w} -> ${oh}x${ow} ${f}: max per-pixel diff vs the float64 rule = ${md}`);
      expect(md).toBeLessThanOrEqual(1);
    });
  }
  it('is the identity at the target size', () => {
    const img = picture(20, 10);
    expect(resizeRgb(img, 10, 20, 'bicubic')).toBe(img);
  });
});

describe('Gemma 4 processor', () => {
  it('target sizes follow the aspect-ratio rule (the spec table)', () => {
    const table: [number, number, number, number, number, number][] = [
      [768, 768, 70, 384, 384, 64], [768, 768, 280, 768, 768, 256], [768, 768, 1120, 1584, 1584, 1089],
      [224, 224, 280, 768, 768, 256], [480, 640, 70, 336, 432, 63], [480, 640, 280, 672, 912, 266],
      [480, 640, 1120, 1344, 1824, 1064], [1080, 1920, 70, 288, 528, 66], [1080, 1920, 280, 576, 1056, 264],
      [1080, 1920, 1120, 1200, 2112, 1100], [1000, 100, 70, 1248, 96, 52], [1000, 100, 280, 2496, 240, 260], [1000, 100, 1120, 5040, 480, 1050],
    ];
    for (const [h, w, b, th, tw, n] of table) {
      const t = gemma4TargetSize(h, w, 16, 3, b);
      expect([t.height, t.width, (t.height / 16) * (t.width / 16) / 9], `${h}x${w} @ ${b}`).toEqual([th, tw, n]);
    }
    // A side that rounds to 0 becomes one 48-px row of at most budget tokens' width.
    expect(gemma4TargetSize(10, 4000, 16, 3, 70)).toEqual({ height: 48, width: 70 * 48 });
  });

  it('patchifies row-major with (row, col, channel) order inside a patch, (x, y) positions and padding', () => {
    const s = gemma4ProcessorSettings({ patch_size: 4, pooling_kernel_size: 3, max_soft_tokens: 70 });
    const img = picture(24, 12, 7);
    // Budget 70 at p = 4: f = sqrt(630·16 / 288), 12 x 24 -> 60 x 120 upscaled; use the resized picture as truth.
    const px = processGemma4(img, s);
    const r = resizeRgb(img, px.height, px.width, 'bicubic');
    const gw = px.width / 4, dim = 48;
    expect(px.nPatches).toBe((px.height / 4) * gw);
    expect(px.numSoftTokens).toBe(px.nPatches / 9);
    for (const i of [0, 1, gw, px.nPatches - 1]) {
      const py = Math.floor(i / gw), pxx = i % gw;
      expect([px.positions[2 * i], px.positions[2 * i + 1]]).toEqual([pxx, py]);
      for (let row = 0; row < 4; row++)
        for (let col = 0; col < 4; col++)
          for (let c = 0; c < 3; c++)
            expect(px.pixelValues[i * dim + (row * 4 + col) * 3 + c]).toBe(Math.fround(r.data[((py * 4 + row) * px.width + pxx * 4 + col) * 3 + c]! * Math.fround(1 / 255)));
    }
    for (let i = px.nPatches; i < px.maxPatches; i++) expect([px.positions[2 * i], px.positions[2 * i + 1]]).toEqual([-1, -1]);
    expect(px.pixelValues.subarray(px.nPatches * dim).every((v) => v === 0)).toBe(true);
  });

  it('budget override and bad budgets', () => {
    const s = gemma4ProcessorSettings({});
    const img = picture(64, 48);
    expect(processGemma4(img, s, { maxSoftTokens: 140 }).maxPatches).toBe(140 * 9);
    expect(() => processGemma4(img, s, { maxSoftTokens: 100 })).toThrow(/100 is not a Gemma 4 soft-token budget \(70, 140, 280, 560, 1120\)/);
    expect(() => gemma4ProcessorSettings({ max_soft_tokens: 300 }, 'p.json')).toThrow(/p\.json\.max_soft_tokens: 300/);
  });
});

describe('Gemma 3n processor', () => {
  it('stretches to the configured size with bilinear and rescales in float32', () => {
    const s = gemma3nProcessorSettings({ size: { height: 32, width: 48 }, resample: 2, rescale_factor: 1 / 255, do_normalize: false, image_seq_length: 256 });
    const img = picture(100, 30);
    const px = processGemma3n(img, s);
    expect([px.height, px.width]).toEqual([32, 48]);
    const r = resizeRgb(img, 32, 48, 'bilinear');
    const n = 32 * 48;
    for (const i of [0, 17, n - 1]) for (let c = 0; c < 3; c++) expect(px.pixelValues[c * n + i]).toBe(Math.fround(r.data[3 * i + c]! * Math.fround(1 / 255)));
  });
  it('applies image_mean / image_std only when do_normalize is true', () => {
    const img = { data: new Uint8Array([255, 0, 128]), width: 1, height: 1 };
    const base = { size: { height: 1, width: 1 }, image_mean: [0.5, 0.5, 0.5], image_std: [0.5, 0.5, 0.5] };
    expect(Array.from(processGemma3n(img, gemma3nProcessorSettings({ ...base, do_normalize: false })).pixelValues)).toEqual([1, 0, Math.fround(128 * Math.fround(1 / 255))]);
    expect(processGemma3n(img, gemma3nProcessorSettings({ ...base, do_normalize: true })).pixelValues[0]).toBe(1);
    expect(() => gemma3nProcessorSettings({ resample: 1 }, 'x.json')).toThrow(/resample 1 is not supported/);
  });
});
