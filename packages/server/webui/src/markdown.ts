/**
 * Model output is untrusted: it is rendered as Markdown by `marked`, with any raw HTML in it written out
 * as text (so `<script>` or `<img onerror>` in an answer is shown, not parsed), images written as text
 * (no request to a third party), and the result passed through DOMPurify with a short allow-list as a
 * second line of defence. The page's CSP (no inline scripts) is the third.
 */
import DOMPurify from 'dompurify';
import { Marked, type Tokens } from 'marked';

function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

const marked = new Marked({
  gfm: true,
  breaks: true,
  async: false,
  renderer: {
    html(token: Tokens.HTML | Tokens.Tag): string {
      return escapeHtml(token.raw);
    },
    image(token: Tokens.Image): string {
      return escapeHtml(token.raw);
    },
  },
});

const ALLOWED_TAGS = [
  'a', 'p', 'br', 'hr', 'em', 'strong', 'del', 'code', 'pre', 'blockquote', 'ul', 'ol', 'li',
  'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'table', 'thead', 'tbody', 'tr', 'th', 'td',
];

const purifier = DOMPurify(window);
purifier.addHook('afterSanitizeAttributes', (node) => {
  if (node instanceof HTMLAnchorElement) {
    node.target = '_blank';
    node.rel = 'noopener noreferrer nofollow';
  }
});

/** Sanitized HTML for a Markdown string, as a DocumentFragment ready to insert. */
export function renderMarkdown(text: string): DocumentFragment {
  const html = marked.parse(text) as string;
  return purifier.sanitize(html, {
    ALLOWED_TAGS,
    ALLOWED_ATTR: ['href', 'title', 'class', 'align', 'start'],
    ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|#)/i,
    RETURN_DOM_FRAGMENT: true,
  });
}
