/** Typed reads of config.json sub-objects with errors that name the key. */
import { MlxcelError } from '@mlxcel/tensor';

export type Json = Record<string, unknown>;

export class Cfg {
  constructor(readonly obj: Json, readonly where: string) {}
  private fail(key: string, what: string): never {
    throw new MlxcelError('E_CONFIG', `${this.where}.${key}: ${what}`);
  }
  has(key: string): boolean {
    return this.obj[key] !== undefined && this.obj[key] !== null;
  }
  int(key: string, dflt?: number, min = 0): number {
    const v = this.obj[key] ?? dflt;
    if (v === undefined) this.fail(key, 'missing');
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min) this.fail(key, `must be an integer >= ${min}, got ${JSON.stringify(v)}`);
    return v as number;
  }
  num(key: string, dflt?: number): number {
    const v = this.obj[key] ?? dflt;
    if (v === undefined) this.fail(key, 'missing');
    if (typeof v !== 'number' || !Number.isFinite(v)) this.fail(key, `must be a number, got ${JSON.stringify(v)}`);
    return v as number;
  }
  bool(key: string, dflt?: boolean): boolean {
    const v = this.obj[key] ?? dflt;
    if (typeof v !== 'boolean') this.fail(key, `must be a boolean, got ${JSON.stringify(v)}`);
    return v as boolean;
  }
  str(key: string, dflt?: string): string {
    const v = this.obj[key] ?? dflt;
    if (typeof v !== 'string') this.fail(key, `must be a string, got ${JSON.stringify(v)}`);
    return v as string;
  }
  sub(key: string): Cfg {
    const v = this.obj[key];
    if (typeof v !== 'object' || v === null || Array.isArray(v)) this.fail(key, 'missing or not an object');
    return new Cfg(v as Json, `${this.where}.${key}`);
  }
}
