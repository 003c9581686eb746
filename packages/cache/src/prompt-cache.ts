/**
 * Prompt-cache files: one safetensors file in mlx-lm's layout (docs/architecture/formats.md (f)) plus this engine's
 * metadata, so a cache is only ever loaded into the model, layer layout and RoPE regime it was made for.
 *
 * Tensors per owning layer i, trimmed to the stored rows T, head-major [1, nKvHeads, T, ...]:
 *   float storage:     "i.0" keys, "i.1" values (F32 / F16 / BF16, the stored dtype)
 *   quantized storage: "i.0.0" K codes U32 (MLX packing), "i.0.1" K scales F32, "i.0.2" K biases,
 *                      "i.1.0" V codes U32 (4- or 8-bit), "i.1.1" V scales, "i.1.2" V biases
 * Rotating caches store their slots in ring order (mlx-lm's convention) with the write index.
 * __metadata__: mlx-lm's "0.i[.j]" meta_state and "2.i" class names, "1.model", and "1.mlxcel": a JSON
 * document with the model id, config hash, token ids and every layer's kind, storage, bits, geometry,
 * offset, ring and RoPE regime (what mlx-lm does not record).
 */
import { createHash } from 'node:crypto';
import { basename } from 'node:path';
import { MlxcelError, SafetensorsFile, Tensor, writeSafetensors, type DType } from '@mlxcel/tensor';
import { adoptLayers, sourceOf, type DetachedSequence } from './state.js';
import type { StoreImage } from './store.js';
import type { DetachedCache, LayerCache } from './types.js';

const FORMAT = 'mlxcel-prompt-cache';

export interface PromptCacheInfo {
  /** Model id (repo id or path) — recorded and checked on load. */
  modelId: string;
  /** Hash of the model config (see `configHash`). */
  configHash: string;
  /** Token ids whose K/V the caches hold (length = their offset). */
  tokens: ArrayLike<number>;
}

/** One layer in a prompt-cache file: its detached cache's description (the KV data are tensors). */
export interface LayerMeta
  extends Pick<DetachedCache, 'kind' | 'storage' | 'kBits' | 'vBits' | 'groupSize' | 'nKvHeads' | 'headDim' | 'vDim' | 'window' | 'offset' | 'ring' | 'ropeRegime'> {
  /** Rows stored in the file's tensors. */
  rows: number;
  /** Layer whose KV this layer reads (itself when it owns its cache). */
  source: number;
}

export interface PromptCacheMeta {
  format: typeof FORMAT;
  version: 1;
  modelId: string;
  configHash: string;
  tokens: number[];
  layers: LayerMeta[];
}

/** sha256 of the config as canonical JSON (object keys sorted at every level). */
export function configHash(config: unknown): string {
  const canon = (x: unknown): unknown => {
    if (Array.isArray(x)) return x.map(canon);
    if (x && typeof x === 'object')
      return Object.fromEntries(Object.keys(x as object).sort().map((k) => [k, canon((x as Record<string, unknown>)[k])]));
    return x;
  };
  return createHash('sha256').update(JSON.stringify(canon(config))).digest('hex');
}

function fail(msg: string): never {
  throw new MlxcelError('E_PROMPT_CACHE', msg);
}

function describe(m: Pick<LayerMeta, 'kind' | 'storage' | 'window' | 'nKvHeads' | 'headDim' | 'vDim' | 'groupSize'>): string {
  const geo = `${m.nKvHeads} KV heads × ${m.headDim}${m.vDim !== m.headDim ? `/${m.vDim}` : ''}`;
  const q = m.groupSize ? ` group ${m.groupSize}` : '';
  return `${m.kind} ${m.storage}${q} cache${m.window ? ` (window ${m.window})` : ''} [${geo}]`;
}

const FLOAT_DTYPE: Record<string, DType> = { f32: 'F32', f16: 'F16', bf16: 'BF16' };

function className(d: DetachedCache): string {
  if (d.kind === 'shared') return 'mlxcel.SharedCache';
  const q = d.storage === 'q8' || d.storage === 'k8v4';
  if (d.kind === 'rotating') return q ? 'mlxcel.QuantizedRotatingKVCache' : 'RotatingKVCache';
  return q ? 'QuantizedKVCache' : 'KVCache';
}

function u8(t: Float32Array): Uint8Array {
  return new Uint8Array(t.buffer, t.byteOffset, t.byteLength);
}

/** Writes the caches of one sequence (all layers, in order) and its token ids. */
export function savePromptCache(path: string, layers: readonly LayerCache[], info: PromptCacheInfo): void {
  if (typeof info.modelId !== 'string' || !info.modelId) fail('savePromptCache: modelId must be a non-empty string');
  if (typeof info.configHash !== 'string' || !info.configHash) fail('savePromptCache: configHash must be a non-empty string');
  const tokens = Array.from(info.tokens, (t) => {
    if (!Number.isInteger(t)) fail(`savePromptCache: token id ${t} is not an integer`);
    return t;
  });
  const tensors: Record<string, Tensor> = {};
  const md: Record<string, string> = {};
  const metas: LayerMeta[] = [];
  layers.forEach((c, i) => {
    if (c.staged > 0)
      fail(`savePromptCache: layer ${i} holds ${c.staged} row(s) past its cap (an unfinished padded prefill); trim them or lift the cap first`);
    if (c.offset !== tokens.length)
      fail(`savePromptCache: layer ${i} holds ${c.offset} tokens but ${tokens.length} token ids were given`);
    const d = c.snapshot();
    const src = sourceOf(layers, i);
    metas.push({
      kind: d.kind, storage: d.storage, kBits: d.kBits, vBits: d.vBits, groupSize: d.groupSize,
      nKvHeads: d.nKvHeads, headDim: d.headDim, vDim: d.vDim, window: d.window, offset: d.offset,
      rows: d.main.n, ring: d.ring, ropeRegime: d.ropeRegime, source: src,
    });
    md[`2.${i}`] = className(d);
    if (d.kind === 'shared') {
      md[`0.${i}`] = String(src);
      return;
    }
    const H = d.nKvHeads, T = d.main.n, im = d.main;
    if (d.storage in FLOAT_DTYPE) {
      const dt = FLOAT_DTYPE[d.storage]!;
      tensors[`${i}.0`] = new Tensor(dt, [1, H, T, d.headDim], im.k);
      tensors[`${i}.1`] = new Tensor(dt, [1, H, T, d.vDim], im.v);
    } else {
      const G = d.groupSize;
      tensors[`${i}.0.0`] = new Tensor('U32', [1, H, T, (d.headDim * d.kBits) / 32], im.k);
      tensors[`${i}.0.1`] = new Tensor('F32', [1, H, T, d.headDim / G], u8(im.kScales!));
      tensors[`${i}.0.2`] = new Tensor('F32', [1, H, T, d.headDim / G], u8(im.kBiases!));
      tensors[`${i}.1.0`] = new Tensor('U32', [1, H, T, (d.vDim * d.vBits) / 32], im.v);
      tensors[`${i}.1.1`] = new Tensor('F32', [1, H, T, d.vDim / G], u8(im.vScales!));
      tensors[`${i}.1.2`] = new Tensor('F32', [1, H, T, d.vDim / G], u8(im.vBiases!));
    }
    // mlx-lm meta_state of each class.
    if (d.kind === 'rotating') {
      const ring = d.ring!;
      md[`0.${i}.0`] = '0';
      md[`0.${i}.1`] = String(d.window);
      md[`0.${i}.2`] = String(d.offset);
      md[`0.${i}.3`] = String(T < ring.size ? T : ring.next);
    } else if (d.kind === 'quantized') {
      md[`0.${i}.0`] = String(d.offset);
      md[`0.${i}.1`] = String(d.groupSize);
      md[`0.${i}.2`] = String(d.kBits);
    } else md[`0.${i}`] = '';
  });
  md['1.model'] = info.modelId;
  const meta: PromptCacheMeta = { format: FORMAT, version: 1, modelId: info.modelId, configHash: info.configHash, tokens, layers: metas };
  md['1.mlxcel'] = JSON.stringify(meta);
  writeSafetensors(path, tensors, md);
}

/** Parses a prompt-cache file into its metadata and detached layer states (no model checks). */
export function readPromptCache(path: string): { meta: PromptCacheMeta; state: DetachedSequence } {
  const file = basename(path);
  const st = SafetensorsFile.open(path);
  const raw = st.metadata['1.mlxcel'];
  if (raw === undefined) fail(`${file}: not an mlxcel prompt cache (no "1.mlxcel" metadata; mlx-lm files lack the model fingerprint and token ids)`);
  let meta: PromptCacheMeta;
  try {
    meta = JSON.parse(raw) as PromptCacheMeta;
  } catch (e) {
    fail(`${file}: "1.mlxcel" metadata is not JSON (${(e as Error).message})`);
  }
  if (meta.format !== FORMAT || meta.version !== 1) fail(`${file}: unsupported prompt-cache format ${meta.format} version ${meta.version}`);
  if (!Array.isArray(meta.layers) || !Array.isArray(meta.tokens)) fail(`${file}: "1.mlxcel" metadata lacks layers or tokens`);
  const tensor = (name: string, dtype: DType, shape: number[]): Uint8Array => {
    if (!st.has(name)) fail(`${file}: missing tensor ${name}`);
    const t = st.get(name);
    if (t.dtype !== dtype || t.shape.length !== shape.length || t.shape.some((d, j) => d !== shape[j]))
      fail(`${file}: tensor ${name} is ${t.dtype}[${t.shape.join(', ')}], expected ${dtype}[${shape.join(', ')}]`);
    return t.bytes.slice(); // out of the mapping, aligned
  };
  const f32 = (b: Uint8Array) => new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
  const layers = meta.layers.map((m, i): DetachedCache => {
    const emptyImage: StoreImage = { n: 0, pos: new Int32Array(0), k: new Uint8Array(0), v: new Uint8Array(0) };
    const base = {
      version: 1 as const, kind: m.kind, storage: m.storage, kBits: m.kBits, vBits: m.vBits, groupSize: m.groupSize,
      nKvHeads: m.nKvHeads, headDim: m.headDim, vDim: m.vDim, window: m.window, offset: m.offset, cap: null,
      ropeRegime: m.ropeRegime, ring: m.ring,
    };
    if (m.kind === 'shared') return { ...base, main: emptyImage, staging: emptyImage };
    const H = m.nKvHeads, T = m.rows;
    if (!Number.isInteger(T) || T < 0 || T > m.offset) fail(`${file}: layer ${i} claims ${T} rows for offset ${m.offset}`);
    const pos = new Int32Array(T);
    const first = m.offset - T;
    const next = m.ring ? m.ring.next : 0;
    for (let j = 0; j < T; j++) pos[(next + j) % T] = first + j;
    let im: StoreImage;
    if (m.storage in FLOAT_DTYPE) {
      const dt = FLOAT_DTYPE[m.storage]!;
      im = { n: T, pos, k: tensor(`${i}.0`, dt, [1, H, T, m.headDim]), v: tensor(`${i}.1`, dt, [1, H, T, m.vDim]) };
    } else {
      const G = m.groupSize;
      if (!(G > 0)) fail(`${file}: layer ${i} is ${m.storage} without a group size`);
      im = {
        n: T, pos,
        k: tensor(`${i}.0.0`, 'U32', [1, H, T, (m.headDim * m.kBits) / 32]),
        kScales: f32(tensor(`${i}.0.1`, 'F32', [1, H, T, m.headDim / G])),
        kBiases: f32(tensor(`${i}.0.2`, 'F32', [1, H, T, m.headDim / G])),
        v: tensor(`${i}.1.0`, 'U32', [1, H, T, (m.vDim * m.vBits) / 32]),
        vScales: f32(tensor(`${i}.1.1`, 'F32', [1, H, T, m.vDim / G])),
        vBiases: f32(tensor(`${i}.1.2`, 'F32', [1, H, T, m.vDim / G])),
      };
    }
    return { ...base, main: im, staging: emptyImage };
  });
  return { meta, state: { version: 1, layers, sources: meta.layers.map((m) => m.source) } };
}

export interface PromptCacheExpect {
  modelId: string;
  configHash: string;
  /** RoPE regime the model uses for each layer's keys; default: each target cache's `ropeRegime` ('' = unchecked). */
  ropeRegimes?: readonly (string | undefined)[];
}

/**
 * Loads a prompt cache into the (fresh) caches of one sequence, after checking that it was made for
 * this model, this layer layout and these RoPE regimes. Returns the token ids it covers.
 */
export function loadPromptCache(path: string, layers: readonly LayerCache[], expect: PromptCacheExpect): { tokens: Int32Array; meta: PromptCacheMeta } {
  const file = basename(path);
  const { meta, state } = readPromptCache(path);
  if (meta.modelId !== expect.modelId || meta.configHash !== expect.configHash)
    fail(
      `${file} was made for model ${meta.modelId} (config hash ${meta.configHash.slice(0, 12)}), ` +
        `not for model ${expect.modelId} (config hash ${expect.configHash.slice(0, 12)})`,
    );
  if (meta.layers.length !== layers.length) fail(`${file} holds ${meta.layers.length} layers, this model has ${layers.length}`);
  meta.layers.forEach((m, i) => {
    const c = layers[i]!;
    const here = c.snapshot();
    const mine: LayerMeta = {
      kind: here.kind, storage: here.storage, kBits: here.kBits, vBits: here.vBits, groupSize: here.groupSize,
      nKvHeads: here.nKvHeads, headDim: here.headDim, vDim: here.vDim, window: here.window, offset: 0, rows: 0,
      ring: null, ropeRegime: here.ropeRegime, source: sourceOf(layers, i),
    };
    const same = (['kind', 'storage', 'kBits', 'vBits', 'groupSize', 'nKvHeads', 'headDim', 'vDim', 'window'] as const).every((k) => m[k] === mine[k]);
    if (m.kind === 'shared' || mine.kind === 'shared') {
      if (m.kind !== mine.kind || m.source !== mine.source)
        fail(`${file}: layer ${i} ${m.kind === 'shared' ? `reads layer ${m.source}` : `is a ${describe(m)}`} in the file, but ${mine.kind === 'shared' ? `reads layer ${mine.source}` : `is a ${describe(mine)}`} in this model`);
    } else if (!same) fail(`${file}: layer ${i} is a ${describe(m)} in the file but a ${describe(mine)} in this model`);
    const want = expect.ropeRegimes?.[i] ?? c.ropeRegime;
    if (m.kind !== 'shared' && want && m.ropeRegime !== want)
      fail(`${file}: layer ${i}'s keys were rotated under RoPE regime ${m.ropeRegime || '(unrecorded)'}, this sequence needs ${want}`);
  });
  adoptLayers(layers, state);
  return { tokens: Int32Array.from(meta.tokens), meta };
}
