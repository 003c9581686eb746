/**
 * Contiguous and rotating (sliding-window) KV caches with f32 storage.
 *
 * Both keep K/V in slot arrays [capacity, nKvHeads, dim] plus the absolute position of every slot;
 * the attention kernel masks by position, so slot order never matters. The rotating kind reuses
 * slots whose position fell out of the window (a ring), keeping memory at window - 1 + chunk.
 */
import { attention } from '@mlxcel/core-native';
import { MlxcelError } from '@mlxcel/tensor';
import type { AttendOptions, LayerCache } from './types.js';

const STEP = 256;

export class ContiguousCache implements LayerCache {
  readonly kind: 'contiguous' | 'rotating' = 'contiguous';
  protected k: Float32Array = new Float32Array(0);
  protected v: Float32Array = new Float32Array(0);
  protected pos: Int32Array = new Int32Array(0);
  protected used = 0; // slots in use
  protected _offset = 0;

  constructor(readonly nKvHeads: number, readonly headDim: number, readonly vDim: number = headDim) {
    if (!(nKvHeads > 0 && headDim > 0 && vDim > 0))
      throw new MlxcelError('E_CACHE', `cache: bad dims nKvHeads=${nKvHeads} headDim=${headDim} vDim=${vDim}`);
  }

  get offset(): number {
    return this._offset;
  }
  get capacity(): number {
    return this.pos.length;
  }
  get nbytes(): number {
    return this.k.byteLength + this.v.byteLength;
  }

  protected grow(slots: number): void {
    if (slots <= this.capacity) return;
    const cap = Math.ceil(slots / STEP) * STEP;
    const k = new Float32Array(cap * this.nKvHeads * this.headDim);
    const v = new Float32Array(cap * this.nKvHeads * this.vDim);
    const pos = new Int32Array(cap).fill(-1);
    k.set(this.k);
    v.set(this.v);
    pos.set(this.pos);
    this.k = k;
    this.v = v;
    this.pos = pos;
  }

  protected checkRows(k: Float32Array, v: Float32Array, T: number): void {
    if (k.length < T * this.nKvHeads * this.headDim || v.length < T * this.nKvHeads * this.vDim)
      throw new MlxcelError('E_SHAPE', `cache.update: K/V hold fewer than ${T} rows of [${this.nKvHeads}, ${this.headDim}]`);
  }

  protected writeSlot(slot: number, k: Float32Array, v: Float32Array, row: number, position: number): void {
    const kr = this.nKvHeads * this.headDim, vr = this.nKvHeads * this.vDim;
    this.k.set(k.subarray(row * kr, (row + 1) * kr), slot * kr);
    this.v.set(v.subarray(row * vr, (row + 1) * vr), slot * vr);
    this.pos[slot] = position;
  }

  update(k: Float32Array, v: Float32Array, T: number): void {
    this.checkRows(k, v, T);
    this.grow(this.used + T);
    for (let t = 0; t < T; t++) this.writeSlot(this.used + t, k, v, t, this._offset + t);
    this.used += T;
    this._offset += T;
  }

  slotPositions(): Int32Array {
    return this.pos.subarray(0, this.used);
  }

  attend(q: Float32Array, Tq: number, nHeads: number, qPos: Int32Array, opts: AttendOptions): Float32Array {
    const out = new Float32Array(Tq * nHeads * this.vDim);
    attention({
      q, nQ: Tq, nHeads, headDim: this.headDim, vDim: this.vDim, qPos,
      k: this.k, v: this.v, kvDtype: 0, nKv: this.used, nKvHeads: this.nKvHeads, kPos: this.pos,
      scale: opts.scale, softcap: opts.softcap ?? 0, causal: opts.causal ?? true, window: opts.window ?? 0,
      mask: opts.mask, maskHeads: opts.maskHeads, out,
    });
    return out;
  }

  trim(n: number): number {
    const drop = Math.max(0, Math.min(n, this.used));
    for (let s = this.used - drop; s < this.used; s++) this.pos[s] = -1;
    this.used -= drop;
    this._offset -= drop;
    return drop;
  }
}

export class RotatingCache extends ContiguousCache {
  override readonly kind = 'rotating' as const;
  private next = 0; // ring write slot once full

  constructor(nKvHeads: number, headDim: number, readonly window: number, vDim: number = headDim) {
    super(nKvHeads, headDim, vDim);
    if (!(window > 0)) throw new MlxcelError('E_CACHE', `rotating cache: window must be > 0, got ${window}`);
  }

  override update(k: Float32Array, v: Float32Array, T: number): void {
    this.checkRows(k, v, T);
    // Queries of this chunk reach back window-1 positions before the chunk's first token.
    const need = this.window - 1 + T;
    if (this.capacity < need) {
      this.linearize();
      this.grow(need);
    }
    for (let t = 0; t < T; t++) {
      const p = this._offset + t;
      let slot: number;
      if (this.used < this.capacity) slot = this.used++;
      else {
        // Reuse the slot holding the oldest position (ring order).
        slot = this.next;
        this.next = (this.next + 1) % this.capacity;
      }
      this.writeSlot(slot, k, v, t, p);
    }
    this._offset += T;
  }

  /** Reorders slots to temporal order so growth keeps the ring consistent. */
  private linearize(): void {
    if (this.used < this.capacity || this.next === 0) return;
    const order = [...this.pos.keys()].sort((a, b) => this.pos[a]! - this.pos[b]!);
    const kr = this.nKvHeads * this.headDim, vr = this.nKvHeads * this.vDim;
    const k = new Float32Array(this.k.length), v = new Float32Array(this.v.length), pos = new Int32Array(this.pos.length);
    order.forEach((s, i) => {
      k.set(this.k.subarray(s * kr, (s + 1) * kr), i * kr);
      v.set(this.v.subarray(s * vr, (s + 1) * vr), i * vr);
      pos[i] = this.pos[s]!;
    });
    this.k = k;
    this.v = v;
    this.pos = pos;
    this.next = 0;
  }

  override trim(n: number): number {
    // Only the newest tokens can be dropped, and only while they are still stored.
    const drop = Math.max(0, Math.min(n, this._offset));
    for (let s = 0; s < this.capacity; s++) if (this.pos[s]! >= this._offset - drop) this.pos[s] = -1;
    this.linearizeAfterTrim();
    this._offset -= drop;
    return drop;
  }

  private linearizeAfterTrim(): void {
    const live = [...this.pos.keys()].filter((s) => this.pos[s]! >= 0).sort((a, b) => this.pos[a]! - this.pos[b]!);
    const kr = this.nKvHeads * this.headDim, vr = this.nKvHeads * this.vDim;
    const k = new Float32Array(this.k.length), v = new Float32Array(this.v.length), pos = new Int32Array(this.pos.length).fill(-1);
    live.forEach((s, i) => {
      k.set(this.k.subarray(s * kr, (s + 1) * kr), i * kr);
      v.set(this.v.subarray(s * vr, (s + 1) * vr), i * vr);
      pos[i] = this.pos[s]!;
    });
    this.k = k;
    this.v = v;
    this.pos = pos;
    this.used = live.length;
    this.next = 0;
  }
}
