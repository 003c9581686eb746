/**
 * Tool-calling formats, one per chat-template family:
 *
 * - `gemma4`: Gemma 4's template renders tools as `<|tool>declaration:…<tool|>` in the system turn;
 *   the model calls with `<|tool_call>call:NAME{key:<|"|>text<|"|>,n:3}<tool_call|>` and reads
 *   results as `<|tool_response>response:NAME{…}<tool_response|>` inside its own turn.
 * - `phi4-mini`: Phi-4-mini's template puts the tool list (JSON) on the system message between
 *   `<|tool|>` and `<|/tool|>`; the model calls with `<|tool_call|>[{"name": …, "arguments": {…}}]<|/tool_call|>`;
 *   results are rendered as `<|tool_response|>…<|end|>` turns (the template's generic role rule).
 * - `json`: templates with no tool syntax (Gemma 3n, Phi-3/3.5): a system prompt convention lists the
 *   tools as JSON and asks for `<tool_call>{"name": …, "arguments": {…}}</tool_call>` blocks; results
 *   come back as user turns starting with `Tool result`.
 *
 * Each format converts OpenAI messages (assistant `tool_calls` with `content: null`, `tool` messages)
 * into what its template renders, decodes call blocks, and builds the grammar that forces a call.
 */
import type { ChatMessage } from '../chat/index.js';
import { MlxcelError } from '../errors.js';
import type { Tokenizer } from '../tokenizer/index.js';
import { type Element, GrammarBuilder, type Sequence } from '../constraint/grammar.js';
import { JSON_DIALECT, gemma4Dialect, schemaValue } from '../constraint/json-schema.js';
import type { CallSyntax, ParsedCall } from './parse.js';
import type { OpenAIMessage, ToolDefinition } from './types.js';

const { lit, ref } = GrammarBuilder;

export type ToolFormatId = 'gemma4' | 'phi4-mini' | 'json';

export interface ToolFormat {
  readonly id: ToolFormatId;
  readonly syntax: CallSyntax;
  /** Template input for a conversation with tools: messages plus template variables. */
  render(messages: readonly OpenAIMessage[], tools: readonly ToolDefinition[]): { messages: ChatMessage[]; variables: Record<string, unknown> };
  /** Adds rules for one call of any of `tools` (its name and schema-valid arguments) and returns the rule. */
  callRule(b: GrammarBuilder, tools: readonly ToolDefinition[], tokenizer: Tokenizer): { rule: number; separator: Sequence; open: Sequence; close: Sequence };
  /** Special token ids that open a call (suppressed for tool_choice "none"). */
  startTokenIds(tokenizer: Tokenizer): number[];
}

/** Picks the format a chat template defines. */
export function toolFormatFor(templateSource: string | null | undefined): ToolFormat {
  const t = templateSource ?? '';
  if (t.includes('<|tool_call>')) return GEMMA4;
  if (t.includes('<|tool|>')) return PHI4_MINI;
  return JSON_CONVENTION;
}

export function toolFormatById(id: ToolFormatId): ToolFormat {
  return id === 'gemma4' ? GEMMA4 : id === 'phi4-mini' ? PHI4_MINI : JSON_CONVENTION;
}

// ------------------------------------------------------------------ shared helpers

function textOf(content: OpenAIMessage['content']): string {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  return content.filter((p) => p.type === 'text').map((p) => p.text ?? '').join('');
}

function parseArgs(call: { function: { name: string; arguments: string } }): unknown {
  try {
    return JSON.parse(call.function.arguments || '{}');
  } catch {
    throw new MlxcelError('TOOL_ARGUMENTS_INVALID', `messages: tool call ${call.function.name} has arguments that are not JSON: ${call.function.arguments.slice(0, 80)}`);
  }
}

/** The call name of each tool_call_id seen in assistant messages. */
function callNames(messages: readonly OpenAIMessage[]): Map<string, string> {
  const m = new Map<string, string>();
  for (const msg of messages) for (const c of msg.tool_calls ?? []) m.set(c.id, c.function.name);
  return m;
}

function jsonCallBody(name: string, argsJson: string): ParsedCall {
  if (typeof name !== 'string' || !name) throw new Error('call without a name');
  return { name, arguments: argsJson };
}

function decodeJsonCalls(text: string): ParsedCall[] {
  let v = JSON.parse(text.startsWith('[') || text.startsWith('{') ? text : `[${text}]`);
  if (!Array.isArray(v)) v = [v];
  return (v as { name?: unknown; arguments?: unknown; parameters?: unknown }[]).map((c) => {
    const args = c.arguments ?? c.parameters ?? {};
    return jsonCallBody(c.name as string, typeof args === 'string' ? args : JSON.stringify(args));
  });
}

/** `{"name": "<fn>", "arguments": <schema>}` alternatives for each tool (JSON spelling). */
function jsonCallAlternatives(b: GrammarBuilder, tools: readonly ToolDefinition[]): number {
  const ws = ref(b.rule('json-ws'));
  const alts: Sequence[] = tools.map((t, i) => [
    ...lit('{'), ws, ...lit('"name"'), ws, ...lit(':'), ws, ...lit(JSON.stringify(t.function.name)), ws, ...lit(','), ws,
    ...lit('"arguments"'), ws, ...lit(':'), ws, ...schemaValue(b, t.function.parameters ?? { type: 'object' }, JSON_DIALECT, `tools[${i}].function.parameters`), ws, ...lit('}'),
  ]);
  return b.helper('call', alts);
}

/** A special token as a grammar element when the tokenizer has it, else its text. */
function tokenOrText(tokenizer: Tokenizer, text: string): Sequence {
  const id = tokenizer.tokenToId(text);
  return id !== undefined && tokenizer.specialIds.has(id) ? [{ t: 'token', id } as Element] : lit(text);
}

// ------------------------------------------------------------------ Gemma 4

/** Gemma 4 argument text (`{city:<|"|>Paris<|"|>,days:3}`) → JSON text. */
export function gemma4ArgsToJson(text: string): string {
  let i = 0;
  const Q = '<|"|>';
  const fail = (): never => { throw new Error(`bad Gemma 4 arguments at ${i}: ${text.slice(i, i + 20)}`); };
  const value = (): unknown => {
    if (text.startsWith(Q, i)) {
      const end = text.indexOf(Q, i + Q.length);
      if (end < 0) fail();
      const s = text.slice(i + Q.length, end);
      i = end + Q.length;
      return s;
    }
    const c = text[i];
    if (c === '{') {
      i++;
      const o: Record<string, unknown> = {};
      if (text[i] === '}') { i++; return o; }
      for (;;) {
        let key: string;
        if (text.startsWith(Q, i)) key = value() as string;
        else {
          const m = /^[^:{}[\],]+/.exec(text.slice(i));
          if (!m) fail();
          key = m![0].trim();
          i += m![0].length;
        }
        if (text[i] !== ':') fail();
        i++;
        o[key] = value();
        if (text[i] === ',') { i++; continue; }
        if (text[i] === '}') { i++; return o; }
        fail();
      }
    }
    if (c === '[') {
      i++;
      const a: unknown[] = [];
      if (text[i] === ']') { i++; return a; }
      for (;;) {
        a.push(value());
        if (text[i] === ',') { i++; continue; }
        if (text[i] === ']') { i++; return a; }
        fail();
      }
    }
    const m = /^(-?\d+(\.\d+)?([eE][-+]?\d+)?|true|false|null|None)/.exec(text.slice(i));
    if (!m) fail();
    i += m![0].length;
    const t = m![0];
    return t === 'true' ? true : t === 'false' ? false : t === 'null' || t === 'None' ? null : Number(t);
  };
  const v = value();
  if (i !== text.length) fail();
  return JSON.stringify(v);
}

const GEMMA4: ToolFormat = {
  id: 'gemma4',
  syntax: {
    start: '<|tool_call>',
    end: '<tool_call|>',
    body(text) {
      const m = /^call:([^{\s]+)(\{[\s\S]*\})$/.exec(text);
      if (!m) throw new Error('not a Gemma 4 call');
      return [{ name: m[1]!, arguments: gemma4ArgsToJson(m[2]!) }];
    },
  },
  render(messages, tools) {
    const names = callNames(messages);
    const out: ChatMessage[] = [];
    for (const msg of messages) {
      if (msg.role === 'tool') {
        const prev = out[out.length - 1];
        const name = names.get(msg.tool_call_id ?? '') ?? msg.name ?? 'unknown';
        let response: unknown = textOf(msg.content);
        try { response = JSON.parse(response as string); } catch { /* plain text result */ }
        const entry = { name, response };
        if (prev && prev.role === 'assistant' && Array.isArray(prev.tool_calls)) {
          (prev.tool_responses as unknown[] | undefined) ? (prev.tool_responses as unknown[]).push(entry) : (prev.tool_responses = [entry]);
        } else out.push({ role: 'assistant', content: '', tool_responses: [entry] });
        continue;
      }
      const m: ChatMessage = { role: msg.role === 'developer' ? 'system' : msg.role, content: textOf(msg.content) };
      if (msg.tool_calls?.length) m.tool_calls = msg.tool_calls.map((c) => ({ type: 'function', function: { name: c.function.name, arguments: parseArgs(c) } }));
      out.push(m);
    }
    return { messages: out, variables: tools.length ? { tools } : {} };
  },
  callRule(b, tools, tokenizer) {
    const quoteId = tokenizer.tokenToId('<|"|>');
    const d = gemma4Dialect(quoteId !== undefined && tokenizer.specialIds.has(quoteId) ? quoteId : null);
    d.prelude(b);
    const alts = tools.map((t, i) => [...lit(`call:${t.function.name}`), ...schemaValue(b, t.function.parameters ?? { type: 'object' }, d, `tools[${i}].function.parameters`)]);
    return { rule: b.helper('call', alts), separator: [], open: tokenOrText(tokenizer, '<|tool_call>'), close: tokenOrText(tokenizer, '<tool_call|>') };
  },
  startTokenIds: (tok) => specialIds(tok, ['<|tool_call>']),
};

// ------------------------------------------------------------------ Phi-4-mini

const PHI4_MINI: ToolFormat = {
  id: 'phi4-mini',
  syntax: { start: '<|tool_call|>', end: '<|/tool_call|>', body: decodeJsonCalls },
  render(messages, tools) {
    const out: ChatMessage[] = [];
    const toolList = JSON.stringify(tools.map((t) => ({ name: t.function.name, description: t.function.description ?? '', parameters: t.function.parameters ?? {} })));
    for (const msg of messages) {
      if (msg.role === 'tool') { out.push({ role: 'tool_response', content: textOf(msg.content) }); continue; }
      let content = textOf(msg.content);
      if (msg.tool_calls?.length) {
        content += `<|tool_call|>${JSON.stringify(msg.tool_calls.map((c) => ({ name: c.function.name, arguments: parseArgs(c) })))}<|/tool_call|>`;
      }
      out.push({ role: msg.role === 'developer' ? 'system' : msg.role, content });
    }
    if (tools.length) {
      const sys = out.find((m) => m.role === 'system');
      if (sys) sys.tools = toolList;
      else out.unshift({ role: 'system', content: 'You are a helpful assistant with some tools.', tools: toolList });
    }
    return { messages: out, variables: {} };
  },
  callRule(b, tools, tokenizer) {
    JSON_DIALECT.prelude(b);
    return { rule: jsonCallAlternatives(b, tools), separator: [...lit(','), ref(b.rule('json-ws'))], open: [...tokenOrText(tokenizer, '<|tool_call|>'), ...lit('[')], close: [...lit(']'), ...tokenOrText(tokenizer, '<|/tool_call|>')] };
  },
  startTokenIds: (tok) => specialIds(tok, ['<|tool_call|>']),
};

// ------------------------------------------------------------------ JSON prompt convention

/** The system-prompt text of the JSON convention (documented in the engine README). */
export function jsonConventionPrompt(tools: readonly ToolDefinition[]): string {
  const list = tools.map((t) => JSON.stringify({ name: t.function.name, description: t.function.description ?? '', parameters: t.function.parameters ?? {} })).join('\n');
  return [
    'You can call these functions (each line: name, description, JSON Schema of the arguments):',
    list,
    'To call one or more functions, reply with one block per call and nothing else:',
    '<tool_call>{"name": "<function name>", "arguments": {<arguments as JSON>}}</tool_call>',
    'Each result comes back in a user message that starts with "Tool result".',
  ].join('\n');
}

const JSON_CONVENTION: ToolFormat = {
  id: 'json',
  syntax: { start: '<tool_call>', end: '</tool_call>', body: decodeJsonCalls },
  render(messages, tools) {
    const names = callNames(messages);
    const out: ChatMessage[] = [];
    for (const msg of messages) {
      if (msg.role === 'tool') {
        const name = names.get(msg.tool_call_id ?? '') ?? msg.name ?? 'unknown';
        const text = `Tool result (${name}, ${msg.tool_call_id ?? 'no id'}):\n${textOf(msg.content)}`;
        const prev = out[out.length - 1];
        // Consecutive results share one user turn (templates such as Gemma 3n's require alternation).
        if (prev && prev.role === 'user' && typeof prev.content === 'string' && prev.content.startsWith('Tool result')) prev.content += `\n\n${text}`;
        else out.push({ role: 'user', content: text });
        continue;
      }
      let content = textOf(msg.content);
      for (const c of msg.tool_calls ?? []) content += `<tool_call>${JSON.stringify({ name: c.function.name, arguments: parseArgs(c) })}</tool_call>`;
      out.push({ role: msg.role === 'developer' ? 'system' : msg.role, content });
    }
    if (tools.length) {
      const convention = jsonConventionPrompt(tools);
      const sys = out[0]?.role === 'system' ? out[0] : null;
      if (sys) sys.content = `${String(sys.content)}\n\n${convention}`;
      else out.unshift({ role: 'system', content: convention });
    }
    return { messages: out, variables: {} };
  },
  callRule(b, tools) {
    JSON_DIALECT.prelude(b);
    return { rule: jsonCallAlternatives(b, tools), separator: lit('\n'), open: lit('<tool_call>'), close: lit('</tool_call>') };
  },
  startTokenIds: () => [],
};

function specialIds(tok: Tokenizer, texts: string[]): number[] {
  const out: number[] = [];
  for (const t of texts) {
    const id = tok.tokenToId(t);
    if (id !== undefined && tok.specialIds.has(id)) out.push(id);
  }
  return out;
}
