/**
 * Where activation arrays come from.
 *
 * Why not a fresh `Float32Array` each time: a few MiB of fresh memory is fresh pages, which the OS maps
 * and zeroes one 4 KiB page at a time on the first write to them — `node bench/fresh-memory.mjs` on the
 * development VM: 2.7-3.1 ms per MiB, a [512, 2048] f32 add 6.7-7.6 ms into a fresh array against
 * 0.16-0.22 ms into a reused one — and a prefill chunk makes tens of such arrays per layer. So:
 *
 * - From 2 MiB on, `floats` takes core-native's `alloc` (mapped from the OS, 2 MiB aligned, advised for
 *   transparent huge pages; fresh, it still cost 1.8-2.1 ms per MiB in the same runs) instead of the heap.
 * - Inside the layer loop (`withLayerArenas`, models-core runLayers) those arrays, and every smaller one
 *   from ARENA_MIN_BYTES (4 KiB) on, come from two **layer arenas** instead, memory that stays mapped
 *   and is handed out again: layer l's arrays are
 *   taken from arena l % 2, which is reset when layer l + 2 starts. So an array a layer makes stays
 *   valid through the next layer (its output is the next layer's input) and is reused after that, as
 *   llama.cpp's graph allocator reuses one compute buffer. The rule for layer code: nothing a layer
 *   makes may be read two layers later; what must live longer (KV caches, prefix snapshots, traces)
 *   is copied out, as it always was. `MLXCEL_ARENA_POISON=1` (or `setArenaPoison(true)`) fills an
 *   arena with NaN when it is reset and puts every array a layer makes there, whatever its size, so a
 *   value read after its time shows up as NaN even in the tiny test models (the tests run every
 *   fixture so).
 */
import * as native from '@mlxcel/core-native';

/** Arrays of at least this many bytes come from `alloc` or a layer arena instead of the JS heap. */
export const LARGE_ARRAY_BYTES = 2 << 20;
/**
 * Inside a layer loop, arrays from this many bytes on come from the layer arena too: a batched decode
 * step makes tens of [batch, hidden] and [batch, intermediate] arrays per layer (64-256 KiB at 8
 * sequences), and as fresh heap arrays (calloc'd, zeroed, then garbage) they were 6 ms of
 * `outputFloats` and ~12 ms of GC per 8-sequence Gemma 3n step (`node --cpu-prof
 * packages/engine/bench/batch.mjs --batches 8`). The lifetime rule is the same for every size (and the
 * poisoned test runs already put every size in the arena).
 */
export const ARENA_MIN_BYTES = 4 << 10;
/** A layer arena grows by chunks of at least this many bytes. */
const ARENA_CHUNK_BYTES = 32 << 20;
/**
 * What the two arenas of a loop keep between layer loops; beyond it (a large batched prefill) the extra
 * chunks are dropped when the loop ends, and the memory returns to the OS once the arrays still viewing
 * it are collected.
 */
export const ARENA_KEEP_BYTES = 256 << 20;

/**
 * A zeroed buffer of `bytes`: from LARGE_ARRAY_BYTES on core-native `alloc` memory (mapped from the OS,
 * untouched until written, huge pages where Linux offers them), below it an ordinary ArrayBuffer.
 */
export function freshBuffer(bytes: number): ArrayBuffer {
  return bytes >= LARGE_ARRAY_BYTES ? native.alloc(bytes) : new ArrayBuffer(bytes);
}

class Arena {
  private readonly chunks: ArrayBuffer[] = [];
  private chunk = 0; // index of the chunk being filled
  private offset = 0; // bytes used in it

  /** Makes every chunk free again (their contents become NaN when poisoning). */
  reset(poison: boolean): void {
    this.chunk = 0;
    this.offset = 0;
    if (poison) for (const c of this.chunks) new Float32Array(c).fill(NaN);
  }

  /** n floats of arena memory (contents: whatever was there). */
  take(n: number): Float32Array {
    const bytes = Math.ceil((n * 4) / 64) * 64; // keep every array 64-byte aligned, as alloc's are
    while (this.chunk < this.chunks.length) {
      const c = this.chunks[this.chunk]!;
      if (this.offset + bytes <= c.byteLength) {
        const out = new Float32Array(c, this.offset, n);
        this.offset += bytes;
        return out;
      }
      this.chunk++;
      this.offset = 0;
    }
    const c = freshBuffer(Math.max(bytes, ARENA_CHUNK_BYTES));
    this.chunks.push(c);
    this.chunk = this.chunks.length - 1;
    this.offset = bytes;
    return new Float32Array(c, 0, n);
  }

  get bytes(): number {
    return this.chunks.reduce((s, c) => s + c.byteLength, 0);
  }

  /** Drops the last chunks until at most `keep` bytes remain (arrays viewing them stay valid: GC-owned). */
  trim(keep: number): void {
    while (this.chunks.length && this.bytes > keep) this.chunks.pop();
    if (this.chunk >= this.chunks.length) {
      this.chunk = this.chunks.length;
      this.offset = 0;
    }
  }
}

interface ArenaScope {
  readonly pair: [Arena, Arena];
  current: number; // -1 before the first layer
}

let poison = process.env.MLXCEL_ARENA_POISON === '1';
const pairs: [Arena, Arena][] = []; // one pair per nesting depth (a tower run inside a layer gets its own)
const scopes: ArenaScope[] = [];

/** Fill layer arenas with NaN when they are reset (tests: a value read after its layer's time shows up). */
export function setArenaPoison(on: boolean): void {
  poison = on;
}

/**
 * Runs a layer loop with layer arenas active: `fn` gets `nextLayer`, to be called as each layer starts.
 * Large arrays made inside come from the arenas (see the file comment for the lifetime rule); the arrays
 * of the last two layers stay valid after `fn` returns, until the next layer loop starts.
 */
export function withLayerArenas<T>(fn: (nextLayer: () => void) => T): T {
  const depth = scopes.length;
  const pair = (pairs[depth] ??= [new Arena(), new Arena()]);
  const scope: ArenaScope = { pair, current: -1 };
  scopes.push(scope);
  try {
    return fn(() => {
      scope.current = (scope.current + 1) % 2;
      pair[scope.current].reset(poison);
    });
  } finally {
    scopes.pop();
    pair[0].trim(ARENA_KEEP_BYTES / 2);
    pair[1].trim(ARENA_KEEP_BYTES / 2);
  }
}

/** Bytes the layer arenas hold (all depths; at most ARENA_KEEP_BYTES per depth between loops). */
export function layerArenaBytes(): number {
  return pairs.reduce((s, p) => s + p[0].bytes + p[1].bytes, 0);
}

function large(n: number): Float32Array | null {
  const scope = scopes[scopes.length - 1];
  // Poisoning puts every array of a layer in the arena, so the tiny test models check the lifetimes too.
  if (poison && scope && scope.current >= 0) return scope.pair[scope.current].take(n);
  // Inside a layer loop from ARENA_MIN_BYTES on (see there), outside it from LARGE_ARRAY_BYTES on.
  if (scope && scope.current >= 0 && n * 4 >= ARENA_MIN_BYTES) return scope.pair[scope.current].take(n);
  if (n * 4 < LARGE_ARRAY_BYTES) return null;
  return new Float32Array(freshBuffer(n * 4));
}

/** A zeroed f32 array of n values. */
export function floats(n: number): Float32Array {
  const a = large(n);
  if (!a) return new Float32Array(n);
  return a.fill(0);
}

/**
 * An f32 array of n values for a kernel to overwrite completely (op outputs): like `floats`, without
 * clearing arena memory first.
 */
export function outputFloats(n: number): Float32Array {
  return large(n) ?? new Float32Array(n);
}

/** A zeroed f32 array of n values that may outlive the layer loop (never from a layer arena). */
export function persistentFloats(n: number): Float32Array {
  return new Float32Array(freshBuffer(n * 4));
}
