import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LoadedModel } from '@mlxcel/engine';
import { ToyModel } from '../../engine/test/helpers/toy-model.js';
import { startServer, type RunningServer } from '../src/index.js';

const loaded: LoadedModel = {
  dir: 'toy', config: {}, model: new ToyModel(64), tokenizer: null, chatTemplate: null, eosIds: [], generationConfig: {},
};

describe('OpenAI-compatible server', () => {
  let srv: RunningServer;
  let base = '';
  beforeAll(async () => {
    srv = await startServer(loaded, { port: 0, modelName: 'toy' });
    base = `http://${srv.host}:${srv.port}`;
  });
  afterAll(async () => srv.close());

  it('lists the model and answers health checks', async () => {
    expect(await (await fetch(`${base}/health`)).json()).toEqual({ status: 'ok' });
    const models = (await (await fetch(`${base}/v1/models`)).json()) as { data: { id: string }[] };
    expect(models.data[0]!.id).toBe('toy');
  });

  it('rejects malformed requests with a 400 naming the field', async () => {
    const bad = await fetch(`${base}/v1/completions`, { method: 'POST', body: '{"prompt": 3}' });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { message: string } }).error.message).toMatch(/"prompt"/);
    const badJson = await fetch(`${base}/v1/completions`, { method: 'POST', body: '{nope' });
    expect(badJson.status).toBe(400);
    const badTemp = await fetch(`${base}/v1/completions`, { method: 'POST', body: JSON.stringify({ prompt: 'x', temperature: -1 }) });
    expect(badTemp.status).toBe(400);
    expect(((await badTemp.json()) as { error: { message: string } }).error.message).toMatch(/temperature/);
    expect((await fetch(`${base}/v2/none`)).status).toBe(404);
  });

  it('chat without a tokenizer is a clear error, completions with token-free prompts fail clearly too', async () => {
    const r = await fetch(`${base}/v1/chat/completions`, { method: 'POST', body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] }) });
    expect(r.status).toBe(500);
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe('TOKENIZER_MISSING');
  });
});

describe('completions with a real tokenizer and chat template', () => {
  let srv: RunningServer;
  let base = '';
  beforeAll(async () => {
    const { loadTokenizer, loadChatTemplate } = await import('@mlxcel/engine');
    const { fileURLToPath } = await import('node:url');
    const dir = fileURLToPath(new URL('../../engine/assets/demo/', import.meta.url));
    const tokenizer = loadTokenizer(dir);
    const withTok: LoadedModel = {
      dir, config: {}, model: new ToyModel(32064), tokenizer, chatTemplate: loadChatTemplate({ dir, tokenizerConfig: tokenizer.tokenizerConfig }),
      eosIds: [32007], generationConfig: {},
    };
    srv = await startServer(withTok, { port: 0, modelName: 'toy-chat' });
    base = `http://${srv.host}:${srv.port}`;
  });
  afterAll(async () => srv.close());

  it('answers a chat completion with usage', async () => {
    const r = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ messages: [{ role: 'user', content: 'Hello' }], max_tokens: 5, temperature: 0 }),
    });
    expect(r.status).toBe(200);
    const j = (await r.json()) as { object: string; choices: { message: { role: string; content: string }; finish_reason: string }[]; usage: { completion_tokens: number; prompt_tokens: number } };
    expect(j.object).toBe('chat.completion');
    expect(j.choices[0]!.message.role).toBe('assistant');
    expect(j.usage.completion_tokens).toBe(5);
    expect(j.usage.prompt_tokens).toBeGreaterThan(3);
    expect(j.choices[0]!.finish_reason).toBe('length');
  });

  it('concurrent requests are decoded together and each gets what it gets alone', async () => {
    const bodies = ['Once upon', 'The sky is', 'Hello there, how', 'A', 'Numbers: 1 2 3'].map((prompt, i) => ({ prompt, max_tokens: 6 + i, temperature: 0 }));
    const ask = async (b: object) => ((await (await fetch(`${base}/v1/completions`, { method: 'POST', body: JSON.stringify(b) })).json()) as { choices: { text: string }[]; usage: { completion_tokens: number } });
    const alone: string[] = [];
    for (const b of bodies) alone.push((await ask(b)).choices[0]!.text);
    const together = await Promise.all(bodies.map(ask));
    expect(together.map((j) => j.choices[0]!.text)).toEqual(alone);
    expect(together.map((j) => j.usage.completion_tokens)).toEqual(bodies.map((b) => b.max_tokens));
  });

  it('streams server-sent events ending with [DONE]', async () => {
    const r = await fetch(`${base}/v1/completions`, { method: 'POST', body: JSON.stringify({ prompt: 'Once', max_tokens: 4, stream: true, temperature: 0 }) });
    expect(r.headers.get('content-type')).toMatch(/text\/event-stream/);
    const text = await r.text();
    const events = text.split('\n\n').filter(Boolean);
    expect(events.at(-1)).toBe('data: [DONE]');
    const last = JSON.parse(events.at(-2)!.slice('data: '.length)) as { choices: { finish_reason: string }[]; usage: { completion_tokens: number } };
    expect(last.choices[0]!.finish_reason).toBe('length');
    expect(last.usage.completion_tokens).toBe(4);
  });
});
