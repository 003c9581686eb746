// KV store access for packages/cache: the tiled slot layout the attention kernel reads directly
// (kernels.h KvSegment kKvTiles). Writes convert f32 rows to the storage dtype or quantize them
// (MLX affine, per group along the head dim); reads dequantize; export/import move the exact stored
// bits to and from a head-major image ([H][T][...], the prompt-cache tensor layout, MLX code packing).
//
//   kvWrite(store, slots, k, v)        rows i of k [T, H, D] / v [T, H, DV] -> slot slots[i]
//   kvRead(store, slots, outK, outV)   the stored rows as f32 (dequantized)
//   kvExport(store, slots, image)      image.k/v (+ kScales, kBiases, vScales, vBiases when quantized)
//   kvImport(store, slots, image)
// store = { dtype 0 f32 | 1 f16 | 2 bf16 | 3 quantized, capacity (slots, multiple of 16), nKvHeads,
//           headDim, vDim, k, v, and when quantized: kScales, kBiases, vScales, vBiases, vBits, groupSize }.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "args.h"
#include "bindings.h"
#include "cpu.h"
#include "half.h"
#include "threadpool.h"
#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define MLX_KV_F16C 1
#endif

namespace mlx {
namespace {

constexpr int TK = kKvTile;

struct Store {
  int dtype = kF32;
  int64_t cap = 0;
  int H = 0, D = 0, DV = 0;
  uint8_t* k = nullptr;
  uint8_t* v = nullptr;
  float *ks = nullptr, *kb = nullptr, *vs = nullptr, *vb = nullptr;
  int vbits = 8, group = 0;
  int ngk() const { return D / group; }
  int ngv() const { return DV / group; }
  int64_t vrow_bytes() const { return int64_t(DV) * vbits / 8; }
};

std::string S(int64_t x) { return std::to_string(x); }

float* f32_min(const Napi::Value& v, const char* fn, const std::string& name, int64_t n) {
  return f32_arg(v, fn, name.c_str(), n);
}

Store store_arg(const Napi::Value& val, const char* fn) {
  Napi::Env env = val.Env();
  if (!val.IsObject()) throw_type(env, std::string(fn) + ": store must be an object");
  Napi::Object o = val.As<Napi::Object>();
  Store s;
  s.dtype = int(int_arg(o.Get("dtype"), fn, "store.dtype", 0, 3));
  s.cap = int_arg(o.Get("capacity"), fn, "store.capacity", 0, int64_t(1) << 31);
  if (s.cap % TK) throw_range(env, std::string(fn) + ": store.capacity " + S(s.cap) + " is not a multiple of " + S(TK));
  s.H = int(int_arg(o.Get("nKvHeads"), fn, "store.nKvHeads", 1, 1 << 16));
  s.D = int(int_arg(o.Get("headDim"), fn, "store.headDim", 1, 1 << 14));
  s.DV = int(int_arg(o.Get("vDim"), fn, "store.vDim", 1, 1 << 14));
  Bytes k = bytes_arg(o.Get("k"), fn, "store.k");
  Bytes v = bytes_arg(o.Get("v"), fn, "store.v");
  s.k = k.data;
  s.v = v.data;
  const size_t slots = size_t(s.cap);
  if (s.dtype != kQAffine) {
    const size_t esz = s.dtype == kF32 ? 4 : 2;
    // Checked products (capacity, heads and dims come from JS numbers), as in every binding.
    if (k.size < size_t(checked_size(env, fn, "store.k", {int64_t(slots), s.H, s.D, int64_t(esz)}))) throw_range(env, std::string(fn) + ": store.k is smaller than capacity x nKvHeads x headDim");
    if (v.size < size_t(checked_size(env, fn, "store.v", {int64_t(slots), s.H, s.DV, int64_t(esz)}))) throw_range(env, std::string(fn) + ": store.v is smaller than capacity x nKvHeads x vDim");
    return s;
  }
  s.group = int(int_arg(o.Get("groupSize"), fn, "store.groupSize", 32, 128));
  if (s.group != 32 && s.group != 64 && s.group != 128) throw_range(env, std::string(fn) + ": store.groupSize must be 32, 64 or 128");
  if (s.D % s.group || s.DV % s.group)
    throw_range(env, std::string(fn) + ": headDim " + S(s.D) + " and vDim " + S(s.DV) + " must be multiples of groupSize " + S(s.group));
  s.vbits = int(int_arg(o.Get("vBits"), fn, "store.vBits", 4, 8));
  if (s.vbits != 4 && s.vbits != 8) throw_range(env, std::string(fn) + ": store.vBits must be 4 or 8");
  if (k.size < size_t(checked_size(env, fn, "store.k", {int64_t(slots), s.H, s.D}))) throw_range(env, std::string(fn) + ": store.k is smaller than capacity x nKvHeads x headDim bytes");
  if (v.size < size_t(checked_size(env, fn, "store.v", {int64_t(slots), s.H, s.vrow_bytes()}))) throw_range(env, std::string(fn) + ": store.v is smaller than its packed rows");
  s.ks = f32_min(o.Get("kScales"), fn, "store.kScales", int64_t(slots) * s.H * s.ngk());
  s.kb = f32_min(o.Get("kBiases"), fn, "store.kBiases", int64_t(slots) * s.H * s.ngk());
  s.vs = f32_min(o.Get("vScales"), fn, "store.vScales", int64_t(slots) * s.H * s.ngv());
  s.vb = f32_min(o.Get("vBiases"), fn, "store.vBiases", int64_t(slots) * s.H * s.ngv());
  return s;
}

const int32_t* slots_arg(const Napi::Value& v, const char* fn, const Store& s, int64_t& T) {
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_int32_array)
    throw_type(v.Env(), std::string(fn) + ": slots must be an Int32Array");
  auto a = v.As<Napi::Int32Array>();
  T = int64_t(a.ElementLength());
  const int32_t* p = a.Data();
  for (int64_t i = 0; i < T; i++)
    if (p[i] < 0 || p[i] >= s.cap) throw_range(v.Env(), std::string(fn) + ": slots[" + S(i) + "] = " + S(p[i]) + " is outside the store (capacity " + S(s.cap) + ")");
  return p;
}

// MLX affine quantizer (docs/architecture/formats.md (b); same arithmetic as core-native `quantize`): the group's
// larger-magnitude edge is represented exactly; codes round half to even.
void quantize_group(const float* x, int n, int bits, uint8_t* q, float& scale, float& bias) {
  const float levels = float((1 << bits) - 1);
  float mx = x[0], mn = x[0];
  for (int i = 1; i < n; i++) { mx = std::max(mx, x[i]); mn = std::min(mn, x[i]); }
  float s = std::max((mx - mn) / levels, 1e-7f);
  float edge;
  if (std::fabs(mn) > std::fabs(mx)) edge = mn;
  else { s = -s; edge = mx; }
  const float q0 = std::nearbyint(edge / s);
  float b = 0.f;
  if (q0 != 0.f) { s = edge / q0; b = edge; }
  for (int i = 0; i < n; i++) q[i] = uint8_t(std::min(std::max(std::nearbyint((x[i] - b) / s), 0.f), levels));
  scale = s;
  bias = b;
}

// Byte offset of code c inside a stored 4-bit V row (split-nibble: 32-code chunks of 16 bytes) and its shift.
inline void nibble_at(int c, int& byte, int& shift) {
  const int i = c & 31;
  byte = (c >> 5) * 16 + (i & 15);
  shift = i < 16 ? 0 : 4;
}

// Head-major tile addressing (see kernels.h KvSegment): tile index of (slot, head) and V row index.
inline int64_t tile_of(const Store& s, int64_t slot, int h) { return h * (s.cap / TK) + slot / TK; }
inline int64_t vrow_of(const Store& s, int64_t slot, int h) { return h * s.cap + slot; }
inline int lane(int64_t slot) { return int(slot % TK); }

// A K or V value in a 16-bit store. f16: a finite value beyond its range is stored as +-65504 (the
// largest finite f16), not rounded to an infinity that would turn the attention scores into NaN;
// infinities and NaN stay what they are (as in an f32 store). f16 is the default KV storage of the
// fast paths (engine defaultKvStorage), so this is what a stray large activation meets.
inline uint16_t kv_half(int dtype, float x) {
  if (dtype != kF16) return f32_to_bf16(x);
  if (std::isfinite(x)) x = std::fmin(std::fmax(x, -65504.f), 65504.f);
  return f32_to_f16(x);
}

#if defined(MLX_KV_F16C)
// kv_half(kF16, x[i]) for n values, 8 at a time with F16C (vcvtps2ph rounds to nearest even as
// f32_to_f16 does; only a NaN's payload bits may differ). With f16 as the fast paths' default KV
// storage, the scalar conversion was ~4 % of a Phi-3.5-mini 512-token prefill.
__attribute__((target("avx,f16c"))) void kv_f16_row_f16c(const float* x, uint16_t* out, int n) {
  const __m256 lim = _mm256_set1_ps(65504.f), inf = _mm256_set1_ps(INFINITY), sign = _mm256_set1_ps(-0.f);
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 a = _mm256_loadu_ps(x + i);
    const __m256 mag = _mm256_andnot_ps(sign, a);
    // Finite and beyond f16's range (ordered compares: false for NaN) -> +-65504.
    const __m256 big = _mm256_and_ps(_mm256_cmp_ps(mag, lim, _CMP_GT_OQ), _mm256_cmp_ps(mag, inf, _CMP_LT_OQ));
    a = _mm256_blendv_ps(a, _mm256_or_ps(_mm256_and_ps(a, sign), lim), big);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm256_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  for (; i < n; i++) out[i] = kv_half(kF16, x[i]);
}
#endif

// n values of x in a 16-bit store's element type.
void kv_half_row(int dtype, const float* x, uint16_t* out, int n) {
#if defined(MLX_KV_F16C)
  static const bool f16c = detect_cpu().f16c;
  if (dtype == kF16 && f16c) return kv_f16_row_f16c(x, out, n);
#endif
  for (int i = 0; i < n; i++) out[i] = kv_half(dtype, x[i]);
}

void write_row(const Store& s, int64_t slot, int h, const float* k, const float* v) {
  const int64_t t = tile_of(s, slot, h);
  const int ln = lane(slot);
  if (s.dtype == kF32) {
    for (int d = 0; d < s.D; d++) std::memcpy(s.k + ((t * s.D + d) * TK + ln) * 4, &k[d], 4);
    std::memcpy(s.v + vrow_of(s, slot, h) * s.DV * 4, v, size_t(s.DV) * 4);
    return;
  }
  if (s.dtype != kQAffine) {
    // K goes to D strided elements (the tile is transposed): converted a piece at a time first.
    uint16_t kh[256];
    for (int d0 = 0; d0 < s.D; d0 += 256) {
      const int n = std::min(256, s.D - d0);
      kv_half_row(s.dtype, k + d0, kh, n);
      for (int d = 0; d < n; d++) std::memcpy(s.k + ((t * s.D + d0 + d) * TK + ln) * 2, &kh[d], 2);
    }
    uint16_t* vrow = reinterpret_cast<uint16_t*>(s.v + vrow_of(s, slot, h) * s.DV * 2);
    kv_half_row(s.dtype, v, vrow, s.DV);
    return;
  }
  uint8_t q[128];
  for (int g = 0; g < s.ngk(); g++) {
    float sc, bi;
    quantize_group(k + g * s.group, s.group, 8, q, sc, bi);
    for (int i = 0; i < s.group; i++) s.k[(t * s.D + g * s.group + i) * TK + ln] = q[i];
    s.ks[(t * s.ngk() + g) * TK + ln] = sc;
    s.kb[(t * s.ngk() + g) * TK + ln] = bi;
  }
  const int64_t r = vrow_of(s, slot, h);
  uint8_t* row = s.v + r * s.vrow_bytes();
  if (s.vbits == 4) std::memset(row, 0, size_t(s.vrow_bytes()));
  for (int g = 0; g < s.ngv(); g++) {
    float sc, bi;
    quantize_group(v + g * s.group, s.group, s.vbits, q, sc, bi);
    for (int i = 0; i < s.group; i++) {
      const int c = g * s.group + i;
      if (s.vbits == 8) row[c] = q[i];
      else {
        int byte, shift;
        nibble_at(c, byte, shift);
        row[byte] |= uint8_t(q[i] << shift);
      }
    }
    s.vs[r * s.ngv() + g] = sc;
    s.vb[r * s.ngv() + g] = bi;
  }
}

void read_row(const Store& s, int64_t slot, int h, float* k, float* v) {
  const int64_t t = tile_of(s, slot, h);
  const int ln = lane(slot);
  if (s.dtype != kQAffine) {
    for (int d = 0; d < s.D; d++) k[d] = load_scalar(s.k, s.dtype, (t * s.D + d) * TK + ln);
    const int64_t r = vrow_of(s, slot, h) * s.DV;
    for (int d = 0; d < s.DV; d++) v[d] = load_scalar(s.v, s.dtype, r + d);
    return;
  }
  for (int d = 0; d < s.D; d++) {
    const int g = d / s.group;
    k[d] = s.ks[(t * s.ngk() + g) * TK + ln] * float(s.k[(t * s.D + d) * TK + ln]) + s.kb[(t * s.ngk() + g) * TK + ln];
  }
  const int64_t r = vrow_of(s, slot, h);
  const uint8_t* row = s.v + r * s.vrow_bytes();
  for (int c = 0; c < s.DV; c++) {
    int code;
    if (s.vbits == 8) code = row[c];
    else {
      int byte, shift;
      nibble_at(c, byte, shift);
      code = (row[byte] >> shift) & 15;
    }
    const int g = c / s.group;
    v[c] = s.vs[r * s.ngv() + g] * float(code) + s.vb[r * s.ngv() + g];
  }
}

// Head-major image of T slots. Sizes per head-row: float K D*esz bytes, V DV*esz; quantized K D bytes
// (+ D/group scales and biases), V DV*vBits/8 bytes in MLX packing (+ DV/group scales and biases).
struct Image {
  uint8_t* k = nullptr;
  uint8_t* v = nullptr;
  float *ks = nullptr, *kb = nullptr, *vs = nullptr, *vb = nullptr;
};

Image image_arg(const Napi::Value& val, const char* fn, const Store& s, int64_t T) {
  Napi::Env env = val.Env();
  if (!val.IsObject()) throw_type(env, std::string(fn) + ": image must be an object");
  Napi::Object o = val.As<Napi::Object>();
  Image im;
  Bytes k = bytes_arg(o.Get("k"), fn, "image.k");
  Bytes v = bytes_arg(o.Get("v"), fn, "image.v");
  const size_t rows = size_t(checked_size(env, fn, "image rows", {T, s.H}));
  const size_t kb = s.dtype == kQAffine ? s.D : size_t(s.D) * (s.dtype == kF32 ? 4 : 2);
  const size_t vbts = s.dtype == kQAffine ? size_t(s.vrow_bytes()) : size_t(s.DV) * (s.dtype == kF32 ? 4 : 2);
  checked_size(env, fn, "image.k", {int64_t(rows), int64_t(kb)});
  checked_size(env, fn, "image.v", {int64_t(rows), int64_t(vbts)});
  if (k.size < rows * kb) throw_range(env, std::string(fn) + ": image.k has " + S(int64_t(k.size)) + " bytes, needs " + S(int64_t(rows * kb)));
  if (v.size < rows * vbts) throw_range(env, std::string(fn) + ": image.v has " + S(int64_t(v.size)) + " bytes, needs " + S(int64_t(rows * vbts)));
  im.k = k.data;
  im.v = v.data;
  if (s.dtype == kQAffine) {
    im.ks = f32_min(o.Get("kScales"), fn, "image.kScales", int64_t(rows) * s.ngk());
    im.kb = f32_min(o.Get("kBiases"), fn, "image.kBiases", int64_t(rows) * s.ngk());
    im.vs = f32_min(o.Get("vScales"), fn, "image.vScales", int64_t(rows) * s.ngv());
    im.vb = f32_min(o.Get("vBiases"), fn, "image.vBiases", int64_t(rows) * s.ngv());
  }
  return im;
}

// Copies one (slot, head) between the store and image row r (= h * T + i); to_image selects the direction.
void move_row(const Store& s, const Image& im, int64_t slot, int h, int64_t r, bool to_image) {
  const int64_t t = tile_of(s, slot, h);
  const int ln = lane(slot);
  auto mv = [&](uint8_t* store_p, uint8_t* image_p, size_t n) {
    if (to_image) std::memcpy(image_p, store_p, n);
    else std::memcpy(store_p, image_p, n);
  };
  if (s.dtype != kQAffine) {
    const int esz = s.dtype == kF32 ? 4 : 2;
    for (int d = 0; d < s.D; d++) mv(s.k + ((t * s.D + d) * TK + ln) * esz, im.k + (r * s.D + d) * esz, size_t(esz));
    mv(s.v + vrow_of(s, slot, h) * s.DV * esz, im.v + r * s.DV * esz, size_t(s.DV) * esz);
    return;
  }
  for (int d = 0; d < s.D; d++) mv(s.k + (t * s.D + d) * TK + ln, im.k + r * s.D + d, 1);
  for (int g = 0; g < s.ngk(); g++) {
    mv(reinterpret_cast<uint8_t*>(s.ks + (t * s.ngk() + g) * TK + ln), reinterpret_cast<uint8_t*>(im.ks + r * s.ngk() + g), 4);
    mv(reinterpret_cast<uint8_t*>(s.kb + (t * s.ngk() + g) * TK + ln), reinterpret_cast<uint8_t*>(im.kb + r * s.ngk() + g), 4);
  }
  const int64_t sr = vrow_of(s, slot, h);
  mv(reinterpret_cast<uint8_t*>(s.vs + sr * s.ngv()), reinterpret_cast<uint8_t*>(im.vs + r * s.ngv()), size_t(s.ngv()) * 4);
  mv(reinterpret_cast<uint8_t*>(s.vb + sr * s.ngv()), reinterpret_cast<uint8_t*>(im.vb + r * s.ngv()), size_t(s.ngv()) * 4);
  uint8_t* srow = s.v + sr * s.vrow_bytes();
  uint8_t* irow = im.v + r * s.vrow_bytes();
  if (s.vbits == 8) {
    mv(srow, irow, size_t(s.DV));
    return;
  }
  // 4-bit: MLX packs code c at byte c/2, low nibble for even c; the store splits 32-code chunks.
  if (to_image) std::memset(irow, 0, size_t(s.vrow_bytes()));
  else std::memset(srow, 0, size_t(s.vrow_bytes()));
  for (int c = 0; c < s.DV; c++) {
    int byte, shift;
    nibble_at(c, byte, shift);
    const int ishift = (c & 1) * 4;
    if (to_image) irow[c / 2] |= uint8_t(((srow[byte] >> shift) & 15) << ishift);
    else srow[byte] |= uint8_t(((irow[c / 2] >> ishift) & 15) << shift);
  }
}

Napi::Value KvWrite(const Napi::CallbackInfo& info) {
  const char* fn = "kvWrite";
  Store s = store_arg(info[0], fn);
  int64_t T = 0;
  const int32_t* slots = slots_arg(info[1], fn, s, T);
  const float* k = f32_arg(info[2], fn, "k", checked_size(info.Env(), fn, "k", {T, s.H, s.D}));
  const float* v = f32_arg(info[3], fn, "v", checked_size(info.Env(), fn, "v", {T, s.H, s.DV}));
  // Head-major order (all rows of head 0, then head 1, ...): a head's K tiles are transposed
  // ([D][16] per 16 slots), so consecutive slots of one head write the same D cache lines while they
  // are still in L1, where row-major order (every head of a row, then the next row) touched H * D lines
  // per row.
  parallel_for(T * s.H, 16, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
      const int h = int(r / T);
      const int64_t i = r % T;
      const int64_t row = i * s.H + h;
      write_row(s, slots[i], h, k + row * s.D, v + row * s.DV);
    }
  });
  return info.Env().Undefined();
}

Napi::Value KvRead(const Napi::CallbackInfo& info) {
  const char* fn = "kvRead";
  Store s = store_arg(info[0], fn);
  int64_t T = 0;
  const int32_t* slots = slots_arg(info[1], fn, s, T);
  float* k = f32_arg(info[2], fn, "outK", checked_size(info.Env(), fn, "outK", {T, s.H, s.D}));
  float* v = f32_arg(info[3], fn, "outV", checked_size(info.Env(), fn, "outV", {T, s.H, s.DV}));
  parallel_for(T * s.H, 16, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) read_row(s, slots[r / s.H], int(r % s.H), k + r * s.D, v + r * s.DV);
  });
  return info.Env().Undefined();
}

Napi::Value KvMove(const Napi::CallbackInfo& info, bool to_image, const char* fn) {
  Store s = store_arg(info[0], fn);
  int64_t T = 0;
  const int32_t* slots = slots_arg(info[1], fn, s, T);
  Image im = image_arg(info[2], fn, s, T);
  parallel_for(T * s.H, 16, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
      const int h = int(r / T);
      const int64_t i = r % T;
      move_row(s, im, slots[i], h, r, to_image);
    }
  });
  return info.Env().Undefined();
}

Napi::Value KvExport(const Napi::CallbackInfo& info) { return KvMove(info, true, "kvExport"); }
Napi::Value KvImport(const Napi::CallbackInfo& info) { return KvMove(info, false, "kvImport"); }

}  // namespace

void RegisterKv(Napi::Env env, Napi::Object exports) {
  exports.Set("kvWrite", Napi::Function::New(env, KvWrite, "kvWrite"));
  exports.Set("kvRead", Napi::Function::New(env, KvRead, "kvRead"));
  exports.Set("kvExport", Napi::Function::New(env, KvExport, "kvExport"));
  exports.Set("kvImport", Napi::Function::New(env, KvImport, "kvImport"));
}

}  // namespace mlx
