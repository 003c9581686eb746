/**
 * Typed, validating reads of config.json values. Every failure names the key (PhiConfigError.key) and
 * says what was expected, so a bad checkpoint fails at load with an actionable message.
 */
import { parseRope, RopeConfigError, type ParseRopeOptions, type RopeSpec } from '@mlxcel/rope';
import { PhiConfigError } from './errors.js';

type Json = Record<string, unknown>;

function describe(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (Array.isArray(v)) return `an array of length ${v.length}`;
  if (v !== null && typeof v === 'object') return 'an object';
  return String(v);
}

export class ConfigReader {
  constructor(readonly raw: Json, readonly family: string) {
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
      throw new PhiConfigError('E_CONFIG_INVALID', '(root)', `must be a JSON object, got ${describe(raw)}`, family);
  }

  /** True when the key is present and not null. */
  has(key: string): boolean {
    return this.raw[key] !== undefined && this.raw[key] !== null;
  }

  fail(key: string, message: string, code: 'E_CONFIG_INVALID' | 'E_CONFIG_UNSUPPORTED' | 'E_CONFIG_MISSING' = 'E_CONFIG_INVALID'): never {
    throw new PhiConfigError(code, key, message, this.family);
  }

  private value(key: string, dflt: unknown): unknown {
    if (this.has(key)) return this.raw[key];
    if (dflt === undefined) this.fail(key, 'is required but absent', 'E_CONFIG_MISSING');
    return dflt;
  }

  /** An integer >= min (default 1). */
  int(key: string, opts: { min?: number; default?: number } = {}): number {
    const v = this.value(key, opts.default);
    const min = opts.min ?? 1;
    if (typeof v !== 'number' || !Number.isInteger(v)) this.fail(key, `must be an integer, got ${describe(v)}`);
    if (v < min) this.fail(key, `must be >= ${min}, got ${v}`);
    return v;
  }

  /** A finite number (optionally > 0). */
  num(key: string, opts: { positive?: boolean; nonNegative?: boolean; default?: number } = {}): number {
    const v = this.value(key, opts.default);
    if (typeof v !== 'number' || !Number.isFinite(v)) this.fail(key, `must be a finite number, got ${describe(v)}`);
    if (opts.positive && !(v > 0)) this.fail(key, `must be > 0, got ${v}`);
    if (opts.nonNegative && !(v >= 0)) this.fail(key, `must be >= 0, got ${v}`);
    return v;
  }

  /** A number, or null when the key is absent or null. */
  optNum(key: string, opts: { positive?: boolean; nonNegative?: boolean } = {}): number | null {
    return this.has(key) ? this.num(key, opts) : null;
  }

  bool(key: string, dflt?: boolean): boolean {
    const v = this.value(key, dflt);
    if (typeof v !== 'boolean') this.fail(key, `must be true or false, got ${describe(v)}`);
    return v;
  }

  str(key: string, dflt?: string): string {
    const v = this.value(key, dflt);
    if (typeof v !== 'string') this.fail(key, `must be a string, got ${describe(v)}`);
    return v;
  }

  /** Rejects a key whose value is not one of `allowed`. */
  oneOf<T extends string>(key: string, allowed: readonly T[], dflt?: T): T {
    const v = this.str(key, dflt);
    if (!(allowed as readonly string[]).includes(v))
      this.fail(key, `= ${JSON.stringify(v)} is not supported (expected ${allowed.map((a) => JSON.stringify(a)).join(' or ')})`, 'E_CONFIG_UNSUPPORTED');
    return v as T;
  }

  /** A feature flag this implementation only supports in one state (e.g. `mlp_bias` must be false). */
  requireFlag(key: string, supported: boolean, why: string): void {
    if (!this.has(key)) return;
    if (this.bool(key) !== supported) this.fail(key, `= ${!supported} is not supported: ${why}`, 'E_CONFIG_UNSUPPORTED');
  }

  /** @mlxcel/rope's parser, with its RopeConfigError turned into this package's error (same key). */
  rope(options: ParseRopeOptions = {}): RopeSpec {
    try {
      return parseRope(this.raw, options);
    } catch (e) {
      if (e instanceof RopeConfigError) {
        const msg = e.message.startsWith(`${e.key}: `) ? e.message.slice(e.key.length + 2) : e.message;
        throw new PhiConfigError('E_CONFIG_ROPE', e.key, `${msg} (RoPE: ${e.code})`, this.family);
      }
      throw e;
    }
  }
}

/** model_type check shared by the three architectures. */
export function checkModelType(r: ConfigReader, expected: string): void {
  if (r.has('model_type') && r.raw.model_type !== expected)
    r.fail('model_type', `is ${describe(r.raw.model_type)}, this loader handles "${expected}"`, 'E_CONFIG_UNSUPPORTED');
}

/** Attention head geometry common to the family: nH % nKV == 0 and D = head_dim ?? H / nH (phi3.md §1). */
export function headGeometry(r: ConfigReader, hidden: number, opts: { headDimKey?: boolean } = {}): { nHeads: number; nKvHeads: number; headDim: number } {
  const nHeads = r.int('num_attention_heads');
  const nKvHeads = r.int('num_key_value_heads', { default: nHeads });
  if (nHeads % nKvHeads !== 0)
    r.fail('num_key_value_heads', `= ${nKvHeads} does not divide num_attention_heads = ${nHeads}`);
  let headDim: number;
  if (opts.headDimKey && r.has('head_dim')) headDim = r.int('head_dim');
  else {
    if (hidden % nHeads !== 0) r.fail('num_attention_heads', `= ${nHeads} does not divide hidden_size = ${hidden}`);
    headDim = hidden / nHeads;
  }
  return { nHeads, nKvHeads, headDim };
}
