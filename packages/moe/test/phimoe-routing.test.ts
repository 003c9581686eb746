// The phimoe-tiny and phimoe-tiny-q4-mlx fixtures' recorded routing (`routing_experts`, `routing_weights` per layer), reproduced
// from the fixture weights: a float64 reference of the PhiMoE layer (LayerNorm with bias, biased q/k/v/o,
// LongRoPE with explicit mscale, causal GQA attention; spec docs/architecture/phimoe.md §4, §7) produces the router logits,
// sparsemixer routes them, and for layer 1 the residual includes layer 0's MoE output computed by this
// package's SwitchGLU with those (un-renormalised) weights.
import { readFileSync } from 'node:fs';
import { expect, test } from 'vitest';
import { Checkpoint, quantConfigOf, reference, SafetensorsFile } from '@mlxcel/tensor';
import { loadExperts, sparsemixer, validateMoeConfig } from '../src/index.js';

const fixture = (name: string) => new URL(`../../../fixtures/${name}/`, import.meta.url).pathname;

test.each(['phimoe-tiny', 'phimoe-tiny-q4-mlx'])('%s: sparsemixer reproduces the recorded routing of both layers', (name) => {
  const dir = fixture(name);
  const cfg = JSON.parse(readFileSync(`${dir}config.json`, 'utf8'));
  const ck = Checkpoint.open(dir);
  const exp = SafetensorsFile.open(`${dir}expected.safetensors`);
  const ids = exp.get('input_ids').toI32();
  const wantIds = exp.get('routing_experts').toI32(), wantW = exp.get('routing_weights').toF32();
  const T = ids.length, H: number = cfg.hidden_size, nH: number = cfg.num_attention_heads, nKV: number = cfg.num_key_value_heads;
  const D = H / nH, eps: number = cfg.rms_norm_eps;
  const { numExperts: E, topK: k, jitterEps } = validateMoeConfig({ numExperts: cfg.num_local_experts, topK: cfg.num_experts_per_tok, router: 'sparsemixer', jitterEps: cfg.router_jitter_noise });

  // LongRoPE: the long table once the sequence exceeds original_max_position_embeddings.
  const rs = cfg.rope_scaling, long = T > rs.original_max_position_embeddings;
  const factors: number[] = long ? rs.long_factor : rs.short_factor, mscale: number = long ? rs.long_mscale : rs.short_mscale;
  const rope = (x: Float32Array, heads: number) => {
    for (let t = 0; t < T; t++)
      for (let h = 0; h < heads; h++)
        for (let i = 0; i < D / 2; i++) {
          const f = 1 / (factors[i]! * cfg.rope_theta ** ((2 * i) / D)), c = Math.cos(t * f) * mscale, s = Math.sin(t * f) * mscale;
          const o = (t * heads + h) * D, a = x[o + i]!, b = x[o + i + D / 2]!;
          x[o + i] = a * c - b * s;
          x[o + i + D / 2] = b * c + a * s;
        }
  };
  const quant = quantConfigOf(cfg);
  const vec = (n: string) => ck.get(n).toF32();
  /** A matrix [rows, cols] as f32: float, or MLX affine (the .scales rule) dequantized by the TS reference. */
  const matrix = (p: string): { w: Float32Array; rows: number; cols: number } => {
    const t = ck.get(`${p}.weight`);
    if (!ck.has(`${p}.scales`)) return { w: t.toF32(), rows: t.shape[0]!, cols: t.shape[1]! };
    const sc = ck.get(`${p}.scales`), bits: number = quant!.bits!, group: number = quant!.group_size!;
    const rows = t.shape[0]!, cols = (t.shape[1]! * 32) / bits;
    const code = sc.dtype === 'F32' ? 0 : sc.dtype === 'F16' ? 1 : 2;
    return { w: reference.dequantize(t.bytes, sc.bytes, ck.get(`${p}.biases`).bytes, code, rows, cols, bits, group), rows, cols };
  };
  const linear = (x: Float32Array, p: string, bias = true) => {
    const m = matrix(p);
    return reference.matmul(x, T, m.cols, m.w, m.rows, bias ? vec(`${p}.bias`) : null);
  };
  const pos = Int32Array.from({ length: T }, (_, i) => i);

  const sums: number[] = [];
  let h = new Float32Array(T * H);
  const emb = matrix('model.embed_tokens').w;
  for (let t = 0; t < T; t++) h.set(emb.subarray(ids[t]! * H, (ids[t]! + 1) * H), t * H);

  for (let l = 0; l < cfg.num_hidden_layers; l++) {
    const L = `model.layers.${l}`;
    const a = reference.layerNorm(h, H, vec(`${L}.input_layernorm.weight`), vec(`${L}.input_layernorm.bias`), eps);
    const q = linear(a, `${L}.self_attn.q_proj`), kk = linear(a, `${L}.self_attn.k_proj`), v = linear(a, `${L}.self_attn.v_proj`);
    rope(q, nH);
    rope(kk, nKV);
    const att = reference.attention({ q, nQ: T, nHeads: nH, headDim: D, qPos: pos, k: kk, v, nKv: T, nKvHeads: nKV, kPos: pos, scale: 1 / Math.sqrt(D) });
    const o = linear(att, `${L}.self_attn.o_proj`);
    h = h.map((x, i) => x + o[i]!);
    const m = reference.layerNorm(h, H, vec(`${L}.post_attention_layernorm.weight`), vec(`${L}.post_attention_layernorm.bias`), eps);
    const logits = linear(m, `${L}.block_sparse_moe.gate`, false);

    const r = sparsemixer(logits, E, k, jitterEps!);
    expect([...r.ids], `layer ${l} experts`).toEqual([...wantIds.subarray(l * T * k, (l + 1) * T * k)]);
    const ww = wantW.subarray(l * T * k, (l + 1) * T * k);
    for (let i = 0; i < ww.length; i++) expect(Math.abs(r.weights[i]! - ww[i]!), `layer ${l} weight ${i}`).toBeLessThan(2e-6);
    for (let t = 0; t < T; t++) sums.push(r.weights[2 * t]! + r.weights[2 * t + 1]!);

    const moe = loadExperts(ck, `${L}.block_sparse_moe`, 'auto', { numExperts: E, activation: 'silu', hidden: H, intermediate: cfg.intermediate_size, quant });
    const y = moe.forward(m, T, r.ids, r.weights);
    h = h.map((x, i) => x + y[i]!);
  }
  // Not renormalised: per-token sums span both sides of 1 (fixture README: ~0.84-2.0).
  expect(Math.max(...sums)).toBeGreaterThan(1.9);
  expect(Math.min(...sums)).toBeLessThan(0.9);
});
