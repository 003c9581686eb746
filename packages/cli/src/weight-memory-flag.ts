/**
 * `--weight-memory resident|mapped`: where the weights every token streams live (@mlxcel/tensor
 * setWeightPlacement). resident = copied at load into huge-page memory (faster decode reads; the
 * default where Linux offers transparent huge pages), mapped = read in place from the checkpoint file
 * (no copy at load; the default elsewhere). Outputs are identical either way in the row layout.
 *
 * `--weight-layout auto|rows` (@mlxcel/tensor setWeightLayout): auto (the default) repacks resident
 * 4-bit weights into the 16-row tile layout where the kernels read it (AVX-512 VNNI), whose batched
 * decode GEMVs cost much less per extra sequence; rows keeps the checkpoint's layout. The tile layout
 * sums in another order, so its logits differ from the row layout's by rounding.
 */
import type { Command } from 'commander';
import { setWeightLayout, setWeightPlacement, weightPlacement, type WeightLayout, type WeightPlacement } from '@mlxcel/tensor';
import { UsageError } from './errors.js';

function placementFlag(v: string): WeightPlacement {
  if (v !== 'resident' && v !== 'mapped') throw new UsageError(`--weight-memory must be "resident" or "mapped", got "${v}"`);
  return v;
}

function layoutFlag(v: string): WeightLayout {
  if (v !== 'auto' && v !== 'rows') throw new UsageError(`--weight-layout must be "auto" or "rows", got "${v}"`);
  return v;
}

/** Adds --weight-memory and --weight-layout. */
export function addWeightMemoryFlag(cmd: Command): Command {
  return cmd
    .option(
      '--weight-memory <placement>',
      `resident: copy the streamed weights into huge-page memory at load (faster decode); mapped: read them from the checkpoint file in place (default here: ${weightPlacement()})`,
      placementFlag,
    )
    .option(
      '--weight-layout <layout>',
      'auto: repack resident 4-bit weights into the 16-row tile layout where the kernels read it (faster batched decode); rows: keep the checkpoint layout (default: auto)',
      layoutFlag,
    );
}

/** Applies the parsed --weight-memory and --weight-layout values process-wide (before the model loads). */
export function applyWeightMemory(o: Record<string, unknown>): void {
  if (o.weightMemory !== undefined) setWeightPlacement(o.weightMemory as WeightPlacement);
  if (o.weightLayout !== undefined) setWeightLayout(o.weightLayout as WeightLayout);
}
