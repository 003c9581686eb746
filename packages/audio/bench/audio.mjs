#!/usr/bin/env node
// `pnpm bench audio` (or `pnpm --filter @mlxcel/audio bench`): log-mel features + Gemma 4 audio encoder
// for a 30 s clip at the real Gemma 4 E2B audio tower shape (fixtures/configs/gemma-4-E2B-it.json:
// D 1024, 8 heads, 12 conformer layers, SSCP channels [128, 32], output 1536) with random bf16 weights,
// reported as x real time (clip seconds / processing seconds). Also times the front end alone on a
// one-minute clip. Needs the package built (`npx tsup` in packages/audio).
//
//   node bench/audio.mjs [--runs N] [--dtype bf16|f32] [--threads N] [--json]
import { existsSync, readFileSync } from 'node:fs';
import { randomFillSync } from 'node:crypto';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const pkg = join(here, '..');
const root = join(pkg, '../..');
const dist = join(pkg, 'dist/index.js');
if (!existsSync(dist)) {
  console.error('bench/audio: packages/audio/dist is missing; build it first (cd packages/audio && npx tsup)');
  process.exit(1);
}
const audio = await import(pathToFileURL(dist).href);
const { MemoryWeights, Tensor } = await import('@mlxcel/tensor');
const native = await import('@mlxcel/core-native');

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
};
const runs = Math.max(1, Number(opt('runs', 3)));
const dtype = opt('dtype', 'bf16');
if (opt('threads')) native.setThreads(Number(opt('threads')));
const asJson = args.includes('--json');
const log = asJson ? () => {} : (s = '') => console.log(s);

const configPath = join(root, 'fixtures/configs/gemma-4-E2B-it.json');
const config = JSON.parse(readFileSync(configPath, 'utf8'));
const ac = config.audio_config;
const D = ac.hidden_size, [c0, c1] = ac.subsampling_conv_channels, L = ac.num_hidden_layers, hd = D / ac.num_attention_heads;
const H = config.text_config.hidden_size, out = ac.output_proj_dims;

// Pseudo-random weights in the checkpoint dtype. bf16 values are drawn directly as bit patterns
// (random sign and mantissa, exponent 2^-7 .. 2^-4) so building 300 M parameters takes a moment, not
// a minute; f32 weights are uniform in +-scale/2.
let seed = 12345;
const rnd = () => ((seed = (seed * 1664525 + 1013904223) >>> 0) / 2 ** 32 - 0.5);
function tensor(shape, scale = 0.04, kind = dtype) {
  const n = shape.reduce((a, b) => a * b, 1);
  if (kind === 'f32') {
    const f = new Float32Array(n);
    for (let i = 0; i < n; i++) f[i] = rnd() * scale;
    return Tensor.fromF32(f, shape);
  }
  const h = randomFillSync(new Uint16Array(n));
  const e0 = Math.max(1, Math.round(127 + Math.log2(scale)) - 4); // exponents e0 .. e0 + 3
  for (let i = 0; i < n; i++) {
    const r = h[i];
    h[i] = (r & 0x807f) | ((e0 + ((r >> 7) & 3)) << 7);
  }
  return new Tensor('BF16', shape, new Uint8Array(h.buffer));
}
const ones = (n) => Tensor.fromF32(new Float32Array(n).fill(1), [n]);
const scalar = (v) => Tensor.fromF32(Float32Array.of(v), []);

const w = new MemoryWeights();
const p = 'model.audio_tower.';
w.set(`${p}subsample_conv_projection.layer0.conv.weight`, tensor([c0, 1, 3, 3], 0.3));
w.set(`${p}subsample_conv_projection.layer0.norm.weight`, ones(c0));
w.set(`${p}subsample_conv_projection.layer1.conv.weight`, tensor([c1, c0, 3, 3], 0.05));
w.set(`${p}subsample_conv_projection.layer1.norm.weight`, ones(c1));
w.set(`${p}subsample_conv_projection.input_proj_linear.weight`, tensor([D, (c0 / 4) * c1]));
const clipped = (name, shape) => {
  w.set(`${name}.linear.weight`, tensor(shape));
  for (const [k, v] of [['input_min', -100], ['input_max', 100], ['output_min', -100], ['output_max', 100]]) w.set(`${name}.${k}`, scalar(v));
};
for (let i = 0; i < L; i++) {
  const l = `${p}layers.${i}`;
  for (const f of ['feed_forward1', 'feed_forward2']) {
    w.set(`${l}.${f}.pre_layer_norm.weight`, ones(D));
    w.set(`${l}.${f}.post_layer_norm.weight`, ones(D));
    clipped(`${l}.${f}.ffw_layer_1`, [4 * D, D]);
    clipped(`${l}.${f}.ffw_layer_2`, [D, 4 * D]);
  }
  for (const q of ['q_proj', 'k_proj', 'v_proj', 'post']) clipped(`${l}.self_attn.${q}`, [D, D]);
  w.set(`${l}.self_attn.relative_k_proj.weight`, tensor([D, D]));
  w.set(`${l}.self_attn.per_dim_scale`, Tensor.fromF32(new Float32Array(hd), [hd]));
  w.set(`${l}.lconv1d.pre_layer_norm.weight`, ones(D));
  w.set(`${l}.lconv1d.conv_norm.weight`, ones(D));
  clipped(`${l}.lconv1d.linear_start`, [2 * D, D]);
  clipped(`${l}.lconv1d.linear_end`, [D, D]);
  w.set(`${l}.lconv1d.depthwise_conv1d.weight`, tensor([D, 1, ac.conv_kernel_size], 0.3));
  for (const n of ['norm_pre_attn', 'norm_post_attn', 'norm_out']) w.set(`${l}.${n}.weight`, ones(D));
}
w.set(`${p}output_proj.weight`, tensor([out, D]));
w.set(`${p}output_proj.bias`, Tensor.fromF32(new Float32Array(out), [out]));
w.set('model.embed_audio.embedding_projection.weight', tensor([H, out]));

const model = audio.audioModelFrom({ config, weights: w, name: 'random E2B audio tower' });
const params = w.keys().filter((k) => k.startsWith(p)).reduce((a, k) => a + w.get(k).size, 0);

const sr = 16000;
const clip = (sec) => Float32Array.from({ length: sec * sr }, (_, i) => 0.3 * Math.sin(i * 0.07) + 0.05 * rnd());
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const now = () => performance.now();

// Warm-up: page in the weights, spin up the pool.
audio.audioSoftTokens(model, clip(2));

const x30 = clip(30), x60 = clip(60);
const feat = [], enc = [], embed = [], feat60 = [];
let tokens = 0;
const mel60 = { ...model.mel, maxLength: Infinity };
for (let r = 0; r < runs; r++) {
  let t0 = now();
  const f = audio.extractLogMel(x30, model.mel);
  feat.push(now() - t0);
  t0 = now();
  const e = model.encoder.forward(f.features, f.mask);
  enc.push(now() - t0);
  t0 = now();
  model.embedder.forward(e.hidden, e.frames);
  embed.push(now() - t0);
  tokens = e.mask.reduce((a, b) => a + b, 0);
  t0 = now();
  audio.extractLogMel(x60, mel60);
  feat60.push(now() - t0);
}
const info = native.cpuInfo();
const res = {
  shape: { hidden: D, heads: ac.num_attention_heads, layers: L, channels: [c0, c1], outputDims: out, textHidden: H, params, dtype },
  clipSeconds: 30,
  tokens,
  featuresMs: median(feat),
  encoderMs: median(enc),
  embedMs: median(embed),
  features60sMs: median(feat60),
  threads: info.threads,
  isa: info.isa,
  loadavg1: loadavg()[0],
};
res.totalMs = res.featuresMs + res.encoderMs;
res.realtimeFactor = 30000 / res.totalMs;
if (asJson) console.log(JSON.stringify(res));
log(`Gemma 4 E2B audio tower (random ${dtype} weights, ${(params / 1e6).toFixed(1)} M params): D ${D}, ${ac.num_attention_heads} heads, ${L} layers, SSCP [${c0}, ${c1}], out ${out}`);
log(`machine: ${info.isa}, ${info.threads} threads, load ${res.loadavg1.toFixed(2)}; median of ${runs} runs`);
log(`30 s clip -> ${tokens} soft tokens`);
log(`  features  ${res.featuresMs.toFixed(1)} ms`);
log(`  encoder   ${res.encoderMs.toFixed(1)} ms`);
log(`  total     ${res.totalMs.toFixed(1)} ms  = ${res.realtimeFactor.toFixed(2)}x real time`);
log(`  (embed_audio projection ${res.embedMs.toFixed(1)} ms)`);
log(`60 s clip, features only: ${res.features60sMs.toFixed(1)} ms`);
