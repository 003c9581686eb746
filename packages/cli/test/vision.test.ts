/** `mlxcel trace --image` reproduces the vision fixtures (single pass, chunked, mlx-vlm layout). */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SafetensorsFile } from '@mlxcel/tensor';
import { FIXTURES, mlxcel } from './helpers.js';
import { buildConversions } from './vision-convert.js';
import { makeGemma4VisionDir } from '../../engine/test/helpers/vision-model.js';

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

describe('mlxcel generate / chat / inspect with images', () => {
  const dir = makeGemma4VisionDir();
  const image = join(dir, 'image.png');

  it('generate --image (twice) puts both images in the prompt', async () => {
    const one = await mlxcel(['generate', '--model', dir, '--image', image, '--prompt', 'Describe.', '--temp', '0', '--max-tokens', '3', '--json']);
    expect(one.code, one.stderr).toBe(0);
    const two = await mlxcel(['generate', '--model', dir, '--image', image, '--image', image, '--prompt', 'Describe.', '--temp', '0', '--max-tokens', '3', '--json']);
    expect(two.code, two.stderr).toBe(0);
    const a = JSON.parse(one.stdout), b = JSON.parse(two.stdout);
    // The second image adds its <|image> + 64 soft tokens + <image|> (and the template's separators).
    expect(b.stats.promptTokens - a.stats.promptTokens).toBeGreaterThanOrEqual(66);
    expect(a.stats.promptTokens).toBeGreaterThan(66);
  });

  it('generate --image on a text-only model, with --no-vision, or a missing file fails clearly', async () => {
    const phi = await mlxcel(['generate', '--model', join(FIXTURES, 'phi3-tiny-short'), '--image', image, '--prompt', 'x', '--max-tokens', '1']);
    expect(phi.code).not.toBe(0);
    const off = await mlxcel(['generate', '--model', dir, '--no-vision', '--image', image, '--prompt', 'x', '--max-tokens', '1']);
    expect(off.code).not.toBe(0);
    expect(off.stderr).toMatch(/noVision|--no-vision/);
    const missing = await mlxcel(['generate', '--model', dir, '--image', join(dir, 'nope.png'), '--prompt', 'x', '--max-tokens', '1']);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/nope\.png: cannot read image file/);
  });

  it('chat: /image attaches an image to the next message', async () => {
    const r = await mlxcel(['chat', '--model', dir, '--temp', '0', '--max-tokens', '2'], { input: `/image ${image}\nWhat is this?\nAnd now?\n/exit\n` });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('image attached to your next message');
    const stats = r.stderr.split('\n').filter((l) => l.startsWith('prompt '));
    expect(stats.length).toBe(2);
    // The first turn carries the image (> 64 prompt tokens); the second reuses the cache and feeds only the new turn.
    expect(Number(/prompt (\d+) tok/.exec(stats[0]!)![1])).toBeGreaterThan(66);
    expect(Number(/prompt (\d+) tok/.exec(stats[1]!)![1])).toBeLessThan(66);
  });

  it('inspect lists the vision tower', async () => {
    const r = await mlxcel(['inspect', '--model', dir, '--json']);
    expect(r.code, r.stderr).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j.vision).toMatchObject({ family: 'gemma4', disabled: false });
    expect(j.vision.parameters).toBeGreaterThan(0);
  });
});
