/**
 * One run of KV slots in the layout the native attention kernel reads directly: head-major (each KV
 * head's slots form one block, so a head's keys stream sequentially), slots in tiles of 16 with K
 * transposed per tile ([headDim][16]) and V as rows; quantized stores add f32 scales/biases per group
 * (see core-native src/kernels.h KvSegment). Conversion and quantization
 * happen once, on write, in native code; nothing is ever dequantized into a whole-cache copy.
 *
 * A store knows nothing about rings or caps: callers choose slots. `pos[slot]` is the absolute token
 * position held by a slot (-1 = empty); the kernel masks by position, so slot order is free.
 */
import * as native from '@mlxcel/core-native';
import type { KvImage, KvSegmentDesc, KvStoreDesc } from '@mlxcel/core-native';
import { freshBuffer, MlxcelError } from '@mlxcel/tensor'; // freshBuffer: huge-page memory from 2 MiB on (no page fault per 4 KiB as a cache grows)
import type { StoreFormat } from './storage.js';

export const TILE = 16;

/**
 * KV storage buffers of grown, emptied or released stores, kept for reuse by new ones (exact sizes:
 * stores grow in fixed slot steps, so sizes recur from one sequence to the next). Why: touching
 * freshly mapped memory for the first time costs page faults, far more than writing it (about 8 ms
 * per MiB measured on the development VM, where a 1.5 GiB Phi-3.5-mini KV cache took seconds to
 * fault in); a recycled buffer is only zeroed. At most `limit` bytes are kept; buffers under 1 MiB are
 * left to the garbage collector.
 */
export class KvBufferRecycler {
  private readonly free = new Map<string, (Uint8Array<ArrayBuffer> | Float32Array<ArrayBuffer>)[]>();
  private held = 0;

  constructor(private limit: number) {}

  /** Bytes kept for reuse now. */
  get heldBytes(): number {
    return this.held;
  }
  get limitBytes(): number {
    return this.limit;
  }

  /** Changes the most bytes kept; drops buffers beyond it. */
  setLimit(bytes: number): void {
    if (!(Number.isFinite(bytes) && bytes >= 0)) throw new MlxcelError('E_CACHE', `KV buffer recycler: limit must be a finite number >= 0, got ${bytes}`);
    this.limit = bytes;
    for (const list of this.free.values())
      while (this.held > this.limit && list.length) this.held -= list.pop()!.byteLength;
    for (const [key, list] of this.free) if (!list.length) this.free.delete(key);
  }

  /** A zeroed Uint8Array of n bytes. */
  u8(n: number): Uint8Array<ArrayBuffer> {
    return (this.take('u8', n) as Uint8Array<ArrayBuffer> | undefined) ?? new Uint8Array(freshBuffer(n));
  }
  /** A zeroed Float32Array of n floats. */
  f32(n: number): Float32Array<ArrayBuffer> {
    return (this.take('f32', n) as Float32Array<ArrayBuffer> | undefined) ?? new Float32Array(freshBuffer(n * 4));
  }

  /** Hands a buffer back; the caller must not use it (or any view of it) again. */
  give(a: Uint8Array | Float32Array): void {
    if (a.byteLength < 1 << 20 || a.byteOffset !== 0 || a.byteLength !== a.buffer.byteLength || this.held + a.byteLength > this.limit) return;
    const key = `${a instanceof Float32Array ? 'f32' : 'u8'}:${a.length}`;
    let list = this.free.get(key);
    if (!list) this.free.set(key, (list = []));
    if (list.includes(a as Uint8Array<ArrayBuffer>)) return;
    list.push(a as Uint8Array<ArrayBuffer> | Float32Array<ArrayBuffer>);
    this.held += a.byteLength;
  }

  private take(kind: 'u8' | 'f32', n: number): Uint8Array<ArrayBuffer> | Float32Array<ArrayBuffer> | undefined {
    const list = this.free.get(`${kind}:${n}`);
    const a = list?.pop();
    if (!a) return undefined;
    this.held -= a.byteLength;
    a.fill(0);
    return a;
  }
}


/** The process's recycler for KV store buffers (the BatchScheduler raises its limit to half its KV budget). */
export const kvBuffers = new KvBufferRecycler(256 * 1024 * 1024);

/** The exact stored bits of some slots, head-major ([nKvHeads][n][...]) plus their positions. */
export interface StoreImage extends KvImage {
  n: number;
  pos: Int32Array;
}

/**
 * What a cache needs of its slot storage: one buffer set (TiledStore: rings, the f32 staging store) or
 * pages of them (PagedStore: append-only caches). Slots are store-wide indices either way.
 */
export interface KvStore {
  readonly nKvHeads: number;
  readonly headDim: number;
  readonly vDim: number;
  readonly format: StoreFormat;
  /** Slots that can be written without growing. */
  readonly capacity: number;
  /** Bytes allocated (codes, scales and biases). */
  readonly nbytes: number;
  /** Grows to at least `slots`; contents and positions are kept. */
  reserve(slots: number): void;
  /** Writes rows i of k [T, H, D] / v [T, H, DV] into slots[i] at positions[i]. */
  write(slots: Int32Array, k: Float32Array, v: Float32Array, positions: Int32Array): void;
  /** The stored rows as f32 (dequantized for quantized stores; exact for f32). */
  read(slots: Int32Array): { k: Float32Array; v: Float32Array };
  /** Exact bits of `slots`, in the given order. */
  exportImage(slots: Int32Array): StoreImage;
  /** Writes an image's rows into `slots` (same format); positions come from the image. */
  importImage(slots: Int32Array, im: StoreImage): void;
  emptyImage(n: number): StoreImage;
  /** Marks slots [from, to) empty. */
  clear(from: number, to?: number): void;
  /** Gives the storage buffers back to the recycler and empties the store (capacity 0). */
  release(): void;
  /**
   * Writes every byte of the storage now (zeros over the empty slots, contents unchanged), so the OS
   * backs its pages before the sequence needs them (see KvCacheBase.preallocate).
   */
  touch(): void;
  /** The first `n` slots as attention segments (no copy). */
  segments(n: number): KvSegmentDesc[];
  /** The positions held by slots [0, n) (-1 = empty); may be a view. */
  positions(n: number): Int32Array;
}

export class TiledStore implements KvStore {
  private _capacity = 0;
  k = new Uint8Array(0);
  v = new Uint8Array(0);
  kScales: Float32Array | null = null;
  kBiases: Float32Array | null = null;
  vScales: Float32Array | null = null;
  vBiases: Float32Array | null = null;
  pos = new Int32Array(0);

  constructor(
    readonly nKvHeads: number,
    readonly headDim: number,
    readonly vDim: number,
    readonly format: StoreFormat,
  ) {}

  get capacity(): number {
    return this._capacity;
  }

  /** Bytes allocated (codes, scales and biases). */
  get nbytes(): number {
    const f = (a: Float32Array | null) => (a ? a.byteLength : 0);
    return this.k.byteLength + this.v.byteLength + f(this.kScales) + f(this.kBiases) + f(this.vScales) + f(this.vBiases);
  }

  /** Bytes one slot occupies (all heads, K and V, scales included). */
  get bytesPerSlot(): number {
    return slotBytes(this.format, this.nKvHeads, this.headDim, this.vDim);
  }

  /** Grows to at least `slots` (rounded up to whole tiles); contents and positions are kept. */
  reserve(slots: number): void {
    if (slots <= this._capacity) return;
    const cap = Math.ceil(slots / TILE) * TILE;
    const old = this._capacity;
    const { nKvHeads: H, headDim: D, vDim: DV, format: f } = this;
    // Head-major layout: each head's slots are one block, so growing moves every head's block to its
    // new start (one copy per head and buffer; amortised by growing in steps).
    const grow = <T extends Uint8Array | Float32Array>(prev: T, perSlot: number, make: (n: number) => T): T => {
      const a = make(cap * H * perSlot);
      for (let h = 0; h < H && old > 0; h++) a.set(prev.subarray(h * old * perSlot, (h + 1) * old * perSlot) as never, h * cap * perSlot);
      return a;
    };
    const u8 = (n: number) => kvBuffers.u8(n);
    const f32 = (n: number) => kvBuffers.f32(n);
    const before = this.buffers();
    this.k = grow(this.k, (D * f.kBits) / 8, u8);
    this.v = grow(this.v, (DV * f.vBits) / 8, u8);
    if (f.quantized) {
      const gk = D / f.groupSize, gv = DV / f.groupSize;
      this.kScales = grow(this.kScales ?? f32(0), gk, f32);
      this.kBiases = grow(this.kBiases ?? f32(0), gk, f32);
      this.vScales = grow(this.vScales ?? f32(0), gv, f32);
      this.vBiases = grow(this.vBiases ?? f32(0), gv, f32);
    }
    const pos = new Int32Array(cap).fill(-1);
    pos.set(this.pos);
    this.pos = pos;
    this._capacity = cap;
    for (const b of before) kvBuffers.give(b);
  }

  /** Gives the storage buffers back to the recycler and empties the store (capacity 0). */
  release(): void {
    for (const b of this.buffers()) kvBuffers.give(b);
    this.k = new Uint8Array(0);
    this.v = new Uint8Array(0);
    this.kScales = this.kBiases = this.vScales = this.vBiases = null;
    this.pos = new Int32Array(0);
    this._capacity = 0;
  }

  touch(): void {
    // One write per 4 KiB page faults it in; adding 0 keeps every value (the buffers hold written slots
    // as well as zeros). Atomics.add is a real read-modify-write the JIT cannot drop, unlike `a[i] = a[i]`;
    // a read alone would only map the shared zero page.
    for (const b of this.buffers()) {
      const u8 = new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
      for (let i = 0; i < u8.length; i += 4096) Atomics.add(u8, i, 0);
    }
  }

  private buffers(): (Uint8Array | Float32Array)[] {
    const all: (Uint8Array | Float32Array | null)[] = [this.k, this.v, this.kScales, this.kBiases, this.vScales, this.vBiases];
    return all.filter((b): b is Uint8Array | Float32Array => b !== null && b.length > 0);
  }

  desc(): KvStoreDesc {
    const f = this.format;
    const d: KvStoreDesc = {
      dtype: f.code, capacity: this._capacity, nKvHeads: this.nKvHeads, headDim: this.headDim, vDim: this.vDim,
      k: this.k, v: this.v,
    };
    if (f.quantized) {
      d.kScales = this.kScales!;
      d.kBiases = this.kBiases!;
      d.vScales = this.vScales!;
      d.vBiases = this.vBiases!;
      d.vBits = f.vBits as 4 | 8;
      d.groupSize = f.groupSize as 32 | 64 | 128;
    }
    return d;
  }

  /** The first `n` slots as an attention segment (no copy). */
  segment(n: number): KvSegmentDesc {
    // desc() makes a new object: extend it in place. An object spread here cost ~2.7 µs a call in V8
    // (assignments: ~0.05), and attention asks for a segment per page, layer and sequence every step.
    const d = this.desc() as KvStoreDesc & Partial<KvSegmentDesc>;
    d.layout = 1;
    d.pos = this.pos;
    d.n = n;
    return d as KvSegmentDesc;
  }

  segments(n: number): KvSegmentDesc[] {
    return n > 0 ? [this.segment(n)] : [];
  }

  positions(n: number): Int32Array {
    return this.pos.subarray(0, n);
  }

  /** Writes rows i of k [T, H, D] / v [T, H, DV] into slots[i] at positions[i]. */
  write(slots: Int32Array, k: Float32Array, v: Float32Array, positions: Int32Array): void {
    if (slots.length === 0) return;
    native.kvWrite(this.desc(), slots, k, v);
    for (let i = 0; i < slots.length; i++) this.pos[slots[i]!] = positions[i]!;
  }

  /** The stored rows as f32 (dequantized for quantized stores; exact for f32). */
  read(slots: Int32Array): { k: Float32Array; v: Float32Array } {
    const k = new Float32Array(slots.length * this.nKvHeads * this.headDim);
    const v = new Float32Array(slots.length * this.nKvHeads * this.vDim);
    if (slots.length) native.kvRead(this.desc(), slots, k, v);
    return { k, v };
  }

  /** Exact bits of `slots`, in the given order. */
  exportImage(slots: Int32Array): StoreImage {
    const im = this.emptyImage(slots.length);
    if (slots.length) native.kvExport(this.desc(), slots, im);
    for (let i = 0; i < slots.length; i++) im.pos[i] = this.pos[slots[i]!]!;
    return im;
  }

  /** Writes an image's rows into `slots` (same format); positions come from the image. */
  importImage(slots: Int32Array, im: StoreImage): void {
    if (im.n !== slots.length)
      throw new MlxcelError('E_CACHE_STATE', `store image holds ${im.n} slots, ${slots.length} given`);
    const want = this.emptyImage(0);
    for (const key of ['kScales', 'kBiases', 'vScales', 'vBiases'] as const)
      if ((want[key] === undefined) !== (im[key] === undefined))
        throw new MlxcelError('E_CACHE_STATE', `store image ${key}: ${im[key] ? 'present' : 'missing'} for ${this.format.storage} storage`);
    if (slots.length) native.kvImport(this.desc(), slots, im);
    for (let i = 0; i < slots.length; i++) this.pos[slots[i]!] = im.pos[i]!;
  }

  emptyImage(n: number): StoreImage {
    const { nKvHeads: H, headDim: D, vDim: DV, format: f } = this;
    const im: StoreImage = {
      n, pos: new Int32Array(n),
      k: new Uint8Array((n * H * D * f.kBits) / 8),
      v: new Uint8Array((n * H * DV * f.vBits) / 8),
    };
    if (f.quantized) {
      im.kScales = new Float32Array(n * H * (D / f.groupSize));
      im.kBiases = new Float32Array(n * H * (D / f.groupSize));
      im.vScales = new Float32Array(n * H * (DV / f.groupSize));
      im.vBiases = new Float32Array(n * H * (DV / f.groupSize));
    }
    return im;
  }

  /** Marks slots empty (their bytes stay, the kernel never reads an empty slot's values). */
  clear(from: number, to: number = this._capacity): void {
    this.pos.fill(-1, from, to);
  }
}

/** Bytes one slot of a store in format `f` occupies: all heads, K and V, scales and biases included. */
export function slotBytes(f: StoreFormat, nKvHeads: number, headDim: number, vDim: number): number {
  if (!f.quantized) return (nKvHeads * (headDim + vDim) * f.kBits) / 8;
  return nKvHeads * (headDim + (vDim * f.vBits) / 8 + 8 * (headDim / f.groupSize + vDim / f.groupSize));
}

/** Bytes an image holds (codes, scales, biases and positions). */
export function imageBytes(im: StoreImage): number {
  const f = (a: Float32Array | undefined) => (a ? a.byteLength : 0);
  return im.k.byteLength + im.v.byteLength + f(im.kScales) + f(im.kBiases) + f(im.vScales) + f(im.vBiases) + im.pos.byteLength;
}

/**
 * Slots [a, b) of an image (head-major: each head's run of slots is cut on its own), a copy. Every
 * field holds the same whole number of elements per slot and head, so the cut is exact bits.
 */
export function sliceImage(im: StoreImage, a: number, b: number, nKvHeads: number): StoreImage {
  if (!(Number.isInteger(a) && Number.isInteger(b) && 0 <= a && a <= b && b <= im.n))
    throw new MlxcelError('E_CACHE_STATE', `sliceImage: slots [${a}, ${b}) are not inside an image of ${im.n} slots`);
  const n = b - a;
  const cut = <T extends Uint8Array | Float32Array>(x: T): T => {
    const per = im.n ? x.length / (nKvHeads * im.n) : 0; // elements per slot and head
    const out = (x instanceof Float32Array ? new Float32Array(nKvHeads * n * per) : new Uint8Array(nKvHeads * n * per)) as T;
    for (let h = 0; h < nKvHeads && n > 0; h++) out.set(x.subarray((h * im.n + a) * per, (h * im.n + b) * per) as never, h * n * per);
    return out;
  };
  const r: StoreImage = { n, pos: im.pos.slice(a, b), k: cut(im.k), v: cut(im.v) };
  if (im.kScales) r.kScales = cut(im.kScales);
  if (im.kBiases) r.kBiases = cut(im.kBiases);
  if (im.vScales) r.vScales = cut(im.vScales);
  if (im.vBiases) r.vBiases = cut(im.vBiases);
  return r;
}

/** The images' slots one after another (the inverse of cutting with `sliceImage`), a copy. */
export function concatImages(ims: readonly StoreImage[], nKvHeads: number): StoreImage {
  const n = ims.reduce((s, im) => s + im.n, 0);
  const join = <T extends Uint8Array | Float32Array>(parts: T[]): T => {
    const i0 = ims.findIndex((im) => im.n > 0);
    const width = i0 < 0 ? 0 : parts[i0]!.length / (nKvHeads * ims[i0]!.n); // elements per slot and head
    const out = (parts[0] instanceof Float32Array ? new Float32Array(nKvHeads * n * width) : new Uint8Array(nKvHeads * n * width)) as T;
    let at = 0; // slot offset of this image
    parts.forEach((x, i) => {
      const m = ims[i]!.n;
      for (let h = 0; h < nKvHeads && m > 0; h++) out.set(x.subarray(h * m * width, (h + 1) * m * width) as never, (h * n + at) * width);
      at += m;
    });
    return out;
  };
  const pos = new Int32Array(n);
  let at = 0;
  for (const im of ims) {
    pos.set(im.pos.subarray(0, im.n), at);
    at += im.n;
  }
  const r: StoreImage = { n, pos, k: join(ims.map((im) => im.k)), v: join(ims.map((im) => im.v)) };
  for (const key of ['kScales', 'kBiases', 'vScales', 'vBiases'] as const)
    if (ims.length && ims[0]![key]) r[key] = join(ims.map((im) => im[key]!));
  return r;
}

/** Slots [a, b) as an Int32Array. */
export function range(a: number, b: number): Int32Array {
  const r = new Int32Array(Math.max(0, b - a));
  for (let i = 0; i < r.length; i++) r[i] = a + i;
  return r;
}

/** Deep copy of an image (snapshots must not alias live buffers). */
export function copyImage(im: StoreImage): StoreImage {
  const c: StoreImage = { n: im.n, pos: im.pos.slice(), k: im.k.slice(), v: im.v.slice() };
  if (im.kScales) c.kScales = im.kScales.slice();
  if (im.kBiases) c.kBiases = im.kBiases.slice();
  if (im.vScales) c.vScales = im.vScales.slice();
  if (im.vBiases) c.vBiases = im.vBiases.slice();
  return c;
}
