/**
 * Typed readers over config.json. Every failure throws a `GemmaConfigError` whose `key` is the dotted
 * path from the config root (e.g. `text_config.layer_types[3]`) and whose message starts with it.
 */
import { MlxcelError } from '@mlxcel/tensor';

export class GemmaConfigError extends MlxcelError {
  constructor(readonly key: string, message: string) {
    super('E_CONFIG', `${key}: ${message}`);
    this.name = 'GemmaConfigError';
  }
}

export type Json = Record<string, unknown>;

export function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** null and undefined both mean "not set" (HF serialises unset optional keys as null). */
export function present(v: unknown): boolean {
  return v !== undefined && v !== null;
}

/**
 * The object holding the language-model keys: `text_config` for multimodal checkpoints (`gemma3n`,
 * `gemma4`), the root for text-only ones (`gemma3n_text`, `gemma4_text`). `prefix` is the key path
 * prefix used in error messages.
 */
export class ConfigReader {
  readonly text: Json;
  readonly prefix: string;
  constructor(readonly root: Json) {
    if (present(root.text_config)) {
      if (!isObject(root.text_config)) throw new GemmaConfigError('text_config', 'expected an object');
      this.text = root.text_config;
      this.prefix = 'text_config.';
    } else {
      this.text = root;
      this.prefix = '';
    }
  }

  key(name: string): string {
    return this.prefix + name;
  }

  has(name: string): boolean {
    return present(this.text[name]);
  }

  raw(name: string): unknown {
    return this.text[name];
  }

  int(name: string, opts: { min?: number; max?: number; default?: number } = {}): number {
    const v = this.text[name];
    if (!present(v)) {
      if (opts.default !== undefined) return opts.default;
      throw new GemmaConfigError(this.key(name), 'required key is missing');
    }
    if (typeof v !== 'number' || !Number.isInteger(v)) throw new GemmaConfigError(this.key(name), `expected an integer, got ${JSON.stringify(v)}`);
    const min = opts.min ?? 1;
    if (v < min) throw new GemmaConfigError(this.key(name), `must be >= ${min}, got ${v}`);
    if (opts.max !== undefined && v > opts.max) throw new GemmaConfigError(this.key(name), `must be <= ${opts.max}, got ${v}`);
    return v;
  }

  num(name: string, opts: { default?: number; positive?: boolean } = {}): number {
    const v = this.text[name];
    if (!present(v)) {
      if (opts.default !== undefined) return opts.default;
      throw new GemmaConfigError(this.key(name), 'required key is missing');
    }
    if (typeof v !== 'number' || !Number.isFinite(v)) throw new GemmaConfigError(this.key(name), `expected a finite number, got ${JSON.stringify(v)}`);
    if (opts.positive && !(v > 0)) throw new GemmaConfigError(this.key(name), `must be > 0, got ${v}`);
    return v;
  }

  /** A number or null (null/absent returns `dflt`). */
  optNum(name: string, dflt: number | null): number | null {
    return this.has(name) ? this.num(name) : dflt;
  }

  bool(name: string, dflt: boolean): boolean {
    const v = this.text[name];
    if (!present(v)) return dflt;
    if (typeof v !== 'boolean') throw new GemmaConfigError(this.key(name), `expected true or false, got ${JSON.stringify(v)}`);
    return v;
  }

  /** An int, or a per-layer list of ints of length n (Gemma 3n `intermediate_size`). */
  intPerLayer(name: string, n: number): number[] {
    const v = this.text[name];
    if (Array.isArray(v)) {
      if (v.length !== n) throw new GemmaConfigError(this.key(name), `has ${v.length} entries, expected one per layer (${n})`);
      return v.map((x, i) => {
        if (typeof x !== 'number' || !Number.isInteger(x) || x < 1) throw new GemmaConfigError(`${this.key(name)}[${i}]`, `expected a positive integer, got ${JSON.stringify(x)}`);
        return x;
      });
    }
    const one = this.int(name);
    return new Array<number>(n).fill(one);
  }

  /** A list of numbers of exactly length n. */
  numList(name: string, n: number): number[] {
    const v = this.text[name];
    if (!Array.isArray(v)) throw new GemmaConfigError(this.key(name), `expected a list of ${n} numbers, got ${JSON.stringify(v)}`);
    if (v.length !== n) throw new GemmaConfigError(this.key(name), `has ${v.length} entries, expected one per layer (${n})`);
    return v.map((x, i) => {
      if (typeof x !== 'number' || !Number.isFinite(x)) throw new GemmaConfigError(`${this.key(name)}[${i}]`, `expected a number, got ${JSON.stringify(x)}`);
      return x;
    });
  }
}
