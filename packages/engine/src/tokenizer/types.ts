/** Options for {@link Tokenizer.encode}. */
export interface EncodeOptions {
  /**
   * Add the tokenizer's own special tokens around the text (BOS for Llama / Gemma,
   * nothing for Phi-3-small). Default `true`, like Hugging Face `encode`.
   * Rendered chat prompts must be encoded with `false`: the templates already
   * contain `<bos>` / `{{ bos_token }}`.
   */
  addSpecialTokens?: boolean;
}

/** Options for {@link Tokenizer.decode}. */
export interface DecodeOptions {
  /** Drop special tokens (`<bos>`, `<end_of_turn>`, `<|end|>`, …) from the output. Default `false`. */
  skipSpecialTokens?: boolean;
}

/**
 * A text tokenizer. Ids are plain JS numbers; `encode` returns a fresh array.
 *
 * Special-token text inside the input (e.g. the literal string `<end_of_turn>`) is always
 * matched as the special token, as Hugging Face and Phi-3-small's tokenizer do
 * (`allowed_special = "all"`).
 */
export interface Tokenizer {
  /** Which implementation backs this tokenizer. */
  readonly kind: 'tokenizer.json' | 'tiktoken';
  /** One more than the largest id the tokenizer knows (model embeddings may have more rows). */
  readonly vocabSize: number;
  /** The BOS id, or `null` when the tokenizer has none. */
  readonly bosId: number | null;
  /** The BOS token text (`<bos>`, `<s>`, `<|endoftext|>`), or `null`. Fed to chat templates as `bos_token`. */
  readonly bosToken: string | null;
  /** The primary EOS token text, or `null`. Fed to chat templates as `eos_token`. */
  readonly eosToken: string | null;
  /**
   * Stop ids: the tokenizer's EOS token id, plus `generation_config.json` `eos_token_id`
   * (int or list) when that file sits next to the tokenizer, else `config.json`'s.
   * Order: generation/config ids first, then the tokenizer EOS; no duplicates.
   */
  readonly eosIds: readonly number[];
  /** Ids of all special tokens (skipped by `decode({skipSpecialTokens:true})`). */
  readonly specialIds: ReadonlySet<number>;
  /**
   * Parsed tokenizer_config.json (`{}` when there is none). Chat rendering reads
   * `chat_template`, `bos_token`, `eos_token` and the other special-token names from it.
   */
  readonly tokenizerConfig: Readonly<Record<string, unknown>>;
  /**
   * UTF-8 length of the longest token string, when known: a text of B bytes encodes to at least
   * B / maxTokenBytes tokens (before any normalizer shrinks it), which bounds a prompt cheaply.
   */
  readonly maxTokenBytes?: number;
  encode(text: string, options?: EncodeOptions): number[];
  /** Decode ids to text. `decode([])` is `""`. Ids the tokenizer does not know are ignored. */
  decode(ids: ArrayLike<number>, options?: DecodeOptions): string;
  /** The vocabulary string of an id (`▁Hello`, `<0x0A>`, `<bos>`), or `undefined`. */
  idToToken(id: number): string | undefined;
  /** The id of a vocabulary string, or `undefined`. */
  tokenToId(token: string): number | undefined;
}
