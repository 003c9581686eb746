/**
 * Errors of @mlxcel/models-phi. Everything thrown is an `MlxcelError` (one error class per package
 * family, DESIGN.md § Conventions); config problems carry the offending key so callers and tests can
 * tell exactly which entry of config.json is at fault.
 */
import { MlxcelError } from '@mlxcel/tensor';

export type PhiConfigErrorCode = 'E_CONFIG_MISSING' | 'E_CONFIG_INVALID' | 'E_CONFIG_UNSUPPORTED' | 'E_CONFIG_ROPE';

export class PhiConfigError extends MlxcelError {
  /** The config.json key at fault (dotted path for nested keys, e.g. `rope_scaling.short_factor`). */
  readonly key: string;
  constructor(code: PhiConfigErrorCode, key: string, message: string, family: string) {
    super(code, `${family} config.json: "${key}" ${message}`);
    this.key = key;
  }
}
