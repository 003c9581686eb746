#!/usr/bin/env node
// `pnpm bench vision` (or `pnpm --filter @mlxcel/vision bench`): time per image of the two vision towers
// at their real shapes with random bf16 weights — Gemma 3n's MobileNetV5-300M at 768x768 and Gemma 4
// E2B's ViT at the 280-token budget (768x768 -> 2520 patches -> 256 tokens) — each tower's GFLOP/s
// against a bf16-weight GEMM measured in the same run, and (unless --no-ttft) the time to first token of
// a 32-token prompt with one image on the E2B text towers (random q4). Needs packages built (turbo build).
//
//   node bench/vision.mjs [--runs N] [--threads N] [--no-ttft] [--json]
import { randomFillSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '../../..');
const vision = await import(pathToFileURL(join(here, '../dist/index.js')).href);
const { MemoryWeights, Tensor, Weight, ops } = await import('@mlxcel/tensor');
const native = await import('@mlxcel/core-native');

const args = process.argv.slice(2);
const opt = (n, d) => { const i = args.indexOf(`--${n}`); return i >= 0 && i + 1 < args.length ? args[i + 1] : d; };
const runs = Math.max(1, Number(opt('runs', 3)));
if (opt('threads')) native.setThreads(Number(opt('threads')));
const asJson = args.includes('--json');
const log = asJson ? () => {} : (s = '') => console.log(s);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const now = () => performance.now();

// bf16 weights drawn as bit patterns (random sign/mantissa, exponents around `scale`): fast to build.
function bf16(shape, scale = 0.03) {
  const n = shape.reduce((a, b) => a * b, 1);
  const h = randomFillSync(new Uint16Array(n));
  const e0 = Math.max(1, Math.round(127 + Math.log2(scale)) - 2);
  for (let i = 0; i < n; i++) h[i] = (h[i] & 0x807f) | ((e0 + ((h[i] >> 7) & 3)) << 7);
  return new Tensor('BF16', shape, new Uint8Array(h.buffer));
}
const f32 = (shape, v) => Tensor.fromF32(new Float32Array(shape.reduce((a, b) => a * b, 1)).fill(v), shape);
const json = (p) => JSON.parse(readFileSync(join(root, p), 'utf8'));
const picture = (n) => ({ data: randomFillSync(new Uint8Array(n * n * 3)), width: n, height: n });

// ---- MobileNetV5-300M (timm mobilenetv5_300m_enc) at real widths; FLOPs counted while building.
function mobilenet(w, p) {
  let flops = 0, h = 768, wd = 768;
  const same = (n, k, s) => Math.ceil(n / s);
  const conv = (name, cout, cin, k, s, bias = false) => {
    w.set(`${name}.weight`, bf16([cout, cin, k, k], 1 / Math.sqrt(cin * k * k)));
    if (bias) w.set(`${name}.bias`, f32([cout], 0));
    h = same(h, k, s); wd = same(wd, k, s);
    flops += 2 * h * wd * cout * cin * k * k;
  };
  const dw = (name, c, k, s) => { w.set(`${name}.weight`, bf16([c, 1, k, k], 1 / k)); h = same(h, k, s); wd = same(wd, k, s); flops += 2 * h * wd * c * k * k; };
  const norm = (name, c) => w.set(`${name}.weight`, f32([c], 1));
  conv(`${p}conv_stem.conv`, 64, 3, 3, 2, true); norm(`${p}conv_stem.bn`, 64);
  let C = 64;
  const er = (b, out, e, s) => { const mid = C * e; conv(`${b}conv_exp`, mid, C, 3, s); norm(`${b}bn1`, mid); conv(`${b}conv_pwl`, out, mid, 1, 1); norm(`${b}bn2`, out); C = out; };
  const uir = (b, out, a, k, s, e) => {
    if (a) { dw(`${b}dw_start.conv`, C, a, k ? 1 : s); norm(`${b}dw_start.bn`, C); }
    const mid = C * e;
    conv(`${b}pw_exp.conv`, mid, C, 1, 1); norm(`${b}pw_exp.bn`, mid);
    if (k) { dw(`${b}dw_mid.conv`, mid, k, s); norm(`${b}dw_mid.bn`, mid); }
    conv(`${b}pw_proj.conv`, out, mid, 1, 1); norm(`${b}pw_proj.bn`, out);
    w.set(`${b}layer_scale.gamma`, f32([out], 1e-2));
    C = out;
  };
  const mqa = (b, heads, d, kvs) => {
    norm(`${b}norm`, C);
    const M = h * wd, Mk = kvs === 2 ? Math.ceil(h / 2) * Math.ceil(wd / 2) : M;
    w.set(`${b}attn.query.proj.weight`, bf16([heads * d, C, 1, 1], 1 / Math.sqrt(C))); flops += 2 * M * C * heads * d;
    for (const kv of ['key', 'value']) {
      if (kvs === 2) { w.set(`${b}attn.${kv}.down_conv.weight`, bf16([C, 1, 3, 3], 1 / 3)); norm(`${b}attn.${kv}.norm`, C); flops += 2 * Mk * C * 9; }
      w.set(`${b}attn.${kv}.proj.weight`, bf16([d, C, 1, 1], 1 / Math.sqrt(C))); flops += 2 * Mk * C * d;
    }
    flops += 4 * M * Mk * d * heads; // scores + weighted values
    w.set(`${b}attn.output.proj.weight`, bf16([C, heads * d, 1, 1], 1 / Math.sqrt(heads * d))); flops += 2 * M * heads * d * C;
    w.set(`${b}layer_scale.gamma`, f32([C], 1e-2));
  };
  const B = (s, i) => `${p}blocks.${s}.${i}.`;
  er(B(0, 0), 128, 4, 2); er(B(0, 1), 128, 4, 1); er(B(0, 2), 128, 4, 1);
  uir(B(1, 0), 256, 3, 5, 2, 6); [5, 3, 5, 3].forEach((a, i) => uir(B(1, i + 1), 256, a, 0, 1, 4));
  uir(B(2, 0), 640, 5, 5, 2, 6);
  for (let i = 1; i <= 7; i++) uir(B(2, i), 640, 5, 0, 1, 4);
  uir(B(2, 8), 640, 0, 0, 1, 1);
  for (let i = 9; i < 37; i += 2) { mqa(B(2, i), 12, 64, 2); uir(B(2, i + 1), 640, 0, 0, 1, 2); }
  const s2 = { h, w: wd };
  uir(B(3, 0), 1280, 5, 5, 2, 6);
  for (let i = 1; i < 39; i += 2) { mqa(B(3, i), 16, 96, 1); uir(B(3, i + 1), 1280, 0, 0, 1, 2); }
  h = s2.h; wd = s2.w; C = 1920;
  conv(`${p}msfa.ffn.pw_exp.conv`, 3840, 1920, 1, 1); norm(`${p}msfa.ffn.pw_exp.bn`, 3840);
  conv(`${p}msfa.ffn.pw_proj.conv`, 2048, 3840, 1, 1); norm(`${p}msfa.ffn.pw_proj.bn`, 2048);
  norm(`${p}msfa.norm`, 2048);
  return flops;
}

function gemma3nModel(config) {
  const w = new MemoryWeights();
  const flops = mobilenet(w, 'model.vision_tower.timm_model.');
  const H = config.text_config.hidden_size;
  w.set('model.embed_vision.embedding.weight', bf16([128, 2048]));
  for (const n of ['hard_embedding_norm', 'soft_embedding_norm']) w.set(`model.embed_vision.${n}.weight`, f32([2048], 1));
  w.set('model.embed_vision.embedding_projection.weight', bf16([H, 2048]));
  const model = vision.visionModelFrom({ config, weights: w, preprocessor: { size: { height: 768, width: 768 }, resample: 2, image_seq_length: 256 }, name: 'random Gemma 3n E2B vision tower' });
  return { model, flops, params: w.keys().filter((k) => k.includes('vision_tower')).reduce((a, k) => a + w.get(k).size, 0) };
}

function gemma4Model(config) {
  const v = config.vision_config, D = v.hidden_size, I = v.intermediate_size, hd = v.head_dim, nh = v.num_attention_heads, p = 16;
  const w = new MemoryWeights(), t = 'model.vision_tower.';
  w.set(`${t}patch_embedder.input_proj.weight`, bf16([D, 3 * p * p]));
  w.set(`${t}patch_embedder.position_embedding_table`, bf16([2, v.position_embedding_size, D]));
  const lin = (n, shape) => {
    w.set(`${n}.linear.weight`, bf16(shape, 1 / Math.sqrt(shape[1])));
    for (const [k, x] of [['input_min', -1e4], ['input_max', 1e4], ['output_min', -1e4], ['output_max', 1e4]]) w.set(`${n}.${k}`, Tensor.fromF32(Float32Array.of(x), []));
  };
  for (let l = 0; l < v.num_hidden_layers; l++) {
    const b = `${t}encoder.layers.${l}.`;
    for (const q of ['q_proj', 'k_proj', 'v_proj']) lin(`${b}self_attn.${q}`, [nh * hd, D]);
    lin(`${b}self_attn.o_proj`, [D, nh * hd]);
    for (const n of ['q_norm', 'k_norm']) w.set(`${b}self_attn.${n}.weight`, f32([hd], 1));
    for (const n of ['input_layernorm', 'post_attention_layernorm', 'pre_feedforward_layernorm', 'post_feedforward_layernorm']) w.set(`${b}${n}.weight`, f32([D], 1));
    lin(`${b}mlp.gate_proj`, [I, D]); lin(`${b}mlp.up_proj`, [I, D]); lin(`${b}mlp.down_proj`, [D, I]);
  }
  w.set('model.embed_vision.embedding_projection.weight', bf16([config.text_config.hidden_size, D]));
  const model = vision.visionModelFrom({ config, weights: w, preprocessor: { patch_size: 16, pooling_kernel_size: 3, max_soft_tokens: 280, resample: 3 }, name: 'random Gemma 4 E2B vision tower' });
  const L = 280 * 9;
  const flops = 2 * L * 3 * p * p * D + v.num_hidden_layers * (2 * L * (4 * D * nh * hd + 3 * D * I) + 4 * L * L * nh * hd);
  return { model, flops, params: w.keys().filter((k) => k.includes('vision_tower')).reduce((a, k) => a + w.get(k).size, 0) };
}

function timeTower(m, img) {
  const px = vision.processImage(m, img);
  vision.encodeProcessed(m, px); // warm-up
  const ts = [];
  let out;
  for (let r = 0; r < runs; r++) { const t0 = now(); out = vision.encodeProcessed(m, px); ts.push(now() - t0); }
  const t0 = now();
  for (let r = 0; r < runs; r++) vision.processImage(m, picture(1024));
  return { ms: median(ts), tokens: out.nTokens, processMs: (now() - t0) / runs };
}

// The GEMM rate this machine reaches right now on the towers' typical matmul (bf16 weights).
function gemmRate() {
  const M = 2304, K = 640, N = 2560;
  const wt = Weight.fromTensor(bf16([N, K]));
  const x = new Float32Array(M * K).fill(0.5), y = new Float32Array(M * N);
  ops.matmul(x, M, wt, null, y);
  const ts = [];
  for (let r = 0; r < Math.max(3, runs); r++) { const t0 = now(); ops.matmul(x, M, wt, null, y); ts.push(now() - t0); }
  return (2 * M * K * N) / (median(ts) / 1e3) / 1e9;
}

const info = native.cpuInfo();
const cfg3n = json('fixtures/configs/unsloth--gemma-3n-E2B-it.json'), cfg4 = json('fixtures/configs/gemma-4-E2B-it.json');
const res = { isa: info.isa, threads: info.threads, loadavg1: loadavg()[0], runs, towers: {} };
const gemm0 = gemmRate();
const img = picture(768);
for (const [key, label, build, cfg] of [['gemma3n', 'Gemma 3n MobileNetV5-300M @ 768x768', gemma3nModel, cfg3n], ['gemma4', 'Gemma 4 E2B ViT @ 280-token budget (768x768)', gemma4Model, cfg4]]) {
  const { model, flops, params } = build(cfg);
  const t = timeTower(model, img);
  res.towers[key] = { label, params, gflop: flops / 1e9, ms: t.ms, tokens: t.tokens, gflops: flops / 1e6 / t.ms, processMs: t.processMs };
}
res.gemmGflops = Math.max(gemm0, gemmRate()); // best of before/after (noisy machine)
for (const t of Object.values(res.towers)) t.fractionOfGemm = t.gflops / res.gemmGflops;

if (!args.includes('--no-ttft')) {
  // TTFT = the tower time measured above (same image, same run) + the text prefill of the 32 text tokens
  // and the image span, timed here on the random q4 text tower (the last row's logits = first token).
  const { randomModel } = await import(pathToFileURL(join(root, 'packages/engine/dist/index.js')).href);
  res.ttft = {};
  for (const [key, cfg] of [['gemma3n', cfg3n], ['gemma4', cfg4]]) {
    const text = randomModel(cfg, { quantize: { bits: 4, groupSize: 64 }, seed: 0 });
    const vm = key === 'gemma3n' ? gemma3nModel(cfg).model : gemma4Model(cfg).model;
    const tk = vision.imagePromptTokens(vm), n = res.towers[key].tokens, H = cfg.text_config.hidden_size;
    const ids = Int32Array.from([2, ...Array(15).fill(100), tk.boi.id, ...Array(n).fill(tk.placeholder.id), tk.eoi.id, ...Array(15).fill(101)]);
    const embeds = new Float32Array(n * H).map(() => Math.random() - 0.5);
    const ov = vision.imageEmbeddingOverrides(vm, ids, [{ embeds, nTokens: n, hidden: H }]);
    const ms = [];
    for (let r = 0; r < Math.min(runs, 2); r++) {
      const t0 = now();
      text.forward([{ ids, state: text.newState(), embeddingOverrides: ov }], { logits: 'last' });
      ms.push(now() - t0);
    }
    const prefillMs = median(ms);
    res.ttft[key] = { promptTokens: ids.length, textTokens: 32, prefillMs, towerMs: res.towers[key].ms, ms: prefillMs + res.towers[key].ms };
  }
}

if (asJson) console.log(JSON.stringify(res));
log(`vision towers, random bf16 weights; machine: ${res.isa}, ${res.threads} threads, load ${res.loadavg1.toFixed(2)} (shared, noisy); median of ${runs} runs`);
log(`GEMM reference (bf16 weights, 2304x640 . 640x2560, same run): ${res.gemmGflops.toFixed(1)} GFLOP/s`);
for (const t of Object.values(res.towers))
  log(`  ${t.label}: ${(t.params / 1e6).toFixed(1)} M params, ${t.gflop.toFixed(1)} GFLOP -> ${t.ms.toFixed(0)} ms/image, ${t.tokens} tokens, ${t.gflops.toFixed(1)} GFLOP/s = ${(100 * t.fractionOfGemm).toFixed(0)}% of GEMM (decode+processor of a 1024² image: ${t.processMs.toFixed(0)} ms)`);
if (res.ttft)
  for (const [k, t] of Object.entries(res.ttft)) log(`  TTFT ${k === 'gemma3n' ? 'Gemma 3n E2B' : 'Gemma 4 E2B'} (q4 text), 32 text tokens + 1 image (${t.promptTokens} prompt tokens): ${t.ms.toFixed(0)} ms = tower ${t.towerMs.toFixed(0)} + prefill ${t.prefillMs.toFixed(0)}`);
