/**
 * Prompt-cache files: mlx-lm's safetensors layout (docs/architecture/formats.md (f)) plus the engine's metadata; a save
 * and load round-trips every kind bit-exactly; a file made for another model, layer layout or RoPE
 * regime is refused with a message saying which.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SafetensorsFile, Tensor, writeSafetensors } from '@mlxcel/tensor';
import { afterAll, describe, expect, it } from 'vitest';
import {
  configHash, ContiguousCache, loadPromptCache, QuantizedCache, readPromptCache, RotatingCache, savePromptCache,
  SharedCache, type DetachedCache, type LayerCache,
} from '../src/index.js';
import { bitsEqual, randArray } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'mlxcel-prompt-cache-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const H = 2, D = 64, T = 300, NH = 4;
const K = randArray(T * H * D, 1), V = randArray(T * H * D, 2);
const tokens = Int32Array.from({ length: T }, (_, i) => (i * 7919) % 32000);
const MODEL = { modelId: 'mlxcel/test-model', configHash: configHash({ hidden_size: 128, layers: 6 }) };

/** A model-like layout: full f16, sliding f32 (wrapped ring), q8 and k8v4 full layers, two shared layers. */
function layers(): LayerCache[] {
  const l: LayerCache[] = [
    new ContiguousCache(H, D, D, { dtype: 'f16' }),
    new RotatingCache(H, D, 50),
    new QuantizedCache(H, D),
    new QuantizedCache(H, D, D, { vBits: 4, groupSize: 32 }),
  ];
  l.push(new SharedCache(l[0]!), new SharedCache(l[1]!));
  l.forEach((c, i) => {
    if (c.kind !== 'shared') c.ropeRegime = i === 1 ? 'default:theta=1e4' : 'default:theta=1e6';
  });
  return l;
}
function filled(): LayerCache[] {
  const l = layers();
  for (const c of l) if (c.kind !== 'shared') for (let p = 0; p < T; p += 60) c.update(K.subarray(p * H * D, (p + 60) * H * D), V.subarray(p * H * D, (p + 60) * H * D), 60);
  return l;
}

function expectSameState(a: DetachedCache, b: DetachedCache): void {
  expect({ ...a, main: null, staging: null }).toEqual({ ...b, main: null, staging: null });
  for (const key of ['pos', 'k', 'v', 'kScales', 'kBiases', 'vScales', 'vBiases'] as const) {
    const x = a.main[key], y = b.main[key];
    expect(x === undefined).toBe(y === undefined);
    if (x && y) expect(bitsEqual(x, y), key).toBe(true);
  }
}

describe('prompt cache save / load', () => {
  const path = join(dir, 'seq.safetensors');
  const src = filled();
  savePromptCache(path, src, { ...MODEL, tokens });
  const savedRing = src[1]!.snapshot().ring!;

  it('round-trips every layer bit-exactly, with its tokens', () => {
    const dst = layers();
    const { tokens: got, meta } = loadPromptCache(path, dst, MODEL);
    expect(Array.from(got)).toEqual(Array.from(tokens));
    expect(meta.layers.map((m) => m.kind)).toEqual(['contiguous', 'rotating', 'quantized', 'quantized', 'shared', 'shared']);
    dst.forEach((c, i) => expectSameState(c.snapshot(), src[i]!.snapshot()));
    const q = randArray(NH * D, 5);
    dst.forEach((c, i) =>
      expect(bitsEqual(c.attend(q, 1, NH, Int32Array.of(T - 1), { scale: 0.1 }), src[i]!.attend(q, 1, NH, Int32Array.of(T - 1), { scale: 0.1 })), `layer ${i}`).toBe(true),
    );
    // Both continue identically.
    for (const ls of [src, dst]) for (const c of ls) if (c.kind !== 'shared') c.update(K.subarray(0, H * D), V.subarray(0, H * D), 1);
    dst.forEach((c, i) => expectSameState(c.snapshot(), src[i]!.snapshot()));
  });

  it("uses mlx-lm's tensor names, shapes, meta_state and class names", () => {
    const f = SafetensorsFile.open(path);
    const shape = (n: string) => [f.get(n).dtype, ...f.get(n).shape];
    expect(shape('0.0')).toEqual(['F16', 1, H, T, D]);
    expect(shape('0.1')).toEqual(['F16', 1, H, T, D]);
    expect(shape('1.0')).toEqual(['F32', 1, H, 256, D]); // the ring's slots, in ring order
    expect(shape('2.0.0')).toEqual(['U32', 1, H, T, D / 4]);
    expect(shape('2.0.1')).toEqual(['F32', 1, H, T, D / 64]);
    expect(shape('2.1.0')).toEqual(['U32', 1, H, T, D / 4]);
    expect(shape('3.1.0')).toEqual(['U32', 1, H, T, D / 8]); // 4-bit V
    expect(shape('3.1.2')).toEqual(['F32', 1, H, T, D / 32]);
    const m = f.metadata;
    expect([m['2.0'], m['2.1'], m['2.2'], m['2.3'], m['2.4']]).toEqual(['KVCache', 'RotatingKVCache', 'QuantizedKVCache', 'QuantizedKVCache', 'mlxcel.SharedCache']);
    expect(m['0.0']).toBe('');
    expect(savedRing.size).toBe(256);
    expect([m['0.1.0'], m['0.1.1'], m['0.1.2'], m['0.1.3']]).toEqual(['0', '50', String(T), String(savedRing.next)]);
    expect([m['0.2.0'], m['0.2.1'], m['0.2.2'], m['0.3.1']]).toEqual([String(T), '64', '8', '32']);
    expect(m['1.model']).toBe(MODEL.modelId);
    const meta = JSON.parse(m['1.mlxcel']!);
    expect([meta.configHash, meta.tokens.length, meta.layers[3].vBits, meta.layers[1].ropeRegime, meta.layers[5].source]).toEqual([MODEL.configHash, T, 4, 'default:theta=1e4', 1]);
  });

  it('refuses a cache made for another model', () => {
    expect(() => loadPromptCache(path, layers(), { ...MODEL, modelId: 'other/model' })).toThrow(/was made for model mlxcel\/test-model .* not for model other\/model/);
    expect(() => loadPromptCache(path, layers(), { ...MODEL, configHash: configHash({ hidden_size: 256 }) })).toThrow(expect.objectContaining({ code: 'E_PROMPT_CACHE' }));
  });

  it('refuses another layer layout, saying which layer', () => {
    expect(() => loadPromptCache(path, layers().slice(0, 5), MODEL)).toThrow(/holds 6 layers, this model has 5/);
    const l1 = layers();
    l1[3] = new QuantizedCache(H, D, D, { vBits: 8, groupSize: 32 });
    expect(() => loadPromptCache(path, l1, MODEL)).toThrow(/layer 3 is a quantized k8v4 group 32 cache .* in the file but a quantized q8 group 32 cache/);
    const l2 = layers();
    l2[1] = new RotatingCache(H, D, 64);
    l2[5] = new SharedCache(l2[1]!);
    expect(() => loadPromptCache(path, l2, MODEL)).toThrow(/layer 1 is a rotating f32 cache \(window 50\).*rotating f32 cache \(window 64\)/);
    const l3 = layers();
    l3[5] = new SharedCache(l3[0]!);
    expect(() => loadPromptCache(path, l3, MODEL)).toThrow(/layer 5 reads layer 1 in the file, but reads layer 0 in this model/);
    // Nothing was adopted by a refused load.
    expect(l3.map((c) => c.offset)).toEqual([0, 0, 0, 0, 0, 0]);
  });

  it('refuses keys rotated under another RoPE regime', () => {
    const l = layers();
    l[1]!.ropeRegime = 'yarn:factor=4';
    expect(() => loadPromptCache(path, l, MODEL)).toThrow(/layer 1's keys were rotated under RoPE regime default:theta=1e4, this sequence needs yarn:factor=4/);
    expect(() => loadPromptCache(path, layers(), { ...MODEL, ropeRegimes: [undefined, undefined, 'longrope:long'] })).toThrow(/layer 2's keys/);
  });

  it('refuses to save held rows or mismatched tokens, and to load a file that is not an mlxcel cache', () => {
    const l = filled();
    l[0]!.setCap(T);
    l[0]!.update(K.subarray(0, H * D), V.subarray(0, H * D), 1);
    expect(() => savePromptCache(join(dir, 'x.safetensors'), l, { ...MODEL, tokens })).toThrow(/layer 0 holds 1 row\(s\) past its cap/);
    expect(() => savePromptCache(join(dir, 'x.safetensors'), filled(), { ...MODEL, tokens: tokens.subarray(1) })).toThrow(/holds 300 tokens but 299 token ids/);
    expect(() => savePromptCache(join(dir, 'x.safetensors'), filled(), { ...MODEL, modelId: '', tokens })).toThrow(/modelId/);
    const plain = join(dir, 'plain.safetensors');
    writeSafetensors(plain, { '0.0': Tensor.fromF32(new Float32Array(4), [1, 1, 1, 4]) }, { '2.0': 'KVCache' });
    expect(() => readPromptCache(plain)).toThrow(/not an mlxcel prompt cache/);
    const broken = join(dir, 'broken.safetensors');
    const f = SafetensorsFile.open(path);
    const tensors: Record<string, Tensor> = {};
    for (const name of f.tensors.keys()) if (name !== '2.1.1') tensors[name] = f.get(name);
    writeSafetensors(broken, tensors, { ...f.metadata });
    expect(() => loadPromptCache(broken, layers(), MODEL)).toThrow(/missing tensor 2\.1\.1/);
  });

  it('configHash ignores key order and sees every value', () => {
    expect(configHash({ a: 1, b: { c: [1, 2], d: 'x' } })).toBe(configHash({ b: { d: 'x', c: [1, 2] }, a: 1 }));
    expect(configHash({ a: 1 })).not.toBe(configHash({ a: 2 }));
  });
});
