/** Storage dtype codes understood by the kernels. */
export declare const DType: { readonly F32: 0; readonly F16: 1; readonly BF16: 2; readonly QAFFINE: 3 };
export type DTypeCode = 0 | 1 | 2 | 3;
export declare const UnaryOp: {
  readonly SILU: 0; readonly GELU_TANH: 1; readonly GELU_ERF: 2; readonly RELU: 3; readonly TANH: 4;
  readonly EXP: 5; readonly SIGMOID: 6; readonly NEG: 7; readonly SQUARE: 8; readonly SQRT: 9;
};
export declare const BinaryOp: { readonly ADD: 0; readonly SUB: 1; readonly MUL: 2; readonly DIV: 3; readonly MAX: 4 };

/** A weight matrix [rows, cols] as the kernels read it (a Linear's [out, in]). */
export interface NativeWeight {
  dtype: DTypeCode;
  /** f32/f16/bf16 element bytes, or the packed U32 codes of an MLX affine weight. Any alignment. */
  data: ArrayBufferView | ArrayBuffer;
  rows: number;
  cols: number;
  /** MLX affine only: [rows, cols/groupSize] in scaleDtype. */
  scales?: ArrayBufferView;
  biases?: ArrayBufferView;
  scaleDtype?: 0 | 1 | 2;
  bits?: 2 | 3 | 4 | 5 | 6 | 8;
  groupSize?: 32 | 64 | 128;
  /**
   * A feed-forward (MLP) weight, and where it sits: "input" (gate / up: a projection of the block's
   * normalized input), "output" (down: over the gated product), or true (role not stated). Under the
   * `mixed` matmul precision every such weight's integer-activation matmuls take 8-bit activations;
   * under `balanced` only "input" ones do. Every other weight takes 16-bit ones. Any dtype; only MLX
   * affine weights take integer activations at all.
   */
  ffn?: boolean | 'input' | 'output';
  /**
   * MLX affine only: 0 (default) the checkpoint's row layout; 1 the 16-row tile layout written by
   * `packWeightTiles` (4- or 8-bit codes, rows % 16 == 0, cols % 64 == 0), read by `matmul` and `gather` where
   * `weightTileLayout()` is true and rejected elsewhere (and by `moeSwitchGLU`).
   */
  layout?: 0 | 1;
}

export interface CpuInfo {
  arch: 'x64' | 'arm64' | 'other';
  /** The kernel variant in use. */
  isa: string;
  /** Variants this binary has that this CPU can run, worst first. */
  variants: string[];
  threads: number;
  physicalCores: number;
  features: { avx2: boolean; fma: boolean; f16c: boolean; avx512: boolean; avx512vnni: boolean; avxvnni: boolean; /** AMX-INT8 usable (CPU, OS and, on Linux, this process's grant). */ amxInt8: boolean; neon: boolean; neonDotprod: boolean; /** AMD Zen 1 / Zen+ or Hygon Dhyana: one vector integer multiply pipe, so the "fast" precision's prefill GEMMs run the exact kernel (faster there; MLXCEL_FAST_GEMM=int16 keeps the integer one). */ narrowIntMultiply: boolean };
}

export interface AttentionOptions {
  q: Float32Array; nQ: number; nHeads: number; headDim: number; vDim?: number;
  qPos: Int32Array;
  k: ArrayBufferView; v: ArrayBufferView; kvDtype: 0 | 1 | 2; nKv: number; nKvHeads: number;
  /** Absolute position of each key slot; negative = empty slot. */
  kPos: Int32Array;
  scale: number; softcap?: number; causal?: boolean; window?: number;
  /** Optional [maskHeads, nQ, nKv] bytes, nonzero = visible; ANDed with causal/window. */
  mask?: Uint8Array; maskHeads?: number;
  out: Float32Array;
}

export declare function cpuInfo(): CpuInfo;
/** Forces a kernel variant ('scalar' | 'avx2' | 'avx2vnni' | 'avx512' | 'avx512vnni' | 'avx512amx' | 'neon' | 'neon_dotprod'); throws if unavailable. */
export declare function setIsa(name: string): string;
export declare function setThreads(n: number): number;
/**
 * A zeroed, 64-byte aligned native buffer (external ArrayBuffer; a V8-owned one where externals are
 * forbidden). From 2 MiB on it is mapped from the OS (2 MiB aligned, advised for transparent huge pages
 * on Linux; no page is touched until used) and reported to V8 as external memory.
 */
export declare function alloc(bytes: number): ArrayBuffer;
/**
 * Asks the OS to reclaim the whole pages inside `view` (Linux MADV_PAGEOUT): for a clean file mapping
 * (mmapFile) they are dropped and read again from the file if touched; no value changes. Returns the
 * bytes advised, 0 where the OS offers no such advice (harmless).
 */
export declare function releasePages(view: ArrayBufferView | ArrayBuffer): number;
/** Read-only (copy-on-write) mapping of a whole file. */
export declare function mmapFile(path: string): ArrayBuffer;

export declare function matmul(x: Float32Array, M: number, w: NativeWeight, bias: Float32Array | null, out: Float32Array): void;
/**
 * `outs[j] = x . weights[j]^T (+ biases[j])` for 1 to 8 weights over the same x [M, cols] (all weights
 * the same cols): a layer's q / k / v or gate / up projections. Each `outs[j]` ([M, weights[j].rows])
 * holds exactly the bits `matmul(x, M, weights[j], biases[j], outs[j])` gives; where the running kernels
 * can (M <= 16, every weight in the 16-row tile layout with the same bits / group / scale dtype and
 * activation width) it is one pass over all the weights' rows, x prepared once and one parallel region,
 * instead of one per weight. Outputs may not overlap x or each other.
 */
export declare function matmulShared(x: Float32Array, M: number, weights: readonly NativeWeight[], biases: readonly (Float32Array | null)[] | null, outs: readonly Float32Array[]): void;
/**
 * Process-wide matmul precision. "exact" (the default): activations stay f32 in every matmul. "fast":
 * matmuls with M > 16 rows over 4-bit (and, with VNNI, 8-bit) MLX affine weights round x per weight group
 * to 16-bit integers (two int8 digit planes, error <= 1/65278 of the group's largest |x|) and use integer
 * dot products (VNNI / AVX2 / Arm SDOT variants; others stay exact). "int8": the same with one int8
 * plane (error <= 1/254; faster still, see docs/benchmarks.md). "mixed": "int8" for the weights marked
 * feed-forward (NativeWeight.ffn: the MLP projections, most of a prefill's multiply-adds), "fast" for the
 * others. "balanced": "int8" only for the MLP's input projections (NativeWeight.ffn === "input": gate /
 * up), "fast" for the rest (the down projection included). Returns the mode set.
 */
export type MatmulPrecision = 'exact' | 'fast' | 'int8' | 'mixed' | 'balanced';
/** Every MatmulPrecision, in the order of the error message of `setMatmulPrecision`. */
export declare const MATMUL_PRECISIONS: readonly MatmulPrecision[];
export declare function setMatmulPrecision(mode: MatmulPrecision): MatmulPrecision;
export declare function matmulPrecision(): MatmulPrecision;
export declare function gather(ids: Int32Array, w: NativeWeight, out: Float32Array): void;
/**
 * Writes a 4-bit row-layout weight in the 16-row tile layout (16 rows interleaved one 32-bit code word
 * at a time; scales and biases 16 rows per group) into `out`, whose buffers must each be at least the
 * size of the weight's and must not overlap it. The result is the same weight: pass it with `layout: 1`.
 * Throws a RangeError naming what is wrong for other widths or shapes.
 */
export declare function packWeightTiles(w: NativeWeight, out: { data: ArrayBufferView; scales: ArrayBufferView; biases: ArrayBufferView }): void;
/** Whether the running kernel variant reads the 16-row tile layout (the AVX-512 VNNI variant): only then is repacking worth it. */
export declare function weightTileLayout(): boolean;
export declare function rmsNorm(x: Float32Array, rows: number, dim: number, weight: Float32Array | null, eps: number, plusOne: boolean, out: Float32Array): void;
export declare function layerNorm(x: Float32Array, rows: number, dim: number, weight: Float32Array | null, bias: Float32Array | null, eps: number, out: Float32Array): void;
export declare function softmax(x: Float32Array, rows: number, dim: number, out: Float32Array): void;
/**
 * Log-softmax of one row, `out = x - (max + log(sum(exp(x - max))))` (out may be x: in place), with the
 * row's max, the first index holding it (-1 when every element is -Infinity) and the first NaN's index
 * (-1: none). With a NaN, or a max of +-Infinity, `out` is unspecified: the caller reports the row.
 * Multi-threaded over fixed blocks of 4096 elements (f32 block sums added in double, in order), so the
 * result does not depend on the thread count. The sampler's step over the vocabulary.
 */
export declare function logSoftmax(x: Float32Array, out: Float32Array): { max: number; argmax: number; firstNaN: number };
export declare function unary(op: number, x: Float32Array, out: Float32Array): void;
export declare function binary(op: number, a: Float32Array, b: Float32Array, out: Float32Array): void;
export declare function affine(x: Float32Array, s: number, t: number, out: Float32Array): void;
/** out = Σ_j coefs[j] · inputs[j] element-wise (1..64 inputs, each ≥ out.length floats; out may be an input). */
export declare function linearCombine(inputs: readonly Float32Array[], coefs: Float32Array, out: Float32Array): void;
/**
 * K stream mixes per row in one pass: outputs[i][t, :] = Σ_j coefs[t, i, j] · inputs[j][t, :] for rows t of
 * `width` floats, coefs [rows, outputs.length, inputs.length] (1..16 inputs and outputs). Outputs may be
 * inputs; a coefficient of exactly 0 drops its term. (Gemma 3n's AltUp predict / correct.)
 */
export declare function mixStreams(inputs: readonly Float32Array[], coefs: Float32Array, outputs: readonly Float32Array[], rows: number, width: number): void;
/**
 * The final logit soft-cap with the NaN/Inf check in one pass: out = cap · tanh(x / cap) (cap 0: a copy),
 * non-finite elements copied unchanged. Returns the index of the first non-finite element of x, or -1.
 */
export declare function softcapCheck(x: Float32Array, cap: number, out: Float32Array): number;
/** x [rows, 2·half] = [gate | up] → out [rows, half] = act(gate) · up, act = UnaryOp.SILU or UnaryOp.GELU_TANH; out must not overlap x. */
/** In place over rows of width dim: x ← max(x − (mean + std · z), 0), population std, statistics in double (Gemma 3n activation sparsity). */
export declare function gaussianTopK(x: Float32Array, rows: number, dim: number, z: number): void;
export declare function gatedAct(x: Float32Array, rows: number, half: number, act: number, out: Float32Array): void;
export declare function rope(x: Float32Array, nTok: number, nHeads: number, headDim: number, positions: Int32Array, cosTab: Float32Array, sinTab: Float32Array, rotDim: number, interleaved: boolean): void;
export declare function attention(o: AttentionOptions): void;
export declare function toF32(src: ArrayBufferView | ArrayBuffer, srcDtype: 0 | 1 | 2, count: number, out: Float32Array): void;
export declare function fromF32(src: Float32Array, dstDtype: 1 | 2, out: Uint16Array): void;
export declare function quantize(w: Float32Array, rows: number, cols: number, bits: number, group: number, outWords: Uint32Array, outScales: Float32Array, outBiases: Float32Array): void;
export declare function argmax(x: Float32Array, rows: number, dim: number, out: Int32Array): void;
export declare function topk(x: Float32Array, k: number, outIdx: Int32Array, outVal: Float32Array): void;
export declare function streamSum(buf: ArrayBufferView | ArrayBuffer): number;

// Audio kernels (src/bind_audio.cc, src/isa/audio_impl.h).
export interface LogMelOptions {
  /** Padded mono signal; frame t reads samples [t*hop, t*hop + frameLength] (frameLength + 1 samples). */
  signal: Float32Array; nFrames: number; frameLength: number; hop: number;
  /** Power of two >= frameLength; frames are zero-padded on the right. */
  fftSize: number;
  /** 0 / absent = off. HTK flavour (default): y[0] = x[0](1-a), y[n] = x[n] - a x[n-1]. */
  preemphasis?: number; preemphasisHtk?: boolean;
  window: Float32Array;
  /** [fftSize/2 + 1, nMel], applied to the magnitude spectrum. */
  melFilters: Float64Array; nMel: number;
  /** 'add': log(mel + floor); 'max': log(max(mel, floor)). */
  floorMode: 'add' | 'max'; melFloor: number;
  out: Float32Array;
}
export interface Conv2dOptions {
  /** Channels-last input [h, w, cin]; output [outH, outW, cout]; weight [cout, kh*kw*cin] in (kh, kw, cin) order. */
  x: Float32Array; h: number; w: number; cin: number;
  weight: Float32Array; cout: number; kh: number; kw: number;
  strideH: number; strideW: number; padTop: number; padBottom: number; padLeft: number; padRight: number;
  out: Float32Array;
}
export interface LocalAttentionOptions {
  /** [n, nHeads, headDim] each; q already scaled. */
  q: Float32Array; k: Float32Array; v: Float32Array; n: number; nHeads: number; headDim: number;
  /** Relative-position keys [nRel, nHeads, headDim]; row r holds distance relDist0 - r (distance = t - s). */
  rel: Float32Array | null; nRel: number; relDist0: number;
  /** 1 = valid key frame; absent = all valid. */
  valid?: Uint8Array | null;
  /** Key s is admitted iff -maxFuture <= t - s <= maxPast (both inclusive). */
  maxPast: number; maxFuture: number;
  softcap?: number;
  out: Float32Array;
}
export declare function logMel(o: LogMelOptions): void;
export declare function conv2d(o: Conv2dOptions): { outH: number; outW: number };
export declare function dwconv1dCausal(x: Float32Array, T: number, C: number, w: Float32Array, K: number, out: Float32Array): void;
export declare function localAttention(o: LocalAttentionOptions): void;
export declare function clamp(x: Float32Array, lo: number, hi: number, out: Float32Array): void;
export declare function glu(x: Float32Array, rows: number, half: number, out: Float32Array): void;

// Vision kernels (src/bind_vision.cc, src/isa/vision_impl.h).
export interface DwConv2dOptions {
  /** Channels-last input [h, w, c]; output [outH, outW, c]; weight [kh*kw, c], tap-major. Zero padding. */
  x: Float32Array; h: number; w: number; c: number;
  weight: Float32Array; kh: number; kw: number;
  strideH: number; strideW: number; padTop: number; padBottom: number; padLeft: number; padRight: number;
  /** Must not alias x. */
  out: Float32Array;
}
export declare function dwconv2d(o: DwConv2dOptions): { outH: number; outW: number };
/** A channels-last map [h, w, c] and the output [outH, outW, c] it is resampled into (must not alias x). */
export interface Resample2dInput {
  x: Float32Array; h: number; w: number; c: number;
  out: Float32Array;
}
/** Average pool with kernel = stride = (kh, kw), no padding; kh, kw must divide h, w: out [h/kh, w/kw, c]. */
export declare function avgPool2d(o: Resample2dInput & { kh: number; kw: number }): { outH: number; outW: number };
/** Nearest resize to [outH, outW] (src = floor(dst · in / out), PyTorch `nearest`). */
export declare function resizeNearest2d(o: Resample2dInput & { outH: number; outW: number }): { outH: number; outW: number };
/** Bilinear resize to [outH, outW] (PyTorch `bilinear`, align_corners = false, no antialias). */
export declare function resizeBilinear2d(o: Resample2dInput & { outH: number; outW: number }): { outH: number; outW: number };

// KV stores (packages/cache) and batched attention over them (src/bind_kv.cc, src/bind_attention.cc).
/**
 * One run of KV slots. layout 0 (rows): K [n, nKvHeads, headDim], V [n, nKvHeads, vDim], dtype 0-2.
 * layout 1 (tiles of 16 slots, the @mlxcel/cache store layout, see src/kernels.h KvSegment): any dtype;
 * dtype 3 = affine-quantized (K 8-bit, V vBits) with f32 scales/biases per group along the head dim.
 */
export interface KvSegmentDesc {
  dtype: 0 | 1 | 2 | 3; layout?: 0 | 1;
  k: ArrayBufferView; v: ArrayBufferView;
  kScales?: Float32Array; kBiases?: Float32Array; vScales?: Float32Array; vBiases?: Float32Array;
  vBits?: 4 | 8; groupSize?: 32 | 64 | 128;
  /** Absolute position per slot; negative = empty. */
  pos: Int32Array; n: number;
  /** layout 1: slots allocated per KV head (multiple of 16, >= n); head h's block starts at slot h * capacity. */
  capacity?: number;
}
export interface AttentionSeqDesc {
  /** This sequence's rows of q / qPos / out: [qStart, qStart + nQ). Rows of different sequences must not overlap. */
  qStart: number; nQ: number;
  /** Its keys: slots of all segments numbered consecutively (the mask's columns). */
  segments: KvSegmentDesc[];
  /** Optional [maskHeads, nQ, total slots], nonzero = visible; ANDed with everything else. */
  mask?: Uint8Array; maskHeads?: number;
  /** [start, end) position pairs attended bidirectionally: a query and a key in the same span see each other. */
  spans?: Int32Array;
}
export interface AttentionBatchOptions {
  q: Float32Array; qPos: Int32Array; out: Float32Array;
  nHeads: number; headDim: number; vDim?: number; nKvHeads: number;
  scale: number; softcap?: number; causal?: boolean; window?: number;
  /** Phi-3-small: key visible to head h iff qb - kb < localBlocks || (kb + h * headStep + 1) % vertStride == 0 (blocks of blockSize positions). */
  blockSparse?: { blockSize: number; localBlocks: number; vertStride: number; headStep?: number };
  seqs: AttentionSeqDesc[];
}
export declare function attention(o: AttentionBatchOptions): void;
/** A tiled KV store: capacity slots (multiple of 16) of K/V for nKvHeads heads. */
export interface KvStoreDesc {
  dtype: 0 | 1 | 2 | 3; capacity: number; nKvHeads: number; headDim: number; vDim: number;
  k: Uint8Array; v: Uint8Array;
  kScales?: Float32Array; kBiases?: Float32Array; vScales?: Float32Array; vBiases?: Float32Array;
  vBits?: 4 | 8; groupSize?: 32 | 64 | 128;
}
/** Head-major raw image of some slots ([nKvHeads][T][...]): storage dtype bytes, or MLX-packed codes + f32 scales/biases. */
export interface KvImage {
  k: Uint8Array; v: Uint8Array;
  kScales?: Float32Array; kBiases?: Float32Array; vScales?: Float32Array; vBiases?: Float32Array;
}
/** Writes rows i of k [T, nKvHeads, headDim] / v [T, nKvHeads, vDim] into slots[i] (converting or quantizing). */
export declare function kvWrite(store: KvStoreDesc, slots: Int32Array, k: Float32Array, v: Float32Array): void;
/** Reads slots back as f32 rows (dequantized). */
export declare function kvRead(store: KvStoreDesc, slots: Int32Array, outK: Float32Array, outV: Float32Array): void;
/** Copies the exact stored bits of slots into a head-major image. */
export declare function kvExport(store: KvStoreDesc, slots: Int32Array, image: KvImage): void;
/** The inverse of kvExport. */
export declare function kvImport(store: KvStoreDesc, slots: Int32Array, image: KvImage): void;

declare const native: Record<string, unknown>;
export default native;

/** Native time per op kind since startProfile (matmul split into GEMV, M <= 16, and GEMM). */
export interface OpProfile { [kind: string]: { calls: number; ms: number } }
/** Options of startProfile. */
export interface ProfileOptions {
  /** Split each matmul kind by the weight's shape too: keys like `matmul (GEMV, M <= 16) [8192 x 2048]`. */
  matmulShapes?: boolean;
}
/** Starts timing every kernel call (clears earlier counts). Costs nothing measurable while off. */
export declare function startProfile(options?: ProfileOptions): void;
/** Stops timing and returns the per-kind totals, largest first. */
export declare function stopProfile(): OpProfile;
