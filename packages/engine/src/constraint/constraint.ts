/**
 * A constraint on generated text: compiled once per request from a response format or a grammar,
 * then applied at every sampling step as a vocabulary mask (after the model's suppressed ids, before
 * temperature / top-k / top-p: the sampler still samples among the allowed tokens).
 */
import { MlxcelError } from '../errors.js';
import type { Tokenizer } from '../tokenizer/index.js';
import { parseGbnf } from './gbnf.js';
import type { Grammar } from './grammar.js';
import { jsonGrammar, jsonSchemaGrammar } from './json-schema.js';
import { GrammarMatcher, type MaskEntry, sharedMaskCache } from './matcher.js';
import { type Vocabulary, vocabularyOf } from './vocab.js';

/** OpenAI-style response format (`json_schema` takes the schema directly or OpenAI's `{ json_schema: { schema } }`). */
export type ResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; schema?: unknown; json_schema?: { name?: string; schema?: unknown; strict?: boolean | null } };

export interface ConstraintSpec {
  responseFormat?: ResponseFormat;
  /** A GBNF grammar (llama.cpp syntax), or a grammar built in code. */
  grammar?: string | Grammar;
  /** Cache key for a grammar built in code (same key = same grammar), so repeated requests reuse its masks. */
  key?: string;
}

export interface CompileOptions {
  /** Logit rows of the model (masks cover this many ids). Default the tokenizer's size. */
  vocabSize?: number;
  /** Ids that end the sequence; allowed exactly when the grammar accepts. */
  eosIds: readonly number[];
}

/** A compiled constraint: a checked grammar over a vocabulary. `start()` makes one request's matcher. */
export class CompiledConstraint {
  private readonly grammarCache = new Map<string, MaskEntry>();
  private readonly shared: Map<string, MaskEntry> | null;

  constructor(readonly grammar: Grammar, readonly vocab: Vocabulary, readonly eosIds: readonly number[], readonly description: string) {
    this.shared = sharedMaskCache(vocab, grammar.sharedTag);
  }

  start(): GrammarMatcher {
    return new GrammarMatcher(this.grammar, this.vocab, { grammar: this.grammarCache, shared: this.shared }, this.eosIds);
  }
}

/** The grammar a spec describes, or null for unconstrained text. Throws SCHEMA_* / GRAMMAR_* naming the construct. */
export function grammarOf(spec: ConstraintSpec, tokenizer?: Tokenizer | null): Grammar | null {
  const { responseFormat: rf, grammar } = spec;
  if (grammar !== undefined && rf !== undefined && rf.type !== 'text')
    throw new MlxcelError('BAD_OPTION', 'give either grammar or responseFormat, not both');
  if (grammar !== undefined) {
    if (typeof grammar !== 'string') return grammar;
    if (grammar.trim() === '') throw new MlxcelError('GRAMMAR_INVALID', 'grammar is empty');
    return parseGbnf(grammar, { tokenId: (t) => (tokenizer?.specialIds.has(tokenizer.tokenToId(t) ?? -1) ? tokenizer.tokenToId(t) : undefined) });
  }
  if (rf === undefined || rf.type === 'text') return null;
  if (rf.type === 'json_object') return jsonGrammar('object');
  if (rf.type === 'json_schema') {
    const schema = rf.schema ?? rf.json_schema?.schema;
    if (schema === undefined) throw new MlxcelError('SCHEMA_INVALID', 'response_format json_schema needs a schema (json_schema.schema)');
    return jsonSchemaGrammar(schema);
  }
  throw new MlxcelError('BAD_OPTION', `response_format type ${JSON.stringify((rf as { type: unknown }).type)} is not one of text, json_object, json_schema`);
}

const compiledCache = new WeakMap<Tokenizer, Map<string, CompiledConstraint>>();
const CACHE_SIZE = 32;

/**
 * Compiles a constraint for a tokenizer (null when the spec leaves text free). Compiled constraints
 * are cached per tokenizer by their source (the last 32), so repeated schemas reuse their mask caches.
 */
export function compileConstraint(spec: ConstraintSpec, tokenizer: Tokenizer, opts: CompileOptions): CompiledConstraint | null {
  const key = constraintKey(spec);
  let byTok = compiledCache.get(tokenizer);
  if (!byTok) compiledCache.set(tokenizer, (byTok = new Map()));
  const fullKey = `${opts.vocabSize ?? tokenizer.vocabSize}|${opts.eosIds.join(',')}|${key}`;
  const hit = key !== null ? byTok.get(fullKey) : undefined;
  if (hit) {
    byTok.delete(fullKey);
    byTok.set(fullKey, hit);
    return hit;
  }
  const grammar = grammarOf(spec, tokenizer);
  if (!grammar) return null;
  const vocab = vocabularyOf(tokenizer, opts.vocabSize ?? tokenizer.vocabSize);
  const c = new CompiledConstraint(grammar, vocab, opts.eosIds.filter((e) => e < vocab.size), describe(spec));
  if (key !== null) {
    byTok.set(fullKey, c);
    if (byTok.size > CACHE_SIZE) byTok.delete(byTok.keys().next().value!);
  }
  return c;
}

/** The cache key of a spec's source (null when it has none: a code-built grammar without `key`). */
export function constraintKey(spec: ConstraintSpec): string | null {
  if (spec.grammar !== undefined) return typeof spec.grammar === 'string' ? `g:${spec.grammar}` : spec.key !== undefined ? `k:${spec.key}` : null;
  const rf = spec.responseFormat;
  if (!rf || rf.type === 'text') return 'text';
  if (rf.type === 'json_object') return 'json_object';
  try {
    return `s:${JSON.stringify(rf.type === 'json_schema' ? (rf.schema ?? rf.json_schema?.schema) : null)}`;
  } catch {
    return null;
  }
}

function describe(spec: ConstraintSpec): string {
  if (spec.grammar !== undefined) return 'grammar';
  return spec.responseFormat?.type ?? 'text';
}

/**
 * Sampling under a constraint for one sequence: the mask per step, the token budget (a constrained
 * output is always completed before `maxTokens` runs out when the budget allows its shortest
 * completion) and the matcher's advance.
 */
export class ConstrainedDecoding {
  readonly matcher: GrammarMatcher;
  readonly mask: Uint32Array;

  constructor(readonly compiled: CompiledConstraint) {
    this.matcher = compiled.start();
    this.mask = new Uint32Array(Math.ceil(compiled.vocab.size / 32));
  }

  /**
   * Picks a token with `sample(mask)` (the sampler's draw over the allowed ids). `remaining`: tokens
   * that may still be generated including this one. Near the end of the budget only tokens on a
   * shortest completion path are allowed; before that a draw that would leave too little room is
   * redrawn without it (the same distribution as masking it out).
   */
  choose(remaining: number, sample: (mask: Uint32Array) => number): number {
    const m = this.matcher;
    // After this token: remaining - 1 tokens, one of them EOS.
    const room = remaining - 2;
    let closing = m.minCompletion() >= room - 1;
    m.fillMask(this.mask, closing);
    if (closing && !this.mask.some((w) => w !== 0)) {
      // No shortest-path token (a vocabulary without single-byte tokens): fall back to the full mask.
      closing = false;
      m.fillMask(this.mask, false);
    }
    let token = sample(this.mask);
    if (!closing) {
      for (let tries = 0; !m.fits(token, room); tries++) {
        if (tries === 4) {
          m.fillMask(this.mask, true);
          if (!this.mask.some((w) => w !== 0)) m.fillMask(this.mask, false);
          token = sample(this.mask);
          break;
        }
        this.mask[token >>> 5]! &= ~(1 << (token & 31));
        token = sample(this.mask);
      }
    }
    if (!m.accept(token))
      throw new MlxcelError('CONSTRAINT_INTERNAL', `token ${token} was sampled under the ${this.compiled.description} mask but the grammar rejects it`);
    return token;
  }
}
