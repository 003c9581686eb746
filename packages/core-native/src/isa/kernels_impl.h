// Kernel bodies, written once with GCC/Clang vector extensions and compiled once per ISA variant.
// Each variant's .cc defines MLX_NS (its namespace) and MLX_VL (floats per vector register) before
// including this file, and is built with that ISA's flags, so the same source becomes AVX-512, AVX2,
// NEON or baseline code. Standard headers are included by the variant file *before* this one so that
// no std inline function is emitted with a wider ISA than the baseline (ODR safety).
//
// Numerics: activations and accumulations are f32; weights are converted inside the loops and never
// expanded in memory (the GEMM path dequantizes one small packed panel at a time into scratch).

#include "../kernels.h"
#include "../half.h"
#include "../threadpool.h"

namespace MLX_NS {

using namespace mlx;

// One header per kernel family, in dependency order.
#include "primitives.h"
#include "decoders.h"
#include "gemv_common.h"
#include "gemv_float.h"
#include "gemv_quant.h"
#include "gemv_int_dot.h"
#include "gemv_avx512_vnni.h"
#include "gemv_avx2_dot.h"
#include "gemv_neon_dot.h"
#include "gemv.h"
#include "gemm_xt.h"
#include "gemm_dot.h"
#include "matmul.h"
#include "gemm_q8act.h"
#include "gemv_tiles.h"
#include "norms_elementwise.h"
#include "rope.h"
#include "attention_impl.h"
#include "audio_impl.h"
#include "moe_impl.h"
#include "vision_impl.h"
#include "bandwidth.h"

}  // namespace MLX_NS

namespace MLX_NS {
// Fills the dispatch table by field name, so adding a kernel is one line here (plus its field in
// kernels.h) and the variant files never change.
static inline mlx::KernelTable make_table(const char* name) {
  mlx::KernelTable t{};
  t.name = name;
  t.matmul = matmul;
  t.matmul_q8act = matmul_q8act;
  t.gather_rows = gather_rows;
#if defined(__AVX512VNNI__) && MLX_VL == 16 && !defined(MLX_AMX)
  t.weight_tiles = true;  // gemv_tiles.h; the AMX GEMM packs from rows only
  t.gemv_shared = gemv_shared;
#else
  t.weight_tiles = false;
  t.gemv_shared = nullptr;
#endif
  t.rms_norm = rms_norm;
  t.layer_norm = layer_norm;
  t.softmax = softmax;
  t.log_softmax_row = log_softmax_row;
  t.unary = unary;
  t.binary = binary;
  t.affine = affine;
  t.lincomb = lincomb;
  t.mix_streams = mix_streams;
  t.softcap_check = softcap_check;
  t.gated_act = gated_act;
  t.gaussian_topk = gaussian_topk;
  t.rope = rope;
  t.attention = attention;
  t.stream_sum = stream_sum;
  t.log_mel = log_mel;
  t.conv2d = conv2d;
  t.dwconv1d_causal = dwconv1d_causal;
  t.local_attention = local_attention;
  t.clamp = clamp;
  t.glu = glu;
  t.moe_switch_glu = moe_switch_glu;
  t.dwconv2d = dwconv2d;
  t.avg_pool2d = avg_pool2d;
  t.resize_nearest2d = resize_nearest2d;
  t.resize_bilinear2d = resize_bilinear2d;
  return t;
}
}  // namespace MLX_NS
