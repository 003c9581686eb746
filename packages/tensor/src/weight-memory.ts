/**
 * Where the weights every token streams live: `resident` copies them (matmul codes, scales and biases,
 * a tied head's table) into memory from core-native `alloc`, which Linux backs with 2 MiB transparent
 * huge pages; `mapped` reads them in place from the checkpoint's file mapping (4 KiB page-cache pages).
 *
 * Why: decode reads every streamed weight once per token, and on 4 KiB pages the hardware prefetchers
 * stop at every page boundary and the TLB misses every 4 KiB. Measured on the development VM (AMD EPYC
 * Zen 5, 2 threads, `node bench/bandwidth.mjs`-style read of 1 GiB): 60–66 GB/s from huge pages against
 * 47 GB/s from 4 KiB pages in the same run; the q4 GEMV over Phi-3.5-mini's layer shapes streamed 47
 * against 40 GB/s. The cost is a copy at load (and, on a VM whose host backs memory lazily, first-touch
 * faults of ~2.3 ms per MiB), so the default is `resident` only where huge pages exist
 * (Linux with transparent huge pages in `always` or `madvise` mode) and `mapped` elsewhere.
 * After a copy out of a file mapping the source pages are handed back to the OS (releasePages), so
 * resident memory is not counted twice.
 */
import { readFileSync } from 'node:fs';
import * as native from '@mlxcel/core-native';
import { MlxcelError } from './errors.js';
import type { Weight } from './weight.js';

export type WeightPlacement = 'resident' | 'mapped';

/** True where Linux offers transparent huge pages to `madvise(MADV_HUGEPAGE)` callers. */
export function hugePagesAvailable(): boolean {
  if (process.platform !== 'linux') return false;
  try {
    const mode = /\[(\w+)\]/.exec(readFileSync('/sys/kernel/mm/transparent_hugepage/enabled', 'utf8'))?.[1];
    return mode === 'always' || mode === 'madvise';
  } catch {
    return false;
  }
}

let placement: WeightPlacement | null = null;

/** The placement models loaded from now on use (default: `resident` where huge pages exist). */
export function weightPlacement(): WeightPlacement {
  placement ??= hugePagesAvailable() ? 'resident' : 'mapped';
  return placement;
}

/** Sets the placement for models loaded from now on (process-wide, like core-native's matmul precision). */
export function setWeightPlacement(p: WeightPlacement): WeightPlacement {
  if (p !== 'resident' && p !== 'mapped') throw new MlxcelError('BAD_OPTION', `weight placement must be "resident" or "mapped", got "${String(p)}"`);
  placement = p;
  return p;
}

const CHUNK = 64 << 20; // arena chunk: 32 huge pages; a tail never touched is never backed
const ALIGN = 64;       // one cache line (the kernels' vector loads never straddle two)

type View = ArrayBufferView | ArrayBuffer;
const bytesOf = (v: View): Uint8Array => (v instanceof ArrayBuffer ? new Uint8Array(v) : new Uint8Array(v.buffer, v.byteOffset, v.byteLength));

const fileMappings = new WeakSet<ArrayBufferLike>();
/** Marks an ArrayBuffer as a checkpoint's file mapping (SafetensorsFile.open): copies out of it release its pages. */
export function noteFileMapping(ab: ArrayBufferLike): void {
  fileMappings.add(ab);
}

/** A bump allocator over huge-page chunks; tensors of a quarter chunk or more get a mapping of their own. */
export class WeightArena {
  private chunk: Uint8Array | null = null;
  private used = 0;
  private readonly mine = new WeakSet<ArrayBufferLike>();
  /** Bytes copied in so far. */
  bytes = 0;

  /** True when `v` already lives in this arena's memory. */
  owns(v: View): boolean {
    return this.mine.has(v instanceof ArrayBuffer ? v : v.buffer);
  }

  /** `n` zeroed bytes of arena memory, 64-byte aligned. */
  alloc(n: number): Uint8Array {
    if (!(Number.isSafeInteger(n) && n >= 0)) throw new MlxcelError('E_ALLOC', `weight arena: byte count must be a non-negative integer, got ${n}`);
    if (n >= CHUNK / 4) {
      const ab = native.alloc(Math.max(n, 1));
      this.mine.add(ab);
      return new Uint8Array(ab, 0, n);
    }
    const at = Math.ceil(this.used / ALIGN) * ALIGN;
    if (!this.chunk || at + n > this.chunk.byteLength) {
      this.chunk = new Uint8Array(native.alloc(CHUNK));
      this.mine.add(this.chunk.buffer);
      this.used = 0;
      return this.alloc(n);
    }
    this.used = at + n;
    return this.chunk.subarray(at, at + n);
  }

  /**
   * `v`'s bytes in arena memory: `v` itself when already there, else a copy. A copy out of a file
   * mapping hands the source's pages back to the OS (they are clean: a later read of the old view
   * faults them in again from the file), so the weights do not count twice in resident memory.
   */
  place(v: View): Uint8Array {
    if (this.owns(v)) return v instanceof Uint8Array ? v : bytesOf(v);
    const src = bytesOf(v);
    const dst = this.alloc(src.byteLength);
    dst.set(src);
    this.bytes += src.byteLength;
    if (fileMappings.has(src.buffer)) native.releasePages(src);
    return dst;
  }
}

/** The process's arena for resident weights. */
export const weightArena = new WeightArena();

/**
 * `n` zeroed bytes for a weight built in memory (random-weight checkpoints, conversions): arena memory
 * when the placement is `resident`, so placeWeight later finds it there and copies nothing, else an
 * ordinary buffer.
 */
export function allocWeightBytes(n: number): Uint8Array {
  return weightPlacement() === 'resident' ? weightArena.alloc(n) : new Uint8Array(n);
}

/**
 * Moves a streamed weight's buffers (codes or elements, scales, biases) into the arena when the
 * placement is `resident`; in place, so every holder of `w` (an Embedding and its tied head) reads the
 * copy. Call before the weight is first used. Views made earlier with `index()` keep the old bytes.
 */
export function placeWeight(w: Weight): void {
  if (weightPlacement() !== 'resident') return;
  const n = w.native;
  n.data = weightArena.place(n.data);
  if (n.scales) n.scales = weightArena.place(n.scales);
  if (n.biases) n.biases = weightArena.place(n.biases);
}
