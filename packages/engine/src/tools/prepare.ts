/**
 * One entry point for an OpenAI-style chat request: `response_format`, `tools`, `tool_choice`,
 * `parallel_tool_calls` and a llama.cpp-style `grammar` become the rendered prompt, the compiled
 * constraint, extra suppressed ids and a streaming tool-call parser. Client mistakes throw an
 * `MlxcelError` whose code is in `CLIENT_ERROR_CODES` (a server answers them with 400) and whose
 * message names the request field.
 */
import type { ChatMessage, ChatTemplate } from '../chat/index.js';
import { buildPrompt } from '../chat/index.js';
import { type CompiledConstraint, type ResponseFormat, compileConstraint, constraintKey, grammarOf } from '../constraint/constraint.js';
import { type Grammar, GrammarBuilder, type Sequence } from '../constraint/grammar.js';
import { jsonSchemaGrammar } from '../constraint/json-schema.js';
import { MlxcelError } from '../errors.js';
import type { LoadedModel } from '../load.js';
import type { Tokenizer } from '../tokenizer/index.js';
import { type ToolFormat, type ToolFormatId, toolFormatById, toolFormatFor } from './formats.js';
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

/** What planning a request needs: the tokenizer and the chat template (a tokenizer thread has both). */
export interface ChatPlanContext {
  tokenizer: Tokenizer;
  chatTemplate: ChatTemplate | null;
}

/**
 * A chat request planned without the model: its prompt and the grammar its output must follow.
 * Everything here is structured-clone data, so a server can plan on one thread (tokenizer) and
 * compile the constraint on another (the engine's, which knows the EOS ids) with `compileConstraint`.
 */
export interface ChatPlan {
  promptText: string;
  promptIds: Int32Array;
  /** The output's grammar and its cache key (pass both to compileConstraint); null = free text. */
  grammar: { grammar: Grammar; key?: string } | null;
  suppressedIds: number[];
  /** The tool format in use (null when the request has no tools); `toolFormatById` gives it back. */
  toolFormat: ToolFormatId | null;
  /** The output may hold tool calls: parse it with `new ToolCallStreamParser(toolFormatById(toolFormat).syntax)`. */
  parsesCalls: boolean;
}

/**
 * Runs `f`; an MlxcelError it throws gets `param` (the request field at fault, OpenAI's error
 * `param`) unless it already has one.
 */
function atField<T>(param: string | ((e: MlxcelError) => string), f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (e instanceof MlxcelError && (e as { param?: string }).param === undefined)
      Object.assign(e, { param: typeof param === 'string' ? param : param(e) });
    throw e;
  }
}

/** `tools[2].function.parameters` (or the tool named in the message) for an error about one tool. */
const toolParam = (fallback: string) => (e: MlxcelError) => /tools\[\d+\](\.function(\.parameters|\.name)?)?/.exec(e.message)?.[0] ?? fallback;

/**
 * Plans a chat request: validates tools and tool_choice, builds the grammar (a forced call, a
 * response format or a GBNF grammar) and renders the prompt. Errors are MlxcelErrors with a `param`
 * naming the request field (`tools[0].function.parameters`, `tool_choice`, `response_format`,
 * `grammar`, `messages`).
 */
export function planChatRequest(ctx: ChatPlanContext, req: ChatRequestFields): ChatPlan {
  const tok = ctx.tokenizer;
  if (!Array.isArray(req.messages) || req.messages.length === 0) throw Object.assign(new MlxcelError('BAD_REQUEST', 'messages must be a non-empty array'), { param: 'messages' });
  const tools = atField(toolParam('tools'), () => validateTools(req.tools ?? []));
  const choice = req.tool_choice ?? 'auto';
  const named = atField('tool_choice', () => validateChoice(choice, tools));
  if (tools.length === 0 && (choice === 'required' || named))
    throw Object.assign(new MlxcelError('TOOL_CHOICE_INVALID', `tool_choice ${JSON.stringify(choice)} needs tools`), { param: 'tool_choice' });
  const format = tools.length ? toolFormatFor(ctx.chatTemplate?.template) : null;
  const activeTools = choice === 'none' ? [] : tools;
  // Strict functions have their parameter schemas checked even when no call is forced.
  tools.forEach((t, i) => {
    if (t.function.strict === true) atField(`tools[${i}].function.parameters`, () => jsonSchemaGrammar(t.function.parameters ?? { type: 'object' }));
  });

  let grammar: ChatPlan['grammar'] = null;
  if (format && activeTools.length && (choice === 'required' || named)) {
    if (req.grammar) throw Object.assign(new MlxcelError('BAD_REQUEST', 'grammar cannot be combined with tool_choice "required" or a named function'), { param: 'grammar' });
    const forced = named ? activeTools.filter((t) => t.function.name === named) : activeTools;
    const parallel = req.parallel_tool_calls !== false && !named;
    grammar = atField(toolParam('tools'), () => {
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
      return { grammar: b.build('root'), key: `tools:${format.id}:${parallel}:${JSON.stringify(forced)}` };
    });
  } else {
    const spec = { responseFormat: req.response_format ?? undefined, grammar: req.grammar ?? undefined };
    const g = atField(req.grammar != null ? 'grammar' : 'response_format', () => grammarOf(spec, tok));
    if (g) grammar = { grammar: g, key: constraintKey(spec) ?? undefined };
  }
  // Rendered after the grammar: schema and grammar errors name the request field first.
  const built = atField('messages', () => {
    let messages: ChatMessage[];
    let variables: Record<string, unknown> = {};
    if (format) ({ messages, variables } = format.render(req.messages, tools));
    else messages = req.messages.map((m) => plainMessage(m));
    return buildPrompt(tok, messages, { template: ctx.chatTemplate, variables });
  });
  return {
    promptText: built.text,
    promptIds: Int32Array.from(built.ids),
    grammar,
    suppressedIds: format && choice === 'none' ? format.startTokenIds(tok) : [],
    toolFormat: format?.id ?? null,
    parsesCalls: format !== null && activeTools.length > 0,
  };
}

export function prepareChatRequest(loaded: LoadedModel, req: ChatRequestFields): PreparedChat {
  const tok = loaded.tokenizer;
  if (!tok) throw new MlxcelError('TOKENIZER_MISSING', `${loaded.dir} has no tokenizer`);
  const plan = planChatRequest({ tokenizer: tok, chatTemplate: loaded.chatTemplate }, req);
  const constraint = plan.grammar
    ? compileConstraint({ grammar: plan.grammar.grammar, key: plan.grammar.key }, tok, { vocabSize: loaded.model.vocabSize, eosIds: loaded.eosIds })
    : null;
  const format = plan.toolFormat ? toolFormatById(plan.toolFormat) : null;
  return {
    promptText: plan.promptText,
    promptIds: plan.promptIds,
    constraint,
    suppressedIds: plan.suppressedIds,
    toolFormat: format,
    newParser: () => (format && plan.parsesCalls ? new ToolCallStreamParser(format.syntax) : null),
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
