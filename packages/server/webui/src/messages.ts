/** One chat turn as DOM: the text (Markdown for answers, plain text for the user's turns) and its stats. */
import { el } from './dom.js';
import { renderMarkdown } from './markdown.js';
import type { Message } from './types.js';

/** "12 prompt + 40 generated tokens · 85.3 tok/s · stopped" for an answer. */
export function answerStats(m: Message): string {
  const parts: string[] = [];
  if (m.usage) parts.push(`${m.usage.prompt_tokens} prompt + ${m.usage.completion_tokens} generated tokens`);
  if (m.tokensPerSecond !== undefined) parts.push(`${m.tokensPerSecond.toFixed(1)} tok/s`);
  if (m.finishReason === 'length') parts.push('max tokens reached');
  if (m.stopped) parts.push('stopped');
  return parts.join(' · ');
}

/** Adds a Copy button to each code block (only where the clipboard API exists: secure contexts). */
function addCopyButtons(body: HTMLElement): void {
  if (!navigator.clipboard) return;
  for (const pre of body.querySelectorAll('pre')) {
    const button = el('button', 'copy', 'Copy');
    button.type = 'button';
    button.addEventListener('click', () => {
      void navigator.clipboard.writeText(pre.querySelector('code')?.textContent ?? pre.textContent ?? '').then(() => {
        button.textContent = 'Copied';
        setTimeout(() => (button.textContent = 'Copy'), 1200);
      });
    });
    pre.append(button);
  }
}

/** Replaces the body element's content with m's text. */
export function fillBody(body: HTMLElement, m: Message): void {
  if (m.role === 'user') {
    body.textContent = m.content;
    if (m.images?.length) body.prepend(thumbnails(m.images));
    return;
  }
  body.replaceChildren(renderMarkdown(m.content));
  addCopyButtons(body);
}

/** The images of a turn (data: URLs the page itself made from files the user picked). */
export function thumbnails(images: readonly string[], onRemove?: (i: number) => void): HTMLElement {
  const row = el('div', 'thumbs');
  images.forEach((src, i) => {
    const fig = el('span', 'thumb');
    const img = el('img');
    img.src = src;
    img.alt = `attached image ${i + 1}`;
    fig.append(img);
    if (onRemove) {
      const x = el('button', 'remove', '×');
      x.type = 'button';
      x.setAttribute('aria-label', `Remove image ${i + 1}`);
      x.addEventListener('click', () => onRemove(i));
      fig.append(x);
    }
    row.append(fig);
  });
  return row;
}

export interface MessageView {
  root: HTMLElement;
  body: HTMLElement;
  stats: HTMLElement;
}

export function messageView(m: Message, pending: boolean): MessageView {
  const root = el('article', `msg ${m.role}${m.error ? ' error' : ''}${pending ? ' pending' : ''}`);
  root.append(el('div', 'role', m.role === 'user' ? 'You' : 'Model'));
  const body = el('div', 'body');
  fillBody(body, m);
  root.append(body);
  if (m.error) root.append(el('div', 'error-text', m.error));
  const stats = el('div', 'stats', answerStats(m));
  root.append(stats);
  return { root, body, stats };
}
