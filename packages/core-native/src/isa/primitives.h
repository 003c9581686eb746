// Vector primitives shared by every kernel: the vector types of this variant (VL floats per register),
// loads and stores, reductions, f16/bf16 widening, exp/tanh, per-thread scratch and the row-tile loop.
// Included by kernels_impl.h inside the variant namespace (MLX_NS). Not a standalone header: no include
// guard on purpose.

constexpr int VL = MLX_VL;
typedef float vf __attribute__((vector_size(VL * 4)));
typedef int32_t vi __attribute__((vector_size(VL * 4)));
typedef uint32_t vu __attribute__((vector_size(VL * 4)));
typedef uint16_t vh __attribute__((vector_size(VL * 2)));
typedef uint8_t vb __attribute__((vector_size(VL)));

static inline vf vload(const float* p) { vf v; std::memcpy(&v, p, sizeof v); return v; }
static inline void vstore(float* p, vf v) { std::memcpy(p, &v, sizeof v); }
static inline vf vsplat(float x) { vf v = {}; return v + x; }
static inline float hsum(vf v) {
  float s = 0.f;
  for (int i = 0; i < VL; i++) s += v[i];
  return s;
}
static inline float hmax(vf v) {
  float m = v[0];
  for (int i = 1; i < VL; i++) m = v[i] > m ? v[i] : m;
  return m;
}
static inline vf vmax(vf a, vf b) { return a > b ? a : b; }
static inline vf vmin(vf a, vf b) { return a < b ? a : b; }
// Clamp that keeps NaN (vmin/vmax above return their second operand for a NaN first one, so
// vmin(vmax(NaN, lo), hi) is lo). Every transcendental and clamp goes through this so that a NaN input
// stays NaN and the logits check downstream can see it (tanh(NaN) = -1 once hid NaN logits behind the
// final soft-cap).
static inline vf vclamp_nan(vf x, vf lo, vf hi) {
  x = x < lo ? lo : x;  // false for NaN: x is kept
  return x > hi ? hi : x;
}
static inline vf as_f(vu u) { vf f; std::memcpy(&f, &u, sizeof f); return f; }
static inline vu as_u(vf f) { vu u; std::memcpy(&u, &f, sizeof u); return u; }

// u8 -> f32 in two steps: GCC scalarizes a direct u8->float __builtin_convertvector, while
// u8->i32 (vpmovzxbd) then i32->f32 (vcvtdq2ps) stays vectorized.
static inline vf bytes_to_f(vb q) { return __builtin_convertvector(__builtin_convertvector(q, vi), vf); }

static inline vf load_bf16(const uint8_t* p) {
  vh h; std::memcpy(&h, p, sizeof h);
  vu u = __builtin_convertvector(h, vu) << 16;
  return as_f(u);
}
static inline vf load_f16(const uint8_t* p) {
#if defined(__AVX512F__) && MLX_VL == 16
  return (vf)_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
#elif defined(__F16C__) && MLX_VL == 8
  return (vf)_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
#endif
  vh h16; std::memcpy(&h16, p, sizeof h16);
  vu h = __builtin_convertvector(h16, vu);
  vf f = as_f((h & 0x7fffu) << 13) * 0x1p112f;
  vu u = as_u(f);
  vu is_inf = (vu)((h & 0x7c00u) == 0x7c00u);
  u |= is_inf & 0x7f800000u;
  u |= (h & 0x8000u) << 16;
  return as_f(u);
}
// Loads VL consecutive elements of a row stored in dtype (f32/f16/bf16) as f32.
static inline vf load_any(const uint8_t* base, int dtype, int64_t i) {
  if (dtype == kF32) return vload(reinterpret_cast<const float*>(base) + i);
  if (dtype == kBF16) return load_bf16(base + 2 * i);
  return load_f16(base + 2 * i);
}

// exp for f32 vectors: range reduction to [-ln2/2, ln2/2] and a degree-6 polynomial (~2 ulp).
static inline vf vexp(vf x) {
  x = vclamp_nan(x, vsplat(-87.33654f), vsplat(88.72283f));  // NaN stays NaN through the polynomial
  // Round to nearest with the 1.5*2^23 trick (exact for |n| < 2^22; no vector select needed).
  vf nf = (x * 1.44269504088896341f + 12582912.f) - 12582912.f;
  vi ni = __builtin_convertvector(nf, vi);
  vf r = x - nf * 0.693359375f;
  r = r - nf * -2.12194440e-4f;
  vf p = vsplat(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // 2^n split in two factors so n = -127 at the bottom of the range never forms a bad exponent.
  vi e1 = ((ni >> 1) + 127) << 23;
  vi e2 = ((ni - (ni >> 1)) + 127) << 23;
  vf scale, scale2;
  std::memcpy(&scale, &e1, sizeof scale);
  std::memcpy(&scale2, &e2, sizeof scale2);
  return p * scale * scale2;
}
static inline vf vtanh(vf x) {
  // tanh(x) = 1 - 2 / (exp(2x) + 1); accurate to ~1e-7 absolute, saturates correctly.
  vf e = vexp(x * 2.0f);
  return 1.0f - 2.0f / (e + 1.0f);
}

// std::vector with an allocator of this variant's namespace. A std::vector<float> used here would be
// instantiated with this variant's ISA flags under the same mangled name as everyone else's, and the
// linker keeps one copy for the whole addon: an AVX-512 copy could then run on an AVX2-only CPU. With
// VariantAlloc in the type, every member the vector instantiates is this variant's own symbol
// (packages/core-native/test/isa-symbols.test.ts checks the built archives for any shared one).
template <typename T>
struct VariantAlloc {
  using value_type = T;
  VariantAlloc() = default;
  template <typename U>
  VariantAlloc(const VariantAlloc<U>&) {}
  T* allocate(size_t n) {
    if (n > SIZE_MAX / sizeof(T)) throw std::bad_alloc();
    return static_cast<T*>(::operator new(n * sizeof(T)));
  }
  void deallocate(T* p, size_t) { ::operator delete(p); }
  template <typename U>
  bool operator==(const VariantAlloc<U>&) const { return true; }
  template <typename U>
  bool operator!=(const VariantAlloc<U>&) const { return false; }
};
template <typename T>
using vec = std::vector<T, VariantAlloc<T>>;

// Per-thread growable scratch. A plain struct of this variant's namespace rather than a std container:
// a std template instantiated here would be compiled with this variant's ISA flags, and the linker may
// keep that copy for every variant (an AVX-512 instruction in the scalar variant's path).
struct Scratch {
  uint8_t* p = nullptr;
  size_t cap = 0;
  Scratch() = default;
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() { delete[] p; }
  // A 64-byte aligned buffer of at least n elements of T (contents unspecified).
  template <typename T>
  T* get(size_t n) {
    const size_t bytes = n * sizeof(T) + 64;
    if (bytes > cap) {
      delete[] p;
      p = new uint8_t[bytes];
      cap = bytes;
    }
    return reinterpret_cast<T*>((reinterpret_cast<uintptr_t>(p) + 63) & ~uintptr_t(63));
  }
};

// Runs tile<R>(n) over rows [n0, n1) in steps of R, then tile<1> for the remainder; with `single`,
// tile<1> for every row.
template <int R, typename TR, typename T1>
static inline void row_tiles(int64_t n0, int64_t n1, const TR& tile_r, const T1& tile_1, bool single = false) {
  int64_t n = n0;
  if (!single)
    for (; n + R <= n1; n += R) tile_r(n);
  for (; n < n1; n++) tile_1(n);
}
