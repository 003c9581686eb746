/**
 * `--matmul exact|fast|int8|mixed|balanced`, the one switch between the f32-exact matmuls and the
 * integer-activation paths of quantized matmuls (@mlxcel/core-native setMatmulPrecision): fast = 16-bit
 * activations (two int8 digit planes), int8 = 8-bit, mixed = 8-bit for the feed-forward (MLP)
 * projections and 16-bit for the rest, balanced = 8-bit for the MLP's gate/up projections only and
 * 16-bit for the rest. generate, serve and bench default to balanced (the fastest path with no decided
 * disagreement on any fixture, docs/benchmarks.md); trace defaults to exact (its output is compared
 * with reference logits).
 */
import type { Command } from 'commander';
import { MATMUL_PRECISIONS, setMatmulPrecision, type MatmulPrecision } from '@mlxcel/core-native';
import { UsageError } from './errors.js';

export type { MatmulPrecision };

function precisionFlag(v: string): MatmulPrecision {
  if (!(MATMUL_PRECISIONS as readonly string[]).includes(v)) {
    const names = MATMUL_PRECISIONS.map((p) => `"${p}"`);
    throw new UsageError(`--matmul must be ${names.slice(0, -1).join(', ')} or ${names.at(-1)}, got "${v}"`);
  }
  return v as MatmulPrecision;
}

export function addMatmulFlag(cmd: Command, dflt: MatmulPrecision): Command {
  return cmd.option(
    '--matmul <precision>',
    'exact: f32 activations in every matmul; fast: quantized matmuls on 16-bit integer activations; int8: on 8-bit ones; mixed: 8-bit for the MLP projections, 16-bit for the rest; balanced: 8-bit for the MLP gate/up projections, 16-bit for the rest (accuracy cost of each in docs/benchmarks.md)',
    precisionFlag,
    dflt,
  );
}

/** Applies the parsed --matmul value process-wide (before the model runs). */
export function applyMatmulPrecision(o: Record<string, unknown>): void {
  setMatmulPrecision((o.matmul as MatmulPrecision | undefined) ?? 'exact');
}
