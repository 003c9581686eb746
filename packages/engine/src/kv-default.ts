/**
 * The KV cache storage a run gets when it names none, by matmul precision: 'f32' on the exact path
 * (`mlxcel trace`, the fixture tests, library callers that keep the default precision), 'f16' on the
 * integer-activation paths (`balanced`, `fast`, `int8`, `mixed`; `balanced` is what `mlxcel generate`,
 * `serve` and `bench` run by default).
 *
 * Why f16 there: a decode step reads the whole cache once, so f16 halves those bytes and the cache's
 * memory (Phi-3.5-mini: 786 KB of f32 K and V per position, ~450 MB read per token at 576 positions
 * next to ~2.15 GB of q4 weights), and llama.cpp — the baseline users compare with — keeps an F16
 * cache by default too. Its accuracy cost is measured on every fixture next to the matmul paths' (`pnpm
 * bench accuracy`, docs/benchmarks.md: no decided disagreement, greedy ids unchanged). Values beyond
 * f16's range are stored as ±65504, never as infinities (core-native kvWrite).
 */
export type KvStorageDefault = 'f32' | 'f16';

/** Every KV storage a state can ask for (@mlxcel/cache), for callers that validate a user's choice. */
export { KV_STORAGES } from '@mlxcel/cache';

export function defaultKvStorage(matmulPrecision: string): KvStorageDefault {
  return matmulPrecision === 'exact' ? 'f32' : 'f16';
}
