// Our random checkpoints (HF tensor names) as llama.cpp GGUFs: per architecture the metadata keys and
// tensor names llama.cpp's loader reads, following its converter and loaders at the version
// node-llama-cpp 3.21.1 bundles (ggml-org/llama.cpp: conversion/gemma.py Gemma3NModel / Gemma4Model,
// conversion/phi.py Phi3MiniModel, src/models/{gemma3n,gemma4,phi3}.cpp, src/llama-arch.cpp names).
// `cfg` is the (text) config the random weights were built from, already cut to the benchmark's depth.
import { kv, T } from './gguf.mjs';
import { floatTensor, moduleTensor, stackedModuleTensor, valuesTensor, zeroTensor } from './tensors.mjs';
import { gemma3nVocab, gemma4Vocab, phi3Vocab } from './vocab.mjs';

const fileType = (bits) => kv.u32(bits === 4 ? 2 : 7); // LLAMA_FTYPE_MOSTLY_Q4_0 / Q8_0
const general = (arch, name, bits) => ({
  'general.architecture': kv.str(arch),
  'general.name': kv.str(name),
  'general.file_type': fileType(bits),
  'general.quantization_version': kv.u32(2),
});
const ones = (name, n) => valuesTensor(name, [n], new Array(n).fill(1));

/** The metadata keys the gemma3n and gemma4 loaders read alike (`ff`: per-layer MLP widths). */
const gemmaMeta = (a, name, cfg, bits, ff) => ({
  ...general(a, name, bits),
  [`${a}.context_length`]: kv.u32(cfg.max_position_embeddings),
  [`${a}.embedding_length`]: kv.u32(cfg.hidden_size),
  [`${a}.block_count`]: kv.u32(cfg.num_hidden_layers),
  [`${a}.feed_forward_length`]: kv.arr(T.U32, ff),
  [`${a}.attention.head_count`]: kv.u32(cfg.num_attention_heads),
  [`${a}.attention.head_count_kv`]: kv.u32(cfg.num_key_value_heads),
  [`${a}.attention.layer_norm_rms_epsilon`]: kv.f32(cfg.rms_norm_eps),
});

// Per-layer tensors the gemma3n and gemma4 loaders name alike (HF layer prefix q, GGUF block prefix b).
/** Input norm, q / o projections and the q norm. */
const gemmaAttention = (store, q, b, bits) => [
  floatTensor(store, `${q}input_layernorm.weight`, `${b}attn_norm.weight`),
  moduleTensor(store, `${q}self_attn.q_proj`, `${b}attn_q.weight`, bits),
  moduleTensor(store, `${q}self_attn.o_proj`, `${b}attn_output.weight`, bits),
  floatTensor(store, `${q}self_attn.q_norm.weight`, `${b}attn_q_norm.weight`),
];
/** The gated MLP with its pre and post norms. */
const gemmaFfn = (store, q, b, bits) => [
  floatTensor(store, `${q}pre_feedforward_layernorm.weight`, `${b}ffn_norm.weight`),
  moduleTensor(store, `${q}mlp.gate_proj`, `${b}ffn_gate.weight`, bits),
  moduleTensor(store, `${q}mlp.up_proj`, `${b}ffn_up.weight`, bits),
  moduleTensor(store, `${q}mlp.down_proj`, `${b}ffn_down.weight`, bits),
  floatTensor(store, `${q}post_feedforward_layernorm.weight`, `${b}post_ffw_norm.weight`),
];
/** The per-layer-input gate, projection and norm. */
const gemmaPerLayerInput = (store, q, b, bits) => [
  moduleTensor(store, `${q}per_layer_input_gate`, `${b}inp_gate.weight`, bits),
  moduleTensor(store, `${q}per_layer_projection`, `${b}proj.weight`, bits),
  floatTensor(store, `${q}post_per_layer_input_norm.weight`, `${b}post_norm.weight`),
];

/** Gemma 3n (llama.cpp arch `gemma3n`). */
function gemma3n(cfg, store, bits, root) {
  const a = 'gemma3n', p = 'model.language_model.';
  const NL = cfg.num_hidden_layers, H = cfg.hidden_size, hd = cfg.head_dim, nkv = cfg.num_key_value_heads;
  const V = cfg.vocab_size, Vp = cfg.vocab_size_per_layer_input;
  const ff = Array.isArray(cfg.intermediate_size) ? cfg.intermediate_size : new Array(NL).fill(cfg.intermediate_size);
  const meta = {
    ...gemmaMeta(a, 'mlxcel random Gemma 3n E2B', cfg, bits, ff),
    [`${a}.attention.key_length`]: kv.u32(hd),
    [`${a}.attention.value_length`]: kv.u32(hd),
    [`${a}.rope.freq_base`]: kv.f32(cfg.rope_theta),
    [`${a}.rope.freq_base_swa`]: kv.f32(cfg.rope_local_base_freq),
    [`${a}.final_logit_softcapping`]: kv.f32(cfg.final_logit_softcapping),
    [`${a}.attention.sliding_window`]: kv.u32(cfg.sliding_window),
    [`${a}.attention.sliding_window_pattern`]: kv.arr(T.BOOL, cfg.layer_types.map((t) => t === 'sliding_attention')),
    [`${a}.attention.shared_kv_layers`]: kv.u32(cfg.num_kv_shared_layers),
    [`${a}.altup.active_idx`]: kv.u32(cfg.altup_active_idx),
    [`${a}.altup.num_inputs`]: kv.u32(cfg.altup_num_inputs),
    [`${a}.embedding_length_per_layer_input`]: kv.u32(cfg.hidden_size_per_layer_input),
    ...gemma3nVocab(root, V),
  };
  const K = cfg.altup_num_inputs;
  const t = [
    moduleTensor(store, `${p}embed_tokens`, 'token_embd.weight', bits),
    // llama.cpp sizes the per-layer table by vocab_size; its converter pads the image/audio ids with zeros.
    moduleTensor(store, `${p}embed_tokens_per_layer`, 'per_layer_token_embd.weight', bits, { padRows: V - Vp }),
    moduleTensor(store, `${p}per_layer_model_projection`, 'per_layer_model_proj.weight', bits),
    floatTensor(store, `${p}per_layer_projection_norm.weight`, 'per_layer_proj_norm.weight'),
    stackedModuleTensor(store, [...Array(K - 1).keys()].map((k) => `${p}altup_projections.${k}`), 'altup_proj.weight', bits),
    stackedModuleTensor(store, [...Array(K - 1).keys()].map((k) => `${p}altup_unembed_projections.${k}`), 'altup_unembd_proj.weight', bits),
    floatTensor(store, `${p}norm.weight`, 'output_norm.weight'),
  ];
  for (let l = 0; l < NL; l++) {
    const q = `${p}layers.${l}.`, b = `blk.${l}.`;
    t.push(...gemmaAttention(store, q, b, bits));
    if (store.has(`${q}self_attn.k_proj.weight`)) {
      t.push(
        moduleTensor(store, `${q}self_attn.k_proj`, `${b}attn_k.weight`, bits),
        moduleTensor(store, `${q}self_attn.v_proj`, `${b}attn_v.weight`, bits),
        floatTensor(store, `${q}self_attn.k_norm.weight`, `${b}attn_k_norm.weight`),
      );
    } else {
      // KV-shared layer: llama.cpp's gemma3n loader requires k/v weights on every layer but never reads
      // them where the layer reuses an earlier layer's cache (our checkpoints, like mlx-lm's, drop them).
      t.push(zeroTensor(`${b}attn_k.weight`, H, nkv * hd, bits), zeroTensor(`${b}attn_v.weight`, H, nkv * hd, bits), ones(`${b}attn_k_norm.weight`, hd));
    }
    t.push(
      floatTensor(store, `${q}post_attention_layernorm.weight`, `${b}post_attention_norm.weight`),
      ...gemmaFfn(store, q, b, bits),
      ...gemmaPerLayerInput(store, q, b, bits),
      floatTensor(store, `${q}altup.correction_coefs.weight`, `${b}altup_correct_coef.weight`),
      floatTensor(store, `${q}altup.correct_output_scale`, `${b}altup_correct_scale.weight`),
      floatTensor(store, `${q}altup.prediction_coefs.weight`, `${b}altup_predict_coef.weight`),
      moduleTensor(store, `${q}altup.modality_router`, `${b}altup_router.weight`, bits),
      floatTensor(store, `${q}altup.router_norm.weight`, `${b}altup_router_norm.weight`),
      moduleTensor(store, `${q}laurel.linear_left`, `${b}laurel_l.weight`, bits),
      moduleTensor(store, `${q}laurel.linear_right`, `${b}laurel_r.weight`, bits),
      floatTensor(store, `${q}laurel.post_laurel_norm.weight`, `${b}laurel_post_norm.weight`),
    );
  }
  return { meta, tensors: t };
}

/** Gemma 4 dense with per-layer inputs (llama.cpp arch `gemma4`). */
function gemma4(cfg, store, bits, root) {
  const a = 'gemma4', p = 'model.language_model.';
  const NL = cfg.num_hidden_layers, H = cfg.hidden_size, hd = cfg.head_dim, hdFull = cfg.global_head_dim ?? hd;
  const swa = cfg.layer_types.map((x) => x === 'sliding_attention');
  const shared = cfg.num_kv_shared_layers ?? 0, I = cfg.intermediate_size;
  const ff = swa.map((_, l) => (cfg.use_double_wide_mlp && shared > 0 && l >= NL - shared ? 2 * I : I));
  const full = cfg.rope_parameters.full_attention, slide = cfg.rope_parameters.sliding_attention;
  const meta = {
    ...gemmaMeta(a, 'mlxcel random Gemma 4 E2B', cfg, bits, ff),
    [`${a}.attention.key_length`]: kv.u32(hdFull),
    [`${a}.attention.value_length`]: kv.u32(hdFull),
    [`${a}.attention.key_length_swa`]: kv.u32(hd),
    [`${a}.attention.value_length_swa`]: kv.u32(hd),
    [`${a}.rope.freq_base`]: kv.f32(full.rope_theta),
    [`${a}.rope.freq_base_swa`]: kv.f32(slide.rope_theta),
    [`${a}.rope.dimension_count`]: kv.u32(hdFull),
    [`${a}.rope.dimension_count_swa`]: kv.u32(Math.floor(hd * (slide.partial_rotary_factor ?? 1))),
    [`${a}.final_logit_softcapping`]: kv.f32(cfg.final_logit_softcapping),
    [`${a}.attention.sliding_window`]: kv.u32(cfg.sliding_window),
    [`${a}.attention.sliding_window_pattern`]: kv.arr(T.BOOL, swa),
    [`${a}.attention.shared_kv_layers`]: kv.u32(shared),
    [`${a}.embedding_length_per_layer_input`]: kv.u32(cfg.hidden_size_per_layer_input ?? 0),
    ...gemma4Vocab(root, cfg.vocab_size),
  };
  // Proportional RoPE on full-attention layers: llama.cpp rotates the first partial_rotary_factor of
  // the pairs and leaves the rest by giving them frequency factor 1e30 (its converter's rope_freqs).
  const nRot = Math.floor((hdFull * full.partial_rotary_factor) / 2);
  const t = [moduleTensor(store, `${p}embed_tokens`, 'token_embd.weight', bits), floatTensor(store, `${p}norm.weight`, 'output_norm.weight')];
  // Only full-attention layers read it, and llama.cpp rejects a tensor no layer reads (a cut model may have none).
  if (swa.includes(false))
    t.push(valuesTensor('rope_freqs.weight', [hdFull / 2], [...new Array(nRot).fill(1), ...new Array(hdFull / 2 - nRot).fill(1e30)]));
  if (cfg.hidden_size_per_layer_input)
    t.push(
      moduleTensor(store, `${p}embed_tokens_per_layer`, 'per_layer_token_embd.weight', bits),
      moduleTensor(store, `${p}per_layer_model_projection`, 'per_layer_model_proj.weight', bits),
      floatTensor(store, `${p}per_layer_projection_norm.weight`, 'per_layer_proj_norm.weight'),
    );
  for (let l = 0; l < NL; l++) {
    const q = `${p}layers.${l}.`, b = `blk.${l}.`;
    t.push(...gemmaAttention(store, q, b, bits));
    // KV-shared layers have no k/v weights (optional in llama.cpp's gemma4 loader).
    if (store.has(`${q}self_attn.k_proj.weight`)) {
      t.push(moduleTensor(store, `${q}self_attn.k_proj`, `${b}attn_k.weight`, bits), floatTensor(store, `${q}self_attn.k_norm.weight`, `${b}attn_k_norm.weight`));
      if (store.has(`${q}self_attn.v_proj.weight`)) t.push(moduleTensor(store, `${q}self_attn.v_proj`, `${b}attn_v.weight`, bits));
    }
    t.push(
      floatTensor(store, `${q}post_attention_layernorm.weight`, `${b}post_attention_norm.weight`),
      floatTensor(store, `${q}layer_scalar`, `${b}layer_output_scale.weight`),
      ...gemmaFfn(store, q, b, bits),
    );
    if (cfg.hidden_size_per_layer_input) t.push(...gemmaPerLayerInput(store, q, b, bits));
  }
  return { meta, tensors: t };
}

/** Phi-3 / Phi-3.5-mini (llama.cpp arch `phi3`), LongRoPE factors as its converter writes them. */
function phi3(cfg, store, bits, root) {
  const a = 'phi3';
  const NL = cfg.num_hidden_layers, H = cfg.hidden_size, nh = cfg.num_attention_heads;
  const rs = cfg.rope_scaling, orig = cfg.original_max_position_embeddings, maxPos = cfg.max_position_embeddings;
  const scale = maxPos / orig;
  const meta = {
    ...general(a, 'mlxcel random Phi-3.5-mini', bits),
    [`${a}.context_length`]: kv.u32(maxPos),
    [`${a}.rope.scaling.original_context_length`]: kv.u32(orig),
    [`${a}.embedding_length`]: kv.u32(H),
    [`${a}.feed_forward_length`]: kv.u32(cfg.intermediate_size),
    [`${a}.block_count`]: kv.u32(NL),
    [`${a}.attention.head_count`]: kv.u32(nh),
    [`${a}.attention.head_count_kv`]: kv.u32(cfg.num_key_value_heads),
    [`${a}.attention.layer_norm_rms_epsilon`]: kv.f32(cfg.rms_norm_eps),
    [`${a}.rope.dimension_count`]: kv.u32(H / nh),
    [`${a}.rope.freq_base`]: kv.f32(cfg.rope_theta),
    [`${a}.attention.sliding_window`]: kv.u32(cfg.sliding_window ?? 0),
    [`${a}.rope.scaling.attn_factor`]: kv.f32(scale > 1 ? Math.sqrt(1 + Math.log(scale) / Math.log(orig)) : 1),
    ...phi3Vocab(root, cfg.vocab_size),
  };
  const t = [
    moduleTensor(store, 'model.embed_tokens', 'token_embd.weight', bits),
    floatTensor(store, 'model.norm.weight', 'output_norm.weight'),
    valuesTensor('rope_factors_long.weight', [rs.long_factor.length], rs.long_factor),
    valuesTensor('rope_factors_short.weight', [rs.short_factor.length], rs.short_factor),
  ];
  if (store.has('lm_head.weight')) t.push(moduleTensor(store, 'lm_head', 'output.weight', bits));
  for (let l = 0; l < NL; l++) {
    const q = `model.layers.${l}.`, b = `blk.${l}.`;
    t.push(
      floatTensor(store, `${q}input_layernorm.weight`, `${b}attn_norm.weight`),
      moduleTensor(store, `${q}self_attn.qkv_proj`, `${b}attn_qkv.weight`, bits),
      moduleTensor(store, `${q}self_attn.o_proj`, `${b}attn_output.weight`, bits),
      floatTensor(store, `${q}post_attention_layernorm.weight`, `${b}ffn_norm.weight`),
      moduleTensor(store, `${q}mlp.gate_up_proj`, `${b}ffn_up.weight`, bits),
      moduleTensor(store, `${q}mlp.down_proj`, `${b}ffn_down.weight`, bits),
    );
  }
  return { meta, tensors: t };
}

export const GGUF_ARCHS = { gemma3n, gemma4, phi3 };
