// Which projections the `mixed` matmul precision gives 8-bit activations: exactly the feed-forward (MLP)
// ones each family's loader marks (Linear.markFeedForward -> NativeWeight.ffn). Everything else (the
// attention projections, routers, AltUp / LAuReL / per-layer-input projections, the head) must stay
// unmarked, since those are where the models amplify activation error (docs/benchmarks.md, "mixed").
import { fileURLToPath } from 'node:url';
import { Linear } from '@mlxcel/tensor';
import { describe, expect, it } from 'vitest';
import { readJson } from '../src/load.js';
import { randomModel } from '../src/random.js';

/** Every Linear reachable from `o`, by property path, with its ffn mark. */
function linears(o: unknown, path: string, out: [string, boolean][], seen = new Set<object>()): [string, boolean][] {
  if (!o || typeof o !== 'object' || seen.has(o) || ArrayBuffer.isView(o) || o instanceof ArrayBuffer) return out;
  seen.add(o);
  if (o instanceof Linear) {
    out.push([path, o.weight.native.ffn === true]);
    return out;
  }
  for (const [k, v] of Object.entries(o)) linears(v, path ? `${path}.${k}` : k, out, seen);
  return out;
}

const cases: [string, RegExp | null][] = [
  ['gemma3n-tiny', /\.layers\.\d+\.mlp\.(gate|up|down)$/],
  ['gemma4-tiny-dense', /\.layers\.\d+\.mlp\.(gate|up|down)$/],
  ['gemma4-tiny-moe', /\.layers\.\d+\.mlp\.(gate|up|down)$/],
  ['phi3-tiny-short', /\.layers\.\d+\.(gateUp|down)$/],
  ['phi3small-tiny', /\.layers\.\d+\.(up|down)$/],
  ['phimoe-tiny', null], // its feed-forward is the expert block (packages/moe), not a Linear
];

describe('feed-forward marks (the mixed precision)', () => {
  for (const [name, ffn] of cases)
    it(`${name}: the MLP projections are marked ffn and nothing else is`, () => {
      const config = readJson(fileURLToPath(new URL(`../../../fixtures/${name}/config.json`, import.meta.url)), name);
      const model = randomModel(config, { quantize: { bits: 4, groupSize: 64 }, seed: 1, layers: 2 });
      const all = linears(model, '', []);
      expect(all.length).toBeGreaterThan(4);
      for (const [path, marked] of all) expect(marked, path).toBe(ffn ? ffn.test(path) : false);
      if (ffn) expect(all.filter(([, m]) => m).length, 'marked projections').toBeGreaterThanOrEqual(4);
    });
});
