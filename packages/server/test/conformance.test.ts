/**
 * Conformance with the OpenAI Chat Completions and Completions references, driven by the official
 * `openai` SDK and the Vercel AI SDK against a spawned `mlxcel serve`; every response body and
 * stream chunk is checked against the server's response schemas.
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, streamText } from 'ai';
import Ajv from 'ajv';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultKvStorage, loadModel, loadTokenizer } from '@mlxcel/engine';
import { chatChunkSchema, chatCompletionSchema, completionSchema, modelListSchema, modelSchema } from '../src/schemas.js';
import { post, serve, sseEvents, type Served } from './helpers/serve.js';
import { tinyModel } from './helpers/tiny-model.js';

const ajv = new Ajv();
const valid = {
  chat: ajv.compile(chatCompletionSchema),
  chunk: ajv.compile(chatChunkSchema),
  completion: ajv.compile(completionSchema),
  model: ajv.compile(modelSchema),
  models: ajv.compile(modelListSchema),
};
function expectValid(check: keyof typeof valid, body: unknown): void {
  const ok = valid[check](body);
  expect(ok, `${check}: ${JSON.stringify(valid[check].errors)} in ${JSON.stringify(body).slice(0, 400)}`).toBe(true);
}

const MSGS = [{ role: 'user' as const, content: 'Tell me a story' }];

describe('OpenAI conformance', () => {
  let srv: Served;
  let client: OpenAI;
  beforeAll(async () => {
    srv = await serve(['--no-webui', '--model-name', 'tiny,tiny-alias']);
    client = new OpenAI({ baseURL: `${srv.base}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  afterAll(async () => srv?.stop());

  it('chat: non-streaming response has the reference fields', async () => {
    const r = await client.chat.completions.create({ model: 'tiny', messages: MSGS, max_tokens: 6, temperature: 0 });
    expectValid('chat', r);
    expect(r.object).toBe('chat.completion');
    expect(r.model).toBe('tiny');
    expect(r.system_fingerprint).toMatch(/^fp_/);
    expect(r.choices[0]!.message).toEqual({ role: 'assistant', content: expect.any(String), refusal: null });
    expect(r.choices[0]!.logprobs).toBeNull();
    expect(r.choices[0]!.finish_reason).toBe('length');
    expect(r.usage!.completion_tokens).toBe(6);
    expect(r.usage!.total_tokens).toBe(r.usage!.prompt_tokens + 6);
  });

  it('chat: stream() + finalChatCompletion() equals the non-streaming answer; chunks carry delta.role first', async () => {
    const whole = await client.chat.completions.create({ model: 'tiny', messages: MSGS, max_tokens: 8, temperature: 0 });
    const stream = client.chat.completions.stream({ model: 'tiny', messages: MSGS, max_tokens: 8, temperature: 0 });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    stream.on('chunk', (c) => chunks.push(c));
    const final = await stream.finalChatCompletion();
    expect(final.choices[0]!.message.content).toBe(whole.choices[0]!.message.content);
    expect(final.choices[0]!.message.role).toBe('assistant');
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    for (const c of chunks) expectValid('chunk', c);
    // Without stream_options.include_usage there is no usage anywhere.
    expect(chunks.every((c) => c.usage === undefined)).toBe(true);
  });

  it('chat: include_usage adds one final chunk with choices: [] and the usage', async () => {
    const stream = await client.chat.completions.create({ model: 'tiny', messages: MSGS, max_tokens: 5, temperature: 0, stream: true, stream_options: { include_usage: true } });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const c of stream) chunks.push(c);
    for (const c of chunks) expectValid('chunk', c);
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage!.completion_tokens).toBe(5);
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe('length');
  });

  it('a prompt that starts like an earlier one reports the tokens it reused (usage.prompt_tokens_details.cached_tokens), with the same answer', async () => {
    const system = { role: 'system' as const, content: `You are a careful assistant. ${'Answer briefly, precisely and politely. '.repeat(40)}` };
    const ask = (c: OpenAI, q: string) => c.chat.completions.create({ model: 'tiny', messages: [system, { role: 'user', content: q }], max_tokens: 6, temperature: 0 });
    const first = await ask(client, 'What is a prefix cache?');
    const second = await ask(client, 'Why is the sky blue?');
    for (const r of [first, second]) expectValid('chat', r);
    expect(first.usage!.prompt_tokens_details!.cached_tokens).toBe(0);
    const cached = second.usage!.prompt_tokens_details!.cached_tokens!;
    expect(cached).toBeGreaterThan(200);
    expect(cached % 64).toBe(0); // restores end on the prefix cache's prefill grid
    expect(cached).toBeLessThan(second.usage!.prompt_tokens);
    // Completions: same rule, raw text.
    const text = `Once upon a time ${'there was a long and winding road. '.repeat(30)}`;
    const c1 = await post(srv.base, '/v1/completions', { prompt: `${text}The end.`, max_tokens: 3, temperature: 0 });
    const c2 = await post(srv.base, '/v1/completions', { prompt: `${text}And then?`, max_tokens: 3, temperature: 0 });
    expectValid('completion', c2.json);
    expect([c1.json.usage.prompt_tokens_details.cached_tokens, c2.json.usage.prompt_tokens_details.cached_tokens > 0]).toEqual([0, true]);
    // A server without the prefix cache answers the second question the same, having reused nothing.
    const plain = await serve(['--no-webui', '--model-name', 'tiny', '--no-prefix-cache', '--kv-budget', '256']);
    try {
      const other = await ask(new OpenAI({ baseURL: `${plain.base}/v1`, apiKey: 'unused', maxRetries: 0 }), 'Why is the sky blue?');
      expect(other.usage!.prompt_tokens_details!.cached_tokens).toBe(0);
      expect(other.choices[0]!.message.content).toBe(second.choices[0]!.message.content);
    } finally {
      await plain.stop();
    }
  });

  it('chat: n: 3 shares one prompt; greedy choices equal the n: 1 answer, seeded ones are reproducible', async () => {
    const one = await client.chat.completions.create({ model: 'tiny', messages: MSGS, max_tokens: 6, temperature: 0 });
    const three = await client.chat.completions.create({ model: 'tiny', messages: MSGS, max_tokens: 6, temperature: 0, n: 3 });
    expectValid('chat', three);
    expect(three.choices.map((c) => c.index)).toEqual([0, 1, 2]);
    for (const c of three.choices) expect(c.message.content).toBe(one.choices[0]!.message.content);
    expect(three.usage!.prompt_tokens).toBe(one.usage!.prompt_tokens);
    expect(three.usage!.completion_tokens).toBe(18);
    const seeded = () => client.chat.completions.create({ model: 'tiny', messages: MSGS, max_tokens: 8, temperature: 1, n: 3, seed: 7 });
    const [a, b] = [await seeded(), await seeded()];
    expect(a.choices.map((c) => c.message.content)).toEqual(b.choices.map((c) => c.message.content));
    expect(new Set(a.choices.map((c) => c.message.content)).size).toBeGreaterThan(1);
    // Streamed n: 3 interleaves the choices by index; each opens with its role.
    const stream = await client.chat.completions.create({ model: 'tiny', messages: MSGS, max_tokens: 6, temperature: 0, n: 3, stream: true });
    const text = ['', '', ''];
    const roles = new Set<number>();
    for await (const c of stream) {
      for (const ch of c.choices) {
        if (ch.delta.role) roles.add(ch.index);
        text[ch.index] += ch.delta.content ?? '';
      }
    }
    expect(roles.size).toBe(3);
    expect(text).toEqual(three.choices.map((c) => c.message.content));
  });

  it('chat: logprobs and top_logprobs', async () => {
    const r = await client.chat.completions.create({ model: 'tiny', messages: MSGS, max_tokens: 4, temperature: 0, logprobs: true, top_logprobs: 3 });
    expectValid('chat', r);
    const content = r.choices[0]!.logprobs!.content!;
    expect(content).toHaveLength(4);
    for (const t of content) {
      expect(t.top_logprobs).toHaveLength(3);
      expect(t.logprob).toBeLessThanOrEqual(0);
      // Greedy: the sampled token is the most likely one.
      expect(t.logprob).toBeCloseTo(t.top_logprobs[0]!.logprob, 5);
      expect(t.top_logprobs[0]!.logprob).toBeGreaterThanOrEqual(t.top_logprobs[1]!.logprob);
      expect(t.bytes).toEqual([...Buffer.from(t.token, 'utf8')]);
    }
    expect(content.map((t) => t.token).join('')).toBe(r.choices[0]!.message.content);
    const plain = await client.chat.completions.create({ model: 'tiny', messages: MSGS, max_tokens: 4, temperature: 0, logprobs: true });
    expect(plain.choices[0]!.logprobs!.content!.every((t) => t.top_logprobs.length === 0)).toBe(true);
  });

  it('chat: text content parts are joined (same answer as the plain string); developer maps to system', async () => {
    const plain = await client.chat.completions.create({ model: 'tiny', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello world' }], max_tokens: 6, temperature: 0 });
    const parts = await client.chat.completions.create({
      model: 'tiny-alias',
      messages: [{ role: 'developer', content: [{ type: 'text', text: 'Be ' }, { type: 'text', text: 'brief.' }] }, { role: 'user', content: [{ type: 'text', text: 'Hello' }, { type: 'text', text: ' world' }] }],
      max_tokens: 6,
      temperature: 0,
    });
    expect(parts.choices[0]!.message.content).toBe(plain.choices[0]!.message.content);
    expect(parts.usage!.prompt_tokens).toBe(plain.usage!.prompt_tokens);
    expect(parts.model).toBe('tiny');
  });

  it('completions: string, list of strings, token ids and lists of token ids; echo; logprobs', async () => {
    const tok = loadTokenizer(tinyModel());
    const a = 'Once upon a time', b = 'The sky is';
    const one = await client.completions.create({ model: 'tiny', prompt: a, max_tokens: 5, temperature: 0 });
    expectValid('completion', one);
    expect(one.object).toBe('text_completion');
    expect(one.usage!.prompt_tokens).toBe(tok.encode(a).length);
    const ids = await client.completions.create({ model: 'tiny', prompt: tok.encode(a), max_tokens: 5, temperature: 0 });
    expect(ids.choices[0]!.text).toBe(one.choices[0]!.text);
    const two = await client.completions.create({ model: 'tiny', prompt: [a, b], max_tokens: 5, temperature: 0, n: 2 });
    expectValid('completion', two);
    expect(two.choices.map((c) => c.index)).toEqual([0, 1, 2, 3]);
    expect(two.choices[0]!.text).toBe(one.choices[0]!.text);
    expect(two.choices[1]!.text).toBe(one.choices[0]!.text);
    const bAlone = await client.completions.create({ model: 'tiny', prompt: b, max_tokens: 5, temperature: 0 });
    expect(two.choices[2]!.text).toBe(bAlone.choices[0]!.text);
    const idLists = await client.completions.create({ model: 'tiny', prompt: [tok.encode(a), tok.encode(b)], max_tokens: 5, temperature: 0 });
    expect(idLists.choices.map((c) => c.text)).toEqual([one.choices[0]!.text, bAlone.choices[0]!.text]);
    const echo = await client.completions.create({ model: 'tiny', prompt: a, max_tokens: 5, temperature: 0, echo: true });
    expect(echo.choices[0]!.text).toBe(a + one.choices[0]!.text);
    const lp = await client.completions.create({ model: 'tiny', prompt: a, max_tokens: 5, temperature: 0, logprobs: 2 });
    expectValid('completion', lp);
    const l = lp.choices[0]!.logprobs!;
    expect(l.tokens).toHaveLength(5);
    expect(l.token_logprobs).toHaveLength(5);
    expect(l.top_logprobs!.every((t) => Object.keys(t).length <= 2)).toBe(true);
    expect(l.tokens!.join('')).toBe(lp.choices[0]!.text);
    expect(l.text_offset![0]).toBe(0);
  });

  it('completions: echo with logprobs gives the prompt tokens\' logprobs (the first null), as a full forward pass does', async () => {
    const tok = loadTokenizer(tinyModel());
    const prompt = 'Once upon a time there was';
    const ids = Int32Array.from(tok.encode(prompt));
    const r = await client.completions.create({ model: 'tiny', prompt, max_tokens: 3, temperature: 0, echo: true, logprobs: 2 });
    expectValid('completion', r);
    const l = r.choices[0]!.logprobs!;
    expect(l.tokens).toHaveLength(ids.length + 3);
    expect(l.token_logprobs![0]).toBeNull();
    expect(l.top_logprobs![0]).toBeNull();
    expect(r.choices[0]!.text.startsWith(prompt)).toBe(true);
    // The reference: one forward pass over the prompt, log-softmax of each row, with the KV storage
    // `mlxcel serve` runs by default (--matmul fast: an f16 cache).
    const loaded = await loadModel(tinyModel());
    const V = loaded.model.vocabSize;
    const logits = loaded.model.forward([{ ids, state: loaded.model.newState({ kvCache: defaultKvStorage('fast') }) }], { logits: 'all' })[0]!;
    for (let t = 1; t < ids.length; t++) {
      const row = logits.subarray((t - 1) * V, t * V);
      let max = -Infinity, sum = 0;
      for (const v of row) max = Math.max(max, v);
      for (const v of row) sum += Math.exp(v - max);
      expect(Math.abs(l.token_logprobs![t]! - (row[ids[t]!]! - max - Math.log(sum)))).toBeLessThanOrEqual(1e-4);
      expect(Object.keys(l.top_logprobs![t]!).length).toBeLessThanOrEqual(2);
    }
    // The generated tokens' entries follow the prompt's, as without echo.
    const plain = await client.completions.create({ model: 'tiny', prompt, max_tokens: 3, temperature: 0, logprobs: 2 });
    expect(l.token_logprobs!.slice(ids.length)).toEqual(plain.choices[0]!.logprobs!.token_logprobs);
    // Streamed, the prompt's entries come first.
    const s = await fetch(`${srv.base}/v1/completions`, { method: 'POST', body: JSON.stringify({ prompt, max_tokens: 3, temperature: 0, echo: true, logprobs: 1, stream: true }) });
    const events = sseEvents(await s.text()).filter((e) => e !== '[DONE]');
    for (const e of events) expectValid('completion', e);
    expect(events[0].choices[0].text).toBe(prompt);
    expect(events[0].choices[0].logprobs.token_logprobs).toHaveLength(ids.length);
  });

  it('completions: best_of returns the candidates with the best mean logprob', async () => {
    const req = { model: 'tiny', prompt: 'The sky is', max_tokens: 4, temperature: 1, seed: 11 };
    // best_of samples the same candidates as n = best_of with the same seed (choice k: seed + k).
    const all = await client.completions.create({ ...req, n: 4, logprobs: 0 });
    const mean = (c: OpenAI.CompletionChoice) => c.logprobs!.token_logprobs!.reduce((a, b) => a + b, 0) / c.logprobs!.token_logprobs!.length;
    const ranked = [...all.choices].sort((a, b) => mean(b) - mean(a));
    const best = await client.completions.create({ ...req, n: 2, best_of: 4 });
    expectValid('completion', best);
    expect(best.choices.map((c) => c.index)).toEqual([0, 1]);
    expect(best.choices.map((c) => c.text)).toEqual(ranked.slice(0, 2).map((c) => c.text));
    expect(best.choices[0]!.logprobs).toBeNull();
    // Usage counts every candidate generated.
    expect(best.usage!.completion_tokens).toBe(all.usage!.completion_tokens);
  });

  it('completions: streaming and include_usage', async () => {
    const r = await fetch(`${srv.base}/v1/completions`, { method: 'POST', body: JSON.stringify({ prompt: 'Once', max_tokens: 4, temperature: 0, stream: true, stream_options: { include_usage: true } }) });
    expect(r.headers.get('content-type')).toMatch(/text\/event-stream/);
    const events = sseEvents(await r.text());
    expect(events.at(-1)).toBe('[DONE]');
    for (const e of events.slice(0, -1)) expectValid('completion', e);
    const usage = events.at(-2);
    expect(usage.choices).toEqual([]);
    expect(usage.usage.completion_tokens).toBe(4);
    expect(events.at(-3).choices[0].finish_reason).toBe('length');
  });

  it('models: list, GET /v1/models/{id} by name and alias, unknown id 404', async () => {
    const list = await client.models.list();
    expect(list.data.map((m) => m.id)).toEqual(['tiny']);
    const raw = await (await fetch(`${srv.base}/v1/models`)).json();
    expectValid('models', raw);
    const m = await client.models.retrieve('tiny');
    expectValid('model', m);
    expect((await client.models.retrieve('tiny-alias')).id).toBe('tiny');
    // The folder name is an alias too; the absolute path is never reported.
    expect(JSON.stringify(raw)).not.toContain('/');
    await expect(client.models.retrieve('gpt-4o')).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('the Vercel AI SDK: generateText and streamText (with usage)', async () => {
    const provider = createOpenAICompatible({ name: 'mlxcel', baseURL: `${srv.base}/v1`, includeUsage: true });
    const expected = await client.chat.completions.create({ model: 'tiny', messages: MSGS, max_tokens: 6, temperature: 0 });
    const g = await generateText({ model: provider('tiny'), prompt: MSGS[0]!.content, maxOutputTokens: 6, temperature: 0 });
    expect(g.text).toBe(expected.choices[0]!.message.content);
    expect(g.usage.outputTokens).toBe(6);
    expect(g.finishReason).toBe('length');
    const s = streamText({ model: provider('tiny'), prompt: MSGS[0]!.content, maxOutputTokens: 6, temperature: 0 });
    let text = '';
    for await (const part of s.textStream) text += part;
    expect(text).toBe(expected.choices[0]!.message.content);
    expect((await s.usage).outputTokens).toBe(6);
    expect((await s.usage).inputTokens).toBe(expected.usage!.prompt_tokens);
  });

  it('raw HTTP: curl-style bodies (no JSON content type) are read as JSON', async () => {
    const r = await fetch(`${srv.base}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: JSON.stringify({ messages: MSGS, max_tokens: 2 }) });
    expect(r.status).toBe(200);
    const j = await post(srv.base, '/v1/chat/completions', { messages: MSGS, max_tokens: 2, stop: ['zzz'] });
    expect(j.status).toBe(200);
  });
});
