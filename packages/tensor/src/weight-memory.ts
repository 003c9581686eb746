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
  /** Bytes of quantized weights placeWeight repacked into the tile layout so far (codes, scales and biases). */
  tiledBytes = 0;

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
 * How resident quantized weights are laid out for the kernels: `auto` repacks each streamed 4- or 8-bit
 * weight whose shape allows it (rows a multiple of 16, columns of 64) into
 * core-native's 16-row tile layout
 * where the running kernels read it (`weightTileLayout()`: the AVX-512 VNNI variant), `rows` keeps the
 * checkpoint's row layout.
 *
 * Why: in the row layout the integer dot products' lanes are code positions of one row, so each weight
 * row and x row pays a convert, a permute, an FMA and a horizontal sum per 64 bytes of codes; in the
 * tile layout the lanes are 16 weight rows and that float work is once per group for 16 rows. Batched
 * decode (M x rows per pass) gains most: measured on the development VM, `node bench/layouts-ab.mjs`,
 * the 8-row GEMV ran 1.7-2.0x the row layout from DRAM and a 1-row GEMV even (docs/benchmarks.md).
 * The repack is in place (no second copy), so it needs the `resident` placement: `mapped` weights are
 * read where the file mapping has them and stay in rows.
 */
export type WeightLayout = 'auto' | 'rows';

let layout: WeightLayout = 'auto';

/** The layout models loaded from now on use (default `auto`). */
export function weightLayout(): WeightLayout {
  return layout;
}

/** Sets the layout for models loaded from now on (process-wide, like the placement). */
export function setWeightLayout(l: WeightLayout): WeightLayout {
  if (l !== 'auto' && l !== 'rows') throw new MlxcelError('BAD_OPTION', `weight layout must be "auto" or "rows", got "${String(l)}"`);
  layout = l;
  return l;
}

/** Whether placeWeight repacks `w` into the tile layout (see WeightLayout). */
function tiles(w: Weight): boolean {
  const n = w.native;
  return layout === 'auto' && n.dtype === 3 && (n.layout ?? 0) === 0 && w.shape.length === 2 && n.rows % 16 === 0 &&
    (n.bits === 4 || n.bits === 8) && n.cols % 64 === 0 && native.weightTileLayout();
}

/**
 * Moves a streamed weight's buffers (codes or elements, scales, biases) into the arena when the
 * placement is `resident`, and there repacks a 4- or 8-bit one into the tile layout where `weightLayout()`
 * says so; in place, so every holder of `w` (an Embedding and its tied head) reads the copy. Call before
 * the weight is first used. Views made earlier with `index()` keep the old bytes.
 */
export function placeWeight(w: Weight): void {
  if (weightPlacement() !== 'resident') return;
  const n = w.native;
  n.data = weightArena.place(n.data);
  if (n.scales) n.scales = weightArena.place(n.scales);
  if (n.biases) n.biases = weightArena.place(n.biases);
  if (tiles(w)) {
    // Two Weight objects over the same arena bytes must not repack them twice.
    const d = n.data as Uint8Array;
    let offsets = packedTiles.get(d.buffer);
    if (!offsets) packedTiles.set(d.buffer, (offsets = new Set()));
    if (!offsets.has(d.byteOffset)) {
      native.packWeightTiles(n, { data: d, scales: n.scales!, biases: n.biases! });
      offsets.add(d.byteOffset);
      weightArena.tiledBytes += w.nbytes;
    }
    n.layout = 1;
  }
}

/** Code buffers placeWeight has repacked in place, by their ArrayBuffer and byte offset. */
const packedTiles = new WeakMap<ArrayBufferLike, Set<number>>();
