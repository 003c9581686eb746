/** Image input through the library: chat messages with image parts, prompt layout, merge, decode. */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { generate, imagePrompt, imageSourceFromUrl, loadModel, promptIds, traceModel } from '../src/index.js';
import { FIXTURES } from './helpers/paths.js';
import { makeGemma4VisionDir } from './helpers/vision-model.js';

describe('image prompts (gemma4-vision-tiny with a byte-level tokenizer)', () => {
  const dir = makeGemma4VisionDir();
  const image = join(dir, 'image.png');

  it('expands each image part to <|image> + N x <|image|> + <image|> and overrides exactly those rows', async () => {
    const loaded = await loadModel(dir);
    const ip = await imagePrompt(loaded, [{ role: 'user', content: [{ type: 'image', path: image }, { type: 'text', text: 'What is it?' }, { type: 'image', path: image }] }]);
    expect(ip.imageTokens).toEqual([64, 64]);
    expect(ip.spans.length).toBe(2);
    for (const s of ip.spans) {
      expect(ip.ids[s.start - 1]).toBe(500);
      expect(ip.ids[s.end]).toBe(504);
      expect(Array.from(ip.ids.subarray(s.start, s.end)).every((id) => id === 502)).toBe(true);
    }
    expect(Array.from(ip.overrides.rows)).toEqual(ip.spans.flatMap((s) => Array.from({ length: s.end - s.start }, (_, i) => s.start + i)));
    expect(ip.overrides.values.length).toBe(128 * 64);
    expect(ip.decodeEmbedding).toBeUndefined(); // Gemma 4: no hard vision vocabulary
  });

  it('generate() with an image part equals a forward with the image overrides (greedy), and differs from text only', async () => {
    const loaded = await loadModel(dir);
    const messages = [{ role: 'user' as const, content: [{ type: 'image' as const, path: image }, { type: 'text' as const, text: 'Describe.' }] }];
    const gen = generate(loaded, messages, { temperature: 0, maxTokens: 4, prefillChunk: 7 });
    const got: number[] = [];
    for await (const t of gen) if (t.token >= 0) got.push(t.token);
    const ip = await imagePrompt(loaded, messages);
    const ref = traceModel(loaded.model, ip.ids, { decode: got.length, embeddingOverrides: ip.overrides, atomicSpans: ip.spans });
    expect(got).toEqual(Array.from(ref.greedyIds!));
    expect((await gen.stats).promptTokens).toBe(ip.ids.length);
    const noImage = traceModel(loaded.model, ip.ids, { decode: 1 });
    expect(noImage.logits.subarray(-512).some((v, i) => Math.abs(v - ref.logits[ref.logits.length - 512 + i]!) > 1e-3)).toBe(true);
  });

  it('promptIds refuses image parts instead of dropping them', async () => {
    const loaded = await loadModel(dir);
    expect(() => promptIds(loaded, [{ role: 'user', content: [{ type: 'image', path: image }, { type: 'text', text: 'x' }] }])).toThrow(/image parts need their images encoded/);
  });

  it('noVision and text-only models refuse images clearly', async () => {
    const off = await loadModel(dir, { noVision: true });
    await expect(imagePrompt(off, 'hi', { images: [image] })).rejects.toThrow(/loaded with noVision/);
    const phi = await loadModel(join(FIXTURES, 'phi3-tiny-short'), { tokenizer: 'none' });
    await expect(imagePrompt(phi, 'hi', { images: [image] })).rejects.toThrow(/no vision tower/);
  });

  it('image URLs: data: URLs decode, remote URLs and (by default) local files are refused', () => {
    const src = imageSourceFromUrl(`data:image/png;base64,${Buffer.from([1, 2, 3]).toString('base64')}`);
    expect(Array.from(src as Uint8Array)).toEqual([1, 2, 3]);
    expect(() => imageSourceFromUrl('https://example.com/a.png')).toThrow(/remote URLs are not fetched/);
    expect(() => imageSourceFromUrl('/tmp/a.png')).toThrow(/local files are not allowed/);
    expect(imageSourceFromUrl('file:///tmp/a.png', { allowLocalFiles: true })).toBe('/tmp/a.png');
  });
});

describe('Gemma 3n image prefill inside a batch (gemma3n-vision-tiny)', () => {
  it('a batched prefill of an image prompt next to a shorter text prompt keeps per-layer inputs aligned', async () => {
    const { SafetensorsFile } = await import('@mlxcel/tensor');
    const { traceImages } = await import('../src/index.js');
    const fdir = join(FIXTURES, 'gemma3n-vision-tiny');
    const loaded = await loadModel(fdir, { tokenizer: 'none' });
    const exp = SafetensorsFile.open(join(fdir, 'expected.safetensors'));
    const ids = exp.get('input_ids').toI32();
    const t = await traceImages(loaded, ids, [join(fdir, 'image.png')]);
    const m = loaded.model;
    const other = Int32Array.from([2, 10, 11, 12]);
    // Text prompt first so the image sequence's rows start mid-batch.
    const [, got] = m.forward([
      { ids: other, state: m.newState() },
      { ids, state: m.newState(), embeddingOverrides: t.overrides },
    ], { logits: 'all' });
    const want = exp.get('logits').toF32();
    let md = 0;
    for (let i = 0; i < want.length; i++) md = Math.max(md, Math.abs(got![i]! - want[i]!));
    expect(md).toBeLessThanOrEqual(3e-3);
  });
});

describe('Gemma 4 use_bidirectional_attention "vision" (random tiny weights)', async () => {
  const { readFileSync } = await import('node:fs');
  const { randomModel } = await import('../src/index.js');
  const base = JSON.parse(readFileSync(join(FIXTURES, 'configs', 'gemma4-tiny-dense.json'), 'utf8')) as Record<string, any>;
  const make = (mode: string | null) => randomModel({ ...base, text_config: { ...base.text_config, use_bidirectional_attention: mode } }, { seed: 3 });
  const H = base.text_config.hidden_size as number, V = base.text_config.vocab_size as number;
  const ids = Int32Array.from([2, 10, 11, 500, 502, 502, 502, 502, 502, 504, 12, 13]);
  const span = { start: 4, end: 9 };
  const overrides = (bump: number) => {
    const rows = Int32Array.from([4, 5, 6, 7, 8]);
    const values = new Float32Array(5 * H);
    for (let i = 0; i < values.length; i++) values[i] = Math.sin(i * 0.37) * 0.5;
    values[4 * H] += bump; // perturb the LAST image row only
    return { rows, values };
  };
  const firstImageRow = (m: ReturnType<typeof make>, bump: number) =>
    traceModel(m, ids, { embeddingOverrides: overrides(bump), atomicSpans: [span] }).logits.slice(4 * V, 5 * V);
  const differs = (a: Float32Array, b: Float32Array) => a.some((v, i) => Math.abs(v - b[i]!) > 1e-6);

  it('an image row sees later rows of its span with "vision", not without', () => {
    const bi = make('vision'), causal = make(null);
    expect(differs(firstImageRow(bi, 0), firstImageRow(bi, 3))).toBe(true);
    expect(differs(firstImageRow(causal, 0), firstImageRow(causal, 3))).toBe(false);
  });

  it('chunked prefill (boundaries moved out of the span) equals one pass', () => {
    const m = make('vision');
    const one = traceModel(m, ids, { embeddingOverrides: overrides(1), atomicSpans: [span], decode: 3 });
    const chunked = traceModel(m, ids, { embeddingOverrides: overrides(1), atomicSpans: [span], decode: 3, chunk: 5 });
    let md = 0;
    for (let i = 0; i < one.logits.length; i++) md = Math.max(md, Math.abs(one.logits[i]! - chunked.logits[i]!));
    expect(md).toBeLessThan(1e-4);
    expect(Array.from(chunked.greedyIds!)).toEqual(Array.from(one.greedyIds!));
  });

  it('other use_bidirectional_attention values are refused', () => {
    expect(() => make('all')).toThrow(/use_bidirectional_attention.*only null or "vision"/);
  });
});
