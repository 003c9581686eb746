/**
 * One entry point for an OpenAI-style chat request: `response_format`, `tools`, `tool_choice`,
 * `parallel_tool_calls` and a llama.cpp-style `grammar` become the rendered prompt, the compiled
 * constraint, extra suppressed ids and a streaming tool-call parser. Client mistakes throw an
 * `MlxcelError` whose code is in `CLIENT_ERROR_CODES` (a server answers them with 400) and whose
 * message names the request field.
 */
import type { ChatMessage } from '../chat/index.js';
import { buildPrompt } from '../chat/index.js';
import { type CompiledConstraint, type ResponseFormat, compileConstraint } from '../constraint/index.js';
import { GrammarBuilder, type Sequence } from '../constraint/grammar.js';
import { MlxcelError } from '../errors.js';
import type { LoadedModel } from '../load.js';
import { type ToolFormat, toolFormatFor } from './formats.js';
import { ToolCallStreamParser } from './parse.js';
import type { OpenAIMessage, ToolChoice, ToolDefinition } from './types.js';

const { ref } = GrammarBuilder;

/** Error codes that mean "the request is wrong" (HTTP 400), not "the server failed". */
export const CLIENT_ERROR_CODES: ReadonlySet<string> = new Set([
  'SCHEMA_UNSUPPORTED', 'SCHEMA_INVALID', 'GRAMMAR_INVALID', 'GRAMMAR_LEFT_RECURSION', 'BAD_OPTION', 'BAD_REQUEST',
  'TOOLS_INVALID', 'TOOL_CHOICE_INVALID', 'TOOL_ARGUMENTS_INVALID', 'PROMPT_TOO_LONG', 'PROMPT_EMPTY', 'CHAT_TEMPLATE_ERROR',
]);

/** The OpenAI request fields this function reads. */
export interface ChatRequestFields {
  messages: readonly OpenAIMessage[];
  tools?: readonly ToolDefinition[] | null;
  tool_choice?: ToolChoice | null;
  parallel_tool_calls?: boolean | null;
  /** `{type:'text'}`, `{type:'json_object'}`, `{type:'json_schema', json_schema:{name, schema, strict}}`. */
  response_format?: ResponseFormat | null;
  /** llama.cpp-style GBNF grammar. */
  grammar?: string | null;
}

export interface PreparedChat {
  /** The prompt through the model's chat template. */
  promptText: string;
  promptIds: Int32Array;
  /** Pass as `constraint` to generate() / BatchScheduler.submit() (null: free text). */
  constraint: CompiledConstraint | null;
  /** Pass as `suppressedIds` (tool_choice "none" bans the call-opening token where there is one). */
  suppressedIds: number[];
  /** The tool format in use (null when the request has no tools). */
  toolFormat: ToolFormat | null;
  /** A fresh streaming parser for the output (null when calls cannot occur). */
  newParser(): ToolCallStreamParser | null;
}

export function prepareChatRequest(loaded: LoadedModel, req: ChatRequestFields): PreparedChat {
  const tok = loaded.tokenizer;
  if (!tok) throw new MlxcelError('TOKENIZER_MISSING', `${loaded.dir} has no tokenizer`);
  if (!Array.isArray(req.messages) || req.messages.length === 0) throw new MlxcelError('BAD_REQUEST', 'messages must be a non-empty array');
  const tools = validateTools(req.tools ?? []);
  const choice = req.tool_choice ?? 'auto';
  const named = validateChoice(choice, tools);
  if (tools.length === 0 && (choice === 'required' || named))
    throw new MlxcelError('TOOL_CHOICE_INVALID', `tool_choice ${JSON.stringify(choice)} needs tools`);
  const format = tools.length ? toolFormatFor(loaded.chatTemplate?.template) : null;
  const activeTools = choice === 'none' ? [] : tools;

  const vocabSize = loaded.model.vocabSize;
  let constraint: CompiledConstraint | null = null;
  if (format && activeTools.length && (choice === 'required' || named)) {
    if (req.grammar) throw new MlxcelError('BAD_REQUEST', 'grammar cannot be combined with tool_choice "required" or a named function');
    const forced = named ? activeTools.filter((t) => t.function.name === named) : activeTools;
    const parallel = req.parallel_tool_calls !== false && !named;
    const b = new GrammarBuilder('tools');
    const { rule, separator, open, close, listInBlock } = { listInBlock: format.id === 'phi4-mini', ...format.callRule(b, forced, tok) };
    const call = ref(rule);
    let body: Sequence;
    if (listInBlock) body = [...open, call, ...(parallel ? [b.star([...separator, call], 'more-calls')] : []), ...close];
    else {
      const block: Sequence = [...open, call, ...close];
      body = [...block, ...(parallel ? [b.star([...separator, ...block], 'more-calls')] : [])];
    }
    b.define('root', [body]);
    const grammar = b.build('root');
    constraint = compileConstraint({ grammar, key: `tools:${format.id}:${parallel}:${JSON.stringify(forced)}` }, tok, { vocabSize, eosIds: loaded.eosIds });
  } else {
    const rf = req.response_format ?? undefined;
    constraint = compileConstraint({ responseFormat: rf, grammar: req.grammar ?? undefined }, tok, { vocabSize, eosIds: loaded.eosIds });
  }
  // Rendered after the constraint compiled: schema and grammar errors name the request field first.
  let messages: ChatMessage[];
  let variables: Record<string, unknown> = {};
  if (format) ({ messages, variables } = format.render(req.messages, tools));
  else messages = req.messages.map((m) => plainMessage(m));
  const built = buildPrompt(tok, messages, { template: loaded.chatTemplate, variables });
  const suppressedIds = format && choice === 'none' ? format.startTokenIds(tok) : [];
  return {
    promptText: built.text,
    promptIds: Int32Array.from(built.ids),
    constraint,
    suppressedIds,
    toolFormat: format,
    newParser: () => (format && activeTools.length ? new ToolCallStreamParser(format.syntax) : null),
  };
}

function plainMessage(m: OpenAIMessage): ChatMessage {
  if (m.role === 'tool' || m.tool_calls?.length)
    throw new MlxcelError('BAD_REQUEST', `messages: a ${m.role === 'tool' ? 'tool message' : 'message with tool_calls'} needs the request's tools`);
  return { role: m.role === 'developer' ? 'system' : m.role, content: typeof m.content === 'string' ? m.content : (m.content ?? '') as ChatMessage['content'] };
}

function validateTools(tools: readonly ToolDefinition[]): ToolDefinition[] {
  if (!Array.isArray(tools)) throw new MlxcelError('TOOLS_INVALID', 'tools must be an array');
  const seen = new Set<string>();
  tools.forEach((t, i) => {
    if (!t || t.type !== 'function' || !t.function || typeof t.function !== 'object')
      throw new MlxcelError('TOOLS_INVALID', `tools[${i}] must be {type: "function", function: {name, parameters}}`);
    const n = t.function.name;
    if (typeof n !== 'string' || !/^[A-Za-z0-9_.-]{1,64}$/.test(n))
      throw new MlxcelError('TOOLS_INVALID', `tools[${i}].function.name must be 1-64 letters, digits, '_', '.' or '-'`);
    if (seen.has(n)) throw new MlxcelError('TOOLS_INVALID', `tools[${i}].function.name "${n}" is used twice`);
    seen.add(n);
    const p = t.function.parameters;
    if (p !== undefined && (p === null || typeof p !== 'object' || Array.isArray(p)))
      throw new MlxcelError('TOOLS_INVALID', `tools[${i}].function.parameters must be a JSON Schema object`);
  });
  return [...tools];
}

/** Returns the named function of `{type:'function', function:{name}}`, or null. */
function validateChoice(choice: ToolChoice, tools: readonly ToolDefinition[]): string | null {
  if (choice === 'auto' || choice === 'none' || choice === 'required') return null;
  if (typeof choice !== 'object' || choice === null || choice.type !== 'function' || typeof choice.function?.name !== 'string')
    throw new MlxcelError('TOOL_CHOICE_INVALID', `tool_choice must be "auto", "none", "required" or {type: "function", function: {name}}, got ${JSON.stringify(choice)}`);
  const name = choice.function.name;
  if (!tools.some((t) => t.function.name === name))
    throw new MlxcelError('TOOL_CHOICE_INVALID', `tool_choice names function "${name}", which is not in tools (${tools.map((t) => t.function.name).join(', ') || 'none given'})`);
  return name;
}
