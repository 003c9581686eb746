/**
 * Structured output and tools against a spawned `mlxcel serve`, with real clients: the official
 * `openai` SDK (a two-step tool loop, streamed tool_calls deltas, json_schema output checked with
 * ajv) and the Vercel AI SDK (generateText with tools and toolChoice 'required'); grammars on both
 * routes; the refusals. The model is the tiny random-weight Phi-3 checkpoint with the real Phi-3
 * template, whose tool calls follow the engine's JSON convention.
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, jsonSchema, stepCountIs, tool } from 'ai';
import Ajv from 'ajv';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatChunkSchema, chatCompletionSchema, completionSchema } from '../src/schemas.js';
import { post, serve, sseEvents, type Served } from './helpers/serve.js';

const WEATHER = {
  type: 'object',
  properties: { city: { type: 'string', maxLength: 12 }, unit: { enum: ['celsius', 'fahrenheit'] } },
  required: ['city', 'unit'],
  additionalProperties: false,
} as const;
const TOOLS = [{ type: 'function' as const, function: { name: 'get_weather', description: 'Weather for a city', parameters: WEATHER } }];
const CHAT = '/v1/chat/completions';

const ajv = new Ajv();
const valid = { chat: ajv.compile(chatCompletionSchema), chunk: ajv.compile(chatChunkSchema), completion: ajv.compile(completionSchema) };

describe('structured output and tools over HTTP', () => {
  let srv: Served;
  let client: OpenAI;
  beforeAll(async () => {
    srv = await serve(['--no-webui', '--model-name', 'tiny']);
    client = new OpenAI({ baseURL: `${srv.base}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  afterAll(async () => srv?.stop());

  it('openai SDK: a two-step tool loop (a forced call, then the tool result back)', async () => {
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Oslo?' }];
    const first = await client.chat.completions.create({ model: 'tiny', messages, tools: TOOLS, tool_choice: 'required', parallel_tool_calls: false, temperature: 1, seed: 3, max_tokens: 80 });
    expect(valid.chat(first), JSON.stringify(valid.chat.errors)).toBe(true);
    const choice = first.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.tool_calls).toHaveLength(1);
    const call = choice.message.tool_calls![0]!;
    if (call.type !== 'function') throw new Error('not a function call');
    expect(call.id).toMatch(/^call_/);
    expect(call.function.name).toBe('get_weather');
    const args = JSON.parse(call.function.arguments);
    expect(ajv.validate(WEATHER, args), JSON.stringify(ajv.errors)).toBe(true);
    // The assistant turn goes back as the SDK gives it (content null, tool_calls), then the result.
    messages.push(choice.message, { role: 'tool', tool_call_id: call.id, content: JSON.stringify({ temperature: 4 }) });
    const second = await client.chat.completions.create({ model: 'tiny', messages, tools: TOOLS, tool_choice: 'none', temperature: 1, seed: 3, max_tokens: 8 });
    expect(valid.chat(second), JSON.stringify(valid.chat.errors)).toBe(true);
    expect(typeof second.choices[0]!.message.content).toBe('string');
    expect(second.choices[0]!.message.tool_calls).toBeUndefined();
    expect(second.choices[0]!.finish_reason).not.toBe('tool_calls');
    // The call and its result are in the second prompt.
    expect(second.usage!.prompt_tokens).toBeGreaterThan(first.usage!.prompt_tokens + 10);
  });

  it('openai SDK: streamed tool_calls deltas reassemble to the call the non-streamed request returns', async () => {
    const req = { model: 'tiny', messages: [{ role: 'user' as const, content: 'go' }], tools: TOOLS, tool_choice: { type: 'function' as const, function: { name: 'get_weather' } }, seed: 1, temperature: 1, max_tokens: 80 };
    const whole = await client.chat.completions.create(req);
    const wholeCall = whole.choices[0]!.message.tool_calls![0]!;
    if (wholeCall.type !== 'function') throw new Error('not a function call');
    const stream = await client.chat.completions.create({ ...req, stream: true });
    const calls = new Map<number, { id: string; name: string; args: string }>();
    let finish: string | null = null;
    for await (const c of stream) {
      expect(valid.chunk(c), JSON.stringify(valid.chunk.errors)).toBe(true);
      for (const d of c.choices[0]?.delta.tool_calls ?? []) {
        const acc = calls.get(d.index) ?? { id: '', name: '', args: '' };
        acc.id ||= d.id ?? '';
        acc.name += d.function?.name ?? '';
        acc.args += d.function?.arguments ?? '';
        calls.set(d.index, acc);
      }
      finish = c.choices[0]?.finish_reason ?? finish;
    }
    expect(finish).toBe('tool_calls');
    expect([...calls.keys()]).toEqual([0]);
    const streamed = calls.get(0)!;
    expect(streamed.id).toMatch(/^call_/);
    expect({ name: streamed.name, args: streamed.args }).toEqual({ name: 'get_weather', args: wholeCall.function.arguments });
    // The SDK's own accumulator agrees.
    const final = await client.chat.completions.stream({ ...req }).finalChatCompletion();
    const fc = final.choices[0]!.message.tool_calls![0]!;
    expect(fc.type === 'function' && fc.function.arguments).toBe(wholeCall.function.arguments);
  });

  it('response_format json_schema (strict): the output validates against the schema, for several seeds', async () => {
    const schema = {
      type: 'object',
      properties: {
        name: { type: 'string', maxLength: 10 },
        tags: { type: 'array', items: { enum: ['a', 'b', 'c'] }, minItems: 1, maxItems: 3 },
        score: { type: 'integer' },
        extra: { anyOf: [{ type: 'null' }, { type: 'boolean' }] },
        where: { $ref: '#/$defs/place' },
      },
      required: ['name', 'tags', 'score', 'extra', 'where'],
      additionalProperties: false,
      $defs: { place: { type: 'object', properties: { x: { type: 'number' }, kind: { const: 'point' } }, required: ['x', 'kind'], additionalProperties: false } },
    };
    const check = ajv.compile(schema);
    for (const seed of [1, 2, 3]) {
      const r = await client.chat.completions.create({
        model: 'tiny', messages: [{ role: 'user', content: 'json please' }], seed, temperature: 1, max_tokens: 120,
        response_format: { type: 'json_schema', json_schema: { name: 'thing', schema, strict: true } },
      });
      const text = r.choices[0]!.message.content!;
      expect(check(JSON.parse(text)), `${text}: ${JSON.stringify(check.errors)}`).toBe(true);
      expect(r.choices[0]!.finish_reason).toBe('stop');
    }
    const obj = await client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'x' }], seed: 5, temperature: 1, max_tokens: 60, response_format: { type: 'json_object' } });
    const parsed = JSON.parse(obj.choices[0]!.message.content!);
    expect(typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)).toBe(true);
  });

  it('Vercel AI SDK: generateText with tools and toolChoice "required" runs the tool', async () => {
    const provider = createOpenAICompatible({ name: 'mlxcel', baseURL: `${srv.base}/v1` });
    const seen: unknown[] = [];
    const result = await generateText({
      model: provider.chatModel('tiny'),
      prompt: 'Weather in Rome?',
      tools: {
        get_weather: tool({
          description: 'Weather for a city',
          inputSchema: jsonSchema<{ city: string; unit: string }>(WEATHER as never),
          execute: async (input) => {
            seen.push(input);
            return { temperature: 20 };
          },
        }),
      },
      toolChoice: 'required',
      stopWhen: stepCountIs(2),
      maxOutputTokens: 80,
      seed: 4,
      temperature: 1,
      maxRetries: 0,
    });
    expect(result.steps.length).toBe(2);
    expect(result.steps[0]!.finishReason).toBe('tool-calls');
    expect(result.steps[0]!.toolCalls[0]!.toolName).toBe('get_weather');
    expect(result.steps[0]!.toolResults[0]!.output).toEqual({ temperature: 20 });
    expect(seen.length).toBeGreaterThanOrEqual(2);
    for (const s of seen) expect(ajv.validate(WEATHER, s), JSON.stringify(s)).toBe(true);
  });

  it('grammar (GBNF) on /v1/completions and /v1/chat/completions, streamed too', async () => {
    const grammar = 'root ::= [0-9]{3} "-" [a-z]{2}\n';
    for (const seed of [1, 2]) {
      const r = await post(srv.base, '/v1/completions', { prompt: 'x', grammar, seed, temperature: 1, max_tokens: 20 });
      expect(r.status).toBe(200);
      expect(valid.completion(r.json)).toBe(true);
      expect(r.json.choices[0].text).toMatch(/^[0-9]{3}-[a-z]{2}$/);
      expect(r.json.choices[0].finish_reason).toBe('stop');
    }
    const c = await post(srv.base, CHAT, { messages: [{ role: 'user', content: 'x' }], grammar: 'root ::= "yes" | "no"', seed: 3, temperature: 1, max_tokens: 10 });
    expect(c.status).toBe(200);
    expect(['yes', 'no']).toContain(c.json.choices[0].message.content);
    const s = await fetch(`${srv.base}/v1/completions`, { method: 'POST', body: JSON.stringify({ prompt: 'x', grammar, seed: 1, temperature: 1, max_tokens: 20, stream: true }) });
    const text = sseEvents(await s.text()).filter((e) => e !== '[DONE]').map((e) => e.choices[0]?.text ?? '').join('');
    expect(text).toMatch(/^[0-9]{3}-[a-z]{2}$/);
  });

  it('tool_choice "auto": calls the model writes are parsed (two here, written under a grammar); parallel_tool_calls false keeps the first', async () => {
    const call = (city: string) => `<tool_call>{"name": "get_weather", "arguments": {"city": "${city}", "unit": "celsius"}}</tool_call>`;
    const grammar = `root ::= ${JSON.stringify(call('Oslo'))} "\\n" ${JSON.stringify(call('Rome'))}`;
    const body = { messages: [{ role: 'user', content: 'Weather?' }], tools: TOOLS, grammar, max_tokens: 300, temperature: 0 };
    const two = await post(srv.base, CHAT, body);
    expect(two.status, JSON.stringify(two.json)).toBe(200);
    expect(valid.chat(two.json), JSON.stringify(valid.chat.errors)).toBe(true);
    expect(two.json.choices[0].finish_reason).toBe('tool_calls');
    expect(two.json.choices[0].message.tool_calls.map((c: { function: { arguments: string } }) => JSON.parse(c.function.arguments).city)).toEqual(['Oslo', 'Rome']);
    const one = await post(srv.base, CHAT, { ...body, parallel_tool_calls: false });
    expect(one.json.choices[0].message.tool_calls.map((c: { function: { arguments: string } }) => JSON.parse(c.function.arguments).city)).toEqual(['Oslo']);
    // Streamed: the deltas carry index 0 and 1.
    const s = await fetch(`${srv.base}${CHAT}`, { method: 'POST', body: JSON.stringify({ ...body, stream: true }) });
    const deltas = sseEvents(await s.text()).filter((e) => e !== '[DONE]').flatMap((e) => e.choices[0]?.delta?.tool_calls ?? []);
    expect(deltas.map((d: { index: number; function: { name: string } }) => [d.index, d.function.name])).toEqual([[0, 'get_weather'], [1, 'get_weather']]);
  });

  it('refusals are 400s naming the construct and the field', async () => {
    const msgs = [{ role: 'user', content: 'x' }];
    const cases: { path?: string; body: Record<string, unknown>; param: string; message: RegExp }[] = [
      { body: { messages: msgs, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', properties: { a: { type: 'string', not: {} } } } } } }, param: 'response_format', message: /#\/properties\/a\/not: keyword "not" is not supported/ },
      { path: '/v1/completions', body: { prompt: 'x', grammar: 'root ::= "a" (' }, param: 'grammar', message: /line 1/ },
      { body: { messages: msgs, grammar: 'root ::= nope\n' }, param: 'grammar', message: /rule "nope" is used/ },
      { body: { messages: msgs, tools: TOOLS, tool_choice: { type: 'function', function: { name: 'missing' } } }, param: 'tool_choice', message: /tool_choice names function "missing"/ },
      { body: { messages: msgs, tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { a: { type: 'string', format: 'email' } } } } }], tool_choice: 'required' }, param: 'tools[0].function.parameters', message: /format "email" is not supported/ },
    ];
    for (const c of cases) {
      const r = await post(srv.base, c.path ?? CHAT, { max_tokens: 4, ...c.body });
      expect(r.status, JSON.stringify(r.json)).toBe(400);
      expect(r.json.error.param).toBe(c.param);
      expect(r.json.error.message).toMatch(c.message);
    }
    // Streaming requests are refused before the stream starts.
    const r = await post(srv.base, CHAT, { messages: msgs, stream: true, grammar: 'root ::= x' });
    expect(r.status).toBe(400);
    expect(r.json.error.param).toBe('grammar');
  });
});
