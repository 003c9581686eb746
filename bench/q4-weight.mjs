// The random q4 weight the kernel benches share (kernels-ab, fresh-memory): N x K 4-bit codes from a
// fixed hash, groups of 64, bf16 scales ~0.00995 and biases ~-0.00995, as a core-native weight.
// `data` (N * K / 2 bytes, e.g. a view into one huge-page block) is filled in place.
export const QAFFINE = 3, BF16 = 2;

export function q4Weight(N, K, data = new Uint8Array((N * K) / 2)) {
  if (data.length !== (N * K) / 2) throw new Error(`q4Weight: data has ${data.length} bytes, expected ${(N * K) / 2}`);
  for (let i = 0; i < data.length; i++) data[i] = (i * 2654435761) >>> 24;
  return {
    dtype: QAFFINE, rows: N, cols: K, bits: 4, groupSize: 64, scaleDtype: BF16, data,
    scales: new Uint8Array(new Uint16Array((N * K) / 64).fill(0x3c23).buffer),
    biases: new Uint8Array(new Uint16Array((N * K) / 64).fill(0xbc23).buffer),
  };
}
