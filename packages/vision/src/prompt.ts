/**
 * Images in the prompt. The chat template emits one placeholder per image (Gemma 3n
 * `<image_soft_token>` / Gemma 4 `<|image|>`); the processor expands it to begin-of-image + N
 * soft-token placeholders + end-of-image (Gemma 3n wraps the block in blank lines); the model replaces
 * the placeholder rows' embeddings with the image's soft tokens. Here: the token table, the expansion
 * (text and ids), the image spans, and the embedding overrides (ForwardInput.embeddingOverrides).
 */
import { MlxcelError } from '@mlxcel/tensor';
import type { ImageSoftTokens } from './encode.js';
import type { VisionModel } from './model.js';

export interface ImagePromptTokens {
  boi: { id: number; text: string };
  /** The per-image placeholder the template emits, also the soft-token id after expansion. */
  placeholder: { id: number; text: string };
  eoi: { id: number; text: string };
}

export function imagePromptTokens(model: VisionModel): ImagePromptTokens {
  const t = model.config.tokens;
  if (model.family === 'gemma4')
    return { boi: { id: t.boi, text: '<|image>' }, placeholder: { id: t.image, text: '<|image|>' }, eoi: { id: t.eoi, text: '<image|>' } };
  return { boi: { id: t.boi, text: '<start_of_image>' }, placeholder: { id: t.image, text: '<image_soft_token>' }, eoi: { id: t.eoi, text: '<end_of_image>' } };
}

/** The text one placeholder expands to for an image of `n` soft tokens. */
export function imageExpansionText(model: VisionModel, n: number): string {
  const tk = imagePromptTokens(model);
  const body = tk.boi.text + tk.placeholder.text.repeat(n) + tk.eoi.text;
  return model.family === 'gemma3n' ? `\n\n${body}\n\n` : body;
}

/** Expands the k-th placeholder of a rendered prompt with the k-th image's token count. */
export function expandImagePlaceholders(prompt: string, model: VisionModel, tokenCounts: readonly number[]): string {
  const ph = imagePromptTokens(model).placeholder.text;
  const parts = prompt.split(ph);
  if (parts.length - 1 !== tokenCounts.length)
    throw new MlxcelError('E_IMAGE_TOKENS', `prompt has ${parts.length - 1} "${ph}" placeholder(s) for ${tokenCounts.length} image(s)`);
  let out = parts[0]!;
  for (let k = 0; k < tokenCounts.length; k++) out += imageExpansionText(model, tokenCounts[k]!) + parts[k + 1]!;
  return out;
}

/** A contiguous run of placeholder ids: rows [start, end) of the prompt (one image each). */
export interface ImageSpan {
  start: number;
  end: number;
}

/** The placeholder runs of `ids`, in order. */
export function imageSpans(model: VisionModel, ids: ArrayLike<number>): ImageSpan[] {
  const id = imagePromptTokens(model).placeholder.id;
  const spans: ImageSpan[] = [];
  for (let i = 0; i < ids.length; i++) {
    if (ids[i] !== id) continue;
    const start = i;
    while (i + 1 < ids.length && ids[i + 1] === id) i++;
    spans.push({ start, end: i + 1 });
  }
  return spans;
}

/** Tokenizes the expanded prompt and checks it holds exactly the images' soft-token placeholders. */
export function imagePromptIds(model: VisionModel, prompt: string, tokenCounts: readonly number[], encode: (text: string) => ArrayLike<number>): Int32Array {
  const ids = Int32Array.from(encode(expandImagePlaceholders(prompt, model, tokenCounts)));
  const spans = imageSpans(model, ids);
  const got = spans.map((s) => s.end - s.start);
  if (got.length !== tokenCounts.length || got.some((n, i) => n !== tokenCounts[i]))
    throw new MlxcelError('E_IMAGE_TOKENS', `tokenized prompt has image placeholder runs [${got.join(', ')}], expected [${tokenCounts.join(', ')}] (does the tokenizer know "${imagePromptTokens(model).placeholder.text}" as a special token?)`);
  return ids;
}

/**
 * Gemma 3n's hard vision tokens: every id in [vocab_offset, vocab_offset + vocab_size) that is not a
 * placeholder (e.g. <end_of_image>, or generated ids in that range) takes the embedder's hard path.
 * Returns the rows and their embeddings ([rows.length, hidden]); empty for Gemma 4.
 */
export function hardVisionRows(model: VisionModel, ids: ArrayLike<number>, skip: ReadonlySet<number> = new Set()): { rows: number[]; values: Float32Array } {
  if (model.family !== 'gemma3n') return { rows: [], values: new Float32Array(0) };
  const { vocabOffset: o, vocabSize: V } = model.config;
  const ph = model.config.tokens.image;
  const rows: number[] = [];
  for (let i = 0; i < ids.length; i++) if (ids[i]! >= o && ids[i]! < o + V && ids[i] !== ph && !skip.has(i)) rows.push(i);
  return { rows, values: rows.length ? model.embedder.hard(rows.map((r) => ids[r]!)) : new Float32Array(0) };
}

/**
 * The ForwardInput.embeddingOverrides for a prompt: the k-th placeholder row gets the k-th soft token
 * (images concatenated in prompt order; HF's masked_scatter order). Gemma 3n also routes its other
 * vision-vocabulary ids through the hard path. A count mismatch is an error (HF raises too).
 */
export function imageEmbeddingOverrides(model: VisionModel, ids: ArrayLike<number>, images: readonly ImageSoftTokens[]): { rows: Int32Array; values: Float32Array } {
  const H = model.textHidden;
  const spans = imageSpans(model, ids);
  const soft: number[] = [];
  for (const s of spans) for (let r = s.start; r < s.end; r++) soft.push(r);
  const total = images.reduce((a, c) => a + c.nTokens, 0);
  if (soft.length !== total)
    throw new MlxcelError('E_IMAGE_TOKENS', `prompt has ${soft.length} image placeholder ids but the ${images.length} image(s) provide ${total} soft tokens`);
  if (spans.length !== images.length || spans.some((s, i) => s.end - s.start !== images[i]!.nTokens))
    throw new MlxcelError('E_IMAGE_TOKENS', `prompt image runs [${spans.map((s) => s.end - s.start).join(', ')}] do not match the images' soft-token counts [${images.map((c) => c.nTokens).join(', ')}]`);
  for (const c of images) if (c.hidden !== H) throw new MlxcelError('E_SHAPE', `soft tokens have width ${c.hidden}, the model's text hidden size is ${H}`);
  const hard = hardVisionRows(model, ids);
  const rows = new Int32Array(soft.length + hard.rows.length);
  const values = new Float32Array(rows.length * H);
  let k = 0;
  for (const c of images)
    for (let j = 0; j < c.nTokens; j++, k++) {
      rows[k] = soft[k]!;
      values.set(c.embeds.subarray(j * H, (j + 1) * H), k * H);
    }
  hard.rows.forEach((r, j) => {
    rows[k + j] = r;
  });
  values.set(hard.values, k * H);
  return { rows, values };
}
