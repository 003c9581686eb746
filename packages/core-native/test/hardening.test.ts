// Root-cause tests for the hardening issue: size products that used to overflow (conv2d with
// h = w = 2^31 aborted with std::bad_alloc, glu with 2^33 x 2^30 segfaulted), transcendental kernels
// that mapped NaN to a finite value in the vector paths (tanh(NaN) = -1 hid NaN logits behind Gemma's
// soft-cap), parameters that poison every output (softcap Infinity, eps NaN or negative), and a FIFO
// passed as a weight file (open() blocked forever). NaN propagation is checked in every ISA variant.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import * as native from '../lib/index.js';

const f32 = (n: number) => new Float32Array(n);
const conv = (over: Record<string, number>) => ({
  x: f32(16), h: 4, w: 4, cin: 1, weight: f32(9), cout: 1, kh: 3, kw: 3, strideH: 1, strideW: 1,
  padTop: 0, padBottom: 0, padLeft: 0, padRight: 0, out: f32(16), ...over,
});

describe('overflow-checked sizes', () => {
  it('conv2d with h = w = 2^31 is a RangeError, not an abort', () => {
    expect(() => native.conv2d(conv({ h: 2 ** 31, w: 2 ** 31, cin: 4 }))).toThrow(RangeError);
    expect(() => native.conv2d(conv({ h: 2 ** 31, w: 2 ** 31, cin: 4 }))).toThrow(/conv2d: x size 2147483648 x 2147483648 x 4 is too large/);
    expect(() => native.conv2d(conv({ h: 2 ** 20, w: 2 ** 20 }))).toThrow(/conv2d: x has 16 elements, needs 1099511627776/);
  });

  it('conv2d refuses an unfolded row too large for scratch', () => {
    expect(() => native.conv2d(conv({ h: 64, w: 2 ** 20, cin: 64, kh: 64, kw: 64 }))).toThrow(/conv2d: (x has|one unfolded output row)/);
  });

  it('glu with 2^33 x 2^30 is a RangeError, not a segfault', () => {
    expect(() => native.glu(f32(16), 2 ** 33, 2 ** 30, f32(16))).toThrow(/glu: x size 8589934592 x 2 x 1073741824 is too large/);
    expect(() => native.glu(f32(16), 2 ** 40, 2 ** 30, f32(16))).toThrow(RangeError);
  });

  it('attention: K/V byte counts past 2^61 are refused by name', () => {
    expect(() =>
      native.attention({
        q: f32(4), nQ: 1, nHeads: 1, headDim: 4, qPos: new Int32Array(1), k: f32(4), v: f32(4), kvDtype: 0,
        nKv: 2 ** 32, nKvHeads: 1, kPos: new Int32Array(4), scale: 1, out: f32(4),
      } as never),
    ).toThrow(RangeError);
    expect(() =>
      native.attention({
        q: f32(4), nQ: 1, nHeads: 2 ** 16, headDim: 2 ** 14, nKvHeads: 2 ** 16, qPos: new Int32Array(1), k: f32(4), v: f32(4), kvDtype: 0,
        nKv: 2 ** 32, kPos: new Int32Array(4), scale: 1, out: f32(4),
      } as never),
    ).toThrow(/attention: k size 4294967296 x 65536 x 16384 x 4 is too large/);
  });

  it('moeSwitchGLU, dwconv1dCausal, localAttention, kvWrite: huge dims are RangeErrors', () => {
    const w = (rows: number, cols: number) => ({ dtype: 0, data: f32(16), rows, cols });
    expect(() => (native.default as unknown as { moeSwitchGLU: (o: unknown) => void }).moeSwitchGLU({ numExperts: 1, T: 2 ** 31, k: 1, gate: w(1, 2 ** 40), up: w(1, 2 ** 40), down: w(2 ** 40, 1), x: f32(4), ids: new Int32Array(4), weights: f32(4), out: f32(4) } as never)).toThrow(RangeError);
    expect(() => native.dwconv1dCausal(f32(4), 2 ** 31, 2 ** 24, f32(4), 4, f32(4))).toThrow(/dwconv1dCausal: x has 4 elements/);
    expect(() => native.localAttention({ q: f32(4), k: f32(4), v: f32(4), n: 2 ** 31, nHeads: 2 ** 12, headDim: 2 ** 14, nRel: 0, relDist0: 0, maxPast: 1, maxFuture: 0, out: f32(4) } as never)).toThrow(RangeError);
  });
});

describe('parameter checks', () => {
  const attn = (softcap: number) => ({
    q: f32(4), nQ: 1, nHeads: 1, headDim: 4, qPos: new Int32Array(1), k: f32(4), v: f32(4), kvDtype: 0, nKv: 1, nKvHeads: 1,
    kPos: new Int32Array(1), scale: 1, softcap, out: f32(4),
  });
  it.each([Infinity, NaN, -1])('attention softcap %s is refused', (c) => {
    expect(() => native.attention(attn(c) as never)).toThrow(/attention: softcap must be 0 \(off\) or a finite number > 0/);
  });
  it('attention softcap 0 (off) and 50 are accepted; scale NaN is refused', () => {
    expect(() => native.attention(attn(0) as never)).not.toThrow();
    expect(() => native.attention(attn(50) as never)).not.toThrow();
    expect(() => native.attention({ ...attn(0), scale: NaN } as never)).toThrow(/scale must be a finite number/);
  });
  it.each([NaN, -1e-6, Infinity])('rmsNorm / layerNorm eps %s is refused', (eps) => {
    expect(() => native.rmsNorm(f32(4), 1, 4, null, eps, false, f32(4))).toThrow(/rmsNorm: eps must be a finite number >= 0/);
    expect(() => native.layerNorm(f32(4), 1, 4, null, null, eps, f32(4))).toThrow(/layerNorm: eps must be a finite number >= 0/);
  });
  it('localAttention softcap Infinity, clamp NaN bounds and logMel melFloor Infinity are refused', () => {
    expect(() => native.localAttention({ q: f32(4), k: f32(4), v: f32(4), n: 1, nHeads: 1, headDim: 4, nRel: 0, relDist0: 0, maxPast: 1, maxFuture: 0, softcap: Infinity, out: f32(4) } as never)).toThrow(/softcap must be 0 \(off\) or a finite number > 0/);
    expect(() => native.clamp(f32(4), NaN, 1, f32(4))).toThrow(/clamp: lo and hi must be numbers/);
  });
});

describe('NaN propagates through every kernel variant', () => {
  const variants = native.cpuInfo().variants;
  const initial = native.cpuInfo().isa;
  afterAll(() => native.setIsa(initial));
  // Long enough for the vector body and the scalar tail; NaN sits in both, and ±Inf beside it.
  const x = new Float32Array(37).map((_, i) => (i - 18) / 4);
  x[3] = NaN;
  x[35] = NaN;
  const U = native.UnaryOp;
  const ops: [string, number][] = [['tanh', U.TANH], ['sigmoid', U.SIGMOID], ['exp', U.EXP], ['silu', U.SILU], ['gelu_tanh', U.GELU_TANH], ['gelu_erf', U.GELU_ERF], ['relu', U.RELU]];

  for (const isa of variants)
    it(`${isa}: unary ops, softmax, clamp, attention`, () => {
      native.setIsa(isa);
      for (const [name, op] of ops) {
        const out = f32(x.length);
        native.unary(op, x, out);
        expect(Number.isNaN(out[3]!), `${name}(NaN) in the vector body`).toBe(true);
        expect(Number.isNaN(out[35]!), `${name}(NaN) in the scalar tail`).toBe(true);
        expect(Number.isFinite(out[20]!), `${name}(0.5) stays finite`).toBe(true);
      }
      const t = f32(x.length);
      native.unary(U.TANH, new Float32Array([Infinity, -Infinity, 0, 1, 2, 3, 4, 5]), t);
      expect([...t.subarray(0, 3)]).toEqual([1, -1, 0]);  // tanh(±Inf) = ±1 (that is correct, not hiding)

      const sm = f32(x.length);
      native.softmax(x, 1, x.length, sm);
      expect(sm.every(Number.isNaN)).toBe(true);
      const allNan = new Float32Array(8).fill(NaN), sm2 = f32(8);
      native.softmax(allNan, 1, 8, sm2);
      expect(sm2.every(Number.isNaN), 'an all-NaN row is NaN, not the fully-masked zeros').toBe(true);

      const c = f32(x.length);
      native.clamp(x, -1, 1, c);
      expect(Number.isNaN(c[3]!) && Number.isNaN(c[35]!)).toBe(true);

      // Attention with a NaN query: the output is NaN, not the zeros of a "fully masked" row.
      const D = 16, nKv = 40;
      const q = new Float32Array(D).fill(0.1);
      q[5] = NaN;
      const k = new Float32Array(nKv * D).map((_, i) => Math.sin(i)), v = new Float32Array(nKv * D).map((_, i) => Math.cos(i));
      const kPos = new Int32Array(nKv).map((_, i) => i);
      for (const softcap of [0, 50]) {
        const out = f32(D);
        native.attention({ q, nQ: 1, nHeads: 1, headDim: D, qPos: new Int32Array([nKv - 1]), k, v, kvDtype: 0, nKv, nKvHeads: 1, kPos, scale: 0.25, softcap, out });
        expect(out.every(Number.isNaN), `attention softcap ${softcap}`).toBe(true);
      }
    });
});

describe('mmapFile opens regular files only', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mlxcel-mmap-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('a directory is refused by name', () => {
    mkdirSync(join(dir, 'shard.safetensors'));
    expect(() => native.mmapFile(join(dir, 'shard.safetensors'))).toThrow(/is a directory \(only regular files are mapped\)/);
  });

  it.skipIf(process.platform === 'win32')('a FIFO is refused at once instead of blocking in open()', () => {
    const fifo = join(dir, 'fifo.safetensors');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    // In a child with a timeout: before the fix this blocked until killed.
    const lib = new URL('../lib/index.js', import.meta.url).href;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', `import(${JSON.stringify(lib)}).then((m) => { try { m.mmapFile(${JSON.stringify(fifo)}); console.log('opened'); } catch (e) { console.log(e.message); } })`], { encoding: 'utf8', timeout: 20_000 });
    expect(r.signal).toBeNull();
    expect(r.stdout).toMatch(/is a FIFO \(only regular files are mapped\)/);
  });
});
