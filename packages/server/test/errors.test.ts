/**
 * The error corpus: malformed requests a real client sends, each answered with the right 4xx, `type`
 * and `param` in OpenAI's error shape; never a 5xx, and the server keeps serving. Plus: the official
 * SDK does not retry a client error.
 */
import Ajv from 'ajv';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorSchema } from '../src/schemas.js';
import { post, serve, type Served } from './helpers/serve.js';

const CHAT = '/v1/chat/completions';
const COMPLETIONS = '/v1/completions';
const user = (content: unknown) => [{ role: 'user', content }];
const chat = (extra: Record<string, unknown>) => ({ messages: user('Hello'), max_tokens: 2, ...extra });
const compl = (extra: Record<string, unknown>) => ({ prompt: 'Hello', max_tokens: 2, ...extra });
const TOOL = (name: string, parameters: Record<string, unknown> = { type: 'object', properties: {} }) => ({ type: 'function', function: { name, parameters } });

interface Case {
  name: string;
  path?: string;
  method?: string;
  body?: unknown;
  status: number;
  param: string | null;
  type?: string;
  code?: string;
}

const INVALID = 'invalid_request_error';
const cases: Case[] = [
  // body
  { name: 'empty body', body: '', status: 400, param: null },
  { name: 'invalid JSON', body: '{nope', status: 400, param: null, code: 'invalid_json' },
  { name: 'JSON array body', body: '[1]', status: 400, param: null },
  // messages
  { name: 'no messages', body: { max_tokens: 2 }, status: 400, param: 'messages', code: 'missing_required_parameter' },
  { name: 'empty messages', body: { messages: [] }, status: 400, param: 'messages' },
  { name: 'messages is a string', body: { messages: 'hi' }, status: 400, param: 'messages' },
  { name: 'message without role', body: { messages: [{ content: 'hi' }] }, status: 400, param: 'messages[0].role' },
  { name: 'unknown role', body: { messages: [{ role: 'wizard', content: 'hi' }] }, status: 400, param: 'messages[0].role' },
  { name: 'message without content', body: { messages: [{ role: 'user' }] }, status: 400, param: 'messages[0].content' },
  { name: 'user content null', body: { messages: user(null) }, status: 400, param: 'messages[0].content' },
  { name: 'assistant content null without tool_calls', body: { messages: [...user('a'), { role: 'assistant', content: null }, ...user('b')] }, status: 400, param: 'messages[1].content' },
  { name: 'content is a number', body: { messages: user(5) }, status: 400, param: 'messages[0].content' },
  { name: 'text part without text', body: { messages: user([{ type: 'text' }]) }, status: 400, param: 'messages[0].content[0].text' },
  { name: 'unknown part type', body: { messages: user([{ type: 'video', video: 'x' }]) }, status: 400, param: 'messages[0].content[0].type' },
  { name: 'image part on a text-only model', body: { messages: user([{ type: 'text', text: 'what is this' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }]) }, status: 400, param: 'messages[0].content[1]', code: 'image_input_unsupported' },
  { name: 'audio part on a model without audio', body: { messages: user([{ type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } }]) }, status: 400, param: 'messages[0].content[0]', code: 'audio_input_unsupported' },
  { name: 'tool role the template cannot render', body: { messages: [...user('a'), { role: 'tool', content: '42', tool_call_id: 'c1' }] }, status: 400, param: 'messages[1].role', code: 'unsupported_role' },
  { name: 'legacy function role', body: { messages: [{ role: 'function', name: 'f', content: '1' }] }, status: 400, param: 'messages[0].role' },
  { name: 'prompt longer than the context (tokenized)', body: { messages: user('hello '.repeat(5000)) }, status: 400, param: 'messages', code: 'context_length_exceeded' },
  // sampling fields
  { name: 'max_tokens 1.5', body: chat({ max_tokens: 1.5 }), status: 400, param: 'max_tokens' },
  { name: 'max_tokens 0', body: chat({ max_tokens: 0 }), status: 400, param: 'max_tokens' },
  { name: 'max_tokens negative', body: chat({ max_tokens: -3 }), status: 400, param: 'max_tokens' },
  { name: 'max_tokens as a string', body: chat({ max_tokens: '5' }), status: 400, param: 'max_tokens' },
  { name: 'max_completion_tokens 2.5', body: chat({ max_completion_tokens: 2.5 }), status: 400, param: 'max_completion_tokens' },
  { name: 'seed 1.5', body: chat({ seed: 1.5 }), status: 400, param: 'seed' },
  { name: 'temperature -1', body: chat({ temperature: -1 }), status: 400, param: 'temperature' },
  { name: 'temperature 3', body: chat({ temperature: 3 }), status: 400, param: 'temperature' },
  { name: 'top_p 1.5', body: chat({ top_p: 1.5 }), status: 400, param: 'top_p' },
  { name: 'top_k -1', body: chat({ top_k: -1 }), status: 400, param: 'top_k' },
  { name: 'min_p 2', body: chat({ min_p: 2 }), status: 400, param: 'min_p' },
  { name: 'presence_penalty 5', body: chat({ presence_penalty: 5 }), status: 400, param: 'presence_penalty' },
  { name: 'frequency_penalty as a string', body: chat({ frequency_penalty: 'x' }), status: 400, param: 'frequency_penalty' },
  { name: 'repetition_penalty 0', body: chat({ repetition_penalty: 0 }), status: 400, param: 'repetition_penalty' },
  { name: 'logit_bias with a non-numeric key', body: chat({ logit_bias: { abc: 1 } }), status: 400, param: 'logit_bias' },
  { name: 'logit_bias with a non-numeric value', body: chat({ logit_bias: { 5: 'x' } }), status: 400, param: 'logit_bias[5]' },
  { name: 'logit_bias out of range', body: chat({ logit_bias: { 5: 500 } }), status: 400, param: 'logit_bias[5]' },
  { name: 'logit_bias id outside the vocabulary', body: chat({ logit_bias: { 99999999: 1 } }), status: 400, param: 'logit_bias' },
  { name: 'stop is a number', body: chat({ stop: 5 }), status: 400, param: 'stop' },
  { name: 'stop list with a number', body: chat({ stop: [1] }), status: 400, param: 'stop[0]' },
  { name: 'n 0', body: chat({ n: 0 }), status: 400, param: 'n' },
  { name: 'n 1.5', body: chat({ n: 1.5 }), status: 400, param: 'n' },
  { name: 'stream as a string', body: chat({ stream: 'yes' }), status: 400, param: 'stream' },
  { name: 'stream_options without stream', body: chat({ stream_options: { include_usage: true } }), status: 400, param: 'stream_options' },
  { name: 'logprobs as a string', body: chat({ logprobs: 'true' }), status: 400, param: 'logprobs' },
  { name: 'top_logprobs without logprobs', body: chat({ top_logprobs: 3 }), status: 400, param: 'top_logprobs' },
  { name: 'top_logprobs 50', body: chat({ logprobs: true, top_logprobs: 50 }), status: 400, param: 'top_logprobs' },
  // tools, tool_choice, response_format, grammar
  { name: 'tools is an object', body: chat({ tools: { type: 'function' } }), status: 400, param: 'tools' },
  { name: 'tool without a function', body: chat({ tools: [{ type: 'function' }] }), status: 400, param: 'tools[0].function', code: 'missing_required_parameter' },
  { name: 'tool with a bad function name', body: chat({ tools: [{ type: 'function', function: { name: 'no spaces please' } }] }), status: 400, param: 'tools[0].function.name' },
  { name: 'tool parameters not an object', body: chat({ tools: [{ type: 'function', function: { name: 'f', parameters: 'x' } }] }), status: 400, param: 'tools[0].function.parameters' },
  { name: 'tool used twice', body: chat({ tools: [TOOL('f'), TOOL('f')] }), status: 400, param: 'tools[1].function.name', code: 'invalid_tools' },
  { name: 'tool parameters with an unsupported keyword (forced call)', body: chat({ tools: [TOOL('f', { type: 'object', properties: { a: { type: 'string', format: 'email' } } })], tool_choice: 'required' }), status: 400, param: 'tools[0].function.parameters', code: 'unsupported_schema' },
  { name: 'strict tool parameters with an unsupported keyword', body: chat({ tools: [{ type: 'function', function: { name: 'f', strict: true, parameters: { type: 'object', not: {} } } }] }), status: 400, param: 'tools[0].function.parameters', code: 'unsupported_schema' },
  { name: 'tool_choice naming an unknown function', body: chat({ tools: [TOOL('f')], tool_choice: { type: 'function', function: { name: 'g' } } }), status: 400, param: 'tool_choice', code: 'invalid_tool_choice' },
  { name: 'tool_choice required without tools', body: chat({ tool_choice: 'required' }), status: 400, param: 'tool_choice', code: 'invalid_tool_choice' },
  { name: 'tool_choice not a known word', body: chat({ tools: [TOOL('f')], tool_choice: 'always' }), status: 400, param: 'tool_choice' },
  { name: 'parallel_tool_calls as a string', body: chat({ parallel_tool_calls: 'no' }), status: 400, param: 'parallel_tool_calls' },
  { name: 'grammar together with a forced call', body: chat({ tools: [TOOL('f')], tool_choice: 'required', grammar: 'root ::= "a"' }), status: 400, param: 'grammar' },
  { name: 'assistant tool_calls without function', body: { messages: [...user('a'), { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function' }] }, ...user('b')] }, status: 400, param: 'messages[1].tool_calls[0].function', code: 'missing_required_parameter' },
  { name: 'tool call arguments that are not JSON', body: chat({ tools: [TOOL('f')], messages: [...user('a'), { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{oops' } }] }, { role: 'tool', tool_call_id: 'c1', content: '1' }] }), status: 400, param: 'messages', code: 'invalid_tool_arguments' },
  { name: 'response_format type xml', body: chat({ response_format: { type: 'xml' } }), status: 400, param: 'response_format.type' },
  { name: 'response_format json_schema without a name', body: chat({ response_format: { type: 'json_schema', json_schema: { schema: {} } } }), status: 400, param: 'response_format.json_schema.name', code: 'missing_required_parameter' },
  { name: 'response_format json_schema without a schema', body: chat({ response_format: { type: 'json_schema', json_schema: { name: 'x' } } }), status: 400, param: 'response_format', code: 'invalid_schema' },
  { name: 'response_format json_schema with an unsupported keyword', body: chat({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', patternProperties: { a: {} } } } } }), status: 400, param: 'response_format', code: 'unsupported_schema' },
  { name: 'response_format json_schema with a dangling $ref', body: chat({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { $ref: '#/$defs/nope' } } } }), status: 400, param: 'response_format', code: 'invalid_schema' },
  { name: 'grammar is a number', body: chat({ grammar: 5 }), status: 400, param: 'grammar' },
  { name: 'grammar that does not parse', body: chat({ grammar: 'root ::= "a" (' }), status: 400, param: 'grammar', code: 'invalid_grammar' },
  { name: 'grammar with an undefined rule', body: chat({ grammar: 'root ::= other' }), status: 400, param: 'grammar', code: 'invalid_grammar' },
  { name: 'grammar with left recursion', body: chat({ grammar: 'root ::= root "a" | "a"' }), status: 400, param: 'grammar', code: 'invalid_grammar' },
  { name: 'grammar together with response_format', body: chat({ grammar: 'root ::= "a"', response_format: { type: 'json_object' } }), status: 400, param: 'grammar' },
  { name: 'legacy functions', body: chat({ functions: [{ name: 'f' }] }), status: 400, param: 'functions', code: 'unsupported_parameter' },
  { name: 'completions: grammar that does not parse', path: COMPLETIONS, body: compl({ grammar: 'root ::= [a-' }), status: 400, param: 'grammar', code: 'invalid_grammar' },
  { name: 'completions: tools', path: COMPLETIONS, body: compl({ tools: [TOOL('f')] }), status: 400, param: 'tools', code: 'unsupported_parameter' },
  { name: 'completions: response_format', path: COMPLETIONS, body: compl({ response_format: { type: 'json_object' } }), status: 400, param: 'response_format', code: 'unsupported_parameter' },
  // model
  { name: 'unknown model', body: chat({ model: 'gpt-4o' }), status: 404, param: 'model', code: 'model_not_found' },
  { name: 'model is a number', body: chat({ model: 5 }), status: 400, param: 'model' },
  // completions
  { name: 'completions: no prompt', path: COMPLETIONS, body: { max_tokens: 2 }, status: 400, param: 'prompt' },
  { name: 'completions: empty prompt', path: COMPLETIONS, body: compl({ prompt: '' }), status: 400, param: 'prompt' },
  { name: 'completions: prompt is a number', path: COMPLETIONS, body: compl({ prompt: 5 }), status: 400, param: 'prompt' },
  { name: 'completions: empty prompt list', path: COMPLETIONS, body: compl({ prompt: [] }), status: 400, param: 'prompt' },
  { name: 'completions: fractional token id', path: COMPLETIONS, body: compl({ prompt: [1.5] }), status: 400, param: 'prompt[0]' },
  { name: 'completions: negative token id', path: COMPLETIONS, body: compl({ prompt: [-1] }), status: 400, param: 'prompt[0]' },
  { name: 'completions: token id outside the vocabulary', path: COMPLETIONS, body: compl({ prompt: [99999999] }), status: 400, param: 'prompt' },
  { name: 'completions: empty token list in a batch', path: COMPLETIONS, body: compl({ prompt: [[1, 2], []] }), status: 400, param: 'prompt[1]' },
  { name: 'completions: token ids longer than the context', path: COMPLETIONS, body: compl({ prompt: Array(5000).fill(100) }), status: 400, param: 'prompt', code: 'context_length_exceeded' },
  { name: 'completions: best_of below n', path: COMPLETIONS, body: compl({ n: 3, best_of: 2 }), status: 400, param: 'best_of' },
  { name: 'completions: best_of above n, streamed', path: COMPLETIONS, body: compl({ best_of: 3, stream: true }), status: 400, param: 'best_of' },
  { name: 'completions: suffix', path: COMPLETIONS, body: compl({ suffix: 'end' }), status: 400, param: 'suffix' },
  { name: 'completions: logprobs 50', path: COMPLETIONS, body: compl({ logprobs: 50 }), status: 400, param: 'logprobs' },
  // routes
  { name: 'POST /v1/models', path: '/v1/models', method: 'POST', body: {}, status: 405, param: null, code: 'method_not_allowed' },
  { name: 'GET /v1/chat/completions', path: CHAT, method: 'GET', status: 405, param: null },
  { name: 'DELETE /v1/completions', path: COMPLETIONS, method: 'DELETE', status: 405, param: null },
  { name: 'GET an unknown model', path: '/v1/models/gpt-4o', method: 'GET', status: 404, param: 'model', code: 'model_not_found' },
  { name: 'GET an unknown route', path: '/v2/nothing', method: 'GET', status: 404, param: null, type: 'not_found_error' },
];

describe('error corpus', () => {
  let srv: Served;
  const checkError = new Ajv().compile(errorSchema);
  beforeAll(async () => {
    srv = await serve(['--no-webui', '--model-name', 'tiny']);
  });
  afterAll(async () => srv?.stop());

  it(`answers ${cases.length} malformed requests with the right 4xx, type and param, and keeps serving`, async () => {
    expect(cases.length).toBeGreaterThanOrEqual(40);
    for (const c of cases) {
      const method = c.method ?? 'POST';
      const r = await fetch(`${srv.base}${c.path ?? CHAT}`, {
        method,
        headers: c.body === undefined ? {} : { 'content-type': 'application/json' },
        body: c.body === undefined ? undefined : typeof c.body === 'string' ? c.body : JSON.stringify(c.body),
      });
      const json = (await r.json()) as { error: { message: string; type: string; param: string | null; code: string | null } };
      expect(checkError(json), `${c.name}: error shape ${JSON.stringify(checkError.errors)}`).toBe(true);
      expect.soft(`${c.name}: ${r.status} ${json.error.type} ${json.error.param}${c.code ? ` ${json.error.code}` : ''}`, json.error.message)
        .toBe(`${c.name}: ${c.status} ${c.type ?? INVALID} ${c.param}${c.code ? ` ${c.code}` : ''}`);
      if (c.status === 405) expect(r.headers.get('allow')).toBeTruthy();
    }
    // Zero 5xx over the whole corpus, and the server still answers a good request.
    const metrics = await (await fetch(`${srv.base}/metrics`)).text();
    expect(metrics).not.toMatch(/mlxcel_requests_total\{[^}]*status="5\d\d"/);
    const ok = await post(srv.base, CHAT, chat({ temperature: 0 }));
    expect(ok.status).toBe(200);
    expect(ok.json.choices[0].message.content.length).toBeGreaterThan(0);
  });

  it('accepts what real agent loops send: an assistant turn with tool_calls and null content, developer messages, text parts', async () => {
    const r = await post(srv.base, CHAT, {
      max_tokens: 2,
      messages: [
        { role: 'developer', content: 'Be brief.' },
        { role: 'user', content: [{ type: 'text', text: 'Hel' }, { type: 'text', text: 'lo' }] },
        { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
        { role: 'user', content: 'go on' },
      ],
    });
    expect(r.status).toBe(200);
  });

  it('the openai SDK attempts a client error once (no retries)', async () => {
    const count = async () => {
      const m = /mlxcel_requests_total\{route="\/v1\/chat\/completions",status="400"\} (\d+)/.exec(await (await fetch(`${srv.base}/metrics`)).text());
      return m ? Number(m[1]) : 0;
    };
    const client = new OpenAI({ baseURL: `${srv.base}/v1`, apiKey: 'unused', maxRetries: 3 });
    const before = await count();
    const err = await client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'hi' }], max_tokens: 1.5 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('max_tokens');
    expect(await count()).toBe(before + 1);
  });
});
