/**
 * What this server does not implement, in one place. Each is refused with a 400 that says so —
 * never silently ignored (a client that sends `functions` and gets plain text back fails in
 * confusing ways).
 */
import { badField } from './errors.js';
import type { ContentPart } from './requests.js';
import type { MediaMessage } from './worker/protocol.js';

/** Legacy function calling (superseded by `tools`). */
const LEGACY: Record<string, string> = {
  functions: "legacy function calling; send 'tools' instead",
  function_call: "legacy function calling; send 'tool_choice' instead",
};

/** Chat-only fields a completions request must not carry. */
const CHAT_ONLY = ['tools', 'tool_choice', 'parallel_tool_calls', 'response_format'];

/** Throws a 400 naming the first unsupported field the request sets (null / absent is fine). */
export function refuseUnsupported(body: Record<string, unknown>, route: 'chat' | 'completions'): void {
  for (const [field, what] of Object.entries(LEGACY))
    if (body[field] != null) throw badField(field, `'${field}' is not supported by this server (${what})`, 'unsupported_parameter');
  if (route === 'completions') {
    for (const field of CHAT_ONLY)
      if (body[field] != null) throw badField(field, `'${field}' is a /v1/chat/completions field; /v1/completions takes 'grammar' for constrained output`, 'unsupported_parameter');
    if (body.suffix != null) throw badField('suffix', `'suffix' (insertion) is not supported by this server`, 'unsupported_parameter');
  }
  const modalities = body.modalities;
  if (Array.isArray(modalities) && modalities.some((m) => m !== 'text'))
    throw badField('modalities', `only the "text" output modality is supported`, 'unsupported_parameter');
  if (body.audio != null) throw badField('audio', `audio output is not supported by this server`, 'unsupported_parameter');
}

/** Content parts the server does not read: `file` parts, audio other than WAV. */
export function refuseMediaPart(p: ContentPart, where: string): void {
  if (p.type === 'file') throw badField(where, `${where}: 'file' content parts are not supported; send images as image_url parts and audio as input_audio parts`, 'unsupported_parameter');
  if (p.type === 'input_audio' && p.input_audio?.format !== 'wav')
    throw badField(`${where}.input_audio.format`, `${where}: audio format '${String(p.input_audio?.format)}' is not supported; send WAV (format: "wav")`, 'unsupported_parameter');
}

/** One request carries images or audio, not both; media together with tools is not implemented. */
export function refuseMediaCombination(messages: readonly MediaMessage[], withTools: boolean): void {
  let image: string | null = null, audio: string | null = null;
  for (const m of messages) {
    if (typeof m.content === 'string') continue;
    for (const p of m.content) {
      if (p.type === 'image') image ??= p.where;
      else if (p.type === 'audio') audio ??= p.where;
    }
  }
  const first = image ?? audio ?? 'messages';
  if (image && audio) throw badField(audio, `${audio}: a request may carry images or audio, not both (${image} is an image)`, 'unsupported_parameter');
  if (withTools) throw badField(first, `${first}: image and audio parts together with 'tools' are not supported yet; send them in a request without tools`, 'unsupported_parameter');
}
