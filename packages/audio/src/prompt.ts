/**
 * Audio in the chat prompt (docs/architecture/gemma-common.md §7.4, docs/architecture/gemma4.md §13, docs/architecture/gemma3n.md §12): the chat template
 * puts one placeholder per clip inside the last user turn; the processor expands each placeholder to
 * begin-of-audio + N soft-token placeholders + end-of-audio; the model replaces the placeholder rows
 * with the clip's soft tokens. Here: the token table, the expansion (text and ids), a small renderer
 * of the two templates' shapes, and the embedding overrides for ForwardInput.embeddingOverrides.
 */
import { MlxcelError } from '@mlxcel/tensor';
import type { AudioModel } from './model.js';
import type { AudioSoftTokens } from './soft-tokens.js';

export interface AudioPromptTokens {
  family: 'gemma4' | 'gemma3n';
  boa: { id: number; text: string };
  /** The per-clip placeholder the chat template emits, also the soft-token id after expansion. */
  placeholder: { id: number; text: string };
  eoa: { id: number; text: string };
}

export function audioPromptTokens(model: AudioModel): AudioPromptTokens {
  const t = model.config.tokens;
  if (model.family === 'gemma4')
    return { family: 'gemma4', boa: { id: t.boa, text: '<|audio>' }, placeholder: { id: t.audio, text: '<|audio|>' }, eoa: { id: t.eoa, text: '<audio|>' } };
  return {
    family: 'gemma3n',
    boa: { id: t.boa, text: '<start_of_audio>' },
    placeholder: { id: t.audio, text: '<audio_soft_token>' },
    eoa: { id: t.eoa, text: '<end_of_audio>' },
  };
}

/** The text one placeholder expands to for a clip of `n` soft tokens. */
export function audioExpansionText(model: AudioModel, n: number): string {
  const tk = audioPromptTokens(model);
  const body = tk.boa.text + tk.placeholder.text.repeat(n) + tk.eoa.text;
  // Gemma 3n's processor surrounds the block with blank lines (Gemma 4's does not).
  return model.family === 'gemma3n' ? `\n\n${body}\n\n` : body;
}

/**
 * Expands the k-th placeholder of a rendered prompt with the k-th clip's token count (processor
 * semantics). The number of placeholders must equal the number of clips.
 */
export function expandAudioPlaceholders(prompt: string, model: AudioModel, tokenCounts: readonly number[]): string {
  const ph = audioPromptTokens(model).placeholder.text;
  const parts = prompt.split(ph);
  if (parts.length - 1 !== tokenCounts.length)
    throw new MlxcelError('E_AUDIO_TOKENS', `prompt has ${parts.length - 1} "${ph}" placeholder(s) for ${tokenCounts.length} audio clip(s)`);
  let out = parts[0]!;
  for (let k = 0; k < tokenCounts.length; k++) out += audioExpansionText(model, tokenCounts[k]!) + parts[k + 1]!;
  return out;
}

/**
 * Id-level expansion for callers that already tokenized the rendered prompt: each placeholder id
 * becomes boa + n x placeholder + eoa. Gemma 3n's blank lines need the tokenizer's id for "\n\n"
 * (`newlines`); tokenizing the expanded text (expandAudioPlaceholders) is the exact processor path.
 */
export function expandAudioPlaceholderIds(ids: ArrayLike<number>, model: AudioModel, tokenCounts: readonly number[], opts: { newlines?: number } = {}): Int32Array {
  const tk = audioPromptTokens(model);
  if (model.family === 'gemma3n' && opts.newlines === undefined)
    throw new MlxcelError('E_ARG', 'expandAudioPlaceholderIds: Gemma 3n wraps each clip in "\\n\\n"; pass its token id as opts.newlines');
  const out: number[] = [];
  let k = 0;
  for (let i = 0; i < ids.length; i++) {
    if (ids[i] !== tk.placeholder.id) {
      out.push(ids[i]!);
      continue;
    }
    if (k >= tokenCounts.length) throw new MlxcelError('E_AUDIO_TOKENS', `more audio placeholders than the ${tokenCounts.length} clip(s) given`);
    if (model.family === 'gemma3n') out.push(opts.newlines!);
    out.push(tk.boa.id);
    for (let j = 0; j < tokenCounts[k]!; j++) out.push(tk.placeholder.id);
    out.push(tk.eoa.id);
    if (model.family === 'gemma3n') out.push(opts.newlines!);
    k++;
  }
  if (k !== tokenCounts.length) throw new MlxcelError('E_AUDIO_TOKENS', `prompt has ${k} audio placeholder(s) for ${tokenCounts.length} clip(s)`);
  return Int32Array.from(out);
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface RenderOptions {
  /** Number of clips; their placeholders open the last user turn. Default 1. */
  clips?: number;
  addGenerationPrompt?: boolean;
  /** Gemma 4: append the empty thought channel after the generation prompt (its templates do when thinking is off). Default true. */
  emptyThoughtChannel?: boolean;
}

/**
 * Renders messages in the shape of the checkpoint templates (docs/architecture/gemma-common.md §7.4) with the audio
 * placeholders at the start of the last user turn (content parts [audio x clips, text]), NOT yet
 * expanded. Prefer the checkpoint's own Jinja template when one is available (pass the messages of
 * withAudioInLastUserTurn to it); this renderer covers plain system/user/assistant text.
 */
export function renderAudioChatPrompt(model: AudioModel, messages: readonly ChatMessage[], opts: RenderOptions = {}): string {
  const clips = opts.clips ?? 1;
  const lastUser = lastUserIndex(messages);
  const ph = audioPromptTokens(model).placeholder.text;
  const body = (m: ChatMessage, i: number) => (i === lastUser ? ph.repeat(clips) : '') + m.content.trim();
  let out = '<bos>';
  let msgs = messages.map((m, i) => ({ m, i }));
  if (model.family === 'gemma3n') {
    let prefix = '';
    if (msgs[0]?.m.role === 'system') {
      prefix = msgs[0].m.content + '\n\n';
      msgs = msgs.slice(1);
    }
    msgs.forEach(({ m, i }, n) => {
      if ((m.role === 'user') !== (n % 2 === 0)) throw new MlxcelError('E_CHAT', 'Gemma 3n: conversation roles must alternate user/assistant');
      out += `<start_of_turn>${m.role === 'assistant' ? 'model' : m.role}\n${n === 0 ? prefix : ''}${body(m, i)}<end_of_turn>\n`;
    });
    if (opts.addGenerationPrompt ?? true) out += '<start_of_turn>model\n';
    return out;
  }
  if (msgs[0]?.m.role === 'system') {
    out += `<|turn>system\n${msgs[0].m.content.trim()}<turn|>\n`;
    msgs = msgs.slice(1);
  }
  for (const { m, i } of msgs) out += `<|turn>${m.role === 'assistant' ? 'model' : m.role}\n${body(m, i)}<turn|>\n`;
  if (opts.addGenerationPrompt ?? true) {
    out += '<|turn>model\n';
    if (opts.emptyThoughtChannel ?? true) out += '<|channel>thought\n<channel|>';
  }
  return out;
}

/** Messages for a Jinja chat template: the last user turn's content becomes [audio x clips, text]. */
export function withAudioInLastUserTurn(messages: readonly ChatMessage[], clips = 1): Array<{ role: string; content: string | Array<{ type: string; text?: string }> }> {
  const last = lastUserIndex(messages);
  return messages.map((m, i) =>
    i === last ? { role: m.role, content: [...Array.from({ length: clips }, () => ({ type: 'audio' })), { type: 'text', text: m.content }] } : { ...m },
  );
}

function lastUserIndex(messages: readonly ChatMessage[]): number {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i]!.role === 'user') return i;
  throw new MlxcelError('E_CHAT', 'audio prompt: there is no user message to carry the audio');
}

export interface AudioPromptIds {
  ids: Int32Array;
  /** Positions of the soft-token placeholders, in order. */
  audioRows: Int32Array;
}

/**
 * Expands the rendered prompt's placeholders, tokenizes it and checks that it holds exactly
 * sum(tokenCounts) soft-token placeholders (a mismatch would shift every later clip).
 */
export function audioPromptIds(model: AudioModel, prompt: string, tokenCounts: readonly number[], encode: (text: string) => ArrayLike<number>): AudioPromptIds {
  const ids = Int32Array.from(encode(expandAudioPlaceholders(prompt, model, tokenCounts)));
  const audioRows = placeholderRows(model, ids);
  const want = tokenCounts.reduce((a, b) => a + b, 0);
  if (audioRows.length !== want)
    throw new MlxcelError('E_AUDIO_TOKENS', `tokenized prompt has ${audioRows.length} audio soft-token ids, expected ${want} (does the tokenizer know "${audioPromptTokens(model).placeholder.text}" as a special token?)`);
  return { ids, audioRows };
}

/** Positions of the soft-token placeholder id in `ids`. */
export function placeholderRows(model: AudioModel, ids: ArrayLike<number>): Int32Array {
  const id = audioPromptTokens(model).placeholder.id;
  const rows: number[] = [];
  for (let i = 0; i < ids.length; i++) if (ids[i] === id) rows.push(i);
  return Int32Array.from(rows);
}

/**
 * The ForwardInput.embeddingOverrides for a prompt: the k-th placeholder row gets the k-th soft token
 * (clips concatenated in prompt order). Gemma 3n also routes its other audio-range ids (e.g.
 * <end_of_audio>) through the embedder's hard path, as HF does. Throws when counts differ.
 */
export function audioEmbeddingOverrides(model: AudioModel, ids: ArrayLike<number>, clips: readonly AudioSoftTokens[]): { rows: Int32Array; values: Float32Array } {
  const H = model.textHidden;
  const soft = placeholderRows(model, ids);
  const total = clips.reduce((a, c) => a + c.nTokens, 0);
  if (soft.length !== total)
    throw new MlxcelError('E_AUDIO_TOKENS', `prompt has ${soft.length} audio placeholders but the clips provide ${total} soft tokens`);
  for (const c of clips) if (c.hidden !== H) throw new MlxcelError('E_SHAPE', `soft tokens have width ${c.hidden}, the model's text hidden size is ${H}`);
  const hard: number[] = [];
  if (model.family === 'gemma3n') {
    const { vocabOffset, vocabSize } = model.config;
    const ph = audioPromptTokens(model).placeholder.id;
    for (let i = 0; i < ids.length; i++) if (ids[i]! >= vocabOffset && ids[i]! < vocabOffset + vocabSize && ids[i] !== ph) hard.push(i);
  }
  const rows = new Int32Array(soft.length + hard.length);
  const values = new Float32Array(rows.length * H);
  let k = 0;
  for (const c of clips) {
    for (let j = 0; j < c.nTokens; j++, k++) {
      rows[k] = soft[k]!;
      values.set(c.embeds.subarray(j * H, (j + 1) * H), k * H);
    }
  }
  if (hard.length && model.family === 'gemma3n') {
    const e = model.embedder.hard(hard.map((r) => ids[r]!));
    hard.forEach((r, j) => {
      rows[k + j] = r;
      values.set(e.subarray(j * H, (j + 1) * H), (k + j) * H);
    });
  }
  return { rows, values };
}
