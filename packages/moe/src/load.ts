/**
 * Expert weights from a checkpoint, in any of the three layouts, onto the one stacked layout the
 * kernel reads ([E, rows, cols] per projection):
 *   per-expert (HF PhiMoE/Mixtral): `${p}.experts.{e}.w1|w3|w2.weight` (gate|up|down; `gate_proj`/
 *       `up_proj`/`down_proj` also recognised). Stacked ONCE at load into one native buffer per
 *       projection: this copies the expert weights in their stored dtype (no expansion), so they live in
 *       anonymous memory instead of the mmapped file's page cache — e.g. Phi-3.5-MoE bf16 holds ~79 GB of
 *       experts over 32 layers (3 × 16 × 6400 × 4096 × 2 B = 2.5 GB per layer). Prefer a stacked checkpoint
 *       (mlx-community) for large models: those load zero-copy from the mmap.
 *   fused (HF Gemma 4, transformers v5 PhiMoE): `${p}.experts.gate_up_proj` [E, 2I, H] (gate rows first)
 *       and `${p}.experts.down_proj` [E, H, I], with or without a `.weight` suffix. Zero-copy; the kernel
 *       slices gate/up rows per expert.
 *   stacked (mlx-community): `${p}.{switch_mlp|switch_glu|experts.switch_glu|experts.switch_mlp}.
 *       {gate,up,down}_proj.weight` [E, ., .], MLX-quantized when `.scales` is present. Zero-copy.
 * `p` is the MoE block path: `model.layers.3.block_sparse_moe` (PhiMoE), `model.language_model.layers.3`
 * (Gemma 4 HF) or `language_model.model.layers.3` (Gemma 4 mlx).
 */
import { alloc } from '@mlxcel/core-native';
import {
  loadWeight, MlxcelError, quantParamsFor, QuantizedWeight, Tensor, Weight, type LoadOptions, type WeightStore,
} from '@mlxcel/tensor';
import { SwitchGLU, type Activation, type ExpertProjections } from './switch-glu.js';

export type ExpertLayout = 'per-expert' | 'fused' | 'stacked';

export interface LoadExpertsOptions extends LoadOptions {
  /** num_local_experts / num_experts. */
  numExperts: number;
  activation: Activation;
  /** hidden_size, checked against the tensors when given. */
  hidden?: number;
  /** intermediate_size / moe_intermediate_size, checked against the tensors when given. */
  intermediate?: number;
}

/** Where a layout's tensors live under a prefix: the base path and the three projection names. */
export interface DetectedExperts {
  layout: ExpertLayout;
  base: string;
  names: { gate: string; up: string; down: string } | { gateUp: string; down: string };
}

const PER_EXPERT_NAMES = [
  { gate: 'w1', up: 'w3', down: 'w2' },
  { gate: 'gate_proj', up: 'up_proj', down: 'down_proj' },
];
const STACKED_BASES = ['switch_mlp', 'switch_glu', 'experts.switch_glu', 'experts.switch_mlp'];

function detect(store: WeightStore, p: string, want?: ExpertLayout): DetectedExperts | undefined {
  if (!want || want === 'per-expert')
    for (const n of PER_EXPERT_NAMES)
      if (store.has(`${p}.experts.0.${n.gate}.weight`)) return { layout: 'per-expert', base: `${p}.experts`, names: n };
  if (!want || want === 'fused')
    for (const suffix of ['', '.weight'])
      if (store.has(`${p}.experts.gate_up_proj${suffix}`))
        return { layout: 'fused', base: `${p}.experts`, names: { gateUp: `gate_up_proj${suffix}`, down: `down_proj${suffix}` } };
  if (!want || want === 'stacked')
    for (const b of STACKED_BASES)
      if (store.has(`${p}.${b}.gate_proj.weight`)) return { layout: 'stacked', base: `${p}.${b}`, names: { gate: 'gate_proj', up: 'up_proj', down: 'down_proj' } };
  return undefined;
}

/** Finds the expert layout under `prefix`; throws E_LAYOUT naming what was looked for. */
export function detectExperts(store: WeightStore, prefix: string, layout: ExpertLayout | 'auto' = 'auto'): DetectedExperts {
  const d = detect(store, prefix, layout === 'auto' ? undefined : layout);
  if (d) return d;
  const tried = [
    ...(layout === 'auto' || layout === 'per-expert' ? PER_EXPERT_NAMES.map((n) => `${prefix}.experts.0.${n.gate}.weight`) : []),
    ...(layout === 'auto' || layout === 'fused' ? [`${prefix}.experts.gate_up_proj`] : []),
    ...(layout === 'auto' || layout === 'stacked' ? STACKED_BASES.map((b) => `${prefix}.${b}.gate_proj.weight`) : []),
  ];
  throw new MlxcelError('E_LAYOUT', `no ${layout === 'auto' ? '' : layout + ' '}expert weights under ${prefix}: looked for ${tried.join(', ')}`);
}

/** Copies E same-shaped tensors into one aligned native buffer [E, ...shape]. */
function stack(store: WeightStore, names: string[]): Tensor {
  const first = store.get(names[0]!);
  const per = first.bytes.byteLength;
  const buf = new Uint8Array(alloc(names.length * per));
  names.forEach((name, e) => {
    const t = e === 0 ? first : store.get(name);
    if (t.dtype !== first.dtype || t.shape.join() !== first.shape.join())
      throw new MlxcelError('E_SHAPE', `${name}: ${t.dtype} [${t.shape}] differs from ${names[0]}: ${first.dtype} [${first.shape}]`);
    buf.set(t.bytes, e * per);
  });
  return new Tensor(first.dtype, [names.length, ...first.shape], buf);
}

function loadPerExpert(store: WeightStore, base: string, proj: string, E: number, opts: LoadOptions): Weight {
  const path = (e: number) => `${base}.${e}.${proj}`;
  const ids = Array.from({ length: E }, (_, e) => e);
  const w = stack(store, ids.map((e) => `${path(e)}.weight`));
  if (!store.has(`${path(0)}.scales`)) return Weight.fromTensor(w, `${path(0)}.weight`);
  const q = quantParamsFor(opts.quant, path(0));
  if (!q) throw new MlxcelError('E_QUANT', `${path(0)} has .scales but config.json has no quantization block`);
  return QuantizedWeight.fromTensors(w, stack(store, ids.map((e) => `${path(e)}.scales`)), stack(store, ids.map((e) => `${path(e)}.biases`)), q, `${base}.*.${proj}`);
}

function loadFused(store: WeightStore, name: string): Weight {
  if (!store.has(name)) throw new MlxcelError('E_MISSING_TENSOR', `missing tensor ${name}`);
  return Weight.fromTensor(store.get(name), name);
}

/** Every per-expert tensor must exist, and none beyond numExperts (that means a config mismatch). */
function checkPerExpertNames(store: WeightStore, d: DetectedExperts, E: number): void {
  const n = d.names as { gate: string; up: string; down: string };
  const missing: string[] = [];
  for (let e = 0; e < E; e++)
    for (const proj of [n.gate, n.up, n.down]) {
      const p = `${d.base}.${e}.${proj}`;
      if (!store.has(`${p}.weight`)) missing.push(`${p}.weight`);
      else if (store.has(`${p}.scales`) && !store.has(`${p}.biases`)) missing.push(`${p}.biases`);
    }
  if (missing.length)
    throw new MlxcelError('E_MISSING_TENSOR', `missing ${missing.length} expert tensor(s) for ${E} experts: ${missing.slice(0, 6).join(', ')}${missing.length > 6 ? ', ...' : ''}`);
  if (store.has(`${d.base}.${E}.${n.gate}.weight`))
    throw new MlxcelError('E_CONFIG', `${d.base}.${E}.${n.gate}.weight exists but the config says there are ${E} experts`);
}

/**
 * Loads the experts of one MoE block as a SwitchGLU. `layout` 'auto' detects it by name. Validates
 * that all experts are present, that the leading dim equals numExperts and that gate/up [E, I, H] and
 * down [E, H, I] agree with each other (and with hidden/intermediate when given).
 */
export function loadExperts(store: WeightStore, prefix: string, layout: ExpertLayout | 'auto', opts: LoadExpertsOptions): SwitchGLU {
  const E = opts.numExperts;
  if (!Number.isInteger(E) || E < 1) throw new MlxcelError('E_CONFIG', `loadExperts(${prefix}): numExperts = ${E} must be an integer >= 1`);
  const d = detectExperts(store, prefix, layout);
  let proj: ExpertProjections;
  let label: { gate: string; up: string; down: string };
  if (d.layout === 'per-expert') {
    checkPerExpertNames(store, d, E);
    const n = d.names as { gate: string; up: string; down: string };
    proj = {
      gate: loadPerExpert(store, d.base, n.gate, E, opts),
      up: loadPerExpert(store, d.base, n.up, E, opts),
      down: loadPerExpert(store, d.base, n.down, E, opts),
    };
    label = { gate: `${d.base}.*.${n.gate}`, up: `${d.base}.*.${n.up}`, down: `${d.base}.*.${n.down}` };
  } else if (d.layout === 'fused') {
    const n = d.names as { gateUp: string; down: string };
    proj = { gateUp: loadFused(store, `${d.base}.${n.gateUp}`), down: loadFused(store, `${d.base}.${n.down}`) };
    label = { gate: `${d.base}.${n.gateUp}`, up: `${d.base}.${n.gateUp}`, down: `${d.base}.${n.down}` };
  } else {
    const path = (s: string) => `${d.base}.${s}`;
    proj = { gate: loadWeight(store, path('gate_proj'), opts), up: loadWeight(store, path('up_proj'), opts), down: loadWeight(store, path('down_proj'), opts) };
    label = { gate: path('gate_proj.weight'), up: path('up_proj.weight'), down: path('down_proj.weight') };
  }
  checkShapes(proj, label, E, opts);
  return new SwitchGLU(proj, opts.activation);
}

function checkShapes(p: ExpertProjections, label: { gate: string; up: string; down: string }, E: number, opts: LoadExpertsOptions): void {
  const down = p.down.shape;
  if (down.length !== 3 || down[0] !== E)
    throw new MlxcelError('E_SHAPE', `${label.down}: shape [${down}] but expected [${E}, hidden, intermediate] for ${E} experts`);
  const H = down[1]!, I = down[2]!;
  if (opts.hidden !== undefined && H !== opts.hidden)
    throw new MlxcelError('E_SHAPE', `${label.down}: shape [${down}] has hidden ${H} but hidden_size = ${opts.hidden}`);
  if (opts.intermediate !== undefined && I !== opts.intermediate)
    throw new MlxcelError('E_SHAPE', `${label.down}: shape [${down}] has intermediate ${I} but the config says ${opts.intermediate}`);
  const check = (w: Weight, name: string, rows: number) => {
    if (w.shape.length !== 3 || w.shape[0] !== E || w.shape[1] !== rows || w.shape[2] !== H)
      throw new MlxcelError('E_SHAPE', `${name}: shape [${w.shape}] but expected [${E}, ${rows}, ${H}] (down is [${down}])`);
  };
  if ('gateUp' in p) check(p.gateUp, label.gate, 2 * I);
  else {
    check(p.gate, label.gate, I);
    check(p.up, label.up, I);
  }
}
