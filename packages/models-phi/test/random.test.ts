/** randomWeights: the checkpoint layout of each architecture, deterministic per seed, loadable. */
import { describe, expect, it } from 'vitest';
import type { WeightStore } from '@mlxcel/tensor';
import { configDType } from '../src/index.js';
import { archFor, fixture, fullLogits } from './helpers.js';

function layout(store: WeightStore, skip: RegExp = /$^/): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of store.keys().sort()) if (!skip.test(k)) out[k] = `${store.get(k).dtype}[${store.get(k).shape.join(',')}]`;
  return out;
}

describe.each([
  ['phi3-tiny-short', undefined],
  ['phimoe-tiny', undefined],
  ['phi3small-tiny', undefined],
  ['phimoe-tiny-q4-mlx', { bits: 4, groupSize: 64 }],
])('%s layout', (name, quantize) => {
  const fx = fixture(name);
  const arch = archFor(fx.config);

  it('random weights have exactly the fixture checkpoint tensors (names, dtypes, shapes)', () => {
    const w = arch.randomWeights!(fx.config, { seed: 1, ...(quantize ? { quantize } : {}) });
    expect(layout(w)).toEqual(layout(fx.weights, /rotary_emb\.inv_freq$/));
  });

  it('load and run', () => {
    const w = arch.randomWeights!(fx.config, { seed: 2, ...(quantize ? { quantize } : {}) });
    const model = arch.load({ config: fx.config, weights: w });
    const logits = fullLogits(model, fx.i32('input_ids').subarray(0, 6));
    expect(logits.every(Number.isFinite)).toBe(true);
  });
});

describe('determinism and dtype', () => {
  const fx = fixture('phi3-tiny-short');
  const arch = archFor(fx.config);
  const bytes = (w: WeightStore, k: string) => [...w.get(k).bytes];
  it('same seed ⇒ same bytes; another seed ⇒ other bytes', () => {
    const k = 'model.layers.1.mlp.down_proj.weight';
    const a = arch.randomWeights!(fx.config, { seed: 5 }), b = arch.randomWeights!(fx.config, { seed: 5 }), c = arch.randomWeights!(fx.config, { seed: 6 });
    expect(bytes(a, k)).toEqual(bytes(b, k));
    expect(bytes(a, k)).not.toEqual(bytes(c, k));
  });
  it('float dtype follows torch_dtype unless given', () => {
    expect(configDType({ torch_dtype: 'bfloat16' })).toBe('BF16');
    expect(configDType({ dtype: 'float16' })).toBe('F16');
    expect(configDType({})).toBe('F32');
    const w = arch.randomWeights!({ ...fx.config, torch_dtype: 'bfloat16' }, { seed: 1 });
    expect(w.get('model.embed_tokens.weight').dtype).toBe('BF16');
    expect(arch.randomWeights!(fx.config, { seed: 1, dtype: 'F16' } as never).get('lm_head.weight').dtype).toBe('F16');
  });
  it('values stay within the requested range', () => {
    const w = arch.randomWeights!(fx.config, { seed: 9 });
    const v = w.get('model.layers.0.self_attn.qkv_proj.weight').toF32();
    const amp = 1 / Math.sqrt(128);
    expect(Math.max(...v)).toBeLessThanOrEqual(amp);
    expect(Math.min(...v)).toBeGreaterThanOrEqual(-amp);
    expect(Math.max(...v) - Math.min(...v)).toBeGreaterThan(1.9 * amp);
  });
});
