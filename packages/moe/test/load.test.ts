// Expert loading from the three checkpoint layouts (real fixture files and synthetic stores), and the
// load-time validation errors.
import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { Checkpoint, MemoryWeights, QuantizedWeight, quantConfigOf, reference, Tensor, type Weight, type WeightStore } from '@mlxcel/tensor';
import { detectExperts, loadExperts, softmaxTopK, SwitchGLU, type Activation } from '../src/index.js';
import { naiveSwitchGLU, relErr, rng, uniform, type Experts } from './helpers.js';

const fixture = (name: string) => new URL(`../../../fixtures/${name}/`, import.meta.url).pathname;
const config = (name: string) => JSON.parse(readFileSync(`${fixture(name)}config.json`, 'utf8')) as Record<string, unknown>;

/** Decoded f32 values of a stored tensor (float, or MLX affine via the pure-TS reference). */
function values(store: WeightStore, path: string, weightName = `${path}.weight`): Float32Array {
  const w = store.get(weightName);
  if (!store.has(`${path}.scales`)) return w.toF32();
  const s = store.get(`${path}.scales`), b = store.get(`${path}.biases`);
  const cols = s.shape[s.shape.length - 1]! * 64;
  const rows = s.size / (cols / 64);
  return reference.dequantize(w.bytes, s.bytes, b.bytes, s.dtype === 'F32' ? 0 : s.dtype === 'F16' ? 1 : 2, rows, cols, 4, 64);
}

function concat(parts: Float32Array[]): Float32Array {
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) { out.set(p, o); o += p.length; }
  return out;
}

/** Runs both paths on random tokens and compares them with the naive reference over `ref` values. */
function agree(glu: Experts['glu'], ref: Omit<Experts, 'glu'>, act: Activation, T = 40) {
  const x = uniform(T * ref.H, rng(T)), rt = softmaxTopK(uniform(T * ref.E, rng(T + 1), 2), ref.E, 2);
  const want = naiveSwitchGLU({ ...ref, glu }, act, x, T, rt.ids, rt.weights);
  for (const path of ['gather', 'grouped'] as const) expect(relErr(glu.forward(x, T, rt.ids, rt.weights, { path }), want)).toBeLessThanOrEqual(1e-5);
  return { x, rt };
}

describe('fixture checkpoints', () => {
  test('phimoe-tiny: HF per-expert w1/w3/w2, stacked at load', () => {
    const ck = Checkpoint.open(fixture('phimoe-tiny'));
    const p = 'model.layers.1.block_sparse_moe';
    expect(detectExperts(ck, p).layout).toBe('per-expert');
    const glu = loadExperts(ck, p, 'auto', { numExperts: 8, activation: 'silu', hidden: 128, intermediate: 64 });
    expect([glu.numExperts, glu.hidden, glu.intermediate, glu.fused]).toEqual([8, 128, 64, false]);
    const per = (w: string) => concat(Array.from({ length: 8 }, (_, e) => ck.get(`${p}.experts.${e}.${w}.weight`).toF32()));
    agree(glu, { gate: per('w1'), up: per('w3'), down: per('w2'), E: 8, H: 128, I: 64 }, 'silu');
  });

  test('phimoe-tiny-q4-mlx: stacked switch_mlp, 4-bit with bf16 scales; same experts as the f32 checkpoint', () => {
    const ck = Checkpoint.open(fixture('phimoe-tiny-q4-mlx'));
    const quant = quantConfigOf(config('phimoe-tiny-q4-mlx'));
    const p = 'model.layers.0.block_sparse_moe';
    const d = detectExperts(ck, p);
    expect([d.layout, d.base]).toEqual(['stacked', `${p}.switch_mlp`]);
    const glu = loadExperts(ck, p, 'stacked', { numExperts: 8, activation: 'silu', hidden: 128, intermediate: 64, quant });
    const sw = `${p}.switch_mlp`;
    const ref = { gate: values(ck, `${sw}.gate_proj`), up: values(ck, `${sw}.up_proj`), down: values(ck, `${sw}.down_proj`), E: 8, H: 128, I: 64 };
    const { x, rt } = agree(glu, ref, 'silu');
    // gate_proj = stack(w1), up_proj = stack(w3): the q4 block approximates the f32 one, and would not
    // if gate and up were swapped.
    const f32 = loadExperts(Checkpoint.open(fixture('phimoe-tiny')), p, 'auto', { numExperts: 8, activation: 'silu' });
    const a = glu.forward(x, 40, rt.ids, rt.weights), b = f32.forward(x, 40, rt.ids, rt.weights);
    expect(relErr(a, b)).toBeLessThan(0.3); // 4-bit noise on random weights: ~0.19
    const w = f32.weights as { gate: Weight; up: Weight; down: Weight };
    const swapped = new SwitchGLU({ gate: w.up, up: w.gate, down: w.down }, 'silu');
    expect(relErr(swapped.forward(x, 40, rt.ids, rt.weights), b)).toBeGreaterThan(0.6); // ~0.83
  });

  test('gemma4-tiny-moe: HF fused experts.gate_up_proj [E, 2I, H] without .weight', () => {
    const ck = Checkpoint.open(fixture('gemma4-tiny-moe'));
    const p = 'model.language_model.layers.2';
    const glu = loadExperts(ck, p, 'auto', { numExperts: 8, activation: 'gelu_tanh', hidden: 64, intermediate: 64 });
    expect(glu.fused).toBe(true);
    const gu = ck.get(`${p}.experts.gate_up_proj`).toF32(), I = 64, H = 64;
    const gate = new Float32Array(8 * I * H), up = new Float32Array(8 * I * H);
    for (let e = 0; e < 8; e++) {
      gate.set(gu.subarray(e * 2 * I * H, e * 2 * I * H + I * H), e * I * H);
      up.set(gu.subarray(e * 2 * I * H + I * H, (e + 1) * 2 * I * H), e * I * H);
    }
    agree(glu, { gate, up, down: ck.get(`${p}.experts.down_proj`).toF32(), E: 8, H, I }, 'gelu_tanh');
  });
});

/** A synthetic store with per-expert tensors `${p}.experts.e.{w1,w3,w2}.weight`. */
function perExpertStore(E: number, H: number, I: number, p = 'm'): MemoryWeights {
  const s = new MemoryWeights(), r = rng(E);
  for (let e = 0; e < E; e++) {
    s.set(`${p}.experts.${e}.w1.weight`, Tensor.fromF32(uniform(I * H, r), [I, H]));
    s.set(`${p}.experts.${e}.w3.weight`, Tensor.fromF32(uniform(I * H, r), [I, H]));
    s.set(`${p}.experts.${e}.w2.weight`, Tensor.fromF32(uniform(H * I, r), [H, I]));
  }
  return s;
}

describe('layouts and validation', () => {
  const opts = { numExperts: 4, activation: 'silu' as const };

  test('per-expert stacking copies each expert into one aligned buffer, in order', () => {
    const s = perExpertStore(4, 32, 16);
    const glu = loadExperts(s, 'm', 'per-expert', opts);
    const gate = (glu.weights as unknown as { gate: { native: { data: Uint8Array } } }).gate.native.data;
    expect(gate.byteOffset % 64).toBe(0);
    expect(gate.byteLength).toBe(4 * 16 * 32 * 4);
    const e2 = s.get('m.experts.2.w1.weight').bytes;
    expect(Buffer.from(gate.subarray(2 * e2.byteLength, 3 * e2.byteLength)).equals(Buffer.from(e2))).toBe(true);
  });

  test('gate_proj/up_proj/down_proj per-expert names (Mixtral/Qwen style), quantized per expert', () => {
    const s = new MemoryWeights(), r = rng(5), E = 3, H = 64, I = 64;
    const quant = { bits: 4, group_size: 64 };
    const vals: Record<string, Float32Array[]> = { gate_proj: [], up_proj: [], down_proj: [] };
    for (let e = 0; e < E; e++)
      for (const n of ['gate_proj', 'up_proj', 'down_proj']) {
        const q = QuantizedWeight.quantize(uniform(H * I, r), [I, H], { bits: 4, groupSize: 64 });
        s.set(`b.experts.${e}.${n}.weight`, q.packed);
        s.set(`b.experts.${e}.${n}.scales`, q.scales);
        s.set(`b.experts.${e}.${n}.biases`, q.biases);
        vals[n]!.push(reference.dequantize(q.packed.bytes, q.scales.bytes, q.biases.bytes, 0, I, H, 4, 64));
      }
    const glu = loadExperts(s, 'b', 'auto', { numExperts: E, activation: 'silu', quant });
    expect((glu.weights as unknown as { gate: { quantized: boolean } }).gate.quantized).toBe(true);
    agree(glu, { gate: concat(vals.gate_proj!), up: concat(vals.up_proj!), down: concat(vals.down_proj!), E, H, I }, 'silu', 9);
  });

  test('stacked mlx names under experts.switch_glu (Gemma 4 mlx) and fused names with .weight (transformers v5)', () => {
    const s = new MemoryWeights(), r = rng(2), E = 4, H = 32, I = 16;
    s.set('g.experts.switch_glu.gate_proj.weight', Tensor.fromF32(uniform(E * I * H, r), [E, I, H]));
    s.set('g.experts.switch_glu.up_proj.weight', Tensor.fromF32(uniform(E * I * H, r), [E, I, H]));
    s.set('g.experts.switch_glu.down_proj.weight', Tensor.fromF32(uniform(E * H * I, r), [E, H, I]));
    expect(loadExperts(s, 'g', 'auto', opts).fused).toBe(false);
    s.set('v.experts.gate_up_proj.weight', Tensor.fromF32(uniform(E * 2 * I * H, r), [E, 2 * I, H]));
    s.set('v.experts.down_proj.weight', Tensor.fromF32(uniform(E * H * I, r), [E, H, I]));
    expect(detectExperts(s, 'v').names).toEqual({ gateUp: 'gate_up_proj.weight', down: 'down_proj.weight' });
    expect(loadExperts(s, 'v', 'fused', opts).fused).toBe(true);
  });

  test('a missing expert tensor is named', () => {
    const s = perExpertStore(4, 32, 16);
    const m = new MemoryWeights(new Map(s.keys().filter((k) => k !== 'm.experts.3.w2.weight').map((k) => [k, s.get(k)])));
    expect(() => loadExperts(m, 'm', 'auto', opts)).toThrow(expect.objectContaining({ code: 'E_MISSING_TENSOR', message: expect.stringContaining('m.experts.3.w2.weight') }));
    // fewer experts in the checkpoint than the config says
    expect(() => loadExperts(s, 'm', 'auto', { ...opts, numExperts: 6 })).toThrow(/missing 6 expert tensor\(s\) for 6 experts: m.experts.4.w1.weight/);
  });

  test('more experts in the checkpoint than the config says', () => {
    expect(() => loadExperts(perExpertStore(4, 32, 16), 'm', 'auto', { ...opts, numExperts: 3 })).toThrow(
      expect.objectContaining({ code: 'E_CONFIG', message: expect.stringContaining('m.experts.3.w1.weight exists but the config says there are 3 experts') }),
    );
  });

  test('mismatched shapes are named', () => {
    const s = perExpertStore(4, 32, 16);
    s.set('m.experts.2.w3.weight', Tensor.fromF32(new Float32Array(17 * 32), [17, 32]));
    expect(() => loadExperts(s, 'm', 'auto', opts)).toThrow(/m.experts.2.w3.weight: F32 \[17,32\] differs from m.experts.0.w3.weight: F32 \[16,32\]/);
    const t = perExpertStore(4, 32, 16);
    expect(() => loadExperts(t, 'm', 'auto', { ...opts, hidden: 64 })).toThrow(/hidden 32 but hidden_size = 64/);
    expect(() => loadExperts(t, 'm', 'auto', { ...opts, intermediate: 8 })).toThrow(/intermediate 16 but the config says 8/);
    const st = new MemoryWeights(), r = rng(1);
    st.set('q.switch_mlp.gate_proj.weight', Tensor.fromF32(uniform(5 * 16 * 32, r), [5, 16, 32]));
    st.set('q.switch_mlp.up_proj.weight', Tensor.fromF32(uniform(5 * 16 * 32, r), [5, 16, 32]));
    st.set('q.switch_mlp.down_proj.weight', Tensor.fromF32(uniform(5 * 32 * 16, r), [5, 32, 16]));
    expect(() => loadExperts(st, 'q', 'auto', opts)).toThrow(/q.switch_mlp.down_proj.weight: shape \[5,32,16\] but expected \[4, hidden, intermediate\] for 4 experts/);
    st.set('q.switch_mlp.down_proj.weight', Tensor.fromF32(uniform(4 * 32 * 16, r), [4, 32, 16]));
    expect(() => loadExperts(st, 'q', 'auto', opts)).toThrow(/q.switch_mlp.gate_proj.weight: shape \[5,16,32\] but expected \[4, 16, 32\]/);
  });

  test('no experts under the prefix, or not in the requested layout', () => {
    const s = perExpertStore(2, 32, 16);
    expect(() => loadExperts(s, 'x', 'auto', opts)).toThrow(expect.objectContaining({ code: 'E_LAYOUT', message: expect.stringContaining('x.experts.0.w1.weight') }));
    expect(() => loadExperts(s, 'm', 'stacked', opts)).toThrow(/no stacked expert weights under m: looked for m.switch_mlp.gate_proj.weight/);
    expect(() => loadExperts(s, 'm', 'auto', { ...opts, numExperts: 0 })).toThrow(/numExperts = 0/);
  });
});
