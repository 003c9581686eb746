/**
 * `--matmul exact|fast`, the one switch between the f32-exact matmuls and the fast-activation path
 * (quantized GEMMs with int8 activations, @mlxcel/core-native setMatmulPrecision). generate, serve and
 * bench default to fast; trace defaults to exact (its output is compared with reference logits).
 */
import type { Command } from 'commander';
import { setMatmulPrecision } from '@mlxcel/core-native';
import { UsageError } from './errors.js';

export type MatmulPrecision = 'exact' | 'fast';

function precisionFlag(v: string): MatmulPrecision {
  if (v !== 'exact' && v !== 'fast') throw new UsageError(`--matmul must be "exact" or "fast", got "${v}"`);
  return v;
}

export function addMatmulFlag(cmd: Command, dflt: MatmulPrecision): Command {
  return cmd.option(
    '--matmul <precision>',
    'exact: f32 activations in every matmul; fast: quantized prefill GEMMs with int8 activations (accuracy cost in docs/benchmarks.md)',
    precisionFlag,
    dflt,
  );
}

/** Applies the parsed --matmul value process-wide (before the model runs). */
export function applyMatmulPrecision(o: Record<string, unknown>): void {
  setMatmulPrecision((o.matmul as MatmulPrecision | undefined) ?? 'exact');
}
