/**
 * Image and audio content parts against a spawned `mlxcel serve`: `image_url` data: URLs through the
 * official openai SDK on a Gemma 4 vision checkpoint with a tokenizer (the gemma4-vision-tiny fixture
 * plus a byte-level tokenizer and the real Gemma 4 template, as the CLI's `generate --image` tests
 * build it), the answer equal to the library's generate() for the same image and prompt; local files
 * only inside --allow-local-files; remote URLs, bad base64, undecodable and oversized images refused
 * with 400s naming the part; `input_audio` WAV on the gemma4-audio-tiny checkpoint likewise.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { audioPrompt, defaultKvStorage, generate, loadModel, type ChatMessage } from '@mlxcel/engine';
import { SafetensorsFile } from '@mlxcel/tensor';
import { makeGemma3nVisionDir, makeGemma4VisionDir } from '../../engine/test/helpers/vision-model.js';
import { FIXTURES } from '../../engine/test/helpers/paths.js';
import { hugeHeaderPng, rgbPng } from '../../vision/test/png.js';
import type { ApiError } from '../src/errors.js';
import { refuseMediaCombination } from '../src/unsupported.js';
import { post, serve, sseEvents, type Served } from './helpers/serve.js';

const CHAT = '/v1/chat/completions';

/** A w × h PNG of one RGB colour. */
function solidPng(w: number, h: number, rgb: [number, number, number]): Buffer {
  const row = Buffer.concat([Buffer.from([0]), Buffer.alloc(w * 3).map((_, i) => rgb[i % 3]!)]);
  return rgbPng(w, h, Buffer.concat(Array.from({ length: h }, () => row)));
}

/** 16-bit PCM mono WAV of `samples` in [-1, 1]. */
function wav(samples: Float32Array, rate = 16000): Buffer {
  const data = Buffer.alloc(samples.length * 2);
  samples.forEach((v, i) => data.writeInt16LE(Math.max(-32768, Math.min(32767, Math.round(v * 32767))), i * 2));
  const h = Buffer.alloc(44);
  h.write('RIFF', 0, 'ascii');
  h.writeUInt32LE(36 + data.length, 4);
  h.write('WAVEfmt ', 8, 'ascii');
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20);
  h.writeUInt16LE(1, 22);
  h.writeUInt32LE(rate, 24);
  h.writeUInt32LE(rate * 2, 28);
  h.writeUInt16LE(2, 32);
  h.writeUInt16LE(16, 34);
  h.write('data', 36, 'ascii');
  h.writeUInt32LE(data.length, 40);
  return Buffer.concat([h, data]);
}

const user = (content: unknown) => [{ role: 'user', content }];
const imagePart = (url: string) => ({ type: 'image_url', image_url: { url } });

/** A greedy generate() run drained: its text and the logprobs of its real (non-marker) tokens. */
async function drain(g: AsyncIterable<{ text: string; token: number; logprob: number }>): Promise<{ text: string; logprobs: number[] }> {
  let text = '';
  const logprobs: number[] = [];
  for await (const t of g) {
    text += t.text;
    if (t.token >= 0) logprobs.push(t.logprob);
  }
  return { text, logprobs };
}

/** The server's per-token logprobs equal generate()'s within 1e-4 (the worker and this thread run the same kernels). */
// The KV storage `mlxcel serve` runs by default (--matmul fast: an f16 cache): the in-process references
// below use it too, so server and reference do the same arithmetic.
const SERVE_KV = defaultKvStorage('fast');

function expectLogprobsMatch(r: OpenAI.Chat.ChatCompletion, want: number[]): void {
  const got = r.choices[0]!.logprobs!.content!.map((c) => c.logprob);
  expect(got.length).toBe(want.length);
  got.forEach((v, i) => expect(Math.abs(v - want[i]!)).toBeLessThanOrEqual(1e-4));
}

describe('image_url parts (Gemma 4 vision checkpoint)', () => {
  const dir = makeGemma4VisionDir();
  const png = readFileSync(join(dir, 'image.png'));
  const dataUrl = `data:image/png;base64,${png.toString('base64')}`;
  // A folder for --allow-local-files: the image, a sub-folder, and a link that leads out of it.
  const files = mkdtempSync(join(tmpdir(), 'mlxcel-local-files-'));
  copyFileSync(join(dir, 'image.png'), join(files, 'image.png'));
  mkdirSync(join(files, 'sub'));
  const outside = join(mkdtempSync(join(tmpdir(), 'mlxcel-outside-')), 'secret.png');
  copyFileSync(join(dir, 'image.png'), outside);
  symlinkSync(outside, join(files, 'link.png'));
  let open: Served, closed: Served;
  let client: OpenAI;
  beforeAll(async () => {
    [open, closed] = await Promise.all([
      serve(['--no-webui', '--model-name', 'vis', '--allow-local-files', files], {}, dir),
      serve(['--no-webui', '--model-name', 'vis', '--log-prompts'], {}, dir),
    ]);
    client = new OpenAI({ baseURL: `${closed.base}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  afterAll(async () => Promise.all([open?.stop(), closed?.stop()]));

  it('openai SDK with a data: URL answers what generate() gives for the same image and prompt (greedy)', async () => {
    const r = await client.chat.completions.create({
      model: 'vis', temperature: 0, max_tokens: 6, logprobs: true,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Describe.' }, { type: 'image_url', image_url: { url: dataUrl } }] }],
    });
    const loaded = await loadModel(dir);
    const messages: ChatMessage[] = [{ role: 'user', content: [{ type: 'text', text: 'Describe.' }, { type: 'image', image: new Uint8Array(png) } as never] }];
    const g = generate(loaded, messages, { temperature: 0, maxTokens: 6, kvCache: SERVE_KV });
    const { text, logprobs } = await drain(g);
    const stats = await g.stats;
    expect(r.choices[0]!.message.content).toBe(text);
    expect(r.usage!.prompt_tokens).toBe(stats.promptTokens);
    expect(r.usage!.completion_tokens).toBe(stats.generatedTokens);
    // 64 soft tokens + the image markers are in the prompt.
    expect(stats.promptTokens).toBeGreaterThan(66);
    expectLogprobsMatch(r, logprobs);
    const got = r.choices[0]!.logprobs!.content!.map((c) => c.logprob);

    // Another image changes the answer's logprobs: the pixels reach the model.
    const red = `data:image/png;base64,${solidPng(96, 96, [255, 0, 0]).toString('base64')}`;
    const other = await client.chat.completions.create({
      model: 'vis', temperature: 0, max_tokens: 6, logprobs: true,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Describe.' }, { type: 'image_url', image_url: { url: red } }] }],
    });
    const otherLp = other.choices[0]!.logprobs!.content!.map((c) => c.logprob);
    expect(Math.max(...otherLp.map((v, i) => Math.abs(v - (got[i] ?? 0))))).toBeGreaterThan(1e-3);

    // Streamed: the same text.
    const s = await fetch(`${closed.base}${CHAT}`, { method: 'POST', body: JSON.stringify({ temperature: 0, max_tokens: 6, stream: true, messages: user([{ type: 'text', text: 'Describe.' }, imagePart(dataUrl)]) }) });
    const streamed = sseEvents(await s.text()).filter((e) => e !== '[DONE]').map((e) => e.choices?.[0]?.delta?.content ?? '').join('');
    expect(streamed).toBe(text);
    // --log-prompts logs the messages with the image's size, not its bytes.
    expect(closed.stdout()).toContain(`data:image/png;base64,<${dataUrl.length} characters>`);
    expect(closed.stdout()).not.toContain(png.toString('base64').slice(0, 200));
  });

  it('local files: only with --allow-local-files, only inside its folder, only regular files', async () => {
    expect(await (await fetch(`${open.base}/health`)).json()).toMatchObject({ image_input: true, audio_input: false });
    const ask = (srv: Served, url: string) => post(srv.base, CHAT, { temperature: 0, max_tokens: 6, messages: user([{ type: 'text', text: 'Describe.' }, imagePart(url)]) });
    const want = (await ask(open, dataUrl)).json.choices[0].message.content;
    for (const url of ['image.png', join(files, 'image.png'), pathToFileURL(join(files, 'image.png')).href]) {
      const r = await ask(open, url);
      expect(r.status, `${url}: ${JSON.stringify(r.json)}`).toBe(200);
      expect(r.json.choices[0].message.content).toBe(want);
    }
    const refused: [string, string][] = [
      ['../secret.png', 'local_file_refused'],
      [outside, 'local_file_refused'],
      ['link.png', 'local_file_refused'],
      ['sub', 'local_file_refused'],
      ['missing.png', 'file_not_found'],
    ];
    for (const [url, code] of refused) {
      const r = await ask(open, url);
      expect(r.status, url).toBe(400);
      expect(`${url}: ${r.json.error.param} ${r.json.error.code}`).toBe(`${url}: messages[0].content[1] ${code}`);
    }
    const without = await ask(closed, join(files, 'image.png'));
    expect(without.status).toBe(400);
    expect(without.json.error).toMatchObject({ param: 'messages[0].content[1]', code: 'local_file_refused' });
    expect(without.json.error.message).toMatch(/--allow-local-files/);
  });

  it('remote URLs, bad base64, undecodable and oversized images are 400s naming the part', async () => {
    const cases: [string, string, RegExp][] = [
      ['https://example.com/cat.png', 'remote_url_refused', /remote image URLs are not fetched/],
      ['data:image/png;base64,@@@not-base64@@@', 'invalid_base64', /not valid base64/],
      ['data:image/png,rawbytes', 'invalid_image_url', /only base64 data: URLs/],
      [`data:image/png;base64,${Buffer.from('this is not an image at all').toString('base64')}`, 'invalid_image', /./],
      [`data:image/png;base64,${hugeHeaderPng(30000, 30000).toString('base64')}`, 'invalid_image', /30000/],
    ];
    for (const [url, code, message] of cases) {
      const r = await post(open.base, CHAT, { max_tokens: 2, messages: [{ role: 'system', content: 'Be brief.' }, ...user([{ type: 'text', text: 'What?' }, imagePart(url)])] });
      expect(r.status, `${code}: ${JSON.stringify(r.json)}`).toBe(400);
      expect(`${r.json.error.param} ${r.json.error.code}`).toBe(`messages[1].content[1] ${code}`);
      expect(r.json.error.message).toMatch(message);
    }
    // The server still serves.
    expect((await post(open.base, CHAT, { max_tokens: 2, messages: user('hi') })).status).toBe(200);
  });
});

describe('image_url parts (Gemma 3n vision checkpoint: MobileNetV5 tower, hard vision ids in decode)', () => {
  const dir = makeGemma3nVisionDir();
  const png = readFileSync(join(dir, 'image.png'));
  let srv: Served;
  beforeAll(async () => {
    srv = await serve(['--no-webui', '--model-name', 'vis3n'], {}, dir);
  });
  afterAll(async () => srv?.stop());

  it('a data: URL answers what generate() gives (greedy), logprobs included', async () => {
    const client = new OpenAI({ baseURL: `${srv.base}/v1`, apiKey: 'unused', maxRetries: 0 });
    const r = await client.chat.completions.create({
      model: 'vis3n', temperature: 0, max_tokens: 6, logprobs: true,
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${png.toString('base64')}` } }, { type: 'text', text: 'What is this?' }] }],
    });
    const loaded = await loadModel(dir);
    const g = generate(loaded, [{ role: 'user', content: [{ type: 'image', image: new Uint8Array(png) } as never, { type: 'text', text: 'What is this?' }] }], { temperature: 0, maxTokens: 6, kvCache: SERVE_KV });
    const { text, logprobs } = await drain(g);
    const stats = await g.stats;
    expect(r.usage!.prompt_tokens).toBe(stats.promptTokens);
    expect(stats.promptTokens).toBeGreaterThan(256); // 256 soft tokens per Gemma 3n image
    expect(r.choices[0]!.message.content).toBe(text);
    expectLogprobsMatch(r, logprobs);
  });
});

describe('mlxcel serve --allow-local-files', () => {
  const CLI = fileURLToPath(new URL('../../cli/dist/bin.js', import.meta.url));
  it('is documented in --help and must name an existing folder', () => {
    const help = spawnSync(process.execPath, [CLI, 'serve', '--help'], { encoding: 'utf8' });
    expect(help.stdout).toMatch(/--allow-local-files <dir>/);
    const bad = spawnSync(process.execPath, [CLI, 'serve', '--demo', '--port', '0', '--allow-local-files', join(tmpdir(), 'mlxcel-no-such-folder')], { encoding: 'utf8', timeout: 60_000 });
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toMatch(/--allow-local-files: .*mlxcel-no-such-folder does not exist/);
  });
});

describe('input_audio parts (Gemma 4 audio checkpoint)', () => {
  // The gemma4-audio-tiny fixture with the vision fixture's tokenizer (same vocabulary and marker ids).
  const dir = mkdtempSync(join(tmpdir(), 'mlxcel-gemma4-audio-'));
  const vision = makeGemma4VisionDir();
  for (const f of ['config.json', 'model.safetensors']) copyFileSync(join(FIXTURES, 'gemma4-audio-tiny', f), join(dir, f));
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) copyFileSync(join(vision, f), join(dir, f));
  const wave = SafetensorsFile.open(join(FIXTURES, 'gemma4-audio-tiny', 'expected.safetensors')).get('waveform').toF32();
  const clip = wav(wave);
  let srv: Served;
  beforeAll(async () => {
    srv = await serve(['--no-webui', '--model-name', 'aud'], {}, dir);
  });
  afterAll(async () => srv?.stop());

  it('a WAV clip reaches the audio tower: the answer equals audioPrompt() + generate() (greedy)', async () => {
    const client = new OpenAI({ baseURL: `${srv.base}/v1`, apiKey: 'unused', maxRetries: 0 });
    const r = await client.chat.completions.create({
      model: 'aud', temperature: 0, max_tokens: 5, logprobs: true,
      messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: clip.toString('base64'), format: 'wav' } }, { type: 'text', text: 'Describe this.' }] }],
    });
    const loaded = await loadModel(dir);
    const p = audioPrompt(loaded, new Uint8Array(clip), 'Describe this.');
    const g = generate(loaded, p.ids, { temperature: 0, maxTokens: 5, embeddingOverrides: p.overrides, kvCache: SERVE_KV });
    const { logprobs } = await drain(g);
    expect(r.usage!.prompt_tokens).toBe(p.ids.length);
    expect(p.audioTokens).toBe(25);
    expectLogprobsMatch(r, logprobs);

    // Two clips in two turns: each gets its own 25 soft tokens.
    const clipPart = { type: 'input_audio' as const, input_audio: { data: clip.toString('base64'), format: 'wav' as const } };
    const two = await client.chat.completions.create({
      model: 'aud', temperature: 0, max_tokens: 2,
      messages: [{ role: 'user', content: [clipPart, { type: 'text', text: 'Describe this.' }] }, { role: 'assistant', content: 'ok' }, { role: 'user', content: [{ type: 'text', text: 'And this?' }, clipPart] }],
    });
    expect(two.usage!.prompt_tokens).toBeGreaterThan(p.ids.length + 25);
  });

  it('bad audio is a 400 naming the part; image parts are refused by a model without a vision tower', async () => {
    const img = await post(srv.base, CHAT, { max_tokens: 2, messages: user([{ type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }]) });
    expect(img.status).toBe(400);
    expect(`${img.json.error.param} ${img.json.error.code}`).toBe('messages[0].content[0] image_input_unsupported');
    const cases: [unknown, string, string][] = [
      [{ data: clip.toString('base64'), format: 'mp3' }, 'messages[0].content[0].input_audio.format', 'unsupported_parameter'],
      [{ data: Buffer.from('RIFF....WAVEnope').toString('base64'), format: 'wav' }, 'messages[0].content[0]', 'invalid_audio'],
      [{ data: '%%%', format: 'wav' }, 'messages[0].content[0]', 'invalid_base64'],
    ];
    for (const [input_audio, param, code] of cases) {
      const r = await post(srv.base, CHAT, { max_tokens: 2, messages: user([{ type: 'input_audio', input_audio }, { type: 'text', text: 'x' }]) });
      expect(r.status, JSON.stringify(r.json)).toBe(400);
      expect(`${r.json.error.param} ${r.json.error.code}`).toBe(`${param} ${code}`);
    }
  });
});

describe('media combinations this server does not take (src/unsupported.ts)', () => {
  const image = { type: 'image' as const, url: 'data:image/png;base64,AA==', where: 'messages[0].content[0]' };
  const audio = { type: 'audio' as const, data: 'AA==', where: 'messages[1].content[1]' };
  const refusal = (f: () => void) => {
    try {
      f();
    } catch (e) {
      return `${(e as ApiError).status} ${(e as ApiError).param} ${(e as ApiError).code}: ${(e as Error).message}`;
    }
    return 'accepted';
  };
  it('images and audio in one request, and media with tools, are 400s naming the part', () => {
    expect(refusal(() => refuseMediaCombination([{ role: 'user', content: [image] }, { role: 'user', content: [{ type: 'text', text: 'x' }, audio] }], false)))
      .toMatch(/^400 messages\[1\]\.content\[1\] unsupported_parameter: .*images or audio, not both/);
    expect(refusal(() => refuseMediaCombination([{ role: 'user', content: [image] }], true))).toMatch(/^400 messages\[0\]\.content\[0\] unsupported_parameter: .*together with 'tools'/);
    expect(refusal(() => refuseMediaCombination([{ role: 'user', content: [image, image] }], false))).toBe('accepted');
  });
});
