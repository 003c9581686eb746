/**
 * Typed, validating reads of config.json, shared by every family. Every failure is a ModelConfigError
 * naming the key by its dotted path from the root and saying what was expected, so a bad checkpoint
 * fails at load with an actionable message.
 *
 * Multimodal checkpoints keep the language-model keys under `text_config` (Gemma `gemma3n`, `gemma4`);
 * `new ConfigReader(raw, family, { textConfig: true })` reads from there when it is present, and every
 * key in an error then carries the `text_config.` prefix. `sub(name)` reads a nested block the same way
 * (`audio_config`, `vision_config.rope_parameters`), its keys named from the root in errors.
 */
import { parseRope, RopeConfigError, type ParseRopeOptions, type RopeSpec } from '@mlxcel/rope';
import { ModelConfigError, type ConfigErrorCode } from './errors.js';

export type Json = Record<string, unknown>;

export function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function describe(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (Array.isArray(v)) return `an array of length ${v.length}`;
  if (v !== null && typeof v === 'object') return 'an object';
  return String(v);
}

export class ConfigReader {
  /** The object the keys are read from: `text_config` when asked for and present, else the root. */
  readonly text: Json;
  /** Prefix of every key in error messages (`text_config.` or empty). */
  readonly prefix: string;

  constructor(readonly root: Json, readonly family: string, opts: { textConfig?: boolean; block?: { obj: Json; prefix: string } } = {}) {
    if (!isObject(root)) throw new ModelConfigError('E_CONFIG_INVALID', '(root)', `must be a JSON object, got ${describe(root)}`, family);
    const nested = root.text_config;
    if (opts.block) {
      this.text = opts.block.obj;
      this.prefix = opts.block.prefix;
    } else if (opts.textConfig && nested !== undefined && nested !== null) {
      if (!isObject(nested)) throw new ModelConfigError('E_CONFIG_INVALID', 'text_config', `must be an object, got ${describe(nested)}`, family);
      this.text = nested;
      this.prefix = 'text_config.';
    } else {
      this.text = root;
      this.prefix = '';
    }
  }

  /** The dotted path of `name` from the root. */
  key(name: string): string {
    return this.prefix + name;
  }

  /** True when the key is present and not null (HF serialises unset optional keys as null). */
  has(name: string): boolean {
    return this.text[name] !== undefined && this.text[name] !== null;
  }

  raw(name: string): unknown {
    return this.text[name];
  }

  /** Throws the family's error for `name` (given relative to the text object; an index suffix is fine). */
  fail(name: string, message: string, code: ConfigErrorCode = 'E_CONFIG_INVALID'): never {
    throw new ModelConfigError(code, this.key(name), message, this.family);
  }

  private value(name: string, dflt: unknown): unknown {
    if (this.has(name)) return this.text[name];
    if (dflt === undefined) this.fail(name, 'is required but absent', 'E_CONFIG_MISSING');
    return dflt;
  }

  /** An integer >= min (default 1). */
  int(name: string, opts: { min?: number; max?: number; default?: number } = {}): number {
    const v = this.value(name, opts.default);
    const min = opts.min ?? 1;
    if (typeof v !== 'number' || !Number.isInteger(v)) this.fail(name, `must be an integer, got ${describe(v)}`);
    if (v < min) this.fail(name, `must be >= ${min}, got ${v}`);
    if (opts.max !== undefined && v > opts.max) this.fail(name, `must be <= ${opts.max}, got ${v}`);
    return v;
  }

  /** A finite number (optionally > 0 or >= 0). */
  num(name: string, opts: { positive?: boolean; nonNegative?: boolean; default?: number } = {}): number {
    const v = this.value(name, opts.default);
    if (typeof v !== 'number' || !Number.isFinite(v)) this.fail(name, `must be a finite number, got ${describe(v)}`);
    if (opts.positive && !(v > 0)) this.fail(name, `must be > 0, got ${v}`);
    if (opts.nonNegative && !(v >= 0)) this.fail(name, `must be >= 0, got ${v}`);
    return v;
  }

  /** A number, or null when the key is absent or null. */
  optNum(name: string, opts: { positive?: boolean; nonNegative?: boolean } = {}): number | null {
    return this.has(name) ? this.num(name, opts) : null;
  }

  bool(name: string, dflt?: boolean): boolean {
    const v = this.value(name, dflt);
    if (typeof v !== 'boolean') this.fail(name, `must be true or false, got ${describe(v)}`);
    return v;
  }

  str(name: string, dflt?: string): string {
    const v = this.value(name, dflt);
    if (typeof v !== 'string') this.fail(name, `must be a string, got ${describe(v)}`);
    return v;
  }

  /** The object under `name` as a reader of its own (its keys carry `name.` in errors). Absent: E_CONFIG_MISSING. */
  sub(name: string): ConfigReader {
    const v = this.value(name, undefined);
    if (!isObject(v)) this.fail(name, `must be an object, got ${describe(v)}`);
    return new ConfigReader(this.root, this.family, { block: { obj: v, prefix: `${this.key(name)}.` } });
  }

  /** A list of exactly n integers >= min (default 1). */
  intList(name: string, n: number, opts: { min?: number; default?: readonly number[] } = {}): number[] {
    const v = this.value(name, opts.default);
    const min = opts.min ?? 1;
    if (!Array.isArray(v) || v.length !== n) this.fail(name, `must be a list of ${n} integers, got ${describe(v)}`);
    return v.map((x, i) => {
      if (typeof x !== 'number' || !Number.isInteger(x) || x < min) this.fail(`${name}[${i}]`, `must be an integer >= ${min}, got ${describe(x)}`);
      return x;
    });
  }

  /** Rejects a value that is not one of `allowed` (E_CONFIG_UNSUPPORTED). */
  oneOf<T extends string>(name: string, allowed: readonly T[], dflt?: T): T {
    const v = this.str(name, dflt);
    if (!(allowed as readonly string[]).includes(v))
      this.fail(name, `= ${JSON.stringify(v)} is not supported (expected ${allowed.map((a) => JSON.stringify(a)).join(' or ')})`, 'E_CONFIG_UNSUPPORTED');
    return v as T;
  }

  /** A feature flag this implementation only supports in one state (e.g. `mlp_bias` must be false). */
  requireFlag(name: string, supported: boolean, why: string): void {
    if (!this.has(name)) return;
    if (this.bool(name) !== supported) this.fail(name, `= ${!supported} is not supported: ${why}`, 'E_CONFIG_UNSUPPORTED');
  }

  /** An int, or a per-layer list of ints of length n (Gemma 3n `intermediate_size`). */
  intPerLayer(name: string, n: number): number[] {
    const v = this.text[name];
    if (!Array.isArray(v)) return new Array<number>(n).fill(this.int(name));
    if (v.length !== n) this.fail(name, `has ${v.length} entries, expected one per layer (${n})`);
    return v.map((x, i) => {
      if (typeof x !== 'number' || !Number.isInteger(x) || x < 1) this.fail(`${name}[${i}]`, `must be a positive integer, got ${describe(x)}`);
      return x;
    });
  }

  /** A list of exactly n finite numbers. */
  numList(name: string, n: number): number[] {
    const v = this.text[name];
    if (!Array.isArray(v)) this.fail(name, `must be a list of ${n} numbers, got ${describe(v)}`);
    if (v.length !== n) this.fail(name, `has ${v.length} entries, expected one per layer (${n})`);
    return v.map((x, i) => {
      if (typeof x !== 'number' || !Number.isFinite(x)) this.fail(`${name}[${i}]`, `must be a number, got ${describe(x)}`);
      return x;
    });
  }

  /** Rejects a `model_type` other than the ones this loader handles (absent is accepted). */
  modelType(expected: readonly string[]): string {
    const v = this.root.model_type;
    if (v === undefined || v === null) return expected[0]!;
    if (typeof v !== 'string' || !expected.includes(v))
      throw new ModelConfigError('E_CONFIG_UNSUPPORTED', 'model_type', `is ${describe(v)}, this loader handles ${expected.map((e) => `"${e}"`).join(' or ')}`, this.family);
    return v;
  }

  /**
   * @mlxcel/rope's parser over the whole config (it finds `text_config` itself) or `source`, a patched copy,
   * with its RopeConfigError turned into this family's error (same key, E_CONFIG_ROPE).
   */
  rope(options: ParseRopeOptions = {}, source: Json = this.root): RopeSpec {
    try {
      return parseRope(source, options);
    } catch (e) {
      if (e instanceof RopeConfigError) {
        const msg = e.message.startsWith(`${e.key}: `) ? e.message.slice(e.key.length + 2) : e.message;
        throw new ModelConfigError('E_CONFIG_ROPE', e.key, `${msg} (RoPE: ${e.code})`, this.family);
      }
      throw e;
    }
  }
}
