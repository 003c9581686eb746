/** The settings panel: system prompt and sampling fields of the open conversation. */
import { byId } from './dom.js';
import type { Conversation, Sampling } from './types.js';

const FIELDS: (keyof Sampling)[] = ['temperature', 'top_p', 'top_k', 'min_p', 'max_tokens', 'seed'];

function input(field: keyof Sampling): HTMLInputElement {
  return byId<HTMLInputElement>(`s-${field}`);
}

/** Shows conv's settings in the form. */
export function fillSettings(conv: Conversation): void {
  byId<HTMLTextAreaElement>('system-prompt').value = conv.systemPrompt;
  for (const f of FIELDS) {
    const v = conv.settings[f];
    input(f).value = v === null ? '' : String(v);
  }
}

/**
 * Reads the form back into conv. An empty field means "server default" (null); a field the browser
 * flags as invalid (out of its min/max, not a number) keeps the conversation's previous value.
 */
export function readSettings(conv: Conversation): void {
  conv.systemPrompt = byId<HTMLTextAreaElement>('system-prompt').value;
  for (const f of FIELDS) {
    const box = input(f);
    if (box.value.trim() === '') conv.settings[f] = null;
    else if (box.validity.valid && Number.isFinite(box.valueAsNumber)) conv.settings[f] = box.valueAsNumber;
  }
}

/** The sampling fields of a request body (nulls left out so the server applies its defaults). */
export function samplingBody(s: Sampling): Record<string, number> {
  const body: Record<string, number> = {};
  for (const f of FIELDS) if (s[f] !== null) body[f] = s[f] as number;
  return body;
}
