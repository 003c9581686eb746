/**
 * Image -> processor output -> tower -> soft tokens in the text embedding space: the entry point the
 * engine calls for every image (and the stages `mlxcel trace --image` writes).
 */
import { MlxcelError } from '@mlxcel/tensor';
import { decodeImage, type DecodeOptions, type ImageSource, type RgbImage } from './image/decode.js';
import type { VisionModel } from './model.js';
import { processGemma3n, type Gemma3nPixels } from './processor/gemma3n.js';
import { processGemma4, type Gemma4Pixels } from './processor/gemma4.js';

export type ProcessedImage = Gemma3nPixels | Gemma4Pixels;

export interface ImageInputOptions extends DecodeOptions {
  /** Gemma 4: soft-token budget for this image (70, 140, 280, 560, 1120); default the processor's. */
  maxSoftTokens?: number;
}

/** The checkpoint's processor on decoded pixels. */
export function processImage(model: VisionModel, img: RgbImage, opts: ImageInputOptions = {}): ProcessedImage {
  if (model.family === 'gemma4') return processGemma4(img, model.processor, { maxSoftTokens: opts.maxSoftTokens });
  if (opts.maxSoftTokens !== undefined)
    throw new MlxcelError('E_ARG', 'maxSoftTokens: Gemma 3n has a fixed 256 soft tokens per image (the budget is a Gemma 4 option)');
  return processGemma3n(img, model.processor);
}

export interface EncodedImage {
  pixels: ProcessedImage;
  /** [nTokens, towerDim] tower output (Gemma 3n: × √hidden not yet applied; channels-last tokens). */
  tower: Float32Array;
  towerDim: number;
  /** [nTokens, textHidden] soft tokens. */
  embeds: Float32Array;
  nTokens: number;
  hidden: number;
  /** Gemma 3n: stage outputs (channels-last) [h, w, c]; Gemma 4: patch embeddings and encoder output [maxPatches, D]. */
  intermediates: Record<string, { data: Float32Array; shape: number[] }>;
}

/** Runs the tower and embedder on a processed image. */
export function encodeProcessed(model: VisionModel, px: ProcessedImage): EncodedImage {
  if (model.family === 'gemma4') {
    if (px.family !== 'gemma4') throw new MlxcelError('E_ARG', 'a Gemma 3n processed image given to a Gemma 4 tower');
    const out = model.tower.forward(px);
    const D = out.dim;
    return {
      pixels: px, tower: out.tokens, towerDim: D, nTokens: out.nTokens, hidden: model.textHidden,
      embeds: model.embedder.forward(out.tokens, out.nTokens),
      intermediates: {
        vision_patch_embeddings: { data: out.patchEmbeddings, shape: [px.maxPatches, D] },
        vision_encoder_output: { data: out.encoderOutput, shape: [px.maxPatches, D] },
      },
    };
  }
  if (px.family !== 'gemma3n') throw new MlxcelError('E_ARG', 'a Gemma 4 processed image given to a Gemma 3n tower');
  const out = model.tower.forward(px.pixelValues, px.height, px.width);
  const t = out.tokens;
  const n = t.h * t.w;
  if (n !== model.config.softTokens)
    throw new MlxcelError('E_SHAPE', `Gemma 3n vision: the tower produced ${n} tokens, vision_soft_tokens_per_image is ${model.config.softTokens}`);
  const scaled = new Float32Array(t.x.length);
  const s = Math.fround(Math.sqrt(model.config.hidden));
  for (let i = 0; i < t.x.length; i++) scaled[i] = t.x[i]! * s;
  const intermediates: EncodedImage['intermediates'] = {};
  const st = out.stages;
  if (st.length >= 2) {
    intermediates.vision_stage2_output = { data: st[st.length - 2]!.x, shape: [st[st.length - 2]!.h, st[st.length - 2]!.w, st[st.length - 2]!.c] };
    intermediates.vision_stage3_output = { data: st[st.length - 1]!.x, shape: [st[st.length - 1]!.h, st[st.length - 1]!.w, st[st.length - 1]!.c] };
  }
  return {
    pixels: px, tower: t.x, towerDim: t.c, nTokens: n, hidden: model.textHidden,
    embeds: model.embedder.soft(scaled, n), intermediates,
  };
}

/** Soft tokens of one image, for the prompt merge. */
export interface ImageSoftTokens {
  /** [nTokens, hidden] rows for the placeholder positions, in order. */
  embeds: Float32Array;
  nTokens: number;
  hidden: number;
}

/** Decode + process + encode one image. */
export async function imageSoftTokens(model: VisionModel, src: ImageSource, opts: ImageInputOptions = {}): Promise<ImageSoftTokens> {
  const img = await decodeImage(src, opts);
  const e = encodeProcessed(model, processImage(model, img, opts));
  return { embeds: e.embeds, nTokens: e.nTokens, hidden: e.hidden };
}
