/**
 * A layer that reads an earlier layer's KV (Gemma 3n KV-shared layers) and writes nothing.
 * The caller passes query positions computed from the step's starting offset (read once per forward,
 * before the layer loop) — never from the owner's offset, which has already advanced this step.
 */
import { MlxcelError } from '@mlxcel/tensor';
import type { AttendOptions, LayerCache } from './types.js';

export class SharedCache implements LayerCache {
  readonly kind = 'shared' as const;
  constructor(readonly owner: LayerCache) {}
  get offset(): number {
    return this.owner.offset;
  }
  get nKvHeads(): number {
    return this.owner.nKvHeads;
  }
  get headDim(): number {
    return this.owner.headDim;
  }
  get vDim(): number {
    return this.owner.vDim;
  }
  get nbytes(): number {
    return 0;
  }
  update(): void {
    throw new MlxcelError('E_CACHE', 'shared cache: a KV-shared layer must not write K/V (it reads its owner layer)');
  }
  attend(q: Float32Array, Tq: number, nHeads: number, qPos: Int32Array, opts: AttendOptions): Float32Array {
    return this.owner.attend(q, Tq, nHeads, qPos, opts);
  }
  slotPositions(): Int32Array {
    return this.owner.slotPositions();
  }
  trim(): number {
    return 0; // the owner layer trims its own storage
  }
}
