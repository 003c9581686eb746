/**
 * What a schema-valid request means: its prompts, its choice count and the checks a JSON schema
 * cannot express (content a role needs, media the model cannot take, token ids past the vocabulary,
 * fields that only make sense together, text too long for the context). Every failure is a 400 that
 * names the field.
 */
import type { ChatMessage, ChatRequestFields, OpenAIMessage, ResponseFormat, ToolCall, ToolChoice, ToolDefinition } from '@mlxcel/engine';
import { ApiError, badField } from './errors.js';
import type { SamplingFields } from './sampling-options.js';
import { refuseMediaCombination, refuseMediaPart } from './unsupported.js';
import type { MediaMessage, MediaPart, ModelInfo, PromptSpec, TokenizerInfo } from './worker/protocol.js';

export type ContentPart = { type: string; text?: string; refusal?: string; image_url?: { url: string }; input_audio?: { data: string; format: string } };

export interface ChatMessageIn {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool' | 'function';
  content?: string | null | ContentPart[];
  name?: string;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
}

/** How the server was started, as far as reading requests goes. */
export interface RequestPolicy {
  /** image_url parts may name files inside this folder (`--allow-local-files`). */
  allowLocalFiles: boolean;
}

interface CommonRequest extends SamplingFields {
  model?: string;
  n?: number | null;
  stream?: boolean | null;
  stream_options?: { include_usage?: boolean } | null;
}

export interface ChatRequest extends CommonRequest {
  messages: ChatMessageIn[];
  logprobs?: boolean | null;
  top_logprobs?: number | null;
  tools?: ToolDefinition[] | null;
  tool_choice?: ToolChoice | null;
  parallel_tool_calls?: boolean | null;
  response_format?: ResponseFormat | null;
  grammar?: string | null;
}

export interface CompletionRequest extends CommonRequest {
  prompt: string | string[] | number[] | number[][];
  echo?: boolean | null;
  logprobs?: number | null;
  best_of?: number | null;
  grammar?: string | null;
}

/** What the route handler works from once a request is accepted. */
export interface ParsedRequest {
  prompts: PromptSpec[];
  /** Raw completion text (no chat template). */
  raw: boolean;
  n: number;
  stream: boolean;
  includeUsage: boolean;
  /** Top alternatives per token; null = no logprobs. */
  logprobs: number | null;
  echo: boolean;
  /** Chat with tools / response_format / grammar: planned (prompt + grammar) on the tokenizer thread. */
  plan: ChatRequestFields | null;
  /** Chat with image / audio parts: encoded and rendered on the engine thread. */
  media: MediaMessage[] | null;
  /** A grammar built apart from the prompt (completions `grammar`; a media chat's response_format / grammar). */
  grammar: { responseFormat?: ResponseFormat; grammar?: string } | null;
  /** Completions `best_of`: candidates sampled per prompt, the `n` with the best mean logprob returned. */
  bestOf: number;
}

export interface ServedModel {
  /** Name reported by /v1/models and in responses. */
  name: string;
  /** Other names a request's `model` may use. */
  aliases: string[];
}

/** 404 `model_not_found` unless `model` is absent or one of the served names. */
export function checkModel(model: string | undefined, served: ServedModel): void {
  if (model === undefined || model === served.name || served.aliases.includes(model)) return;
  throw new ApiError(404, `The model '${model}' does not exist; this server serves '${served.name}'${served.aliases.length ? ` (aliases: ${served.aliases.join(', ')})` : ''}`, {
    type: 'invalid_request_error', param: 'model', code: 'model_not_found',
  });
}

function checkCommon(body: CommonRequest, info: ModelInfo): void {
  if (body.stream_options != null && body.stream !== true)
    throw badField('stream_options', "'stream_options' is only allowed when 'stream' is true");
  for (const key of Object.keys(body.logit_bias ?? {}))
    if (Number(key) >= info.vocabSize) throw badField('logit_bias', `'logit_bias' token id ${key} is outside the vocabulary (0..${info.vocabSize - 1})`);
}

/**
 * A text longer than maxContext × (most characters one token decodes to) needs more tokens than
 * the context holds, whatever the tokenization: refused here, before any tokenizer time is spent.
 */
function checkTextBound(chars: number, info: ModelInfo, text: TokenizerInfo, param: string): void {
  const most = info.maxContext * text.maxTokenChars;
  if (chars > most)
    throw new ApiError(400, `'${param}' is ${chars} characters: more than this model's ${info.maxContext}-token context can hold (at most ${most} characters at ${text.maxTokenChars} per token)`, {
      param, code: 'context_length_exceeded',
    });
}

/**
 * A message's content parts: their joined text, and the media parts (images, audio) with the field
 * that names each. Media the model cannot take, and URLs this server will not read, are refused by name.
 */
function readParts(parts: ContentPart[], i: number, info: ModelInfo, policy: RequestPolicy): { text: string; media: MediaPart[] | null } {
  let text = '';
  const out: MediaPart[] = [];
  let media = false;
  parts.forEach((p, j) => {
    const where = `messages[${i}].content[${j}]`;
    if (p.type === 'text') {
      if (typeof p.text !== 'string') throw badField(`${where}.text`, `'${where}.text' is required for a text part`, 'missing_required_parameter');
      text += p.text;
      out.push({ type: 'text', text: p.text });
    } else if (p.type === 'refusal') {
      text += p.refusal ?? '';
      out.push({ type: 'text', text: p.refusal ?? '' });
    } else if (p.type === 'image_url') {
      if (!info.imageInput) throw badField(where, `${where} is an image, but this ${info.modelType} model has no image input (no vision tower)`, 'image_input_unsupported');
      const url = p.image_url!.url;
      // Cheap refusals here; the bytes are read and decoded on the engine thread.
      if (/^https?:/i.test(url)) throw badField(where, `${where}: remote image URLs are not fetched by this server; send the image as a data: URL`, 'remote_url_refused');
      if (!url.startsWith('data:') && !policy.allowLocalFiles)
        throw badField(where, `${where}: local image files are refused; send the image as a data: URL (a server started with --allow-local-files DIR reads files inside DIR)`, 'local_file_refused');
      out.push({ type: 'image', url, where });
      media = true;
    } else if (p.type === 'input_audio') {
      if (!info.audioInput) throw badField(where, `${where} is audio, but this ${info.modelType} model has no audio input`, 'audio_input_unsupported');
      refuseMediaPart(p, where);
      out.push({ type: 'audio', data: p.input_audio!.data, where });
      media = true;
    } else {
      refuseMediaPart(p, where);
      throw badField(where, `${where} has type '${p.type}', which this server does not take`, 'invalid_value');
    }
  });
  return { text, media: media ? out : null };
}

/** True when a chat request asks for tools, a response format other than text, or a grammar. */
function isStructured(body: ChatRequest): boolean {
  const rf = body.response_format;
  return (Array.isArray(body.tools) && body.tools.length > 0) || body.tool_choice != null || (rf != null && rf.type !== 'text') || body.grammar != null;
}

export function parseChat(body: ChatRequest, info: ModelInfo, text: TokenizerInfo, policy: RequestPolicy): ParsedRequest {
  checkCommon(body, info);
  if (!text.hasTokenizer) throw badField('messages', 'this model has no tokenizer, so it cannot take chat messages; use /v1/completions with token ids', 'tokenizer_missing');
  if (!text.hasChatTemplate) throw badField('messages', 'this model has no chat template; use /v1/completions or start the server with --chat-template FILE', 'chat_template_missing');
  if (body.top_logprobs != null && body.logprobs !== true)
    throw badField('top_logprobs', "'top_logprobs' needs 'logprobs': true");
  const structured = isStructured(body);
  const withTools = Array.isArray(body.tools) && body.tools.length > 0;
  let chars = 0;
  let hasMedia = false;
  const mediaMessages: MediaMessage[] = [];
  const planned: OpenAIMessage[] = [];
  const messages: ChatMessage[] = body.messages.map((m, i) => {
    if (m.role === 'function') throw badField(`messages[${i}].role`, "role 'function' (legacy function calling) is not supported; send 'tools' and 'tool' messages instead", 'unsupported_parameter');
    const role = m.role === 'developer' ? 'system' : m.role;
    // With tools, the tool-call format renders tool results (as the template's tool turn, or a user turn).
    if (!(withTools && role === 'tool') && !text.roles.includes(role))
      throw badField(`messages[${i}].role`, `role '${m.role}' is not supported by this model's chat template (it renders: ${text.roles.join(', ')})`, 'unsupported_role');
    let content: string;
    let media: MediaPart[] | null = null;
    if (m.content == null) {
      // An assistant turn that only calls tools has no content in every agent loop.
      if (!(role === 'assistant' && Array.isArray(m.tool_calls)))
        throw badField(`messages[${i}].content`, `'messages[${i}].content' is required for a ${m.role} message`, 'missing_required_parameter');
      content = '';
    } else if (typeof m.content === 'string') content = m.content;
    else ({ text: content, media } = readParts(m.content, i, info, policy));
    chars += content.length;
    if (media) hasMedia = true;
    const out: ChatMessage = { role, content };
    if (m.name !== undefined) out.name = m.name;
    if (m.tool_calls !== undefined) out.tool_calls = m.tool_calls;
    if (m.tool_call_id !== undefined) out.tool_call_id = m.tool_call_id;
    mediaMessages.push({ ...out, content: media ?? content });
    planned.push({ role: role as OpenAIMessage['role'], content: m.content == null ? null : content, ...(m.tool_calls ? { tool_calls: m.tool_calls } : {}), ...(m.tool_call_id !== undefined ? { tool_call_id: m.tool_call_id } : {}), ...(m.name !== undefined ? { name: m.name } : {}) });
    return out;
  });
  checkTextBound(chars, info, text, 'messages');
  if (hasMedia) refuseMediaCombination(mediaMessages, withTools || body.tool_choice != null);
  const stream = body.stream === true;
  const rf = body.response_format != null && body.response_format.type !== 'text' ? body.response_format : undefined;
  return {
    prompts: [{ kind: 'chat', messages }],
    raw: false,
    n: body.n ?? 1,
    stream,
    includeUsage: stream && body.stream_options?.include_usage === true,
    logprobs: body.logprobs === true ? (body.top_logprobs ?? 0) : null,
    echo: false,
    plan: structured && !hasMedia
      ? { messages: planned, tools: body.tools, tool_choice: body.tool_choice, parallel_tool_calls: body.parallel_tool_calls, response_format: body.response_format, grammar: body.grammar }
      : null,
    media: hasMedia ? mediaMessages : null,
    grammar: hasMedia && (rf || body.grammar != null) ? { responseFormat: rf, grammar: body.grammar ?? undefined } : null,
    bestOf: body.n ?? 1,
  };
}

export function parseCompletion(body: CompletionRequest, info: ModelInfo, text: TokenizerInfo): ParsedRequest {
  checkCommon(body, info);
  const n = body.n ?? 1;
  const bestOf = body.best_of ?? n;
  if (bestOf < n) throw badField('best_of', `'best_of' (${bestOf}) must be at least 'n' (${n}): it is how many candidates the ${n} returned are chosen from`);
  if (bestOf > n && body.stream === true) throw badField('best_of', "'best_of' greater than 'n' cannot be streamed (the best candidates are known only at the end)");
  if (body.grammar != null && !text.hasTokenizer) throw badField('grammar', 'this model has no tokenizer, so its output cannot follow a grammar', 'tokenizer_missing');
  const p = body.prompt;
  let prompts: PromptSpec[];
  if (typeof p === 'string') prompts = [{ kind: 'text', text: p }];
  else if (typeof p[0] === 'string') prompts = (p as string[]).map((t) => ({ kind: 'text', text: t }));
  else if (typeof p[0] === 'number') prompts = [{ kind: 'ids', ids: p as number[] }];
  else prompts = (p as number[][]).map((ids) => ({ kind: 'ids', ids }));
  prompts.forEach((q, i) => {
    const param = prompts.length > 1 ? `prompt[${i}]` : 'prompt';
    if (q.kind === 'ids') {
      const bad = q.ids.find((id) => id >= info.vocabSize);
      if (bad !== undefined) throw badField(param, `'${param}' holds token id ${bad}, outside the vocabulary (0..${info.vocabSize - 1})`);
      if (q.ids.length + 1 > info.maxContext)
        throw new ApiError(400, `'${param}' has ${q.ids.length} tokens, leaving no room in this model's ${info.maxContext}-token context`, { param, code: 'context_length_exceeded' });
    } else if (q.kind === 'text') {
      if (!text.hasTokenizer) throw badField(param, 'this model has no tokenizer; send the prompt as token ids', 'tokenizer_missing');
      checkTextBound(q.text.length, info, text, param);
    }
  });
  const stream = body.stream === true;
  return {
    prompts,
    raw: true,
    n,
    stream,
    includeUsage: stream && body.stream_options?.include_usage === true,
    logprobs: body.logprobs ?? null,
    echo: body.echo === true,
    plan: null,
    media: null,
    grammar: body.grammar != null ? { grammar: body.grammar } : null,
    bestOf,
  };
}
