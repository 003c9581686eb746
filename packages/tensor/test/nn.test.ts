// nn loaders: quantized iff `<path>.scales` exists, (bits, group) from the config's per-path override or
// the global block, clear errors for missing tensors and inconsistent configs; and that the loaded layers
// compute what their float64 reference says.
import { describe, expect, it } from 'vitest';
import {
  Embedding, LayerNorm, Linear, loadWeight, MemoryWeights, MlxcelError, QuantizedWeight, quantConfigOf, quantParamsFor,
  reference, RMSNorm, Tensor, Weight, type QuantConfig,
} from '../src/index.js';

function rand(n: number, seed: number): Float32Array {
  let s = seed >>> 0 || 1;
  return Float32Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 31 - 1;
  });
}

/** A store holding quantized modules (MLX layout: weight U32, scales, biases) and float ones. */
function store(): MemoryWeights {
  const m = new MemoryWeights();
  const put = (path: string, rows: number, cols: number, bits: number, group: number, seed: number, sd: 'F32' | 'BF16' = 'BF16') => {
    const q = QuantizedWeight.quantize(rand(rows * cols, seed), [rows, cols], { bits, groupSize: group }, sd);
    m.set(`${path}.weight`, q.packed);
    m.set(`${path}.scales`, q.scales);
    m.set(`${path}.biases`, q.biases);
  };
  put('layers.0.self_attn.q_proj', 24, 128, 4, 64, 1);
  put('layers.0.mlp.down_proj', 16, 256, 6, 32, 2, 'F32'); // a mixed-recipe override
  put('embed_tokens', 50, 64, 4, 64, 3);
  m.set('layers.0.self_attn.q_proj.bias', Tensor.fromF32(rand(24, 4), [24]));
  m.set('layers.0.mlp.up_proj.weight', Tensor.fromF32(rand(32 * 16, 5), [32, 16]));
  m.set('norm.weight', Tensor.fromF32(rand(16, 6), [16]));
  m.set('ln.weight', Tensor.fromF32(rand(16, 7), [16]));
  m.set('ln.bias', Tensor.fromF32(rand(16, 8), [16]));
  return m;
}

const quant: QuantConfig = { group_size: 64, bits: 4, mode: 'affine', 'layers.0.mlp.down_proj': { group_size: 32, bits: 6 } };

function expectMlxcelError(fn: () => unknown, code: string, msg: RegExp): void {
  let err: unknown;
  try {
    fn();
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(MlxcelError);
  expect((err as MlxcelError).code).toBe(code);
  expect((err as MlxcelError).message).toMatch(msg);
}

function refLinear(x: Float32Array, M: number, w: Weight, bias: Float32Array | null): Float64Array {
  const W = w.dequantize(), K = w.cols, N = w.rows;
  const y = new Float64Array(M * N);
  for (let m = 0; m < M; m++)
    for (let n = 0; n < N; n++) {
      let s = bias ? bias[n]! : 0;
      for (let k = 0; k < K; k++) s += x[m * K + k]! * W[n * K + k]!;
      y[m * N + n] = s;
    }
  return y;
}

describe('nn loaders', () => {
  it('a module with .scales loads as QuantizedWeight with the global (bits, group); one without as a float Weight', () => {
    const s = store();
    const q = loadWeight(s, 'layers.0.self_attn.q_proj', { quant });
    expect(q).toBeInstanceOf(QuantizedWeight);
    expect([(q as QuantizedWeight).bits, (q as QuantizedWeight).groupSize, q.rows, q.cols]).toEqual([4, 64, 24, 128]);
    const f = loadWeight(s, 'layers.0.mlp.up_proj', { quant });
    expect(f).not.toBeInstanceOf(QuantizedWeight);
    expect(f.quantized).toBe(false);
    expect([f.rows, f.cols]).toEqual([32, 16]);
  });

  it('a per-layer override in the config wins over the global block', () => {
    const s = store();
    const w = loadWeight(s, 'layers.0.mlp.down_proj', { quant }) as QuantizedWeight;
    expect([w.bits, w.groupSize, w.rows, w.cols]).toEqual([6, 32, 16, 256]);
    expect(quantParamsFor(quant, 'layers.0.mlp.down_proj')).toEqual({ bits: 6, groupSize: 32 });
    expect(quantParamsFor(quant, 'anything.else')).toEqual({ bits: 4, groupSize: 64 });
    expect(quantParamsFor({ ...quant, lm_head: false }, 'lm_head')).toBeUndefined();
    // Without the override the packed width contradicts the config and the error says so.
    expectMlxcelError(() => loadWeight(s, 'layers.0.mlp.down_proj', { quant: { group_size: 64, bits: 4 } }), 'E_QUANT',
      /layers\.0\.mlp\.down_proj: packed width 48 x 32\/4 != scales width 8 x 64 \(wrong bits\/group_size in config\?\)/);
  });

  it('missing tensors and contradictory configs are clear errors naming the tensor', () => {
    const s = store();
    expectMlxcelError(() => loadWeight(s, 'layers.9.mlp.gate_proj', { quant }), 'E_MISSING_TENSOR', /missing tensor layers\.9\.mlp\.gate_proj\.weight/);
    expectMlxcelError(() => loadWeight(s, 'layers.0.self_attn.q_proj', {}), 'E_QUANT',
      /layers\.0\.self_attn\.q_proj has \.scales but config\.json has no quantization block/);
    expectMlxcelError(() => loadWeight(s, 'layers.0.self_attn.q_proj', { quant: { ...quant, 'layers.0.self_attn.q_proj': false } }), 'E_QUANT',
      /marks it unquantized/);
    const noBiases = store();
    (noBiases as unknown as { map: Map<string, Tensor> }).map.delete('embed_tokens.biases');
    expectMlxcelError(() => loadWeight(noBiases, 'embed_tokens', { quant }), 'E_MISSING_TENSOR', /missing tensor embed_tokens\.biases/);
    expectMlxcelError(() => Linear.load(s, 'layers.0.mlp.up_proj', { quant, bias: true }), 'E_MISSING_TENSOR', /missing tensor layers\.0\.mlp\.up_proj\.bias/);
    expectMlxcelError(() => Linear.load(s, 'layers.0.mlp.up_proj', { quant, shape: [16, 32] }), 'E_SHAPE',
      /layers\.0\.mlp\.up_proj\.weight: shape \[32, 16\] but the config implies \[16, 32\]/);
    expectMlxcelError(() => RMSNorm.load(s, 'norm', 1e-6, { dim: 32 }), 'E_SHAPE', /norm\.weight: shape \[16\] but expected 32 values/);
    expectMlxcelError(() => LayerNorm.load(s, 'norm', 1e-5), 'E_MISSING_TENSOR', /missing tensor norm\.bias/);
    expectMlxcelError(() => quantParamsFor({ bits: 4, group_size: 32, mode: 'mxfp4' }, 'x'), 'E_QUANT', /x: quantization mode "mxfp4" is not supported/);
    expectMlxcelError(() => quantConfigOf({ quantization_config: { quant_method: 'awq', bits: 4 } }), 'E_QUANT', /quant_method = awq is not supported/);
    expectMlxcelError(() => QuantizedWeight.fromTensors(s.get('embed_tokens.weight'), s.get('embed_tokens.scales'), s.get('embed_tokens.scales'), { bits: 7, groupSize: 64 }, 'emb'),
      'E_QUANT', /emb: unsupported quantization bits 7/);
  });

  it('markFeedForward records the MLP role on the native weight (no role: an MLP weight of unstated role)', () => {
    const s = store();
    const load = () => Linear.load(s, 'layers.0.self_attn.q_proj', { quant });
    expect(load().weight.native.ffn).toBeUndefined();
    expect(load().markFeedForward('input').weight.native.ffn).toBe('input');
    expect(load().markFeedForward('output').weight.native.ffn).toBe('output');
    expect(load().markFeedForward().weight.native.ffn).toBe(true);
  });

  it('quantConfigOf finds the block at the top level or inside text_config', () => {
    expect(quantConfigOf({ quantization: { bits: 4, group_size: 64 } })).toEqual({ bits: 4, group_size: 64 });
    expect(quantConfigOf({ quantization_config: { bits: 8 } })).toEqual({ bits: 8 });
    expect(quantConfigOf({ text_config: { quantization: { bits: 3, group_size: 32 } } })).toEqual({ bits: 3, group_size: 32 });
    expect(quantConfigOf({ model_type: 'phi3' })).toBeUndefined();
  });

  it('Linear (quantized with bias, and float) computes x W^T + b', () => {
    const s = store();
    for (const [path, K] of [['layers.0.self_attn.q_proj', 128], ['layers.0.mlp.down_proj', 256], ['layers.0.mlp.up_proj', 16]] as const) {
      const lin = Linear.load(s, path, { quant });
      expect(lin.inFeatures).toBe(K);
      if (path.endsWith('q_proj')) expect(lin.bias).not.toBeNull();
      for (const M of [1, 3, 20]) {
        const x = rand(M * K, M);
        const y = lin.forward(x, M);
        const ref = refLinear(x, M, lin.weight, lin.bias);
        for (let i = 0; i < y.length; i++) expect(Math.abs(y[i]! - ref[i]!)).toBeLessThan(1e-4);
      }
    }
  });

  it('quantized Embedding: lookup returns the dequantized rows; asLinear is the tied head against the packed table', () => {
    const s = store();
    const emb = Embedding.load(s, 'embed_tokens', { quant });
    expect(emb.weight.quantized).toBe(true);
    expect([emb.numEmbeddings, emb.dim]).toEqual([50, 64]);
    const ids = Int32Array.from([3, 0, 49, 3]);
    const rows = emb.forward(ids);
    const table = emb.weight.dequantize();
    const ref = reference.dequantize(
      s.get('embed_tokens.weight').bytes, s.get('embed_tokens.scales').bytes, s.get('embed_tokens.biases').bytes, 2, 50, 64, 4, 64,
    );
    for (let i = 0; i < table.length; i++) expect(table[i]).toBe(ref[i]);
    for (let i = 0; i < ids.length; i++) expect(Array.from(rows.subarray(i * 64, (i + 1) * 64))).toEqual(Array.from(table.subarray(ids[i]! * 64, (ids[i]! + 1) * 64)));
    const head = emb.asLinear();
    const x = rand(2 * 64, 9);
    const logits = head.forward(x, 2);
    const lref = refLinear(x, 2, emb.weight, null);
    for (let i = 0; i < logits.length; i++) expect(Math.abs(logits[i]! - lref[i]!)).toBeLessThan(1e-4);
  });

  it('RMSNorm (plain and Gemma 1 + w) and LayerNorm (with and without bias) load and match the reference', () => {
    const s = store();
    const x = rand(3 * 16, 10);
    for (const plusOne of [false, true]) {
      const n = RMSNorm.load(s, 'norm', 1e-6, { plusOne, dim: 16 });
      const y = n.forward(x);
      const ref = reference.rmsNorm(x, 16, s.get('norm.weight').toF32(), 1e-6, plusOne);
      for (let i = 0; i < y.length; i++) expect(Math.abs(y[i]! - ref[i]!)).toBeLessThan(1e-5);
    }
    for (const bias of [true, false]) {
      const n = LayerNorm.load(s, 'ln', 1e-5, { bias });
      expect(n.bias === null).toBe(!bias);
      const y = n.forward(x);
      const ref = reference.layerNorm(x, 16, s.get('ln.weight').toF32(), bias ? s.get('ln.bias').toF32() : null, 1e-5);
      for (let i = 0; i < y.length; i++) expect(Math.abs(y[i]! - ref[i]!)).toBeLessThan(1e-5);
    }
  });

  it('stacked weights: index(e) is a zero-copy view of expert e', () => {
    const E = 3, R = 8, C = 64;
    const data = rand(E * R * C, 11);
    const q = QuantizedWeight.quantize(data, [E, R, C], { bits: 4, groupSize: 64 }, 'BF16').weight;
    const all = q.dequantize();
    for (let e = 0; e < E; e++) {
      const one = q.index(e);
      expect([one.rows, one.cols]).toEqual([R, C]);
      expect(Array.from(one.dequantize())).toEqual(Array.from(all.subarray(e * R * C, (e + 1) * R * C)));
    }
    expect(() => q.index(E)).toThrow(MlxcelError);
  });
});

describe('Tensor', () => {
  it('checks byte size against dtype x shape, converts, reshapes and indexes', () => {
    expect(() => new Tensor('F32', [2, 2], new Uint8Array(12))).toThrow(/12 bytes do not match F32\[2, 2\] \(16 bytes\)/);
    const bf = new Tensor('BF16', [2], Uint8Array.from([0x80, 0x3f, 0x00, 0xc0])); // 1.0, -2.0
    expect(Array.from(bf.toF32())).toEqual([1, -2]);
    const h = new Tensor('F16', [2], Uint8Array.from([0x00, 0x3c, 0x01, 0x00])); // 1.0, smallest subnormal
    expect(Array.from(h.toF32())).toEqual([1, 2 ** -24]);
    expect(() => bf.toI32()).toThrow(/BF16 is not an integer dtype/);
    const t = Tensor.fromF32(Float32Array.from([0, 1, 2, 3, 4, 5]), [2, 3]);
    expect(Array.from(t.index(1).toF32())).toEqual([3, 4, 5]);
    expect(t.reshape([3, 2]).shape).toEqual([3, 2]);
    expect(() => t.reshape([4, 2])).toThrow(/has 6 elements/);
    expect(() => t.index(2)).toThrow(/index 2 is outside the first axis/);
    // Unaligned F32 views are copied, not misread.
    const buf = new Uint8Array(13);
    new DataView(buf.buffer).setFloat32(1, 7.5, true);
    expect(Array.from(new Tensor('F32', [1], buf.subarray(1, 5)).toF32())).toEqual([7.5]);
  });
});
