/**
 * `--weight-memory resident|mapped`: where the weights every token streams live (@mlxcel/tensor
 * setWeightPlacement). resident = copied at load into huge-page memory (faster decode reads; the
 * default where Linux offers transparent huge pages), mapped = read in place from the checkpoint file
 * (no copy at load; the default elsewhere). Outputs are identical either way.
 */
import type { Command } from 'commander';
import { setWeightPlacement, weightPlacement, type WeightPlacement } from '@mlxcel/tensor';
import { UsageError } from './errors.js';

function placementFlag(v: string): WeightPlacement {
  if (v !== 'resident' && v !== 'mapped') throw new UsageError(`--weight-memory must be "resident" or "mapped", got "${v}"`);
  return v;
}

export function addWeightMemoryFlag(cmd: Command): Command {
  return cmd.option(
    '--weight-memory <placement>',
    `resident: copy the streamed weights into huge-page memory at load (faster decode); mapped: read them from the checkpoint file in place (default here: ${weightPlacement()})`,
    placementFlag,
  );
}

/** Applies the parsed --weight-memory value process-wide (before the model loads). */
export function applyWeightMemory(o: Record<string, unknown>): void {
  if (o.weightMemory !== undefined) setWeightPlacement(o.weightMemory as WeightPlacement);
}
