/** Flag value parsers: each rejects bad input with a message naming the flag. */
import { UsageError } from './errors.js';

export function int(flag: string, min = 0, max = Number.MAX_SAFE_INTEGER) {
  return (v: string): number => {
    const n = Number(v);
    if (!/^-?\d+$/.test(v.trim()) || !Number.isSafeInteger(n) || n < min || n > max)
      throw new UsageError(`${flag} must be an integer in [${min}, ${max}], got "${v}"`);
    return n;
  };
}

export function num(flag: string, min = -Infinity, max = Infinity) {
  return (v: string): number => {
    const n = Number(v);
    if (v.trim() === '' || !Number.isFinite(n) || n < min || n > max)
      throw new UsageError(`${flag} must be a number in [${min}, ${max}], got "${v}"`);
    return n;
  };
}

/** A size in MiB: a finite number > 0 (fractions allowed). */
export function mebibytes(flag: string) {
  return (v: string): number => {
    const n = Number(v);
    if (v.trim() === '' || !Number.isFinite(n) || n <= 0) throw new UsageError(`${flag} must be a positive number of MiB (for example 4096), got "${v}"`);
    return n;
  };
}

export function idList(flag: string) {
  return (v: string): number[] => {
    const parts = v.split(',').map((s) => s.trim()).filter(Boolean);
    if (!parts.length) throw new UsageError(`${flag}: expected a comma-separated list of token ids`);
    return parts.map((p) => {
      if (!/^\d+$/.test(p)) throw new UsageError(`${flag}: "${p}" is not a token id`);
      // Refused here rather than wrapped later: 4294967297 must not become id 1.
      if (!(Number(p) < 2 ** 31)) throw new UsageError(`${flag}: ${p} is outside the token id range [0, 2^31)`);
      return Number(p);
    });
  };
}

/** --logit-bias 123=-2.5,456=1 */
export function logitBias(v: string): Record<number, number> {
  const out: Record<number, number> = {};
  for (const part of v.split(',').map((s) => s.trim()).filter(Boolean)) {
    const m = /^(\d+)=(-?[\d.]+(?:e-?\d+)?)$/i.exec(part);
    if (!m) throw new UsageError(`--logit-bias: "${part}" is not ID=VALUE`);
    out[Number(m[1])] = Number(m[2]);
  }
  return out;
}

export function collect(v: string, prev: string[] = []): string[] {
  return [...prev, v];
}

export function quantFlag(v: string): { bits: number; groupSize: number } {
  const m = /^q([2-8])(?::(32|64|128))?$/.exec(v);
  if (!m || m[1] === '7') throw new UsageError(`--quantize must be q2|q3|q4|q5|q6|q8 (optionally :32|:64|:128 group size), got "${v}"`);
  return { bits: Number(m[1]), groupSize: m[2] ? Number(m[2]) : 64 };
}
