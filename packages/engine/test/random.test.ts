import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { shrinkLayers } from '../src/random.js';
import { FIXTURES } from './helpers/paths.js';

const gemma3n = JSON.parse(readFileSync(join(FIXTURES, 'configs', 'unsloth--gemma-3n-E2B-it.json'), 'utf8')) as Record<string, unknown>;

describe('shrinkLayers', () => {
  it('cuts per-layer lists and keeps a KV owner of each attention type before the shared layers', () => {
    const out = shrinkLayers(gemma3n, 6).text_config as Record<string, unknown>;
    expect(out.num_hidden_layers).toBe(6);
    const types = out.layer_types as string[];
    expect(types.length).toBe(6);
    const shared = out.num_kv_shared_layers as number;
    const owners = types.slice(0, 6 - shared);
    expect(owners).toContain('full_attention');
    expect(owners).toContain('sliding_attention');
    expect(shared).toBe(1); // the first full layer is index 4, so layers 0..4 must stay non-shared
    expect((out.activation_sparsity_pattern as number[]).length).toBe(6);
  });

  it('leaves the full config alone when asked for at least its depth, and rejects bad counts', () => {
    const out = shrinkLayers(gemma3n, 100).text_config as Record<string, unknown>;
    expect(out.num_hidden_layers).toBe((gemma3n.text_config as Record<string, unknown>).num_hidden_layers);
    expect(out.num_kv_shared_layers).toBe((gemma3n.text_config as Record<string, unknown>).num_kv_shared_layers);
    expect(() => shrinkLayers(gemma3n, 0)).toThrow(/--layers/);
  });
});
