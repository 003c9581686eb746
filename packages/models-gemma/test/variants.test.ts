/**
 * Checkpoint variants the fixtures do not cover, made from the fixtures: attention_k_eq_v, KV-shared
 * layers without their (unused) K/V weights, bf16 storage, and MLX 8-bit group-32 quantization in the
 * mlx-vlm layout (`language_model.model.*`, split experts, a per-module bit override, two shards on
 * disk). Each variant is compared with an f32 model holding exactly the values the variant stores.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Checkpoint, writeSafetensors, type LanguageModel, type Tensor, type WeightStore } from '@mlxcel/tensor';
import { quantizeStore, toBf16, without, withTensors } from './convert.js';
import { greedy, loadFixture, loadModel, maxAbsDiff } from './helpers.js';

const P = 'model.language_model.';

function logits(model: LanguageModel, ids: Int32Array): Float32Array {
  return model.forward([{ ids, state: model.newState() }])[0]!;
}

function withText(config: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  return { ...config, text_config: { ...(config.text_config as object), ...patch } };
}

describe('attention_k_eq_v: full layers take V = RMS0(k_proj x) and have no v_proj', () => {
  const { config, store, expected } = loadFixture('gemma4-tiny-dense');
  const ids = expected.inputIds;
  // Layer 2 is the only full layer that owns KV (5 is KV-shared): its V must come from k_proj.
  const kEqV = loadModel(withText(config, { attention_k_eq_v: true }), without(store, (k) => k === `${P}layers.2.self_attn.v_proj.weight`));
  const same = loadModel(config, withTensors(store, { [`${P}layers.2.self_attn.v_proj.weight`]: store.get(`${P}layers.2.self_attn.k_proj.weight`) }));

  it('equals a checkpoint whose v_proj is a copy of k_proj (V taken before k_norm and RoPE)', () => {
    const a = logits(kEqV, ids);
    expect(maxAbsDiff(a, logits(same, ids))).toBe(0);
    expect(maxAbsDiff(a, expected.logits)).toBeGreaterThan(1e-2); // it is a different model
  });

  it('sliding layers keep their own v_proj', () => {
    expect(() => loadModel(withText(config, { attention_k_eq_v: true }), without(store, (k) => k === `${P}layers.0.self_attn.v_proj.weight`))).toThrow(
      /layers\.0\.self_attn\.v_proj\.weight/,
    );
  });
});

describe.each(['gemma3n-tiny', 'gemma3n-tiny-q4', 'gemma4-tiny-dense'])('%s without K/V weights on KV-shared layers', (name) => {
  const { config, store, expected, model } = loadFixture(name);
  const shared = /layers\.(4|5)\.self_attn\.(k_proj|v_proj|k_norm)\./;
  const pruned = without(store, (k) => shared.test(k));

  it('loads and gives identical logits', () => {
    expect(pruned.keys().length).toBeLessThan(store.keys().length);
    expect(maxAbsDiff(logits(loadModel(config, pruned), expected.inputIds), logits(model, expected.inputIds))).toBe(0);
  });

  it('an owner layer without k_proj fails naming the tensor', () => {
    expect(() => loadModel(config, without(store, (k) => k.includes('layers.3.self_attn.k_proj.')))).toThrow(/layers\.3\.self_attn\.k_proj\.weight/);
  });
});

describe.each(['gemma3n-tiny', 'gemma4-tiny-dense', 'gemma4-tiny-moe'])('%s stored in bf16', (name) => {
  const { config, store, expected } = loadFixture(name);
  const { bf16, rounded } = toBf16(store);

  it('loads, and matches an f32 model holding the same (rounded) values', () => {
    const m = loadModel(config, bf16);
    expect(m.stats.weightBytes).toBeLessThan(loadModel(config, store).stats.weightBytes);
    const a = logits(m, expected.inputIds);
    expect(maxAbsDiff(a, logits(loadModel(config, rounded), expected.inputIds))).toBeLessThanOrEqual(1e-3);
    expect(a.every(Number.isFinite)).toBe(true);
  });
});

describe.each(['gemma3n-tiny', 'gemma4-tiny-dense', 'gemma4-tiny-moe'])('%s quantized to 8 bits, group 32 (mlx-vlm layout, sharded)', (name) => {
  const { config, store, expected } = loadFixture(name);
  const override = `${P}layers.1.mlp.down_proj`;
  const { quantized, dequantized, overrideKeys } = quantizeStore(store, { bits: 8, groupSize: 32 }, {
    fromPrefix: P,
    toPrefix: 'language_model.model.',
    override: { [override]: 4 },
  });
  const dir = mkdtempSync(join(tmpdir(), `mlxcel-${name}-q8-`));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const qconfig = { ...config, quantization: { group_size: 32, bits: 8, mode: 'affine', ...overrideKeys } };
  writeShards(dir, quantized, qconfig);

  it('loads from disk and matches an f32 model holding the dequantized values', () => {
    expect(Object.keys(overrideKeys)).toEqual([`language_model.model.layers.1.mlp.down_proj`]);
    const ck = Checkpoint.open(dir);
    expect(ck.files.length).toBe(2);
    expect(ck.has('language_model.model.layers.0.self_attn.q_proj.scales')).toBe(true);
    const m = loadModel(qconfig, ck);
    const a = logits(m, expected.inputIds);
    expect(maxAbsDiff(a, logits(loadModel(config, dequantized), expected.inputIds))).toBeLessThanOrEqual(1e-3);
    // (The dequantization itself is checked against an independent reference by gemma3n-tiny-q4.)
    expect(greedy(m, expected.inputIds, 3).ids.length).toBe(3);
  });

  it('a wrong bit width for the overridden module is caught at load', () => {
    const { [override.replace(P, 'language_model.model.')]: _, ...rest } = qconfig.quantization as Record<string, unknown>;
    expect(() => loadModel({ ...qconfig, quantization: rest }, Checkpoint.open(dir))).toThrow(/layers\.1\.mlp\.down_proj/);
  });
});

/** Two shards plus model.safetensors.index.json, as mlx-lm writes them. */
function writeShards(dir: string, store: WeightStore, config: Record<string, unknown>): void {
  const keys = store.keys().sort();
  const half = Math.ceil(keys.length / 2);
  const weightMap: Record<string, string> = {};
  [keys.slice(0, half), keys.slice(half)].forEach((part, i) => {
    const file = `model-0000${i + 1}-of-00002.safetensors`;
    const tensors: Record<string, Tensor> = {};
    for (const k of part) {
      tensors[k] = store.get(k);
      weightMap[k] = file;
    }
    writeSafetensors(join(dir, file), tensors, { format: 'mlx' });
  });
  writeFileSync(join(dir, 'model.safetensors.index.json'), JSON.stringify({ metadata: {}, weight_map: weightMap }));
  writeFileSync(join(dir, 'config.json'), JSON.stringify(config));
}
