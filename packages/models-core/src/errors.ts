/**
 * The one config error of every model family. `key` is the dotted path of the offending entry from the
 * root of config.json (`text_config.layer_types[3]`, `rope_scaling.short_factor`), `code` says what kind
 * of problem it is, and the message names the family, the key and what was expected.
 */
import { MlxcelError } from '@mlxcel/tensor';

/**
 * - `E_CONFIG_MISSING`: a required key is absent (or null).
 * - `E_CONFIG_INVALID`: the value has the wrong type or range, or contradicts another key.
 * - `E_CONFIG_UNSUPPORTED`: a valid value this implementation does not run (an activation, a RoPE kind).
 * - `E_CONFIG_ROPE`: @mlxcel/rope rejected the RoPE block (its own code is in the message).
 */
export type ConfigErrorCode = 'E_CONFIG_MISSING' | 'E_CONFIG_INVALID' | 'E_CONFIG_UNSUPPORTED' | 'E_CONFIG_ROPE';

export class ModelConfigError extends MlxcelError {
  constructor(code: ConfigErrorCode, readonly key: string, message: string, readonly family: string) {
    super(code, `${family} config.json: "${key}" ${message}`);
    this.name = 'ModelConfigError';
  }
}
