/**
 * The sampler's PRNG is mlxcel's one seeded PRNG, xoshiro128** from @mlxcel/models-core (also behind
 * random-weight checkpoints); seeds the caller leaves unset come from the platform's CSPRNG.
 */
export { Xoshiro128 } from '@mlxcel/models-core';

/** A random 32-bit seed from the platform's CSPRNG (used when the caller gives no seed). */
export function randomSeed(): number {
  const buf = new Uint32Array(1);
  globalThis.crypto.getRandomValues(buf);
  return buf[0]!;
}
