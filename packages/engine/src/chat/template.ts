import { Template } from '@huggingface/jinja';
import { MlxcelError } from '../errors.js';
import { type ResolveChatTemplateOptions, resolveChatTemplate } from './resolve.js';
import type { ChatMessage } from './types.js';

export interface RenderChatOptions {
  /** Append the assistant-turn opener (`<start_of_turn>model\n`, `<|assistant|>\n`). Default `true`. */
  addGenerationPrompt?: boolean;
  /** `bos_token` variable (omitted when null/undefined, so the template sees it as undefined). */
  bosToken?: string | null;
  /** `eos_token` variable. */
  eosToken?: string | null;
  /** Further special-token variables (`unk_token`, `pad_token`, …). */
  specialTokens?: Readonly<Record<string, string>>;
  /**
   * Extra template variables, passed through as transformers' `apply_chat_template(**kwargs)`
   * does: `tools`, `documents`, `enable_thinking`, … They win over the special tokens.
   */
  variables?: Readonly<Record<string, unknown>>;
}

/**
 * A compiled Hugging Face chat template. Rendering uses `@huggingface/jinja`, which matches
 * Python jinja2 as transformers configures it (trim_blocks, lstrip_blocks,
 * `raise_exception`, `strftime_now`); see docs/architecture/tokenizers.md.
 */
export class ChatTemplate {
  readonly template: string;
  readonly source: string;
  private readonly compiled: Template;

  constructor(template: string, source = 'chat template') {
    this.template = template;
    this.source = source;
    try {
      this.compiled = new Template(template);
    } catch (err) {
      throw new MlxcelError('CHAT_TEMPLATE_INVALID', `cannot parse ${source}: ${(err as Error).message}`);
    }
  }

  /**
   * Render messages to the prompt text.
   *
   * What the template receives: `messages` (each message with its fields; a list `content`
   * keeps its parts in order, text parts as `{type:'text', text}`, media parts as
   * `{type:'audio'|'image'|'video', …}` — see {@link toTemplateValue} for which extra fields
   * survive), `add_generation_prompt`, `bos_token`, `eos_token`, the other special tokens
   * and every entry of `variables`.
   */
  render(messages: readonly ChatMessage[], options: RenderChatOptions = {}): string {
    const context: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(options.specialTokens ?? {})) context[k] = v;
    if (options.bosToken != null) context.bos_token = options.bosToken;
    if (options.eosToken != null) context.eos_token = options.eosToken;
    for (const [k, v] of Object.entries(options.variables ?? {})) context[k] = toTemplateValue(v);
    context.messages = toTemplateValue(messages);
    context.add_generation_prompt = options.addGenerationPrompt ?? true;
    try {
      return this.compiled.render(context);
    } catch (err) {
      throw new MlxcelError('CHAT_TEMPLATE_ERROR', `${this.source} failed to render: ${(err as Error).message}`);
    }
  }
}

/**
 * Convert a value to what a template may see: JSON-like data only. Strings, numbers,
 * booleans, null, arrays and plain objects are copied (deeply); `undefined` fields,
 * functions, typed arrays, Buffers, ArrayBuffers and other class instances (audio
 * samples, decoded images) are dropped, so a media part `{type:'audio', samples:
 * Float32Array}` reaches the template as `{type:'audio'}`.
 */
export function toTemplateValue(value: unknown): unknown {
  if (value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return value;
  if (Array.isArray(value)) return value.map(toTemplateValue).filter((v) => v !== undefined);
  if (typeof value === 'object') {
    const proto = Object.getPrototypeOf(value) as unknown;
    if (proto !== Object.prototype && proto !== null) return undefined;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      const converted = toTemplateValue(v);
      if (converted !== undefined) out[k] = converted;
    }
    return out;
  }
  return undefined;
}

/**
 * Resolve (see {@link resolveChatTemplate}) and compile a model's chat template, or return
 * `null` when the model has none.
 */
export function loadChatTemplate(options: ResolveChatTemplateOptions): ChatTemplate | null {
  const found = resolveChatTemplate(options);
  return found === null ? null : new ChatTemplate(found.template, found.source);
}
