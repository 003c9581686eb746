import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { decodeImage, encodeProcessed, loadVisionModel, processImage, type Gemma3nVisionModel } from '../src/index.js';
import { maxAbsDiff, relMaxDiff } from '@mlxcel/tensor';
import { expected, toChw } from './helpers.js';

const e = expected('gemma3n-vision-tiny');

describe('gemma3n-vision-tiny fixture', () => {
  const model = loadVisionModel(e.dir) as Gemma3nVisionModel;

  it('loads the processor settings from preprocessor_config.json', () => {
    expect(model.processor).toMatchObject({ height: 512, width: 256, resample: 'bilinear', imageSeqLength: 256, doNormalize: false });
  });

  it('image.png gives pixel_values', async () => {
    const px = processImage(model, await decodeImage(join(e.dir, 'image.png')));
    expect([1, 3, px.height, px.width]).toEqual([...e.shape('pixel_values')]);
    expect(maxAbsDiff(px.pixelValues, e.f32('pixel_values'))).toBeLessThanOrEqual(1e-6);
  });

  it('stage outputs, tower output and image_embeds match', async () => {
    const out = encodeProcessed(model, processImage(model, await decodeImage(join(e.dir, 'image.png'))));
    for (const name of ['vision_stage2_output', 'vision_stage3_output'] as const) {
      const s = out.intermediates[name]!;
      const [h, w, c] = s.shape as [number, number, number];
      expect([1, c, h, w]).toEqual([...e.shape(name)]);
      expect(relMaxDiff(toChw(s.data, h, w, c), e.f32(name))).toBeLessThanOrEqual(1e-4);
    }
    expect([1, out.towerDim, 16, 16]).toEqual([...e.shape('vision_tower_output')]);
    expect(relMaxDiff(toChw(out.tower, 16, 16, out.towerDim), e.f32('vision_tower_output'))).toBeLessThanOrEqual(1e-4);
    expect(maxAbsDiff(out.embeds, e.f32('image_embeds'))).toBeLessThanOrEqual(3e-4);
  });
});
