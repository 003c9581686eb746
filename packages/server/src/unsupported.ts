/**
 * Request fields this server does not implement yet. They are refused with a 400 that says so —
 * never silently ignored (a client that sends `tools` and gets plain text back fails in confusing
 * ways). Tool calling and structured output (`tools`, `tool_choice`, `response_format`, `grammar`)
 * are the next piece of work; when they land, this is the one place to change.
 */
import { badField } from './errors.js';

const NOT_YET: Record<string, string> = {
  tools: 'tool calling',
  tool_choice: 'tool calling',
  functions: 'function calling',
  function_call: 'function calling',
  grammar: 'grammar-constrained output',
};

/** Throws a 400 naming the first unsupported field the request sets (null / absent is fine). */
export function refuseUnsupported(body: Record<string, unknown>, route: 'chat' | 'completions'): void {
  for (const [field, what] of Object.entries(NOT_YET))
    if (body[field] != null) throw badField(field, `'${field}' is not supported by this server yet (${what} is not implemented); remove it from the request`, 'unsupported_parameter');
  const format = body.response_format as { type?: unknown } | null | undefined;
  if (format != null && !(typeof format === 'object' && format.type === 'text'))
    throw badField('response_format', `'response_format' other than {"type": "text"} is not supported by this server yet (structured output is not implemented)`, 'unsupported_parameter');
  if (route === 'completions' && body.suffix != null)
    throw badField('suffix', `'suffix' (insertion) is not supported by this server`, 'unsupported_parameter');
  const modalities = body.modalities;
  if (Array.isArray(modalities) && modalities.some((m) => m !== 'text'))
    throw badField('modalities', `only the "text" output modality is supported`, 'unsupported_parameter');
  if (body.audio != null) throw badField('audio', `audio output is not supported by this server`, 'unsupported_parameter');
}
