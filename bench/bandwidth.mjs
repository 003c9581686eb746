// Memory read bandwidth as the decode benches measure it, and the median they report: a streaming sum
// (core-native streamSum, all pool threads) over a 1 GiB buffer whose pages are faulted in first, five
// timed passes, median GB/s. Used by `pnpm bench decode` and `pnpm bench peers` (bench/peers/worker.mjs).
import { alloc, streamSum } from '../packages/core-native/lib/index.js';

export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/** Median read bandwidth in GB/s over five streaming passes of 1 GiB. */
export function readBandwidth() {
  const bytes = 1 << 30;
  const buf = new Uint8Array(alloc(bytes));
  for (let i = 0; i < bytes; i += 4096) buf[i] = 1; // fault every page in
  streamSum(buf);
  const runs = [];
  for (let r = 0; r < 5; r++) {
    const t = performance.now();
    streamSum(buf);
    runs.push(bytes / ((performance.now() - t) / 1000) / 1e9);
  }
  return median(runs);
}
