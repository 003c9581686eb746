/**
 * What a schema-valid request means: its prompts, its choice count and the checks a JSON schema
 * cannot express (content a role needs, media the model cannot take, token ids past the vocabulary,
 * fields that only make sense together, text too long for the context). Every failure is a 400 that
 * names the field.
 */
import type { ChatMessage } from '@mlxcel/engine';
import { ApiError, badField } from './errors.js';
import type { SamplingFields } from './sampling-options.js';
import type { ModelInfo, PromptSpec, TokenizerInfo } from './worker/protocol.js';

type ContentPart = { type: string; text?: string; refusal?: string; image_url?: { url: string }; input_audio?: { data: string; format: string } };

export interface ChatMessageIn {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool' | 'function';
  content?: string | null | ContentPart[];
  name?: string;
  tool_calls?: unknown[];
  tool_call_id?: string;
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
}

export interface CompletionRequest extends CommonRequest {
  prompt: string | string[] | number[] | number[][];
  echo?: boolean | null;
  logprobs?: number | null;
  best_of?: number | null;
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

/** Text of a message's content parts; media parts the model cannot take are refused by name. */
function partsText(parts: ContentPart[], i: number, info: ModelInfo): string {
  let text = '';
  parts.forEach((p, j) => {
    const where = `messages[${i}].content[${j}]`;
    if (p.type === 'text') {
      if (typeof p.text !== 'string') throw badField(`${where}.text`, `'${where}.text' is required for a text part`, 'missing_required_parameter');
      text += p.text;
    } else if (p.type === 'refusal') {
      text += p.refusal ?? '';
    } else if (p.type === 'image_url') {
      throw badField(where, `${where} is an image, but ${info.modelType} models take no image input here`, 'image_input_unsupported');
    } else if (p.type === 'input_audio') {
      throw badField(
        where,
        info.audioInput
          ? `${where} is audio: this model has an audio tower, but audio in chat requests is not wired into the server yet`
          : `${where} is audio, but this ${info.modelType} model has no audio input`,
        'audio_input_unsupported',
      );
    } else {
      throw badField(where, `${where} has type '${p.type}', which this server does not take`, 'invalid_value');
    }
  });
  return text;
}

export function parseChat(body: ChatRequest, info: ModelInfo, text: TokenizerInfo): ParsedRequest {
  checkCommon(body, info);
  if (!text.hasTokenizer) throw badField('messages', 'this model has no tokenizer, so it cannot take chat messages; use /v1/completions with token ids', 'tokenizer_missing');
  if (!text.hasChatTemplate) throw badField('messages', 'this model has no chat template; use /v1/completions or start the server with --chat-template FILE', 'chat_template_missing');
  if (body.top_logprobs != null && body.logprobs !== true)
    throw badField('top_logprobs', "'top_logprobs' needs 'logprobs': true");
  let chars = 0;
  const messages: ChatMessage[] = body.messages.map((m, i) => {
    if (m.role === 'function') throw badField(`messages[${i}].role`, "role 'function' (legacy function calling) is not supported; function calling is not implemented yet", 'unsupported_parameter');
    const role = m.role === 'developer' ? 'system' : m.role;
    if (!text.roles.includes(role))
      throw badField(`messages[${i}].role`, `role '${m.role}' is not supported by this model's chat template (it renders: ${text.roles.join(', ')})`, 'unsupported_role');
    let content: string;
    if (m.content == null) {
      // An assistant turn that only calls tools has no content in every agent loop.
      if (!(role === 'assistant' && Array.isArray(m.tool_calls)))
        throw badField(`messages[${i}].content`, `'messages[${i}].content' is required for a ${m.role} message`, 'missing_required_parameter');
      content = '';
    } else content = typeof m.content === 'string' ? m.content : partsText(m.content, i, info);
    chars += content.length;
    const out: ChatMessage = { role, content };
    if (m.name !== undefined) out.name = m.name;
    if (m.tool_calls !== undefined) out.tool_calls = m.tool_calls;
    if (m.tool_call_id !== undefined) out.tool_call_id = m.tool_call_id;
    return out;
  });
  checkTextBound(chars, info, text, 'messages');
  const stream = body.stream === true;
  return {
    prompts: [{ kind: 'chat', messages }],
    raw: false,
    n: body.n ?? 1,
    stream,
    includeUsage: stream && body.stream_options?.include_usage === true,
    logprobs: body.logprobs === true ? (body.top_logprobs ?? 0) : null,
    echo: false,
  };
}

export function parseCompletion(body: CompletionRequest, info: ModelInfo, text: TokenizerInfo): ParsedRequest {
  checkCommon(body, info);
  const n = body.n ?? 1;
  if (body.best_of != null && body.best_of !== n)
    throw badField('best_of', `'best_of' other than 'n' (${n}) is not supported (the server returns every choice it samples)`, 'unsupported_parameter');
  if (body.echo === true && body.logprobs != null)
    throw badField('logprobs', "'logprobs' together with 'echo' (logprobs of the prompt tokens) is not supported", 'unsupported_parameter');
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
  };
}
