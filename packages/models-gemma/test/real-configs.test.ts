/**
 * Every real Gemma config parses in full (config.test.ts) and, cut to a few layers, a random-weight
 * model with its real shapes (262k vocabulary, real hidden / head / MLP sizes, PLE tables) runs one
 * forward. Weights are MLX 4-bit (group 64) to keep memory sane: the 31B embedding alone is
 * 262144 × 5376 (5.6 GB in f32, ~0.8 GB at 4 bits); the random store draws codes directly.
 */
import { describe, expect, it } from 'vitest';
import type { LanguageModel } from '@mlxcel/tensor';
import { architectures, GemmaState, type Gemma4Model } from '../src/index.js';
import { realConfig } from './helpers.js';

const S = 'sliding_attention', F = 'full_attention';

/** The config with its text part cut to `types.length` layers. */
function cut(name: string, patch: Record<string, unknown>): Record<string, unknown> {
  const c = realConfig(name);
  return { ...c, text_config: { ...(c.text_config as object), ...patch } };
}

// Each step below runs for seconds without returning to the event loop (tens of seconds for the 31B
// shapes on an AVX2-only CPU); a worker that never yields misses vitest's RPC deadline ("Timeout
// calling onTaskUpdate"), so the steps yield in between.
const yieldToEventLoop = (): Promise<void> => new Promise((r) => setImmediate(r));

async function forwardOnce(config: Record<string, unknown>): Promise<{ model: LanguageModel; logits: Float32Array; state: GemmaState }> {
  const arch = architectures.find((a) => a.modelTypes.includes(config.model_type as string))!;
  await yieldToEventLoop();
  const weights = arch.randomWeights!(config, { seed: 7, quantize: { bits: 4, groupSize: 64 } });
  await yieldToEventLoop();
  const model = arch.load({ config, weights });
  const state = model.newState() as GemmaState;
  await yieldToEventLoop();
  const logits = model.forward([{ ids: Int32Array.from([2, 105, 2364, 107]), state }], { logits: 'last' })[0]!;
  await yieldToEventLoop();
  return { model, logits, state };
}

function expectSaneLogits(model: LanguageModel, logits: Float32Array): void {
  expect(logits.length).toBe(model.vocabSize);
  let maxAbs = 0;
  for (const v of logits) {
    expect(Number.isFinite(v)).toBe(true);
    maxAbs = Math.max(maxAbs, Math.abs(v));
  }
  expect(maxAbs).toBeLessThanOrEqual(30); // final soft-cap
  expect(maxAbs).toBeGreaterThan(0);
}

describe('real shapes, random weights, one forward', () => {
  it('gemma-4-E2B-it (3 layers: sliding, full, KV-shared full with the double-wide MLP)', async () => {
    const { model, logits, state } = await forwardOnce(
      cut('gemma-4-E2B-it', { num_hidden_layers: 3, layer_types: [S, F, F], num_kv_shared_layers: 1 }),
    );
    expect(model.vocabSize).toBe(262144);
    expectSaneLogits(model, logits);
    expect(state.caches.map((c) => [c.kind, c.nKvHeads, c.headDim])).toEqual([
      ['rotating', 1, 256],
      ['contiguous', 1, 512],
      ['shared', 1, 512],
    ]);
    // RoPE wiring: default θ 1e4 on sliding layers; proportional θ 1e6 over the full 512 dims with 64 rotated pairs on full ones.
    const [sl, fl] = (model as Gemma4Model).w.layers.map((l) => l.attn.rope.spec);
    expect([sl!.type, sl!.theta, sl!.headDim]).toEqual(['default', 10000, 256]);
    expect([fl!.type, fl!.theta, fl!.tableDim, fl!.rotaryDim]).toEqual(['proportional', 1e6, 512, 128]);
    expect((model as Gemma4Model).w.layers[2]!.mlp.intermediate).toBe(12288);
  });

  it('gemma-4-E4B-it (2 layers)', async () => {
    const { model, logits, state } = await forwardOnce(cut('gemma-4-E4B-it', { num_hidden_layers: 2, layer_types: [S, F], num_kv_shared_layers: 0 }));
    expectSaneLogits(model, logits);
    expect(state.caches.map((c) => [c.nKvHeads, c.headDim])).toEqual([[2, 256], [2, 512]]);
  });

  it('gemma-4-31B-it (2 layers: 16 × 256 sliding KV, 4 × 512 full KV with k_eq_v)', async () => {
    const { model, logits, state } = await forwardOnce(cut('gemma-4-31B-it', { num_hidden_layers: 2, layer_types: [S, F] }));
    expectSaneLogits(model, logits);
    expect(model.hiddenSize).toBe(5376);
    expect(state.caches.map((c) => [c.nKvHeads, c.headDim])).toEqual([[16, 256], [4, 512]]);
    expect(state.offset).toBe(4);
  });

  it('unsloth gemma-3n-E2B-it (3 layers: sliding with sparsity, full, KV-shared full)', async () => {
    const { model, logits, state } = await forwardOnce(
      cut('unsloth--gemma-3n-E2B-it', {
        num_hidden_layers: 3,
        layer_types: [S, F, F],
        num_kv_shared_layers: 1,
        activation_sparsity_pattern: [0.95, 0, 0],
        intermediate_size: [8192, 8192, 8192],
      }),
    );
    expect(model.vocabSize).toBe(262400);
    expectSaneLogits(model, logits);
    expect(state.caches.map((c) => c.kind)).toEqual(['rotating', 'contiguous', 'shared']);
  });
});
