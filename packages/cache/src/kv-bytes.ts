/**
 * What a sequence's KV state will occupy: the bytes its layer caches allocate once they hold `tokens`
 * positions, for admission by KV memory budget. Append-only caches grow in steps of 256 slots; a ring
 * holds at most window − 1 + one prefill chunk (rounded the same way); KV-shared layers hold nothing.
 */
import { KvCacheBase } from './base.js';
import { RotatingCache } from './rotating.js';
import { SharedCache } from './shared.js';
import { slotBytes } from './store.js';
import type { LayerCache } from './types.js';

const STEP = 256;

export function kvBytesFor(caches: readonly LayerCache[], tokens: number, prefillChunk: number): number {
  const steps = (n: number) => Math.ceil(Math.max(0, n) / STEP) * STEP;
  let total = 0;
  for (const c of caches) {
    if (!(c instanceof KvCacheBase)) continue; // shared layers: their owner's storage
    const per = slotBytes(c.format, c.nKvHeads, c.headDim, c.vDim);
    const slots = c instanceof RotatingCache ? Math.min(steps(tokens), steps(c.window - 1 + Math.max(1, prefillChunk))) : steps(tokens);
    total += per * slots;
  }
  return total;
}

/**
 * The KV bytes one decode step reads when the sequence holds `positions` positions: every layer's
 * attention reads the K and V of the positions it sees (a ring at most its window, a KV-shared layer
 * its owner's cache, read again), in its storage format. Used with the weight bytes per token for a
 * decode step's read-bandwidth ceiling (`mlxcel bench`, `pnpm bench peers`).
 */
export function kvBytesReadPerStep(caches: readonly LayerCache[], positions: number): number {
  let total = 0;
  for (const layer of caches) {
    let c: LayerCache = layer;
    while (c instanceof SharedCache) c = c.owner;
    if (!(c instanceof KvCacheBase)) continue;
    const seen = c instanceof RotatingCache ? Math.min(positions, c.window) : positions;
    total += slotBytes(c.format, c.nKvHeads, c.headDim, c.vDim) * Math.max(0, seen);
  }
  return total;
}
