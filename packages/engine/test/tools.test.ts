import Ajv2020 from 'ajv/dist/2020.js';
import { describe, expect, test } from 'vitest';
import {
  type OpenAIMessage, type ToolDefinition, ToolCallStreamParser, compileConstraint, generate, gemma4ArgsToJson, parseToolCalls, planChatRequest, prepareChatRequest, toolFormatById,
} from '../src/index.js';
import { GEMMA4_SPECIALS, PHI4_SPECIALS, toolModel } from './helpers/tool-model.js';

const AjvCtor = (Ajv2020 as unknown as { default?: typeof Ajv2020 }).default ?? Ajv2020;
const ajv = new AjvCtor({ strict: false });

const TOOLS: ToolDefinition[] = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Current weather for a city',
      parameters: { type: 'object', properties: { city: { type: 'string', description: 'City name', maxLength: 16 }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } }, required: ['city'], additionalProperties: false },
    },
  },
  {
    type: 'function',
    function: { name: 'add', description: 'Add two integers', parameters: { type: 'object', properties: { a: { type: 'integer' }, b: { type: 'integer' } }, required: ['a', 'b'], additionalProperties: false } },
  },
];

const CONVERSATION: OpenAIMessage[] = [
  { role: 'user', content: 'Weather in Paris?' },
  { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
  { role: 'tool', tool_call_id: 'call_1', content: '{"temperature":21,"sky":"clear"}' },
];

const models = {
  gemma4: () => toolModel('gemma4', GEMMA4_SPECIALS),
  phi4mini: () => toolModel('phi4mini', PHI4_SPECIALS),
  gemma3n: () => toolModel('gemma3n', []),
  phi3: () => toolModel('phi3', []),
};

describe('tools and tool results render through each real chat template', () => {
  test('Gemma 4: <|tool> declarations, <|tool_call> call, <|tool_response> inside the model turn', () => {
    const p = prepareChatRequest(models.gemma4(), { messages: CONVERSATION, tools: TOOLS });
    expect(p.toolFormat?.id).toBe('gemma4');
    const t = p.promptText;
    expect(t).toContain('<|turn>system\n<|tool>declaration:get_weather{description:<|"|>Current weather for a city<|"|>,parameters:{properties:{city:{description:<|"|>City name<|"|>,type:<|"|>STRING<|"|>}');
    expect(t).toContain('required:[<|"|>city<|"|>],type:<|"|>OBJECT<|"|>}}<tool|>');
    expect(t).toContain('<|turn>model\n<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|><|tool_response>response:get_weather{sky:<|"|>clear<|"|>,temperature:21}<tool_response|>');
    // The model continues its own turn after the results: no new <|turn>model.
    expect(t.endsWith('<tool_response|><|channel>thought\n<channel|>')).toBe(true);
  });

  test('Phi-4-mini: tool list on the system message, calls and results as tokens', () => {
    const p = prepareChatRequest(models.phi4mini(), { messages: [{ role: 'system', content: 'Be brief.' }, ...CONVERSATION], tools: TOOLS });
    expect(p.toolFormat?.id).toBe('phi4-mini');
    const t = p.promptText;
    expect(t.startsWith('<|system|>Be brief.<|tool|>[{"name":"get_weather","description":"Current weather for a city","parameters":')).toBe(true);
    expect(t).toContain('<|/tool|><|end|><|user|>Weather in Paris?<|end|><|assistant|><|tool_call|>[{"name":"get_weather","arguments":{"city":"Paris"}}]<|/tool_call|><|end|>');
    expect(t).toContain('<|tool_response|>{"temperature":21,"sky":"clear"}<|end|><|assistant|>');
  });

  test('Gemma 3n (no tool syntax): the JSON convention in the first user turn, results as a user turn', () => {
    const p = prepareChatRequest(models.gemma3n(), { messages: CONVERSATION, tools: TOOLS });
    expect(p.toolFormat?.id).toBe('json');
    const t = p.promptText;
    expect(t).toContain('<start_of_turn>user\nYou can call these functions');
    expect(t).toContain('<tool_call>{"name": "<function name>", "arguments": {<arguments as JSON>}}</tool_call>');
    expect(t).toContain('<start_of_turn>model\n<tool_call>{"name":"get_weather","arguments":{"city":"Paris"}}</tool_call><end_of_turn>');
    expect(t).toContain('<start_of_turn>user\nTool result (get_weather, call_1):\n{"temperature":21,"sky":"clear"}<end_of_turn>\n<start_of_turn>model\n');
  });

  test('Phi-3/3.5 (no tool syntax): the JSON convention as the system turn', () => {
    const p = prepareChatRequest(models.phi3(), { messages: CONVERSATION, tools: TOOLS });
    expect(p.promptText.startsWith('<|system|>\nYou can call these functions')).toBe(true);
    expect(p.promptText).toContain('<|user|>\nTool result (get_weather, call_1):');
  });
});

describe('parsing generated calls (also split across stream chunks)', () => {
  const cases: [string, string, { name: string; args: unknown }[], string][] = [
    ['gemma4', 'Sure. <|tool_call>call:get_weather{city:<|"|>Paris, FR<|"|>,unit:<|"|>celsius<|"|>}<tool_call|><|tool_call>call:add{a:1,b:-2}<tool_call|>',
      [{ name: 'get_weather', args: { city: 'Paris, FR', unit: 'celsius' } }, { name: 'add', args: { a: 1, b: -2 } }], 'Sure. '],
    ['phi4-mini', 'ok<|tool_call|>[{"name": "add", "arguments": {"a": 2, "b": 3}}, {"name": "get_weather", "arguments": {"city": "Oslo"}}]<|/tool_call|>',
      [{ name: 'add', args: { a: 2, b: 3 } }, { name: 'get_weather', args: { city: 'Oslo' } }], 'ok'],
    ['json', '<tool_call>{"name": "add", "arguments": {"a": 5, "b": 6}}</tool_call>\n<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}}</tool_call>',
      [{ name: 'add', args: { a: 5, b: 6 } }, { name: 'get_weather', args: { city: 'Rome' } }], '\n'],
  ];
  for (const [id, text, calls, content] of cases) {
    test(id, () => {
      const syntax = toolFormatById(id as 'gemma4').syntax;
      const whole = parseToolCalls(syntax, text);
      expect(whole.content).toBe(content);
      expect(whole.toolCalls.map((c) => ({ name: c.function.name, args: JSON.parse(c.function.arguments) }))).toEqual(calls);
      // Every split point, and one character at a time.
      for (const step of [1, 2, 3, 7]) {
        const p = new ToolCallStreamParser(syntax);
        let got = '';
        const deltas = [];
        for (let i = 0; i < text.length; i += step) {
          const o = p.push(text.slice(i, i + step));
          got += o.content;
          deltas.push(...o.toolCalls);
        }
        const f = p.flush();
        got += f.content;
        deltas.push(...f.toolCalls);
        expect(got).toBe(content);
        expect(deltas.map((d) => d.index)).toEqual(calls.map((_, i) => i));
        expect(deltas.map((d) => JSON.parse(d.function.arguments))).toEqual(calls.map((c) => c.args));
        for (const d of deltas) expect(d.id).toMatch(/^call_/);
      }
    });
  }
  test('Gemma 4 argument syntax: nesting, arrays, None', () => {
    expect(JSON.parse(gemma4ArgsToJson('{q:<|"|>a,b:{c}<|"|>,n:[1,2.5,true],o:{x:None,y:<|"|><|"|>}}'))).toEqual({ q: 'a,b:{c}', n: [1, 2.5, true], o: { x: null, y: '' } });
  });
  test('an unterminated block at the end of the stream still parses', () => {
    const r = parseToolCalls(toolFormatById('phi4-mini').syntax, '<|tool_call|>[{"name": "add", "arguments": {"a": 1, "b": 1}}]');
    expect(r.toolCalls).toHaveLength(1);
  });
  test('a malformed block stays content', () => {
    const r = parseToolCalls(toolFormatById('json').syntax, '<tool_call>{not json}</tool_call>');
    expect(r.toolCalls).toHaveLength(0);
    expect(r.content).toContain('{not json}');
  });
});

describe('tool_choice is enforced by a grammar', () => {
  for (const fmt of ['gemma4', 'phi4mini', 'gemma3n'] as const) {
    test(`${fmt}: "required" and a named function always give valid calls`, async () => {
      const m = models[fmt]();
      for (const [choice, parallel] of [['required', true], ['required', false], [{ type: 'function', function: { name: 'add' } }, true]] as const) {
        const prep = prepareChatRequest(m, { messages: [{ role: 'user', content: 'go' }], tools: TOOLS, tool_choice: choice, parallel_tool_calls: parallel });
        for (const seed of [1, 2, 3]) {
          const text = await generate(m, prep.promptIds, { constraint: prep.constraint, temperature: 1, seed, maxTokens: 120 }).text();
          const parser = prep.newParser()!;
          parser.push(text);
          parser.flush();
          const calls = parser.toolCalls;
          expect(calls.length, `${JSON.stringify(choice)} seed ${seed}: ${text}`).toBeGreaterThanOrEqual(1);
          if (!parallel || typeof choice === 'object') expect(calls).toHaveLength(1);
          for (const c of calls) {
            if (typeof choice === 'object') expect(c.function.name).toBe('add');
            const tool = TOOLS.find((t) => t.function.name === c.function.name)!;
            const args = JSON.parse(c.function.arguments);
            expect(ajv.validate(tool.function.parameters!, args), `${text}: ${ajv.errorsText()}`).toBe(true);
          }
        }
      }
    });
  }

  test('"none" bans the call-opening token; an unknown named function is refused', () => {
    const m = models.gemma4();
    const none = prepareChatRequest(m, { messages: [{ role: 'user', content: 'go' }], tools: TOOLS, tool_choice: 'none' });
    expect(none.suppressedIds).toEqual([m.tokenizer!.tokenToId('<|tool_call>')]);
    expect(none.newParser()).toBeNull();
    expect(() => prepareChatRequest(m, { messages: [{ role: 'user', content: 'go' }], tools: TOOLS, tool_choice: { type: 'function', function: { name: 'nope' } } }))
      .toThrow(/tool_choice names function "nope", which is not in tools \(get_weather, add\)/);
    expect(() => prepareChatRequest(m, { messages: [{ role: 'user', content: 'go' }], tools: [{ type: 'function', function: { name: 'bad name!' } }] }))
      .toThrow(/tools\[0\]\.function\.name/);
    expect(() => prepareChatRequest(m, { messages: [{ role: 'user', content: 'go' }], tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { x: { not: {} } } } } }], tool_choice: 'required' }))
      .toThrow(/tools\[0\]\.function\.parameters\/properties\/x\/not/);
  });

  test('response_format and grammar go through the same entry point', () => {
    const m = models.phi3();
    const p = prepareChatRequest(m, { messages: [{ role: 'user', content: 'hi' }], response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', properties: { a: { type: 'integer' } }, required: ['a'] }, strict: true } } });
    expect(p.constraint).not.toBeNull();
    expect(() => prepareChatRequest(m, { messages: [{ role: 'user', content: 'hi' }], grammar: 'root ::= (' })).toThrow(/grammar: line 1, column 10: expected "\)"/);
  });
});

describe('planChatRequest: planning without the model, for a server that compiles on another thread', () => {
  test('structured-clone data; compiled where the EOS ids are, it samples as prepareChatRequest does', async () => {
    const m = models.gemma4();
    const req = { messages: [{ role: 'user' as const, content: 'go' }], tools: TOOLS, tool_choice: 'required' as const };
    const plan = structuredClone(planChatRequest({ tokenizer: m.tokenizer!, chatTemplate: m.chatTemplate }, req));
    const prep = prepareChatRequest(m, req);
    expect(Array.from(plan.promptIds)).toEqual(Array.from(prep.promptIds));
    expect(plan.toolFormat).toBe('gemma4');
    expect(plan.parsesCalls).toBe(true);
    // The cloned grammar, compiled with its key, gives the same sampled text as the in-process one.
    const constraint = compileConstraint({ grammar: plan.grammar!.grammar, key: plan.grammar!.key }, m.tokenizer!, { vocabSize: m.model.vocabSize, eosIds: m.eosIds });
    const opts = { temperature: 1, seed: 9, maxTokens: 40 };
    const a = await generate(m, plan.promptIds, { ...opts, constraint }).text();
    const b = await generate(m, prep.promptIds, { ...opts, constraint: prep.constraint }).text();
    expect(a).toBe(b);
    expect(parseToolCalls(toolFormatById(plan.toolFormat!).syntax, a).toolCalls.length).toBeGreaterThanOrEqual(1);
  });

  test('errors name the request field in `param`', () => {
    const m = models.phi3();
    const ctx = { tokenizer: m.tokenizer!, chatTemplate: m.chatTemplate };
    const msgs = [{ role: 'user' as const, content: 'go' }];
    const paramOf = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        return (e as { param?: string }).param;
      }
      return 'no error';
    };
    expect(paramOf(() => planChatRequest(ctx, { messages: msgs, tools: TOOLS, tool_choice: { type: 'function', function: { name: 'nope' } } }))).toBe('tool_choice');
    expect(paramOf(() => planChatRequest(ctx, { messages: msgs, tools: [TOOLS[0]!, { type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { x: { not: {} } } } } }], tool_choice: 'required' }))).toBe('tools[1].function.parameters');
    expect(paramOf(() => planChatRequest(ctx, { messages: msgs, tools: [{ type: 'function', function: { name: 'f', strict: true, parameters: { type: 'object', not: {} } } }] }))).toBe('tools[0].function.parameters');
    expect(paramOf(() => planChatRequest(ctx, { messages: msgs, response_format: { type: 'json_schema', json_schema: { schema: { type: 'object', not: {} } } } }))).toBe('response_format');
    expect(paramOf(() => planChatRequest(ctx, { messages: msgs, grammar: 'root ::= (' }))).toBe('grammar');
    expect(paramOf(() => planChatRequest(ctx, { messages: [...msgs, { role: 'tool', tool_call_id: 'c', content: '1' }], response_format: { type: 'json_object' } }))).toBe('messages');
  });
});
