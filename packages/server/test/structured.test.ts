/**
 * Structured output and tools over HTTP with real clients: the official `openai` SDK (two-step tool
 * loop, streaming tool_calls) and the Vercel AI SDK (generateText with tools, toolChoice 'required').
 * The model is the random-weight demo checkpoint with the real Phi-3 template (JSON tool convention).
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, jsonSchema, stepCountIs, tool } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toolModel } from '../../engine/test/helpers/tool-model.js';
import { startServer, type RunningServer } from '../src/index.js';

const WEATHER = {
  type: 'object',
  properties: { city: { type: 'string', maxLength: 12 }, unit: { enum: ['celsius', 'fahrenheit'] } },
  required: ['city', 'unit'],
  additionalProperties: false,
} as const;
const TOOLS = [{ type: 'function' as const, function: { name: 'get_weather', description: 'Weather for a city', parameters: WEATHER } }];

describe('structured output and tools over HTTP', () => {
  let srv: RunningServer;
  let base = '';
  let client: OpenAI;
  beforeAll(async () => {
    // The helper builds the model from the engine's sources; the server takes the built package's type.
    srv = await startServer(toolModel('phi3', []) as unknown as Parameters<typeof startServer>[0], { port: 0, modelName: 'demo' });
    base = `http://${srv.host}:${srv.port}`;
    client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'none' });
  });
  afterAll(async () => srv.close());

  it('openai SDK: a two-step tool loop (forced call, then the tool result back)', async () => {
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Oslo?' }];
    const first = await client.chat.completions.create({ model: 'demo', messages, tools: TOOLS, tool_choice: 'required', parallel_tool_calls: false, temperature: 1, seed: 3, max_tokens: 80 });
    const choice = first.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    const call = choice.message.tool_calls![0]!;
    expect(call.type).toBe('function');
    if (call.type !== 'function') throw new Error('not a function call');
    expect(call.function.name).toBe('get_weather');
    const args = JSON.parse(call.function.arguments);
    expect(Object.keys(args)).toEqual(['city', 'unit']);
    messages.push(choice.message, { role: 'tool', tool_call_id: call.id, content: JSON.stringify({ temperature: 4 }) });
    const second = await client.chat.completions.create({ model: 'demo', messages, tools: TOOLS, tool_choice: 'none', temperature: 1, seed: 3, max_tokens: 8 });
    expect(typeof second.choices[0]!.message.content).toBe('string');
    expect(second.usage!.prompt_tokens).toBeGreaterThan(first.usage!.prompt_tokens);
  });

  it('openai SDK: streamed tool_calls deltas and response_format json_schema', async () => {
    const stream = await client.chat.completions.create({ model: 'demo', messages: [{ role: 'user', content: 'go' }], tools: TOOLS, tool_choice: { type: 'function', function: { name: 'get_weather' } }, stream: true, seed: 1, max_tokens: 80 });
    let args = '', name = '', finish = '';
    for await (const c of stream) {
      for (const d of c.choices[0]?.delta.tool_calls ?? []) { name += d.function?.name ?? ''; args += d.function?.arguments ?? ''; }
      finish = c.choices[0]?.finish_reason ?? finish;
    }
    expect(name).toBe('get_weather');
    expect(JSON.parse(args).city).toBeTypeOf('string');
    expect(finish).toBe('tool_calls');
    const r = await client.chat.completions.create({
      model: 'demo', messages: [{ role: 'user', content: 'json' }], seed: 2, max_tokens: 60,
      response_format: { type: 'json_schema', json_schema: { name: 'w', schema: WEATHER, strict: true } },
    });
    expect(Object.keys(JSON.parse(r.choices[0]!.message.content!))).toEqual(['city', 'unit']);
  });

  it('Vercel AI SDK: generateText with tools and toolChoice "required" runs the tool', async () => {
    const provider = createOpenAICompatible({ name: 'mlxcel', baseURL: `${base}/v1` });
    const seen: unknown[] = [];
    const result = await generateText({
      model: provider.chatModel('demo'),
      prompt: 'Weather in Rome?',
      tools: {
        get_weather: tool({
          description: 'Weather for a city',
          inputSchema: jsonSchema<{ city: string; unit: string }>(WEATHER as never),
          execute: async (input) => { seen.push(input); return { temperature: 20 }; },
        }),
      },
      toolChoice: 'required',
      stopWhen: stepCountIs(2),
      maxOutputTokens: 80,
      seed: 4,
      temperature: 1,
    });
    expect(result.steps.length).toBe(2);
    expect(result.steps[0]!.toolCalls[0]!.toolName).toBe('get_weather');
    expect(result.steps[0]!.toolResults[0]!.output).toEqual({ temperature: 20 });
    expect(seen.length).toBeGreaterThanOrEqual(1);
    for (const s of seen) expect(['celsius', 'fahrenheit']).toContain((s as { unit: string }).unit);
  });

  it('refusals are 400s naming the construct', async () => {
    const post = async (path: string, body: unknown) => {
      const r = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      return { status: r.status, error: ((await r.json()) as { error: { message: string; code: string } }).error };
    };
    const msgs = [{ role: 'user', content: 'x' }];
    let r = await post('/v1/chat/completions', { messages: msgs, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', properties: { a: { type: 'string', not: {} } } } } } });
    expect(r.status).toBe(400);
    expect(r.error.message).toMatch(/#\/properties\/a\/not: keyword "not" is not supported/);
    r = await post('/v1/completions', { prompt: 'x', grammar: 'root ::= "a" (' });
    expect(r.status).toBe(400);
    expect(r.error.message).toMatch(/grammar: line 1/);
    r = await post('/v1/chat/completions', { messages: msgs, grammar: 'root ::= nope\n' });
    expect(r.status).toBe(400);
    expect(r.error.message).toMatch(/rule "nope" is used/);
    r = await post('/v1/chat/completions', { messages: msgs, tools: TOOLS, tool_choice: { type: 'function', function: { name: 'missing' } } });
    expect(r.status).toBe(400);
    expect(r.error.message).toMatch(/tool_choice names function "missing"/);
    expect(r.error.code).toBe('TOOL_CHOICE_INVALID');
  });

  it('/v1/completions follows a grammar', async () => {
    const r = await fetch(`${base}/v1/completions`, { method: 'POST', body: JSON.stringify({ prompt: 'x', grammar: 'root ::= [0-9]{3} "-" [a-z]{2}\n', seed: 1 }) });
    const j = (await r.json()) as { choices: { text: string }[] };
    expect(j.choices[0]!.text).toMatch(/^[0-9]{3}-[a-z]{2}$/);
  });
});
