import { Tokenizer as HfCoreTokenizer } from '@huggingface/tokenizers';
import { MlxcelError } from '../errors.js';
import { mergeEosIds, tokenText } from './config.js';
import type { DecodeOptions, EncodeOptions, Tokenizer } from './types.js';

/** The parts of a tokenizer.json this wrapper reads itself (the rest goes to the library). */
interface TokenizerJsonShape {
  added_tokens?: AddedTokenJson[];
  post_processor?: unknown;
  model?: unknown;
}

export interface HfTokenizerOptions {
  /** Parsed tokenizer_config.json (or `{}`). */
  tokenizerConfig?: Record<string, unknown>;
  /** Stop ids from generation_config.json / config.json, merged into `eosIds`. */
  configEosIds?: readonly number[];
  /** Name used in error messages (usually the tokenizer.json path). */
  source?: string;
}

/**
 * A tokenizer.json tokenizer backed by `@huggingface/tokenizers` (pure TS; measured
 * identical to the Rust `tokenizers` binding on Gemma and Llama files, see
 * docs/architecture/tokenizers.md). This wrapper adds what the library gets wrong or
 * leaves out: `decode([])` returns "" (the library throws), unknown ids are dropped
 * (as Rust does), `add_bos_token` / `add_eos_token` from tokenizer_config.json are
 * honoured (as transformers' Llama/Gemma fast tokenizers do), and no
 * `clean_up_tokenization_spaces` rewriting happens unless the config asks for it.
 */
export class HfTokenizer implements Tokenizer {
  readonly kind = 'tokenizer.json' as const;
  readonly vocabSize: number;
  readonly bosId: number | null;
  readonly bosToken: string | null;
  readonly eosToken: string | null;
  readonly eosIds: readonly number[];
  readonly specialIds: ReadonlySet<number>;
  readonly tokenizerConfig: Readonly<Record<string, unknown>>;

  private readonly core: HfCoreTokenizer;
  /** true when tokenizer_config.json says explicitly whether to add BOS / EOS. */
  private readonly manualSpecials: boolean;
  private readonly addBos: boolean;
  private readonly addEos: boolean;
  private readonly eosId: number | null;
  private readonly cleanUp: boolean;

  constructor(tokenizerJson: unknown, options: HfTokenizerOptions = {}) {
    const source = options.source ?? 'tokenizer.json';
    if (tokenizerJson === null || typeof tokenizerJson !== 'object' || Array.isArray(tokenizerJson)) {
      throw new MlxcelError('TOKENIZER_FILE_INVALID', `${source} must hold a JSON object`);
    }
    const json = tokenizerJson as TokenizerJsonShape;
    if (json.model === undefined) {
      throw new MlxcelError('TOKENIZER_FILE_INVALID', `${source} has no "model" section`);
    }
    const config = options.tokenizerConfig ?? {};
    this.tokenizerConfig = config;
    // The library requires these keys to exist (null is fine); older files omit some.
    const normalized = {
      normalizer: null,
      pre_tokenizer: null,
      post_processor: null,
      decoder: null,
      ...json,
      added_tokens: withConfigAddedTokens(json.added_tokens ?? [], config.added_tokens_decoder),
    };
    try {
      // The library reads clean_up_tokenization_spaces from this object (default true);
      // we pass it per decode call instead, so give it a copy.
      this.core = new HfCoreTokenizer(normalized, { ...config });
    } catch (err) {
      throw new MlxcelError('TOKENIZER_FILE_INVALID', `cannot build a tokenizer from ${source}: ${(err as Error).message}`);
    }
    useRustByteFallback(this.core.decoder);

    const special = new Set<number>();
    let maxId = -1;
    for (const t of normalized.added_tokens ?? []) {
      if (t.special) special.add(t.id);
      if (t.id > maxId) maxId = t.id;
    }
    this.specialIds = special;
    // `model.vocab` is an id-indexed array that already includes the added tokens.
    const vocab = (this.core.model as unknown as { vocab: unknown[] }).vocab;
    this.vocabSize = Math.max(vocab.length, maxId + 1);

    this.bosToken = tokenText(config.bos_token) ?? firstTemplateSpecial(json.post_processor);
    this.eosToken = tokenText(config.eos_token);
    this.bosId = this.bosToken === null ? null : (this.core.token_to_id(this.bosToken) ?? null);
    this.eosId = this.eosToken === null ? null : (this.core.token_to_id(this.eosToken) ?? null);
    this.eosIds = mergeEosIds(options.configEosIds ?? [], this.eosId);

    this.manualSpecials = typeof config.add_bos_token === 'boolean' || typeof config.add_eos_token === 'boolean';
    this.addBos = config.add_bos_token === true;
    this.addEos = config.add_eos_token === true;
    // Rust `tokenizers` never cleans up; transformers does only when the config says so.
    this.cleanUp = config.clean_up_tokenization_spaces === true;
  }

  encode(text: string, options: EncodeOptions = {}): number[] {
    const addSpecial = options.addSpecialTokens ?? true;
    if (!addSpecial || !this.manualSpecials) {
      return this.core.encode(text, { add_special_tokens: addSpecial }).ids;
    }
    const ids = this.core.encode(text, { add_special_tokens: false }).ids;
    if (this.addBos && this.bosId !== null) ids.unshift(this.bosId);
    if (this.addEos && this.eosId !== null) ids.push(this.eosId);
    return ids;
  }

  decode(ids: ArrayLike<number>, options: DecodeOptions = {}): string {
    const skip = options.skipSpecialTokens ?? false;
    const kept: number[] = [];
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!;
      if (!Number.isInteger(id) || id < 0 || id >= this.vocabSize) continue;
      if (skip && this.specialIds.has(id)) continue;
      if (this.core.id_to_token(id) === undefined) continue;
      kept.push(id);
    }
    if (kept.length === 0) return '';
    return this.core.decode(kept, { skip_special_tokens: false, clean_up_tokenization_spaces: this.cleanUp });
  }

  idToToken(id: number): string | undefined {
    return this.core.id_to_token(id);
  }

  tokenToId(token: string): number | undefined {
    return this.core.token_to_id(token);
  }
}

type AddedTokenJson = { id: number; content: string; special?: boolean; [flag: string]: unknown };

/**
 * transformers also adds the tokens listed in tokenizer_config.json `added_tokens_decoder`
 * (`{"<id>": {content, special, lstrip, rstrip, normalized, single_word}}`) that
 * tokenizer.json lacks; do the same (ids already present in tokenizer.json win).
 */
function withConfigAddedTokens(tokens: AddedTokenJson[], decoder: unknown): AddedTokenJson[] {
  if (decoder === null || typeof decoder !== 'object' || Array.isArray(decoder)) return tokens;
  const have = new Set(tokens.map((t) => t.id));
  const out = tokens.slice();
  for (const [key, value] of Object.entries(decoder as Record<string, unknown>)) {
    const id = Number(key);
    const entry = value as { content?: unknown } | null;
    if (!Number.isInteger(id) || id < 0 || have.has(id) || typeof entry?.content !== 'string') continue;
    const flags = entry as Record<string, unknown>;
    out.push({
      id,
      content: entry.content,
      single_word: flags.single_word === true,
      lstrip: flags.lstrip === true,
      rstrip: flags.rstrip === true,
      normalized: flags.normalized === true,
      special: flags.special === true,
    });
    have.add(id);
  }
  return out;
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * The Rust `ByteFallback` decoder turns a run of `<0xXX>` tokens into its UTF-8 text when
 * the run is valid UTF-8 and into one U+FFFD *per byte* otherwise (keeping a BOM as
 * U+FEFF); the JS library uses a lenient TextDecoder (one U+FFFD per invalid sequence,
 * BOM stripped). Swap in the Rust rule so that decode matches the reference on incomplete
 * or invalid byte runs too. The library keeps decoders as objects with `config.type`,
 * `decoders` (Sequence) and `text_decoder` (ByteFallback).
 */
function useRustByteFallback(decoder: unknown): void {
  if (decoder === null || (typeof decoder !== 'object' && typeof decoder !== 'function')) return;
  const d = decoder as { config?: { type?: unknown }; decoders?: unknown; text_decoder?: unknown };
  if (Array.isArray(d.decoders)) for (const child of d.decoders) useRustByteFallback(child);
  if (d.config?.type === 'ByteFallback' && d.text_decoder !== undefined) {
    d.text_decoder = {
      decode(bytes: Uint8Array): string {
        try {
          return strictUtf8.decode(bytes);
        } catch {
          return '\uFFFD'.repeat(bytes.length);
        }
      },
    };
  }
}

/** The first special token of a TemplateProcessing post-processor's "single" template (the BOS it adds). */
function firstTemplateSpecial(postProcessor: unknown): string | null {
  const pp = postProcessor as { type?: string; single?: unknown; processors?: unknown[] } | null | undefined;
  if (!pp || typeof pp !== 'object') return null;
  if (pp.type === 'Sequence' && Array.isArray(pp.processors)) {
    for (const p of pp.processors) {
      const found = firstTemplateSpecial(p);
      if (found !== null) return found;
    }
    return null;
  }
  if (pp.type !== 'TemplateProcessing' || !Array.isArray(pp.single)) return null;
  const first = pp.single[0] as { SpecialToken?: { id?: unknown } } | undefined;
  return typeof first?.SpecialToken?.id === 'string' ? first.SpecialToken.id : null;
}
