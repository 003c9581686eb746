/**
 * Image input (Gemma 3n / Gemma 4 checkpoints with a vision tower): images -> soft tokens spliced into
 * the prompt, the Gemma 3n hard-token path during decode, and the image part of `mlxcel trace --image`.
 * The server calls `imagePrompt` (or `imageSourceFromUrl` + `imagePrompt`) for `image_url` parts.
 */
import { readFileSync, statSync } from 'node:fs';
import { Checkpoint, Tensor, quantConfigOf, type ForwardInput } from '@mlxcel/tensor';
import {
  decodeImage, encodeProcessed, hardVisionRows, hasVision, imageEmbeddingOverrides,
  imagePromptIds, imagePromptTokens, imageSpans, loadVisionModel, processImage, towerStats, visionFamily, visionPrefixes,
  type EncodedImage, type ImageInputOptions, type ImageSource, type ImageSpan, type VisionModel,
} from '@mlxcel/vision';
import { buildPrompt, type ChatMessage } from './chat/index.js';
import { MlxcelError } from './errors.js';
import type { LoadedModel } from './load.js';

/** Image bytes / a file / raw pixels -> RGB pixels (header checked first; `maxPixels` caps width × height). */
export { decodeImage } from '@mlxcel/vision';

const towers = new WeakMap<LoadedModel, VisionModel>();

/** The checkpoint's vision tower (loaded once per model); a clear error when it has none or is disabled. */
export function visionModelOf(loaded: LoadedModel): VisionModel {
  let m = towers.get(loaded);
  if (m) return m;
  if (loaded.noVision)
    throw new MlxcelError('VISION_DISABLED', `${loaded.dir} was loaded with noVision (--no-vision); image input needs the vision tower`);
  if (!hasVision(loaded.config))
    throw new MlxcelError('VISION_UNSUPPORTED', `${loaded.dir}: model_type ${String(loaded.config.model_type)} has no vision tower (no vision_config in config.json); image input needs a Gemma 3n / Gemma 4 checkpoint with one`);
  m = loadVisionModel(loaded.dir);
  towers.set(loaded, m);
  return m;
}

/** True when image input can work with this model (a vision_config and not loaded with noVision). */
export function supportsImages(loaded: LoadedModel): boolean {
  return !loaded.noVision && hasVision(loaded.config);
}

/**
 * An image named by a URL: `data:image/...;base64,...` always; a local path or `file://` URL only
 * with `allowLocalFiles`; remote http(s) URLs are refused (never fetched).
 */
export function imageSourceFromUrl(url: string, opts: { allowLocalFiles?: boolean } = {}): ImageSource {
  if (typeof url !== 'string' || url.length === 0) throw new MlxcelError('BAD_IMAGE_URL', 'image_url: expected a non-empty URL string');
  if (url.startsWith('data:')) {
    const comma = url.indexOf(',');
    if (comma < 0) throw new MlxcelError('BAD_IMAGE_URL', 'image_url: a data: URL without a comma');
    const meta = url.slice(5, comma);
    if (!/;base64$/i.test(meta)) throw new MlxcelError('BAD_IMAGE_URL', 'image_url: only base64 data: URLs are accepted (data:image/png;base64,...)');
    const bytes = Buffer.from(url.slice(comma + 1), 'base64');
    if (bytes.length === 0) throw new MlxcelError('BAD_IMAGE_URL', 'image_url: the data: URL holds no bytes');
    return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length);
  }
  if (/^https?:/i.test(url)) throw new MlxcelError('BAD_IMAGE_URL', 'image_url: remote URLs are not fetched; send the image as a data: URL');
  if (!opts.allowLocalFiles) throw new MlxcelError('BAD_IMAGE_URL', 'image_url: local files are not allowed (enable local image files explicitly, or send a data: URL)');
  const path = url.startsWith('file://') ? decodeURIComponent(new URL(url).pathname) : url;
  return path;
}

/** The image of a chat message part: `{type:'image', image | path | data | pixels | url}`. */
export function imageSourceOfPart(part: Record<string, unknown>, opts: { allowLocalFiles?: boolean } = { allowLocalFiles: true }): ImageSource {
  const src = part.image ?? part.path ?? part.data ?? part.pixels;
  if (typeof src === 'string' || src instanceof Uint8Array) return src;
  if (src && typeof src === 'object' && 'data' in (src as object)) return src as ImageSource;
  if (typeof part.url === 'string') return imageSourceFromUrl(part.url, opts);
  throw new MlxcelError('BAD_IMAGE_PART', 'an image part needs `image` (path, Buffer or {data, width, height, channels}), `path`, `data`, `pixels` or `url`');
}

/** True when some message has an `{type: 'image'}` content part. */
export function hasImageParts(prompt: string | readonly ChatMessage[]): boolean {
  return typeof prompt !== 'string' && Array.isArray(prompt) && prompt.some((m) => Array.isArray(m.content) && (m.content as readonly { type: string }[]).some((p) => p.type === 'image'));
}

// Encoded images of file paths, per model (a chat re-renders earlier turns' images every turn).
const encodedFiles = new WeakMap<LoadedModel, Map<string, EncodedImage>>();

async function encodeSource(loaded: LoadedModel, model: VisionModel, src: ImageSource, opts: ImageInputOptions = {}): Promise<EncodedImage> {
  let key: string | null = null;
  if (typeof src === 'string') {
    try {
      const st = statSync(src);
      key = `${src}\0${st.size}\0${st.mtimeMs}\0${opts.maxSoftTokens ?? ''}`;
    } catch {
      key = null; // decodeImage reports the unreadable file
    }
  }
  const cache = encodedFiles.get(loaded) ?? new Map<string, EncodedImage>();
  encodedFiles.set(loaded, cache);
  const hit = key ? cache.get(key) : undefined;
  if (hit) return hit;
  const e = encodeProcessed(model, processImage(model, await decodeImage(src, opts), opts));
  if (key) {
    if (cache.size >= 16) cache.delete(cache.keys().next().value!);
    cache.set(key, e);
  }
  return e;
}

export interface ImagePrompt {
  ids: Int32Array;
  overrides: { rows: Int32Array; values: Float32Array };
  /** The placeholder runs (one per image); a prefill chunk never splits one. */
  spans: ImageSpan[];
  /** Soft tokens per image. */
  imageTokens: number[];
  /** For generate(): Gemma 3n's hard vision ids during decode (undefined for Gemma 4). */
  decodeEmbedding?: (token: number) => ForwardInput['embeddingOverrides'] | undefined;
}

/** Gemma 3n: a generated id in the vision vocabulary takes the embedder's hard path (HF does so on every forward). */
export function visionDecodeEmbedding(model: VisionModel): ((token: number) => ForwardInput['embeddingOverrides'] | undefined) | undefined {
  if (model.family !== 'gemma3n') return undefined;
  return (token) => {
    const h = hardVisionRows(model, [token]);
    return h.rows.length ? { rows: Int32Array.of(0), values: h.values } : undefined;
  };
}

/**
 * A chat prompt with images: every `{type:'image', ...}` part (in message order) is decoded, processed
 * and encoded; the template renders one placeholder per part, each expanded to the image's soft-token
 * count; the soft tokens replace those rows. A plain string prompt with `images` puts them first in a
 * single user turn.
 */
export async function imagePrompt(
  loaded: LoadedModel, prompt: string | readonly ChatMessage[], opts: { images?: readonly ImageSource[]; system?: string; image?: ImageInputOptions; allowLocalFiles?: boolean } = {},
): Promise<ImagePrompt> {
  const model = visionModelOf(loaded);
  if (!loaded.tokenizer) throw new MlxcelError('TOKENIZER_MISSING', `${loaded.dir} has no tokenizer; image prompts need one`);
  const tokenizer = loaded.tokenizer;
  let messages: ChatMessage[];
  const sources: ImageSource[] = [];
  if (typeof prompt === 'string') {
    const imgs = opts.images ?? [];
    messages = [{ role: 'user', content: [...imgs.map(() => ({ type: 'image' as const })), { type: 'text' as const, text: prompt }] }];
    sources.push(...imgs);
  } else {
    messages = prompt.map((m) => {
      if (typeof m.content === 'string') return m;
      return {
        ...m,
        content: m.content.map((p) => {
          if (p.type !== 'image') return p;
          sources.push(imageSourceOfPart(p as Record<string, unknown>, { allowLocalFiles: opts.allowLocalFiles ?? true }));
          return { type: 'image' as const };
        }),
      };
    });
    if (opts.images?.length) throw new MlxcelError('BAD_INPUT', 'imagePrompt: pass images either as message parts or as opts.images, not both');
  }
  if (opts.system !== undefined) messages = [{ role: 'system', content: opts.system }, ...messages];
  if (sources.length === 0) throw new MlxcelError('BAD_INPUT', 'imagePrompt: no image given');
  const encoded: EncodedImage[] = [];
  for (const s of sources) encoded.push(await encodeSource(loaded, model, s, opts.image));
  const counts = encoded.map((e) => e.nTokens);
  const rendered = loaded.chatTemplate
    ? buildPrompt(tokenizer, messages, { template: loaded.chatTemplate }).text
    : renderWithoutTemplate(model, messages);
  const ids = imagePromptIds(model, rendered, counts, (t) => tokenizer.encode(t, { addSpecialTokens: false }));
  const overrides = imageEmbeddingOverrides(model, ids, encoded.map((e) => ({ embeds: e.embeds, nTokens: e.nTokens, hidden: e.hidden })));
  return { ids, overrides, spans: imageSpans(model, ids), imageTokens: counts, decodeEmbedding: visionDecodeEmbedding(model) };
}

/** No chat template: the raw text of every message with one placeholder per image part, after BOS. */
function renderWithoutTemplate(model: VisionModel, messages: readonly ChatMessage[]): string {
  const ph = imagePromptTokens(model).placeholder.text;
  let out = '<bos>';
  for (const m of messages) {
    if (typeof m.content === 'string') out += m.content;
    else for (const p of m.content) out += p.type === 'image' ? ph : p.type === 'text' ? (p as { text: string }).text : '';
  }
  return out;
}

export interface ImageTrace {
  /** The fixture-contract tensors of the images (pixel_values, tower outputs, image_embeds, ...). */
  tensors: Record<string, Tensor>;
  overrides: { rows: Int32Array; values: Float32Array };
  spans: ImageSpan[];
  decodeEmbedding?: (token: number) => ForwardInput['embeddingOverrides'] | undefined;
}

/**
 * `mlxcel trace --image`: the images' soft tokens fill the placeholder runs of `ids` (image k -> run k);
 * returns the tensors a trace writes (names as in the fixtures) and the overrides for the forward.
 */
export async function traceImages(loaded: LoadedModel, ids: Int32Array, images: readonly ImageSource[], opts: ImageInputOptions = {}): Promise<ImageTrace> {
  const model = visionModelOf(loaded);
  const enc: EncodedImage[] = [];
  for (const s of images) enc.push(encodeProcessed(model, processImage(model, await decodeImage(s, opts), opts)));
  const overrides = imageEmbeddingOverrides(model, ids, enc.map((e) => ({ embeds: e.embeds, nTokens: e.nTokens, hidden: e.hidden })));
  return { tensors: imageTensors(model, enc), overrides, spans: imageSpans(model, ids), decodeEmbedding: visionDecodeEmbedding(model) };
}

function concat(parts: Float32Array[]): Float32Array {
  const out = new Float32Array(parts.reduce((a, p) => a + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** Channels-last [h, w, c] -> [c, h, w]. */
function chw(x: Float32Array, h: number, w: number, c: number): Float32Array {
  const out = new Float32Array(x.length);
  for (let i = 0; i < h * w; i++) for (let k = 0; k < c; k++) out[k * h * w + i] = x[i * c + k]!;
  return out;
}

function imageTensors(model: VisionModel, enc: EncodedImage[]): Record<string, Tensor> {
  const n = enc.length;
  const t: Record<string, Tensor> = {};
  const H = model.textHidden;
  t.image_embeds = Tensor.fromF32(concat(enc.map((e) => e.embeds)), [enc.reduce((a, e) => a + e.nTokens, 0), H]);
  if (model.family === 'gemma4') {
    const px = enc.map((e) => e.pixels as Extract<EncodedImage['pixels'], { family: 'gemma4' }>);
    const mp = px[0]!.maxPatches, dim = 3 * px[0]!.patchSize ** 2;
    if (px.some((p) => p.maxPatches !== mp)) throw new MlxcelError('BAD_INPUT', 'trace: images with different soft-token budgets cannot be stacked');
    t.pixel_values = Tensor.fromF32(concat(px.map((p) => p.pixelValues)), [n, mp, dim]);
    t.image_position_ids = Tensor.fromI32(Int32Array.from(concat(px.map((p) => Float32Array.from(p.positions)))), [n, mp, 2]);
    t.num_soft_tokens_per_image = Tensor.fromI32(Int32Array.from(px.map((p) => p.numSoftTokens)), [n]);
    const D = enc[0]!.towerDim;
    t.vision_tower_output = Tensor.fromF32(concat(enc.map((e) => e.tower)), [enc.reduce((a, e) => a + e.nTokens, 0), D]);
    for (const name of ['vision_patch_embeddings', 'vision_encoder_output'])
      t[name] = Tensor.fromF32(concat(enc.map((e) => e.intermediates[name]!.data)), [n * mp, D]);
    return t;
  }
  const px = enc.map((e) => e.pixels as Extract<EncodedImage['pixels'], { family: 'gemma3n' }>);
  t.pixel_values = Tensor.fromF32(concat(px.map((p) => p.pixelValues)), [n, 3, px[0]!.height, px[0]!.width]);
  const C = enc[0]!.towerDim;
  t.vision_tower_output = Tensor.fromF32(concat(enc.map((e) => chw(e.tower, 16, 16, C))), [n, C, 16, 16]);
  for (const name of ['vision_stage2_output', 'vision_stage3_output']) {
    const [h, w, c] = enc[0]!.intermediates[name]!.shape as [number, number, number];
    t[name] = Tensor.fromF32(concat(enc.map((e) => chw(e.intermediates[name]!.data, h, w, c))), [n, c, h, w]);
  }
  return t;
}

/** The file bytes of an image path (for callers that want to read once and pass bytes). */
export function readImageFile(path: string): Uint8Array {
  try {
    return readFileSync(path);
  } catch (e) {
    throw new MlxcelError('FILE_MISSING', `cannot read image file ${path} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
}

export interface VisionInfo {
  family: 'gemma3n' | 'gemma4';
  /** `mobilenetv5_300m_enc` or `gemma4_vision (L layers, width D)`. */
  tower: string;
  parameters: number;
  /** Stored bytes of the tower and its embedder. */
  bytes: number;
  /** Loaded with noVision: the tower is never read. */
  disabled: boolean;
}

/** What `mlxcel inspect` shows of the vision tower, read from config and tensor headers (nothing decoded); null when there is none. */
export function visionInfo(loaded: LoadedModel): VisionInfo | null {
  if (!hasVision(loaded.config)) return null;
  const cfg = loaded.config;
  const family = visionFamily(cfg);
  const store = Checkpoint.open(loaded.dir);
  const p = visionPrefixes(store, loaded.dir);
  const s = towerStats(store, [p.tower, p.embed], quantConfigOf(cfg));
  const v = cfg.vision_config as Record<string, unknown>;
  const tower = family === 'gemma3n' ? String(v.architecture ?? 'mobilenetv5_300m_enc') : `gemma4_vision (${String(v.num_hidden_layers)} layers, width ${String(v.hidden_size)})`;
  return { family, tower, parameters: s.parameters, bytes: s.bytes, disabled: loaded.noVision === true };
}
