import { MlxcelError } from '../errors.js';
import { type BpeRanks, bytePairEncode } from './bpe-ranks.js';
import { mergeEosIds } from './config.js';
import type { DecodeOptions, EncodeOptions, Tokenizer } from './types.js';

/**
 * cl100k_base's pre-tokenization regex, rewritten for JavaScript so that it matches what
 * tiktoken (Rust `fancy-regex`) matches:
 * - `(?i:'s|'t|…)` → explicit case classes (Node 20 has no inline modifiers); Unicode
 *   simple case folding makes `(?i)s` also match U+017F LATIN SMALL LETTER LONG S.
 * - `\s` / `\S` → `\p{White_Space}` / `\P{White_Space}`: JS `\s` adds U+FEFF and lacks
 *   U+0085, which is exactly where js-tiktoken diverges from tiktoken.
 */
export const CL100K_PATTERN =
  "'(?:[sS\\u017F]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD])" +
  '|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+' +
  '|\\p{N}{1,3}' +
  '| ?[^\\p{White_Space}\\p{L}\\p{N}]+[\\r\\n]*' +
  '|\\p{White_Space}*[\\r\\n]+' +
  '|\\p{White_Space}+(?!\\P{White_Space})' +
  '|\\p{White_Space}+';

export interface TiktokenTokenizerOptions {
  ranks: BpeRanks;
  /** Pre-tokenization regex source (compiled with flags `gu`). */
  pattern: string;
  /** Special token text → id. Always matched in input text (`allowed_special="all"`). */
  specialTokens: Readonly<Record<string, number>>;
  bosToken: string | null;
  eosToken: string | null;
  /** Add `bosToken` at the start when `encode({addSpecialTokens:true})`. Phi-3-small: false. */
  addBosToken?: boolean;
  /** Ids dropped by `decode({skipSpecialTokens:true})`; default: every special token id. */
  skippedIds?: ReadonlySet<number>;
  /** Padded vocabulary size when larger than the largest id. */
  vocabSize?: number;
  tokenizerConfig?: Record<string, unknown>;
  configEosIds?: readonly number[];
}

/**
 * A tiktoken-style tokenizer: regex pre-tokenization + byte-level BPE over a ranks file,
 * with special tokens matched as whole strings first. Pure TypeScript; checked token for
 * token against the `tiktoken` package (Rust core compiled to WASM) in the tests.
 */
export class TiktokenTokenizer implements Tokenizer {
  readonly kind = 'tiktoken' as const;
  readonly vocabSize: number;
  readonly bosId: number | null;
  readonly bosToken: string | null;
  readonly eosToken: string | null;
  readonly eosIds: readonly number[];
  readonly specialIds: ReadonlySet<number>;
  readonly tokenizerConfig: Readonly<Record<string, unknown>>;

  private readonly encoder: ReadonlyMap<string, number>;
  /** id → token bytes as a binary string (specials as their UTF-8 bytes). */
  private readonly bytesById: Array<string | undefined>;
  private readonly specialByText: ReadonlyMap<string, number>;
  private readonly specialRegex: RegExp | null;
  private readonly pattern: RegExp;
  private readonly addBos: boolean;
  private readonly skipped: ReadonlySet<number>;
  private readonly utf8 = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });
  private readonly utf8Strict = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

  constructor(options: TiktokenTokenizerOptions) {
    this.encoder = options.ranks.encoder;
    this.bytesById = options.ranks.decoder.slice();
    const specials = new Map<string, number>();
    for (const [text, id] of Object.entries(options.specialTokens)) {
      if (this.bytesById[id] !== undefined && !specials.has(text)) {
        throw new MlxcelError('TOKENIZER_FILE_INVALID', `special token ${text} reuses id ${id}, which the ranks file already assigns`);
      }
      specials.set(text, id);
      this.bytesById[id] = Buffer.from(text, 'utf8').toString('latin1');
    }
    this.specialByText = specials;
    this.specialIds = new Set(specials.values());
    this.skipped = options.skippedIds ?? this.specialIds;
    // Longest first so that a special token that prefixes another cannot shadow it.
    const alternatives = [...specials.keys()].sort((a, b) => b.length - a.length).map(escapeRegExp);
    this.specialRegex = alternatives.length > 0 ? new RegExp(alternatives.join('|'), 'gu') : null;
    try {
      this.pattern = new RegExp(options.pattern, 'gu');
    } catch (err) {
      throw new MlxcelError('TOKENIZER_FILE_INVALID', `invalid pre-tokenization pattern: ${(err as Error).message}`);
    }
    this.vocabSize = Math.max(this.bytesById.length, options.vocabSize ?? 0);
    this.bosToken = options.bosToken;
    this.eosToken = options.eosToken;
    this.bosId = options.bosToken === null ? null : (specials.get(options.bosToken) ?? null);
    const eosId = options.eosToken === null ? null : (specials.get(options.eosToken) ?? null);
    this.eosIds = mergeEosIds(options.configEosIds ?? [], eosId);
    this.addBos = options.addBosToken ?? false;
    this.tokenizerConfig = options.tokenizerConfig ?? {};
  }

  encode(text: string, options: EncodeOptions = {}): number[] {
    const out: number[] = [];
    if ((options.addSpecialTokens ?? true) && this.addBos && this.bosId !== null) out.push(this.bosId);
    let last = 0;
    if (this.specialRegex !== null) {
      for (const m of text.matchAll(this.specialRegex)) {
        this.encodeOrdinary(text.slice(last, m.index), out);
        out.push(this.specialByText.get(m[0])!);
        last = m.index! + m[0].length;
      }
    }
    this.encodeOrdinary(text.slice(last), out);
    return out;
  }

  /** Encode text that contains no special tokens (tiktoken's `encode_ordinary`). */
  encodeOrdinary(text: string, out: number[] = []): number[] {
    if (text.length === 0) return out;
    for (const m of text.matchAll(this.pattern)) {
      bytePairEncode(Buffer.from(m[0], 'utf8').toString('latin1'), this.encoder, out);
    }
    return out;
  }

  decode(ids: ArrayLike<number>, options: DecodeOptions = {}): string {
    const skip = options.skipSpecialTokens ?? false;
    let bytes = '';
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!;
      if (skip && this.skipped.has(id)) continue;
      const b = this.bytesById[id];
      if (b !== undefined) bytes += b;
    }
    if (bytes.length === 0) return '';
    // Invalid UTF-8 becomes U+FFFD, like Python's bytes.decode(errors="replace").
    return this.utf8.decode(Buffer.from(bytes, 'latin1'));
  }

  /** The raw bytes of a token, or `undefined` for an unknown id. */
  tokenBytes(id: number): Uint8Array | undefined {
    const b = this.bytesById[id];
    return b === undefined ? undefined : new Uint8Array(Buffer.from(b, 'latin1'));
  }

  /**
   * A token's text: its bytes as UTF-8 when they are valid UTF-8, otherwise one `<0xXX>`
   * per byte (byte-level BPE tokens can hold partial characters). Inverse of `tokenToId`.
   */
  idToToken(id: number): string | undefined {
    const b = this.bytesById[id];
    if (b === undefined) return undefined;
    try {
      return this.utf8Strict.decode(Buffer.from(b, 'latin1'));
    } catch {
      return Array.from(b, (c) => `<0x${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}>`).join('');
    }
  }

  tokenToId(token: string): number | undefined {
    const special = this.specialByText.get(token);
    if (special !== undefined) return special;
    const escaped = /^(?:<0x[0-9A-Fa-f]{2}>)+$/.test(token)
      ? token.replace(/<0x([0-9A-Fa-f]{2})>/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)))
      : undefined;
    if (escaped !== undefined) {
      const id = this.encoder.get(escaped);
      if (id !== undefined) return id;
    }
    return this.encoder.get(Buffer.from(token, 'utf8').toString('latin1'));
  }
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
