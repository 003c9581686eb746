import type { Tokenizer } from './tokenizer/types.js';

export interface StreamingDetokenizerOptions {
  /** Leave special tokens out of the text. Default `false`. */
  skipSpecialTokens?: boolean;
  /**
   * Safety valve for pathological output (a long run of invalid byte tokens that keeps the
   * text ending in U+FFFD): once this many tokens are held back, they are emitted as they
   * decode. Default 32 (a real incomplete UTF-8 character spans at most 4 tokens).
   */
  maxHeldTokens?: number;
}

/**
 * Turns a stream of token ids into text deltas that are safe to show as they come.
 *
 * It decodes a small window of the most recent tokens, starting at an already emitted
 * token that decodes to complete text on its own (usually the one just before the new
 * ones), and emits only the part of the window's text that has not been emitted
 * yet and is stable:
 * - a text that ends in U+FFFD is held back: a character split over byte-fallback tokens
 *   (`<0xF0><0x9F><0xA6><0x99>`) or over byte-level BPE tokens decodes to U+FFFD until its
 *   last byte arrives, so no broken UTF-8 (or lone surrogate) is ever emitted;
 * - SentencePiece decoders drop the leading space of the *first* token they decode; since
 *   the window starts with an already emitted token, the new token's `▁` space survives.
 * Decoding is prefix-stable under appends apart from that held-back tail (no
 * `clean_up_tokenization_spaces` rewriting; see HfTokenizer), so emitted text is never
 * taken back, and the concatenation of all deltas plus `flush()` equals
 * `tokenizer.decode(allTokens)` whenever the byte tokens form valid UTF-8. (For invalid
 * runs the Rust-style decoder turns a whole byte run into U+FFFD, including characters of
 * it that were already shown; the stream then keeps what it showed.)
 */
export class StreamingDetokenizer {
  private readonly tokenizer: Pick<Tokenizer, 'decode'>;
  private readonly skipSpecialTokens: boolean;
  private readonly maxHeld: number;
  private ids: number[] = [];
  /** Window start (index into `ids`). */
  private start = 0;
  /** How many UTF-16 units of the window's decoded text have been emitted already. */
  private emittedInWindow = 0;
  /** Index of the first token whose text is not fully emitted (held-back tokens start here). */
  private pendingFrom = 0;
  private out = '';

  constructor(tokenizer: Pick<Tokenizer, 'decode'>, options: StreamingDetokenizerOptions = {}) {
    this.tokenizer = tokenizer;
    this.skipSpecialTokens = options.skipSpecialTokens ?? false;
    this.maxHeld = options.maxHeldTokens ?? 32;
  }

  /** All text emitted so far. */
  get text(): string {
    return this.out;
  }

  /** All tokens pushed so far. */
  get tokens(): readonly number[] {
    return this.ids;
  }

  /** Add one token; returns the newly stable text ("" when it is held back). */
  push(token: number): string {
    this.ids.push(token);
    const text = this.windowText();
    let stableEnd = text.length;
    while (stableEnd > 0 && text.charCodeAt(stableEnd - 1) === 0xfffd) stableEnd--;
    const held = stableEnd < text.length;
    if (held && this.ids.length - this.pendingFrom <= this.maxHeld) {
      return this.emit(text, stableEnd);
    }
    const delta = this.emit(text, text.length);
    this.pendingFrom = this.ids.length;
    if (held) {
      // Forced out: restart with an empty window (the held tail can no longer be merged).
      this.start = this.ids.length;
      this.emittedInWindow = 0;
      return delta;
    }
    // Everything is emitted: move the window start to the last token that decodes to
    // complete text on its own. Not a skipped special token (it gives no context, so the
    // next token's leading space would be stripped as if it started the text), and not a
    // byte token of a multi-byte character (a window starting inside a byte run decodes
    // that run as invalid UTF-8).
    for (let i = this.ids.length - 1; i > this.start; i--) {
      const alone = this.decode(this.ids.slice(i, i + 1));
      if (alone.length > 0 && !alone.includes('\uFFFD')) {
        this.start = i;
        break;
      }
    }
    this.emittedInWindow = this.windowText().length;
    return delta;
  }

  /** Add several tokens; returns the concatenated deltas. */
  pushMany(tokens: Iterable<number>): string {
    let s = '';
    for (const t of tokens) s += this.push(t);
    return s;
  }

  /** End of stream: emit whatever is held back (an incomplete tail shows as U+FFFD). */
  flush(): string {
    const text = this.windowText();
    const delta = this.emit(text, text.length);
    this.start = this.ids.length;
    this.pendingFrom = this.ids.length;
    this.emittedInWindow = 0;
    return delta;
  }

  /** Forget everything (for reuse with a new sequence). */
  reset(): void {
    this.ids = [];
    this.start = 0;
    this.pendingFrom = 0;
    this.emittedInWindow = 0;
    this.out = '';
  }

  private windowText(): string {
    return this.decode(this.ids.slice(this.start));
  }

  private decode(ids: number[]): string {
    return this.tokenizer.decode(ids, { skipSpecialTokens: this.skipSpecialTokens });
  }

  private emit(text: string, end: number): string {
    if (end <= this.emittedInWindow) return '';
    const delta = text.slice(this.emittedInWindow, end);
    this.emittedInWindow = end;
    this.out += delta;
    return delta;
  }
}
