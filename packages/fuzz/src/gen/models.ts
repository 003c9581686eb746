/**
 * Malformed model folders built from the fixtures: config.json values that contradict the weights or
 * make no sense, and checkpoint files that are truncated, corrupt, not files at all, point outside the
 * folder, or hold NaN weights. Each loads and runs one forward in a worker.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Checkpoint, Tensor, writeSafetensors } from '@mlxcel/tensor';
import type { Expect, FuzzCase } from '../types.js';
import { FIXTURES, scratchRoot, variant } from './fs-util.js';

const GEMMA = ['gemma3n-tiny', 'gemma4-tiny-dense', 'gemma4-tiny-moe', 'gemma3n-tiny-q4'];
const PHI = ['phi3-tiny-short', 'phi3-tiny-long', 'phimoe-tiny', 'phimoe-tiny-q4-mlx', 'phi3small-tiny'];

const readConfig = (f: string) => JSON.parse(readFileSync(join(FIXTURES, f, 'config.json'), 'utf8')) as Record<string, any>;

/** Sets `key` in the text config (text_config when present), or deletes it for `undefined`. */
function patched(fixture: string, key: string, value: unknown): string {
  const c = readConfig(fixture);
  const t = c.text_config ?? c;
  if (value === undefined) delete t[key];
  else t[key] = value;
  return JSON.stringify(c);
}

const keyErr = (key: string): Expect => ({ error: '*', message: new RegExp(key) });

function configCases(): FuzzCase[] {
  const out: FuzzCase[] = [];
  const add = (fixture: string, key: string, value: unknown, expect: Expect) =>
    out.push({ id: `config/${fixture}/${key}=${JSON.stringify(value) ?? 'absent'}`, cls: 'config', op: 'load',
      args: { dir: variant(fixture, { 'config.json': patched(fixture, key, value) }) }, expect });
  for (const f of [...GEMMA, ...PHI]) {
    for (const v of [1e9, -1, 0, 2.5, '6']) add(f, 'num_hidden_layers', v, keyErr('num_hidden_layers|layers'));
    for (const v of [0, -64, '64', 1e9]) add(f, 'hidden_size', v, { cleanErrorOrOk: /hidden_size|\.weight|shape|head_dim|rotary_dim/ });
    for (const v of [0, 1e9, 'x']) add(f, 'vocab_size', v, keyErr('vocab_size|embed|lm_head|\\.weight'));
    for (const v of [0, 3, 1e9]) add(f, 'num_attention_heads', v, { cleanErrorOrOk: /num_attention_heads|num_key_value_heads|head|\.weight|shape/ });
    for (const v of [-1, 'small']) add(f, 'rms_norm_eps', v, { cleanErrorOrOk: /rms_norm_eps|layer_norm_eps|eps/ });
    for (const v of [0, -5, 1e15]) add(f, 'max_position_embeddings', v, { cleanErrorOrOk: /max_position_embeddings|rope|context/ });
    out.push({ id: `config/${f}/model_type=bogus`, cls: 'config', op: 'load', expect: keyErr('model_type'),
      args: { dir: variant(f, { 'config.json': JSON.stringify({ ...readConfig(f), model_type: 'bogus' }) }) } });
    for (const v of [-1, 'x']) add(f, 'sliding_window', v, { cleanErrorOrOk: /sliding_window/ });
  }
  for (const f of ['gemma3n-tiny', 'gemma4-tiny-dense']) {
    for (const v of [0, -30]) add(f, 'final_logit_softcapping', v, keyErr('final_logit_softcapping'));
    add(f, 'layer_types', ['sliding_attention'], keyErr('layer_types'));
    add(f, 'layer_types', 'full', keyErr('layer_types'));
  }
  add('gemma4-tiny-moe', 'enable_moe_block', false, { error: 'E_UNEXPECTED_TENSOR', message: /experts|router/ });
  add('gemma4-tiny-dense', 'hidden_size_per_layer_input', 0, { error: 'E_UNEXPECTED_TENSOR', message: /per_layer/ });
  for (const v of [-1, 0]) add('gemma3n-tiny', 'altup_coef_clip', v, keyErr('altup_coef_clip'));
  // Plain RoPE for rope_scaling null / absent past the original context (HF behaviour): must run.
  for (const f of ['phi3-tiny-short', 'phi3-tiny-long']) {
    add(f, 'rope_scaling', null, { ok: true });
    add(f, 'rope_scaling', undefined, { ok: true });
    add(f, 'rope_scaling', 'longrope', keyErr('rope_scaling'));
  }
  // Quantization blocks with string values, or not an object.
  for (const f of ['gemma3n-tiny-q4', 'phimoe-tiny-q4-mlx']) {
    const c = readConfig(f);
    const q = c.quantization ?? c.quantization_config;
    for (const [name, block] of [['group_size-string', { ...q, group_size: String(q.group_size) }], ['bits-string', { ...q, bits: String(q.bits) }], ['not-object', '4bit']] as const) {
      const cfg = { ...c, quantization: block };
      delete (cfg as Record<string, unknown>).quantization_config;
      out.push({ id: `config/${f}/quantization-${name}`, cls: 'config', op: 'load', args: { dir: variant(f, { 'config.json': JSON.stringify(cfg) }) }, expect: { error: 'E_QUANT', message: /quantization/ } });
    }
  }
  for (const f of ['phi3-tiny-short', 'gemma4-tiny-dense']) {
    out.push({ id: `config/${f}/not-json`, cls: 'config', op: 'load', args: { dir: variant(f, { 'config.json': '{"model_type": ' }) }, expect: { error: 'FILE_INVALID', message: /config\.json/ } });
    out.push({ id: `config/${f}/directory`, cls: 'config', op: 'load', args: { dir: variant(f, { 'config.json': 'dir' }) }, expect: { error: 'FILE_MISSING', message: /is a directory/ } });
    out.push({ id: `config/${f}/fifo`, cls: 'config', op: 'load', args: { dir: variant(f, { 'config.json': 'fifo' }) }, expect: { error: 'FILE_MISSING', message: /FIFO/ } });
    out.push({ id: `config/${f}/array`, cls: 'config', op: 'load', args: { dir: variant(f, { 'config.json': '[1]' }) }, expect: { error: 'FILE_INVALID', message: /config\.json/ } });
  }
  return out;
}

/** The fixture's tensors with `edit` applied, written as one model.safetensors. */
function rewritten(fixture: string, edit: (m: Map<string, Tensor>) => void): Uint8Array {
  const ck = Checkpoint.open(join(FIXTURES, fixture));
  const m = new Map<string, Tensor>();
  for (const k of ck.keys()) m.set(k, ck.get(k));
  edit(m);
  const p = join(scratchRoot(), `w-${fixture}-${Math.random().toString(36).slice(2)}.safetensors`);
  writeSafetensors(p, Object.fromEntries(m));
  return readFileSync(p);
}

function firstFloatMatrix(m: Map<string, Tensor>, pattern: RegExp): string {
  const k = [...m.keys()].sort().find((n) => pattern.test(n) && m.get(n)!.dtype === 'F32' && m.get(n)!.shape.length === 2);
  if (!k) throw new Error(`fuzz: no f32 matrix matching ${pattern}`);
  return k;
}

function checkpointCases(): FuzzCase[] {
  const out: FuzzCase[] = [];
  const add = (id: string, fixture: string, replace: Parameters<typeof variant>[1], expect: Expect, extra: Record<string, unknown> = {}) =>
    out.push({ id: `checkpoint/${fixture}/${id}`, cls: 'checkpoint', op: 'load', args: { dir: variant(fixture, replace), ...extra }, expect });
  for (const f of ['gemma3n-tiny', 'gemma4-tiny-dense', 'gemma4-tiny-moe', 'phi3-tiny-short', 'phimoe-tiny']) {
    const bytes = readFileSync(join(FIXTURES, f, 'model.safetensors'));
    add('truncated-half', f, { 'model.safetensors': bytes.subarray(0, bytes.length >> 1) }, { error: 'E_SAFETENSORS' });
    add('truncated-header', f, { 'model.safetensors': bytes.subarray(0, 5) }, { error: 'E_SAFETENSORS' });
    const huge = Uint8Array.from(bytes);
    new DataView(huge.buffer).setBigUint64(0, 2n ** 62n, true);
    add('header-length-2^62', f, { 'model.safetensors': huge }, { error: 'E_SAFETENSORS' });
    const garbage = Uint8Array.from(bytes);
    garbage.fill(0x7b, 8, 40);
    add('header-garbage', f, { 'model.safetensors': garbage }, { error: 'E_SAFETENSORS' });
    add('shard-directory', f, { 'model.safetensors': 'dir' }, { error: 'E_FILE', message: /is a directory/ });
    add('shard-fifo', f, { 'model.safetensors': 'fifo' }, { error: 'E_FILE', message: /FIFO/ });
    add('no-weights', f, { 'model.safetensors': null }, { error: 'E_CHECKPOINT' });
    const index = (map: unknown) => JSON.stringify({ metadata: {}, weight_map: map });
    add('index-escapes-folder', f, { 'model.safetensors.index.json': index({ 'x.weight': '../../../../etc/passwd' }) }, { error: 'E_CHECKPOINT', message: /outside the model folder/ });
    add('index-absolute-path', f, { 'model.safetensors.index.json': index({ 'x.weight': '/etc/passwd' }) }, { error: 'E_CHECKPOINT', message: /outside the model folder/ });
    add('index-entry-number', f, { 'model.safetensors.index.json': index({ 'x.weight': 7 }) }, { error: 'E_CHECKPOINT', message: /must be a shard file name/ });
    add('index-map-array', f, { 'model.safetensors.index.json': index(['model.safetensors']) }, { error: 'E_CHECKPOINT', message: /weight_map/ });
    add('index-missing-shard', f, { 'model.safetensors.index.json': index({ 'x.weight': 'model-00002.safetensors' }) }, { error: 'E_MISSING_SHARD' });
    add('index-not-json', f, { 'model.safetensors.index.json': '{' }, { error: 'E_CHECKPOINT', message: /not valid JSON/ });
    // Weights: NaN in a whole matrix, at load with --check-weights and at the first forward without.
    const nan = rewritten(f, (m) => {
      const k = firstFloatMatrix(m, /layers\.1\..*(down_proj|o_proj|dense)\.weight$/);
      const t = m.get(k)!;
      m.set(k, Tensor.fromF32(t.toF32().fill(NaN), t.shape));
    });
    add('nan-weights', f, { 'model.safetensors': nan }, { error: 'E_NONFINITE_LOGITS', message: /first appear in layer 1|router logit/ });
    add('nan-weights-check', f, { 'model.safetensors': nan }, { error: 'E_NONFINITE_WEIGHT', message: /layers\.1\./ }, { checkWeights: true });
    const inf = rewritten(f, (m) => {
      const k = firstFloatMatrix(m, /embed_tokens\.weight$/);
      const t = m.get(k)!;
      m.set(k, Tensor.fromF32(t.toF32().fill(Infinity), t.shape));
    });
    add('inf-embedding', f, { 'model.safetensors': inf }, { error: 'E_NONFINITE_LOGITS' });
    add('extra-tensor', f, { 'model.safetensors': rewritten(f, (m) => m.set('model.layers.0.surprise.weight', Tensor.fromF32(new Float32Array(4), [2, 2]))) },
      { error: 'E_UNEXPECTED_TENSOR', message: /surprise/ });
    add('missing-tensor', f, { 'model.safetensors': rewritten(f, (m) => m.delete(firstFloatMatrix(m, /layers\.0\..*\.weight$/))) }, { error: '*', message: /layers\.0\./ });
    add('wrong-shape', f, { 'model.safetensors': rewritten(f, (m) => {
      const k = firstFloatMatrix(m, /layers\.0\..*\.weight$/);
      const t = m.get(k)!;
      m.set(k, Tensor.fromF32(new Float32Array(t.shape[0]! * (t.shape[1]! + 1)), [t.shape[0]!, t.shape[1]! + 1]));
    }) }, { error: '*', message: /layers\.0\./ });
    add('valid', f, {}, { ok: true });
  }
  return out;
}

export function modelCases(): FuzzCase[] {
  return [...configCases(), ...checkpointCases()];
}
