/**
 * `--kv-cache f32|f16|bf16|q8|k8v4`: the KV cache storage of the sequences a command runs. Unset, it
 * follows the matmul precision (@mlxcel/engine defaultKvStorage): f16 on the integer-activation paths
 * (`generate`, `chat`, `serve`, `bench` by default), f32 on the exact one (`--matmul exact`, and
 * `trace`, which runs exact). Read once per command, after applyMatmulPrecision.
 */
import { matmulPrecision } from '@mlxcel/core-native';
import { defaultKvStorage, KV_STORAGES } from '@mlxcel/engine';
import { UsageError } from './errors.js';

export const KV_CACHE_HELP = 'KV cache storage: f32 | f16 | bf16 | q8 | k8v4 (default: f16 on the integer-activation matmul paths, f32 on the exact one: --matmul exact)';

/** Parses `--kv-cache`: one of the KV storages (@mlxcel/cache KV_STORAGES). */
export function kvCacheFlag(v: string): string {
  if (!(KV_STORAGES as readonly string[]).includes(v)) throw new UsageError(`--kv-cache must be one of ${KV_STORAGES.join(', ')}, got "${v}"`);
  return v;
}

/** The storage a run uses: the flag's value, else the current matmul precision's default. */
export function kvCacheFor(flag: unknown): string {
  return (flag as string | undefined) ?? defaultKvStorage(matmulPrecision());
}
