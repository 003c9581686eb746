// Loads the native addon: build/Release when built from source, else prebuilds/<platform>-<arch>/.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { withProfiling } from './profile.js';

const require = createRequire(import.meta.url);
const root = join(dirname(fileURLToPath(import.meta.url)), '..');

function load() {
  try {
    return require('node-gyp-build')(root);
  } catch (err) {
    const e = new Error(
      `@mlxcel/core-native: no native build for ${process.platform}-${process.arch} (node ${process.versions.node}). ` +
        `Build from source with \`pnpm --filter @mlxcel/core-native build\` (needs python3 and a C++17 compiler). ` +
        `Cause: ${err && err.message ? err.message : err}`,
    );
    e.code = 'MLXCEL_NATIVE_MISSING';
    throw e;
  }
}

// Every kernel (not the set-up functions) is timed while a profile runs (profile.js).
const UNTIMED = new Set(['cpuInfo', 'setIsa', 'setThreads', 'alloc', 'mmapFile', 'setMatmulPrecision', 'matmulPrecision']);
const raw = load();
const native = withProfiling(raw, Object.keys(raw).filter((k) => !UNTIMED.has(k)));
export { startProfile, stopProfile } from './profile.js';

/** Storage dtype codes understood by the kernels. */
export const DType = Object.freeze({ F32: 0, F16: 1, BF16: 2, QAFFINE: 3 });
/** Unary op codes for `unary`. */
export const UnaryOp = Object.freeze({ SILU: 0, GELU_TANH: 1, GELU_ERF: 2, RELU: 3, TANH: 4, EXP: 5, SIGMOID: 6, NEG: 7, SQUARE: 8, SQRT: 9 });
/** Binary op codes for `binary`. */
export const BinaryOp = Object.freeze({ ADD: 0, SUB: 1, MUL: 2, DIV: 3, MAX: 4 });

export const {
  cpuInfo, setIsa, setThreads, alloc, mmapFile,
  matmul, gather, setMatmulPrecision, matmulPrecision, rmsNorm, layerNorm, softmax, unary, binary, affine, linearCombine, rope, attention,
  toF32, fromF32, quantize, argmax, topk, streamSum,
} = native;

// Audio kernels (src/bind_audio.cc).
export const { logMel, conv2d, dwconv1dCausal, localAttention, clamp, glu } = native;

// KV stores and batched attention over them (src/bind_kv.cc, src/bind_attention.cc).
export const { kvWrite, kvRead, kvExport, kvImport } = native;

export default native;
