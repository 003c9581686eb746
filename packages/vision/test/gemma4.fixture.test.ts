import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { decodeImage, encodeProcessed, loadVisionModel, processImage, type Gemma4VisionModel } from '../src/index.js';
import { maxAbsDiff, relMaxDiff } from '@mlxcel/tensor';
import { expected } from './helpers.js';

const e = expected('gemma4-vision-tiny');

describe('gemma4-vision-tiny fixture', () => {
  const model = loadVisionModel(e.dir) as Gemma4VisionModel;

  it('loads the processor settings from preprocessor_config.json', () => {
    expect(model.family).toBe('gemma4');
    expect(model.processor).toMatchObject({ patchSize: 8, poolingKernel: 3, maxSoftTokens: 70, resample: 'bicubic', doNormalize: false });
  });

  it('image.png gives pixel_values, image_position_ids and the token count', async () => {
    const px = processImage(model, await decodeImage(join(e.dir, 'image.png')));
    if (px.family !== 'gemma4') throw new Error('family');
    expect([1, px.maxPatches, 3 * 8 * 8]).toEqual([...e.shape('pixel_values')]);
    expect(maxAbsDiff(px.pixelValues, e.f32('pixel_values'))).toBeLessThanOrEqual(1e-6);
    expect(Array.from(px.positions)).toEqual(Array.from(e.i32('image_position_ids')));
    expect(px.numSoftTokens).toBe(e.i32('num_soft_tokens_per_image')[0]);
  });

  it('tower intermediates, output and image_embeds match', async () => {
    const px = processImage(model, await decodeImage(join(e.dir, 'image.png')));
    const out = encodeProcessed(model, px);
    expect(relMaxDiff(out.intermediates.vision_patch_embeddings!.data, e.f32('vision_patch_embeddings'))).toBeLessThanOrEqual(1e-4);
    expect(relMaxDiff(out.intermediates.vision_encoder_output!.data, e.f32('vision_encoder_output'))).toBeLessThanOrEqual(1e-4);
    expect([out.nTokens, out.towerDim]).toEqual([...e.shape('vision_tower_output')]);
    expect(relMaxDiff(out.tower, e.f32('vision_tower_output'))).toBeLessThanOrEqual(1e-4);
    expect(maxAbsDiff(out.embeds, e.f32('image_embeds'))).toBeLessThanOrEqual(3e-4);
  });
});
