// The package's ESM entry: named exports over the same object as the CommonJS entry index.cjs (both
// come from native.cjs, which loads the addon).
import loaded from './native.cjs';

if (loaded.error) throw loaded.error;
const api = loaded.api;

export const { DType, UnaryOp, BinaryOp, MATMUL_PRECISIONS } = api;

export const {
  cpuInfo, setIsa, setThreads, alloc, mmapFile, releasePages,
  matmul, matmulShared, gather, packWeightTiles, weightTileLayout, setMatmulPrecision, matmulPrecision, rmsNorm, layerNorm, softmax, logSoftmax, unary, binary, affine, linearCombine, rope, attention,
  mixStreams, softcapCheck, gatedAct, gaussianTopK,
  toF32, fromF32, quantize, argmax, topk, streamSum,
} = api;

// Per-op-kind native timing (profile.cjs).
export const { startProfile, stopProfile } = api;

// Audio kernels (src/bind_audio.cc).
export const { logMel, conv2d, dwconv1dCausal, localAttention, clamp, glu } = api;

// Vision kernels (src/bind_vision.cc).
export const { dwconv2d, avgPool2d, resizeNearest2d, resizeBilinear2d } = api;

// KV stores and batched attention over them (src/bind_kv.cc, src/bind_attention.cc).
export const { kvWrite, kvRead, kvExport, kvImport } = api;

export default api.default;
