// Which projections the `mixed` and `balanced` matmul precisions give 8-bit activations: exactly the
// feed-forward (MLP) ones each family's loader marks (Linear.markFeedForward -> NativeWeight.ffn), with
// their role: 'input' for gate / up (8-bit under both), 'output' for down (8-bit under `mixed` only).
// Everything else (the attention projections, routers, AltUp / LAuReL / per-layer-input projections, the
// head) must stay unmarked, since those are where the models amplify activation error
// (docs/benchmarks.md, "mixed").
import { fileURLToPath } from 'node:url';
import { Linear } from '@mlxcel/tensor';
import { describe, expect, it } from 'vitest';
import { readJson } from '../src/load.js';
import { randomModel } from '../src/random.js';

type Mark = 'input' | 'output' | 'none';

/** Every Linear reachable from `o`, by property path, with its ffn mark. */
function linears(o: unknown, path: string, out: [string, Mark][], seen = new Set<object>()): [string, Mark][] {
  if (!o || typeof o !== 'object' || seen.has(o) || ArrayBuffer.isView(o) || o instanceof ArrayBuffer) return out;
  seen.add(o);
  if (o instanceof Linear) {
    const f = o.weight.native.ffn;
    out.push([path, f === 'input' || f === 'output' ? f : f === undefined || f === false ? 'none' : (`unexpected ${String(f)}` as Mark)]);
    return out;
  }
  for (const [k, v] of Object.entries(o)) linears(v, path ? `${path}.${k}` : k, out, seen);
  return out;
}

// [fixture, the MLP input projections, the MLP output projection] (null: no Linear MLP).
const cases: [string, RegExp | null, RegExp | null][] = [
  ['gemma3n-tiny', /\.layers\.\d+\.mlp\.(gate|up)$/, /\.layers\.\d+\.mlp\.down$/],
  ['gemma4-tiny-dense', /\.layers\.\d+\.mlp\.(gate|up)$/, /\.layers\.\d+\.mlp\.down$/],
  ['gemma4-tiny-moe', /\.layers\.\d+\.mlp\.(gate|up)$/, /\.layers\.\d+\.mlp\.down$/],
  ['phi3-tiny-short', /\.layers\.\d+\.gateUp$/, /\.layers\.\d+\.down$/],
  ['phi3small-tiny', /\.layers\.\d+\.up$/, /\.layers\.\d+\.down$/],
  ['phimoe-tiny', null, null], // its feed-forward is the expert block (packages/moe), not a Linear
];

describe('feed-forward marks (the mixed and balanced precisions)', () => {
  for (const [name, input, output] of cases)
    it(`${name}: gate/up are marked ffn 'input', down 'output', and nothing else is marked`, () => {
      const config = readJson(fileURLToPath(new URL(`../../../fixtures/${name}/config.json`, import.meta.url)), name);
      const model = randomModel(config, { quantize: { bits: 4, groupSize: 64 }, seed: 1, layers: 2 });
      const all = linears(model, '', []);
      expect(all.length).toBeGreaterThan(4);
      for (const [path, mark] of all) expect(mark, path).toBe(input?.test(path) ? 'input' : output?.test(path) ? 'output' : 'none');
      if (input) {
        expect(all.filter(([, m]) => m === 'input').length, 'input projections').toBeGreaterThanOrEqual(2);
        expect(all.filter(([, m]) => m === 'output').length, 'output projections').toBeGreaterThanOrEqual(2);
      }
    });
});
