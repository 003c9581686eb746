/** `mlxcel trace --image` reproduces the vision fixtures (single pass, chunked, mlx-vlm layout). */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SafetensorsFile } from '@mlxcel/tensor';
import { FIXTURES, mlxcel } from './helpers.js';
import { buildConversions } from './vision-convert.js';

function maxAbs(got: Float32Array | Int32Array, want: Float32Array | Int32Array): number {
  expect(got.length).toBe(want.length);
  let d = 0;
  for (let i = 0; i < got.length; i++) d = Math.max(d, Math.abs(got[i]! - want[i]!));
  return d;
}
function rel(got: Float32Array, want: Float32Array): number {
  let m = 0;
  for (const v of want) m = Math.max(m, Math.abs(v));
  return maxAbs(got, want) / m;
}

const CASES = {
  'gemma3n-vision-tiny': ['vision_stage2_output', 'vision_stage3_output', 'vision_tower_output'],
  'gemma4-vision-tiny': ['vision_patch_embeddings', 'vision_encoder_output', 'vision_tower_output'],
} as const;

async function trace(dir: string, image: string, ids: string, out: string, extra: string[] = []): Promise<SafetensorsFile> {
  const r = await mlxcel(['trace', '--model', dir, '--image', image, '--ids-file', ids, '--decode', '8', '--out', out, ...extra]);
  expect(r.stderr).toContain('wrote');
  expect(r.code).toBe(0);
  return SafetensorsFile.open(out);
}

/** The fixture README's tolerances. */
function expectMatchesFixture(got: SafetensorsFile, want: SafetensorsFile, tower: readonly string[], opts: { embeds?: boolean } = {}): void {
  expect(maxAbs(got.get('pixel_values').toF32(), want.get('pixel_values').toF32())).toBeLessThanOrEqual(1e-6);
  if (want.has('image_position_ids')) expect(Array.from(got.get('image_position_ids').toI32())).toEqual(Array.from(want.get('image_position_ids').toI32()));
  for (const t of tower) {
    expect([...got.get(t).shape], t).toEqual([...want.get(t).shape]);
    expect(rel(got.get(t).toF32(), want.get(t).toF32()), t).toBeLessThanOrEqual(1e-4);
  }
  if (opts.embeds !== false) expect(maxAbs(got.get('image_embeds').toF32(), want.get('image_embeds').toF32())).toBeLessThanOrEqual(3e-4);
}

describe('mlxcel trace --image', () => {
  const out = mkdtempSync(join(tmpdir(), 'mlxcel-vision-'));
  for (const [name, tower] of Object.entries(CASES)) {
    const dir = join(FIXTURES, name), exp = join(dir, 'expected.safetensors');
    for (const chunk of [null, 5]) {
      it(`${name}${chunk ? ` --chunk ${chunk}` : ''}`, async () => {
        const got = await trace(dir, join(dir, 'image.png'), exp, join(out, `${name}-${chunk}.safetensors`), chunk ? ['--chunk', String(chunk)] : []);
        const want = SafetensorsFile.open(exp);
        expectMatchesFixture(got, want, tower);
        expect(maxAbs(got.get('logits').toF32(), want.get('logits').toF32())).toBeLessThanOrEqual(3e-3);
        expect(Array.from(got.get('greedy_ids').toI32())).toEqual(Array.from(want.get('greedy_ids').toI32()));
        expect(maxAbs(got.get('greedy_logits').toF32(), want.get('greedy_logits').toF32())).toBeLessThanOrEqual(1e-3);
      });
    }

    it(`${name}: mlx-vlm layout (channels-last convs, 4-bit text tower) traces like its dequantized HF twin`, async () => {
      const conv = buildConversions(dir, join(out, `${name}-conv`));
      const a = await trace(conv.mlx, join(conv.mlx, 'image.png'), exp, join(out, `${name}-mlx.safetensors`), ['--chunk', '5']);
      const b = await trace(conv.ref, join(conv.ref, 'image.png'), exp, join(out, `${name}-ref.safetensors`));
      const want = SafetensorsFile.open(exp);
      // The tower stays float in mlx conversions: its tensors still match the fixture; the embedder may be 4-bit.
      expectMatchesFixture(a, want, tower, { embeds: false });
      expect(maxAbs(a.get('image_embeds').toF32(), b.get('image_embeds').toF32())).toBeLessThanOrEqual(3e-4);
      expect(maxAbs(a.get('logits').toF32(), b.get('logits').toF32())).toBeLessThanOrEqual(3e-3);
      expect(Array.from(a.get('greedy_ids').toI32())).toEqual(Array.from(b.get('greedy_ids').toI32()));
    });
  }

  it('a model without a vision tower says so', async () => {
    const dir = join(FIXTURES, 'phi3-tiny-short');
    const r = await mlxcel(['trace', '--model', dir, '--image', join(FIXTURES, 'gemma4-vision-tiny', 'image.png'), '--ids', '1,2,3', '--out', join(out, 'x.safetensors')]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/no vision tower/);
  });

  it('a placeholder count that does not match the image is a clear error', async () => {
    const dir = join(FIXTURES, 'gemma4-vision-tiny');
    const r = await mlxcel(['trace', '--model', dir, '--image', join(dir, 'image.png'), '--ids', '2,500,502,502,504', '--out', join(out, 'y.safetensors')]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/placeholder/);
  });
});
