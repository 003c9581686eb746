import { persistentFloats } from '@mlxcel/tensor';

/**
 * Reusable intermediates of a forward pass. A 512-token prefill chunk makes tens of MB of activations per
 * layer (Phi-3.5-mini: [512, 16384] gate/up outputs, [512, 9216] fused qkv, ...); a fresh Float32Array
 * of that size is fresh memory pages, which the OS maps and zeroes on the kernels' first write to them —
 * a cost next to the GEMMs that grows with the chunk. A layer takes the intermediates that never outlive
 * it from here instead.
 *
 * `take(name, n)` returns the same memory for the same name every time (grown when n grows; contents
 * unspecified), so the caller must be done with what it last took under that name, and must overwrite
 * all n values (every kernel output does). Nothing taken here may escape the forward call. Large buffers
 * come from `persistentFloats` (huge pages, never a layer arena: they outlive every layer), so even their first use costs little.
 */
export class ScratchBuffers {
  private readonly bufs = new Map<string, Float32Array>();

  take(name: string, n: number): Float32Array {
    let b = this.bufs.get(name);
    if (!b || b.length < n) {
      b = persistentFloats(n);
      this.bufs.set(name, b);
    }
    return b.length === n ? b : b.subarray(0, n);
  }
}
