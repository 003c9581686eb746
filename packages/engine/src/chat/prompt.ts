import { MlxcelError } from '../errors.js';
import { tokenText } from '../tokenizer/config.js';
import type { Tokenizer } from '../tokenizer/types.js';
import type { ChatTemplate, RenderChatOptions } from './template.js';
import type { ChatMessage } from './types.js';

export interface BuildPromptOptions {
  /** The model's chat template (from {@link loadChatTemplate}); `null` when it has none. */
  template: ChatTemplate | null;
  /**
   * Raw-prompt mode: no template; the text is encoded with the tokenizer's own special
   * tokens (BOS where the tokenizer adds one). Messages are joined by "\n" (text parts only).
   */
  noChatTemplate?: boolean;
  /** Default `true`. */
  addGenerationPrompt?: boolean;
  /** Extra template variables (`tools`, `enable_thinking`, …). */
  variables?: RenderChatOptions['variables'];
  /**
   * Tokens the prompt may have at most (the model's context). A text that certainly needs more is
   * refused with PROMPT_TOO_LONG before it is tokenized (see {@link checkPromptFits}).
   */
  maxTokens?: number;
}

/**
 * Normalizers can shrink text before it is tokenized (stripping accents turns a 3-byte decomposed "é"
 * into 1 byte), so the byte bound allows this factor of slack; it is only meant to stop hopeless inputs.
 */
const NORMALIZER_SLACK = 4;

/**
 * Cheap bound before tokenizing: a text of B UTF-8 bytes has at least B / (maxTokenBytes x slack)
 * tokens. Throws PROMPT_TOO_LONG when even that exceeds `maxTokens` (a 4 MB prompt against a
 * 128-token context used to take 13 s and 1 GB to tokenize before being refused).
 */
export function checkPromptFits(tokenizer: Tokenizer, text: string, maxTokens: number | undefined): void {
  if (maxTokens === undefined || !tokenizer.maxTokenBytes) return;
  const perToken = tokenizer.maxTokenBytes * NORMALIZER_SLACK;
  if (text.length <= maxTokens * perToken / 3) return;  // a UTF-16 unit is at most 3 UTF-8 bytes: no need to count
  const bytes = Buffer.byteLength(text, 'utf8');
  const atLeast = Math.ceil(bytes / perToken);
  if (atLeast > maxTokens)
    throw new MlxcelError(
      'PROMPT_TOO_LONG',
      `the prompt is ${bytes} bytes, at least ${atLeast} tokens (the longest token is ${tokenizer.maxTokenBytes} bytes), ` +
        `more than the model's ${maxTokens}-token context; it was not tokenized`,
    );
}

export interface BuiltPrompt {
  /** The exact text that was encoded. */
  text: string;
  ids: number[];
  /** Whether a chat template produced `text`. */
  templated: boolean;
}

/** The special-token variables transformers passes to chat templates, from tokenizer_config.json. */
const SPECIAL_TOKEN_KEYS = ['unk_token', 'pad_token', 'sep_token', 'cls_token', 'mask_token'] as const;

/**
 * Turn a user prompt or a conversation into token ids.
 *
 * - Templated (default): a string input becomes one user message; the template is
 *   rendered with `bos_token`/`eos_token` from the tokenizer, and the text is encoded
 *   **without** adding special tokens (templates such as Gemma's already write `<bos>`;
 *   adding it again would double it).
 * - `noChatTemplate`, or a string input for a model without a template: the raw text is
 *   encoded with `addSpecialTokens: true`.
 * - Messages for a model without a template (and not `noChatTemplate`): error
 *   `CHAT_TEMPLATE_MISSING`.
 */
export function buildPrompt(tokenizer: Tokenizer, input: string | readonly ChatMessage[], options: BuildPromptOptions): BuiltPrompt {
  const raw = options.noChatTemplate === true || (options.template === null && typeof input === 'string');
  if (raw) {
    const text = typeof input === 'string' ? input : input.map(messageText).join('\n');
    checkPromptFits(tokenizer, text, options.maxTokens);
    return { text, ids: tokenizer.encode(text, { addSpecialTokens: true }), templated: false };
  }
  if (options.template === null) {
    throw new MlxcelError(
      'CHAT_TEMPLATE_MISSING',
      'the model has no chat template (no chat_template in tokenizer_config.json, no chat_template.jinja); ' +
        'pass a template file or use the raw-prompt mode (noChatTemplate)',
    );
  }
  const messages: readonly ChatMessage[] = typeof input === 'string' ? [{ role: 'user', content: input }] : input;
  const specialTokens: Record<string, string> = {};
  for (const key of SPECIAL_TOKEN_KEYS) {
    const value = tokenText(tokenizer.tokenizerConfig[key]);
    if (value !== null) specialTokens[key] = value;
  }
  const text = options.template.render(messages, {
    addGenerationPrompt: options.addGenerationPrompt ?? true,
    bosToken: tokenizer.bosToken,
    eosToken: tokenizer.eosToken,
    specialTokens,
    variables: options.variables,
  });
  checkPromptFits(tokenizer, text, options.maxTokens);
  return { text, ids: tokenizer.encode(text, { addSpecialTokens: false }), templated: true };
}

function messageText(message: ChatMessage): string {
  if (typeof message.content === 'string') return message.content;
  return message.content
    .filter((p): p is { type: 'text'; text: string } => p.type === 'text' && typeof (p as { text?: unknown }).text === 'string')
    .map((p) => p.text)
    .join('');
}

/**
 * Replace the i-th occurrence of `placeholder` in a rendered prompt by `expansions[i]`.
 * Processors use this after rendering to expand one media placeholder into the model's
 * full span, e.g. Gemma 4 `<|audio|>` → `<|audio>` + N × `<|audio|>` + `<audio|>`, Gemma 3n
 * `<audio_soft_token>` → `\n\n<start_of_audio>` + 188 × `<audio_soft_token>` + `<end_of_audio>\n\n`.
 * Throws `CHAT_PLACEHOLDER_MISMATCH` when the counts differ.
 */
export function expandPlaceholders(text: string, placeholder: string, expansions: readonly string[]): string {
  if (placeholder.length === 0) throw new MlxcelError('CHAT_PLACEHOLDER_MISMATCH', 'placeholder must not be empty');
  const pieces = text.split(placeholder);
  if (pieces.length - 1 !== expansions.length) {
    throw new MlxcelError(
      'CHAT_PLACEHOLDER_MISMATCH',
      `the prompt has ${pieces.length - 1} ${placeholder} placeholder(s) but ${expansions.length} media input(s) were given`,
    );
  }
  let out = pieces[0]!;
  for (let i = 0; i < expansions.length; i++) out += expansions[i]! + pieces[i + 1]!;
  return out;
}
