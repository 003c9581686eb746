// Standalone conformance driver for the kernel variants (no Node, no N-API).
//
// Why: the vitest suite (test/*.test.ts) checks every variant the *host* runs, through the addon. On an
// x86-64 machine that never executes the arm64 variants (neon, neon_dotprod, ...). This driver links the
// variant objects with src/cpu.cc and src/threadpool.cc directly, so the same checks can be built with a
// cross compiler and run under qemu-aarch64 (user mode) on an x86 box, or natively on any machine.
//
// How to run: scripts/check-cross.sh native | arm64   (builds into build-cross/, then runs this)
//   conformance [--threads N] [--verbose] [GROUP...]   GROUP: substring of a kernel group name, e.g. matmul
// Exit status 1 if any case exceeds its bound; the failing cases are listed at the end.
//
// What: every variant in mlx::available_variants() (so a variant added to cpu.cc is picked up without a
// change here) runs the same deterministic cases (splitmix64 PRNG) against float64 references written
// here from the format descriptions, not from the kernels' code: IEEE binary16 / bfloat16 decoders, and
// MLX affine quantization (W = scale * q + bias per group; each row is K*bits/32 little-endian u32
// words with the codes packed LSB-first, 3/5/6-bit codes straddling words). Each reference is computed
// once per case and shared by all variants. Kernel groups and error measures (bounds as the vitest
// files state them, where one exists):
//   matmul       |y - ref| / (sum_k |x_k| mag(W_nk) + |bias_n|) per element, mag = |W| (float) or |s q| + |b|
//                (quantized): <= 2e-6 float weights, <= 4e-6 quantized (test/matmul.test.ts); also
//                max|y - ref| / max|ref| per case <= 1e-5. Non-finite x: the same outputs must be non-finite.
//   matmul~scalar  each variant against the scalar variant, same measure, <= 2x the bound (a second check).
//   gather       float rows exact; quantized |d| <= 2^-22 (|W - b| + |b|)        (test/matmul.test.ts)
//   rms/layer_norm  |d| <= 1e-5 |ref| + 1e-6; softmax |d| <= 1e-5 |ref| + 1e-7  (test/elementwise.test.ts)
//   unary, glu   |d| <= 4e-6 |ref| + 2e-7; binary, clamp exact; affine |d| <= 2^-23 (|x s| + |t|);
//   rope         |d| <= 2^-22 (|a cos| + |b sin|), dims past rot_dim unchanged  (test/elementwise.test.ts)
//   (the per-element "|d| <= rel |ref| + abs" checks are reported as |d| / (|ref| + abs/rel) <= rel)
//   attention    max|d| / max|ref| <= 3e-5  (packages/cache/test/*.test.ts; they divide by max(1, max|ref|))
//                the flat form (f32/f16/bf16 rows); attention-kv: the batched form over cache storage
//                (tile layout f32/f16/bf16, 8-bit K with 8- or 4-bit V, a row-layout tail, masks, spans)
//   moe          max|d| / max|ref| <= 1e-5, gather path, grouped path and the two against each other
//                                                                         (packages/moe/test/switch-glu.test.ts)
#include <algorithm>
#include <cstdarg>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cpu.h"
#include "kernels.h"
#include "threadpool.h"

namespace {

using mlx::KernelTable;
using mlx::WeightRef;

// ---- deterministic inputs --------------------------------------------------------------------

struct Rng {  // splitmix64
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull) {}
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return double(next() >> 11) * 0x1p-53; }  // [0, 1)
  float uf(double lo, double hi) { return float(lo + (hi - lo) * uniform()); }
  int below(int n) { return int(uniform() * n); }
};

std::vector<float> rand_f32(size_t n, Rng& r, double lo = -1, double hi = 1) {
  std::vector<float> v(n);
  for (auto& x : v) x = r.uf(lo, hi);
  return v;
}

// ---- storage formats, written from their definitions ----------------------------------------

double f16_value(uint16_t h) {  // IEEE binary16
  const int e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0 ? std::ldexp(double(m), -24) : e == 31 ? (m ? NAN : INFINITY) : std::ldexp(double(1024 + m), e - 25);
  return (h & 0x8000) ? -v : v;
}
double bf16_value(uint16_t h) {  // the upper half of an IEEE binary32
  const uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// Encoders for test data only (any valid pattern will do, so these truncate instead of rounding).
uint16_t f16_bits(double v) {
  const uint16_t sign = v < 0 ? 0x8000 : 0;
  const double a = std::fabs(v);
  if (a < 0x1p-14) return uint16_t(sign | uint16_t(a * 0x1p24));  // subnormal
  int e;
  const double m = std::frexp(a, &e);  // a = m 2^e, m in [0.5, 1)
  return uint16_t(sign | ((e - 1 + 15) << 10) | int((2 * m - 1) * 1024));
}
uint16_t bf16_bits(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  return uint16_t(u >> 16);
}
uint16_t rd16(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }
uint32_t rd32(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24; }
void wr16(uint8_t* p, uint16_t v) { p[0] = uint8_t(v); p[1] = uint8_t(v >> 8); }
void wr32(uint8_t* p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = uint8_t(v >> (8 * i)); }

const char* dtype_name(int dt) { return dt == mlx::kF32 ? "f32" : dt == mlx::kF16 ? "f16" : dt == mlx::kBF16 ? "bf16" : "q"; }
int esize(int dt) { return dt == mlx::kF32 ? 4 : 2; }

// Element i of an f32 / f16 / bf16 little-endian array.
double float_at(const uint8_t* p, int dt, int64_t i) {
  if (dt == mlx::kF32) {
    const uint32_t u = rd32(p + 4 * i);
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  const uint16_t h = rd16(p + 2 * i);
  return dt == mlx::kF16 ? f16_value(h) : bf16_value(h);
}
void store_float(uint8_t* p, int dt, int64_t i, float v) {
  if (dt == mlx::kF32) {
    uint32_t u;
    std::memcpy(&u, &v, 4);
    wr32(p + 4 * i, u);
  } else {
    wr16(p + 2 * i, dt == mlx::kF16 ? f16_bits(v) : bf16_bits(v));
  }
}

// MLX affine code c of a row: the row is a sequence of little-endian u32 words, the codes fill them
// LSB-first, and a code whose bits run past a word continues at bit 0 of the next one.
uint32_t mlx_code(const uint8_t* row, int bits, int64_t c) {
  const int64_t bit = c * bits, w = bit / 32;
  const int sh = int(bit % 32);
  uint64_t v = uint64_t(rd32(row + 4 * w)) >> sh;
  if (sh + bits > 32) v |= uint64_t(rd32(row + 4 * (w + 1))) << (32 - sh);
  return uint32_t(v & ((1u << bits) - 1u));
}

// A test weight [rows, cols] in some storage format, plus its exact values in float64.
struct TestWeight {
  int dtype = mlx::kF32, sd = mlx::kF32, bits = 0, group = 0;
  int64_t rows = 0, cols = 0;
  std::vector<uint8_t> buf, scales, biases;
  size_t off = 0;           // data starts `off` bytes into buf: kernels must take unaligned views
  std::vector<double> W;    // W[r * cols + c], exactly what the storage means
  std::vector<double> mag;  // |W| (float) or |s q| + |b| (quantized): the size of each term summed
  const uint8_t* data() const { return buf.data() + off; }
  WeightRef ref() const {
    WeightRef w;
    w.dtype = dtype;
    w.data = data();
    w.rows = rows;
    w.cols = cols;
    if (dtype == mlx::kQAffine) {
      w.scales = scales.data();
      w.biases = biases.data();
      w.scale_dtype = sd;
      w.bits = bits;
      w.group = group;
    }
    return w;
  }
  std::string name() const {
    if (dtype != mlx::kQAffine) return dtype_name(dtype);
    return "q" + std::to_string(bits) + " g" + std::to_string(group) + " s" + dtype_name(sd);
  }
};

TestWeight float_weight(int64_t rows, int64_t cols, int dt, Rng& r, double amp = 1.0) {
  TestWeight w;
  w.dtype = dt;
  w.rows = rows;
  w.cols = cols;
  w.off = size_t(esize(dt));
  w.buf.assign(w.off + size_t(rows * cols) * esize(dt), 0);
  for (int64_t i = 0; i < rows * cols; i++) {
    float v = r.uf(-amp, amp);
    if (dt == mlx::kF16 && i % 97 == 5) v = float((r.below(1023) + 1) * 0x1p-24);  // f16 subnormals
    store_float(w.buf.data() + w.off, dt, i, v);
  }
  w.W.resize(size_t(rows * cols));
  w.mag.resize(w.W.size());
  for (int64_t i = 0; i < rows * cols; i++) {
    w.W[i] = float_at(w.data(), dt, i);
    w.mag[i] = std::fabs(w.W[i]);
  }
  return w;
}

// Random codes (every value occurs), scales of both signs, biases of both signs.
TestWeight quant_weight(int64_t rows, int64_t cols, int bits, int group, int sd, Rng& r, double amp = 1.0) {
  TestWeight w;
  w.dtype = mlx::kQAffine;
  w.sd = sd;
  w.bits = bits;
  w.group = group;
  w.rows = rows;
  w.cols = cols;
  w.off = 4;
  const int64_t row_bytes = cols * bits / 8, gpr = cols / group;
  w.buf.resize(w.off + size_t(rows * row_bytes));
  for (size_t i = w.off; i < w.buf.size(); i++) w.buf[i] = uint8_t(r.next() >> 56);
  w.scales.resize(size_t(rows * gpr) * esize(sd));
  w.biases.resize(w.scales.size());
  for (int64_t g = 0; g < rows * gpr; g++) {
    const double s = (r.uniform() < 0.5 ? -1 : 1) * (0.002 + 0.05 * r.uniform()) * (8.0 / bits) * amp;
    const double b = (r.uniform() - 0.5) * 0.4 * amp;
    store_float(w.scales.data(), sd, g, float(s));
    store_float(w.biases.data(), sd, g, float(b));
  }
  w.W.resize(size_t(rows * cols));
  w.mag.resize(w.W.size());
  for (int64_t n = 0; n < rows; n++) {
    const uint8_t* row = w.data() + n * row_bytes;
    for (int64_t c = 0; c < cols; c++) {
      const double s = float_at(w.scales.data(), sd, n * gpr + c / group);
      const double b = float_at(w.biases.data(), sd, n * gpr + c / group);
      const double q = mlx_code(row, bits, c);
      w.W[n * cols + c] = s * q + b;
      w.mag[n * cols + c] = std::fabs(s * q) + std::fabs(b);
    }
  }
  return w;
}

// ---- float64 references ----------------------------------------------------------------------

// ref[m, n] = sum_k x[m, k] W[row0 + n, k] (+ bias[n]); l1[m, n] = sum_k |x| mag + |bias|.
void ref_matmul(const float* x, int64_t M, const TestWeight& w, int64_t row0, int64_t N, const float* bias,
                std::vector<double>& ref, std::vector<double>* l1 = nullptr) {
  const int64_t K = w.cols;
  ref.assign(size_t(M * N), 0.0);
  if (l1) l1->assign(size_t(M * N), 0.0);
  for (int64_t m = 0; m < M; m++)
    for (int64_t n = 0; n < N; n++) {
      const double* wr = w.W.data() + (row0 + n) * K;
      const double* mr = w.mag.data() + (row0 + n) * K;
      const float* xr = x + m * K;
      double s = 0, a = 0;
      for (int64_t k = 0; k < K; k++) {
        s += double(xr[k]) * wr[k];
        a += std::fabs(double(xr[k])) * mr[k];
      }
      const double b = bias ? bias[n] : 0.0;
      ref[m * N + n] = s + b;
      if (l1) (*l1)[m * N + n] = a + std::fabs(b);
    }
}
void ref_matmul_d(const double* x, int64_t M, const TestWeight& w, int64_t row0, int64_t N, double* y) {
  const int64_t K = w.cols;
  for (int64_t m = 0; m < M; m++)
    for (int64_t n = 0; n < N; n++) {
      const double* wr = w.W.data() + (row0 + n) * K;
      double s = 0;
      for (int64_t k = 0; k < K; k++) s += x[m * K + k] * wr[k];
      y[m * N + n] = s;
    }
}

double silu(double v) { return v / (1 + std::exp(-v)); }
constexpr double kPi = 3.14159265358979323846;
double gelu_tanh(double v) { return 0.5 * v * (1 + std::tanh(std::sqrt(2 / kPi) * (v + 0.044715 * v * v * v))); }
double ref_unary(int op, double v) {
  switch (op) {
    case mlx::kSilu: return silu(v);
    case mlx::kGeluTanh: return gelu_tanh(v);
    case mlx::kGeluErf: return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
    case mlx::kRelu: return v > 0 ? v : 0;
    case mlx::kTanh: return std::tanh(v);
    case mlx::kExp: return std::exp(v);
    case mlx::kSigmoid: return 1 / (1 + std::exp(-v));
    case mlx::kNeg: return -v;
    case mlx::kSquare: return v * v;
    case mlx::kSqrt: return std::sqrt(v);
  }
  return NAN;
}
struct UnaryInfo { int op; const char* name; };
// Every UnaryOp of kernels.h (add a line here when the enum grows).
const UnaryInfo kUnary[] = {{mlx::kSilu, "silu"}, {mlx::kGeluTanh, "gelu_tanh"}, {mlx::kGeluErf, "gelu_erf"},
                            {mlx::kRelu, "relu"}, {mlx::kTanh, "tanh"}, {mlx::kExp, "exp"},
                            {mlx::kSigmoid, "sigmoid"}, {mlx::kNeg, "neg"}, {mlx::kSquare, "square"},
                            {mlx::kSqrt, "sqrt"}};

// ---- error measures --------------------------------------------------------------------------

constexpr double kInf = INFINITY;

// max over i of |a - e| / (|e| + floor); NaN must meet NaN and infinities must match exactly (else inf).
double rel_floor_err(const float* a, const double* e, size_t n, double floor) {
  double worst = 0;
  for (size_t i = 0; i < n; i++) {
    const double x = a[i], y = e[i];
    double err;
    if (std::isnan(y)) err = std::isnan(x) ? 0 : kInf;
    else if (std::isinf(y)) err = x == y ? 0 : kInf;
    else err = std::fabs(x - y) / (std::fabs(y) + floor);
    if (!(err <= worst)) worst = std::isnan(err) ? kInf : err;
  }
  return worst;
}
// max|a - e| / max(1e-30, max|e|), NaN in a counts as infinite.
double max_norm_err(const float* a, const double* e, size_t n) {
  double d = 0, m = 0;
  for (size_t i = 0; i < n; i++) {
    const double di = std::fabs(double(a[i]) - e[i]);
    if (!(di <= d)) d = std::isnan(di) ? kInf : di;
    m = std::max(m, std::fabs(e[i]));
  }
  return d / std::max(1e-30, m);
}
double max_norm_err_f(const float* a, const float* b, size_t n) {
  std::vector<double> e(b, b + n);
  return max_norm_err(a, e.data(), n);
}
// Exact equality (NaN == NaN): 0, or infinity at the first difference.
double exact_err(const float* a, const float* e, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!(a[i] == e[i] || (std::isnan(a[i]) && std::isnan(e[i])))) return kInf;
  return 0;
}

// ---- bookkeeping -----------------------------------------------------------------------------

struct Stat {
  int64_t cases = 0;
  double worst = 0, bound = 0;  // worst primary error and the bound of that case
  std::string where;
  double worst2 = -1, bound2 = 0;  // secondary measure (matmul: max-normalised), -1 = none
};
struct Failure { std::string variant, group, label; double err, bound; };

struct Report {
  std::vector<std::string> order;  // groups in the order they ran
  std::map<std::string, std::map<std::string, Stat>> stats;  // group -> variant -> stat
  std::vector<Failure> failures;
  bool verbose = false;

  void check(const std::string& variant, const std::string& group, const std::string& label, double err, double bound,
             double err2 = -1, double bound2 = 0) {
    if (std::find(order.begin(), order.end(), group) == order.end()) order.push_back(group);
    Stat& s = stats[group][variant];
    s.cases++;
    if (std::isnan(err)) err = kInf;
    if (err > s.worst || s.where.empty()) {
      s.worst = err;
      s.bound = bound;
      s.where = label;
    }
    if (err2 >= 0 || std::isnan(err2)) {
      if (std::isnan(err2)) err2 = kInf;
      if (err2 > s.worst2) {
        s.worst2 = err2;
        s.bound2 = bound2;
      }
    }
    const bool bad = !(err <= bound), bad2 = err2 >= 0 && !(err2 <= bound2);
    if (bad) failures.push_back({variant, group, label, err, bound});
    if (bad2) failures.push_back({variant, group + " (max-normalised)", label, err2, bound2});
    if (verbose || bad || bad2)
      std::printf("    %s %-14s %-12s %-58s err %.3g (bound %.3g)%s\n", bad || bad2 ? "FAIL" : "ok  ", variant.c_str(),
                  group.c_str(), label.c_str(), err, bound, err2 >= 0 ? (" max-norm " + fmt(err2)).c_str() : "");
  }
  static std::string fmt(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.3g", v);
    return b;
  }
  void print_group(const std::string& group, const std::vector<const KernelTable*>& variants, double seconds) const {
    auto it = stats.find(group);
    if (it == stats.end()) return;
    for (const KernelTable* v : variants) {
      auto jt = it->second.find(v->name);
      if (jt == it->second.end()) continue;
      const Stat& s = jt->second;
      std::printf("%-14s %-14s %5lld cases  worst %-9s (bound %-7s)", v->name, group.c_str(), (long long)s.cases,
                  fmt(s.worst).c_str(), fmt(s.bound).c_str());
      if (s.worst2 >= 0) std::printf("  max-norm %-9s (bound %s)", fmt(s.worst2).c_str(), fmt(s.bound2).c_str());
      std::printf("  at %s\n", s.where.c_str());
    }
    if (seconds >= 0) std::printf("%-14s %-14s %.1f s\n", "", "", seconds);
    std::fflush(stdout);
  }
};

Report R;
std::vector<const KernelTable*> V;  // the variants under test
const KernelTable* g_scalar = nullptr;

std::string fmt_label(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt_label(const char* f, ...) {
  char b[256];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(b, sizeof b, f, ap);
  va_end(ap);
  return b;
}

// ---- matmul ----------------------------------------------------------------------------------

// kernels_impl.h: matmul runs the GEMV (blocks of <= 4 rows over one pass of W) for M <= kGemvMaxM = 16
// and the packed GEMM above, so 16 and 17 straddle the switch (5, 7, 13 = 4-blocks plus a remainder).
const int64_t kMs[] = {1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 17, 64};
const int64_t kQMs[] = {1, 2, 3, 4, 5, 8, 9, 16, 17, 64};
const int64_t kNs[] = {1, 3, 17, 64, 257};

// Runs one matmul case on every variant and checks it. Rows of x holding a non-finite value must give
// non-finite outputs (and only those rows); the rest is checked against the bounds.
// N: the first N rows of w (rows are contiguous in every format, so that is a valid weight of its own).
void matmul_case(const TestWeight& w, int64_t N, const std::vector<float>& x, int64_t M, const float* bias, const std::string& label) {
  const int64_t K = w.cols;
  const bool quant = w.dtype == mlx::kQAffine;
  const double bound = quant ? 4e-6 : 2e-6, bound2 = 1e-5;
  std::vector<double> ref, l1;
  ref_matmul(x.data(), M, w, 0, N, bias, ref, &l1);
  std::vector<char> row_bad(size_t(M), 0);
  for (int64_t m = 0; m < M; m++)
    for (int64_t k = 0; k < K; k++) row_bad[m] |= !std::isfinite(x[m * K + k]);
  WeightRef wr = w.ref();
  wr.rows = N;
  std::vector<float> y(size_t(M * N)), ys;
  for (const KernelTable* v : V) {
    std::fill(y.begin(), y.end(), NAN);
    v->matmul(x.data(), M, wr, bias, y.data());
    double err = 0, dmax = 0, rmax = 0;
    for (int64_t m = 0; m < M; m++)
      for (int64_t n = 0; n < N; n++) {
        const size_t i = size_t(m * N + n);
        if (row_bad[m]) {
          if (std::isfinite(y[i])) err = kInf;  // must propagate, not be clamped away
          continue;
        }
        const double d = std::fabs(double(y[i]) - ref[i]);
        const double e = d / (l1[i] + 1e-30);
        if (!(e <= err)) err = std::isnan(e) ? kInf : e;
        if (!(d <= dmax)) dmax = std::isnan(d) ? kInf : d;
        rmax = std::max(rmax, std::fabs(ref[i]));
      }
    const double err2 = dmax / std::max(1e-30, rmax);
    R.check(v->name, "matmul", label, err, bound, err2, bound2);
    if (M > 1 && M <= 16) {
      // The multi-row GEMV: each row bit-identical to that row alone (batched decode == single).
      std::vector<float> y1(static_cast<size_t>(N));
      double same = 0;
      for (int64_t m = 0; m < M; m++) {
        v->matmul(x.data() + m * K, 1, wr, bias, y1.data());
        if (std::memcmp(y1.data(), y.data() + m * N, size_t(N) * sizeof(float)) != 0) same = kInf;
      }
      R.check(v->name, "matmul rows == M=1", label, same, 0);
    }
    if (v == g_scalar) {
      ys = y;
    } else if (!ys.empty()) {
      double e = 0;
      for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
          const size_t i = size_t(m * N + n);
          if (row_bad[m]) {
            if (std::isfinite(y[i]) != std::isfinite(ys[i])) e = kInf;
            continue;
          }
          const double d = std::fabs(double(y[i]) - double(ys[i])) / (l1[i] + 1e-30);
          if (!(d <= e)) e = std::isnan(d) ? kInf : d;
        }
      R.check(v->name, "matmul~scalar", label, e, 2 * bound);
    }
  }
}

void test_matmul() {
  // Float weights: every (K, N, M); bias on every other case, so each (K, N) sees both.
  const int64_t Ks[] = {1, 7, 33, 100, 4096};
  int idx = 0;
  for (int dt : {mlx::kF32, mlx::kF16, mlx::kBF16})
    for (int64_t K : Ks)
      for (int64_t N : kNs) {
        Rng r(uint64_t(dt * 100000 + K * 1000 + N));
        const TestWeight w = float_weight(N, K, dt, r);
        const std::vector<float> bias = rand_f32(size_t(N), r);
        for (int64_t M : kMs) {
          const std::vector<float> x = rand_f32(size_t(M * K), r, -2, 2);
          const bool b = (idx++ % 2) == 1;
          matmul_case(w, N, x, M, b ? bias.data() : nullptr,
                      fmt_label("%s M=%lld N=%lld K=%lld%s", dtype_name(dt), (long long)M, (long long)N, (long long)K, b ? " bias" : ""));
        }
      }

  // MLX affine: every bits x group x scale dtype, K = 3 groups (for group 128: 384 = 128*3; for 4/8-bit
  // K % 128 != 0 is also the integer-dot paths' fallback) and K = 640 (> 16 groups at group 32); every M,
  // with N rotating through kNs so each (config, K) meets several N.
  idx = 0;
  for (int bits : {2, 3, 4, 5, 6, 8})
    for (int group : {32, 64, 128})
      for (int sd : {mlx::kF32, mlx::kF16, mlx::kBF16})
        for (int64_t K : {int64_t(3 * group), int64_t(640)}) {
          Rng r(uint64_t(bits * 1000003 + group * 1009 + sd * 101 + K));
          const TestWeight w = quant_weight(257, K, bits, group, sd, r);
          const std::vector<float> bias = rand_f32(257, r);
          for (int64_t M : kQMs) {
            const int64_t N = kNs[idx % 5];
            const bool b = (idx / 5 + idx) % 2 == 1;
            idx++;
            const std::vector<float> x = rand_f32(size_t(M * K), r, -2, 2);
            matmul_case(w, N, x, M, b ? bias.data() : nullptr,
                        fmt_label("%s M=%lld N=%lld K=%lld%s", w.name().c_str(), (long long)M, (long long)N, (long long)K, b ? " bias" : ""));
          }
        }

  // Long rows: the multi-row GEMV tiles (x no longer fits L1) and many groups per row.
  struct Long { int bits, group, sd; int64_t K, N; std::vector<int64_t> Ms; };
  const Long longs[] = {
      {4, 64, mlx::kBF16, 4096, 64, {1, 2, 3, 4, 5}}, {8, 32, mlx::kF16, 4096, 37, {1, 2, 5, 9}},
      {3, 128, mlx::kF32, 4096, 17, {1, 3}},           {2, 64, mlx::kF16, 4096, 17, {2, 4}},
      {4, 64, mlx::kF16, 14336, 17, {1}},              {8, 128, mlx::kF32, 14336, 3, {3}},
      {6, 32, mlx::kBF16, 14336, 3, {2}},
  };
  for (const Long& c : longs) {
    Rng r(uint64_t(c.bits * 7 + c.K));
    const TestWeight w = quant_weight(c.N, c.K, c.bits, c.group, c.sd, r);
    const std::vector<float> bias = rand_f32(size_t(c.N), r);
    for (int64_t M : c.Ms) {
      const std::vector<float> x = rand_f32(size_t(M * c.K), r, -2, 2);
      matmul_case(w, c.N, x, M, M % 2 ? bias.data() : nullptr,
                  fmt_label("%s M=%lld N=%lld K=%lld%s", w.name().c_str(), (long long)M, (long long)c.N, (long long)c.K, M % 2 ? " bias" : ""));
    }
  }

  // Activation outliers, an all-zero group and a group of tiny values (what would expose a lossy
  // split of x on the integer-dot paths).
  for (int bits : {4, 8})
    for (int group : {32, 64, 128}) {
      Rng r(uint64_t(77 + bits + group));
      const TestWeight w = quant_weight(16, 512, bits, group, mlx::kBF16, r);
      for (int64_t M : {1, 3}) {
        std::vector<float> x = rand_f32(size_t(M * 512), r);
        x[5] = 300;
        x[77] = -250;
        for (int i = 128; i < 256; i++) x[i] = 0;
        for (int i = 256; i < 384; i++) x[i] *= 1e-30f;
        matmul_case(w, 16, x, M, nullptr, fmt_label("%s M=%lld N=16 K=512 outliers", w.name().c_str(), (long long)M));
      }
    }

  // Non-finite activations: rows with a NaN or an inf must come out non-finite (the integer-dot paths
  // fall back to the f32 path); the other rows of the same call stay exact.
  for (int kind = 0; kind < 6; kind++) {
    Rng r(uint64_t(500 + kind));
    const int64_t K = 256, N = 19;
    const TestWeight w = kind == 0 ? quant_weight(N, K, 4, 64, mlx::kF32, r)
                       : kind == 1 ? quant_weight(N, K, 8, 32, mlx::kF16, r)
                       : kind == 2 ? quant_weight(N, K, 4, 128, mlx::kBF16, r)
                       : kind == 3 ? quant_weight(N, K, 3, 32, mlx::kF32, r)
                       : kind == 4 ? float_weight(N, K, mlx::kBF16, r)
                                   : float_weight(N, K, mlx::kF32, r);
    for (int64_t M : {1, 3, 5, 17}) {
      std::vector<float> x = rand_f32(size_t(M * K), r);
      x[10] = NAN;                                 // row 0
      if (M > 1) x[K + 200] = INFINITY;            // row 1
      if (M > 3) x[3 * K + 63] = -INFINITY;        // row 3 (row 2 stays finite)
      matmul_case(w, N, x, M, nullptr, fmt_label("%s M=%lld N=%lld K=%lld non-finite x", w.name().c_str(), (long long)M, (long long)N, (long long)K));
    }
  }
}

// ---- q8act: the fast-activation GEMM (isa/gemm_q8act.h) ---------------------------------------
// Where a variant takes a case (matmul_q8act returns true) the result must equal the path's definition,
//   y = sum_g ( s * dx * sum_{c in g} q * xq + b * sum_{c in g} x ) + bias,
//   dx = max_g |x| / T (f32), xq = round_half_even(f32(x * f32(T / max))), T = 127 (1 plane) or 32639 (2),
// relative to sum_g |s dx| sum |q xq| + |b| sum |x| + |bias| <= 4e-6 (as matmul); where it declines, y
// must be untouched. Variants with a byte dot product must take 4-bit cases (and VNNI ones 8-bit).

double round_half_even(double v) {
  const double r = std::nearbyint(v);  // default rounding mode: to nearest, ties to even
  return r;
}

void q8act_case(const TestWeight& w, const std::vector<float>& x, int64_t M, const float* bias, int planes, const std::string& label) {
  const float T = planes == 2 ? 32639.f : 127.f;
  const int64_t K = w.cols, N = w.rows, G = w.group, gpr = K / G, row_bytes = K * w.bits / 8;
  std::vector<double> ref(size_t(M * N)), l1(size_t(M * N));
  std::vector<int32_t> xq(size_t(M * K));
  std::vector<double> dx(size_t(M * gpr)), xs(size_t(M * gpr)), xa(size_t(M * gpr));
  for (int64_t m = 0; m < M; m++)
    for (int64_t g = 0; g < gpr; g++) {
      float mx = 0;
      double s = 0, a = 0;
      for (int64_t c = g * G; c < (g + 1) * G; c++) {
        mx = std::max(mx, std::fabs(x[m * K + c]));
        s += x[m * K + c];
        a += std::fabs(x[m * K + c]);
      }
      dx[m * gpr + g] = double(mx / T);
      xs[m * gpr + g] = s;
      xa[m * gpr + g] = a;
      const float inv = mx > 0 ? T / mx : 0.f;
      for (int64_t c = g * G; c < (g + 1) * G; c++) {
        volatile float p = x[m * K + c] * inv;  // one f32 rounding, as the kernel's multiply
        xq[m * K + c] = int32_t(round_half_even(p));
      }
    }
  for (int64_t n = 0; n < N; n++)
    for (int64_t m = 0; m < M; m++) {
      double acc = bias ? bias[n] : 0, mag = bias ? std::fabs(bias[n]) : 0;
      for (int64_t g = 0; g < gpr; g++) {
        const double sc = float_at(w.scales.data(), w.sd, n * gpr + g), bi = float_at(w.biases.data(), w.sd, n * gpr + g);
        double dot = 0, dm = 0;
        for (int64_t c = g * G; c < (g + 1) * G; c++) {
          const double q = mlx_code(w.data() + n * row_bytes, w.bits, c);
          dot += q * xq[m * K + c];
          dm += q * std::abs(xq[m * K + c]);
        }
        acc += sc * dx[m * gpr + g] * dot + bi * xs[m * gpr + g];
        mag += std::fabs(sc * dx[m * gpr + g]) * dm + std::fabs(bi) * xa[m * gpr + g];
      }
      ref[m * N + n] = acc;
      l1[m * N + n] = mag;
    }
  std::vector<float> y(size_t(M * N));
  for (const KernelTable* v : V) {
    std::fill(y.begin(), y.end(), 12345.f);
    const bool taken = v->matmul_q8act(x.data(), M, w.ref(), bias, y.data(), planes);
    const std::string name = v->name;
    const bool vnni = name == "avx512vnni" || name == "avx2vnni";
    // M <= 16: the GEMV takes the integer activations on avx512vnni (4-bit with K % 128 == 0, 8-bit with K % 64 == 0).
    const bool gemv_fast = M <= 16 && name == "avx512vnni" && ((w.bits == 4 && K % 128 == 0) || (w.bits == 8 && K % 64 == 0));
    const bool must = gemv_fast || (M > 16 && (w.bits == 4 ? (vnni || name == "avx2" || name == "neon_dotprod") : w.bits == 8 && vnni));
    double err = 0;
    if (taken != must) {
      err = kInf;
    } else if (!taken) {
      for (float t : y) if (t != 12345.f) err = kInf;  // declined: y untouched
    } else {
      for (size_t i = 0; i < y.size(); i++) {
        const double e = std::fabs(double(y[i]) - ref[i]) / (l1[i] + 1e-30);
        if (!(e <= err)) err = std::isnan(e) ? kInf : e;
      }
    }
    R.check(v->name, "q8act", label + (taken ? "" : " (declined)"), err, 4e-6);
  }
}

void test_q8act() {
  int idx = 0;
  for (int bits : {4, 8, 3})
    for (int group : {32, 64, 128})
      for (int64_t M : {5, 17, 40, 300}) {
        Rng r(uint64_t(900 + idx++));
        const int64_t N = 37, K = 1152;
        const TestWeight w = quant_weight(N, K, bits, group, idx % 3, r);
        std::vector<float> x = rand_f32(size_t(M * K), r, -2, 2);
        for (int64_t m = 0; m < M; m++) x[m * K + (m * 37) % K] = 50.f;  // an outlier per row
        const std::vector<float> bias = rand_f32(size_t(N), r);
        for (int planes : {1, 2})
          q8act_case(w, x, M, idx % 2 ? bias.data() : nullptr, planes,
                     fmt_label("%s M=%lld N=%lld K=%lld planes=%d", w.name().c_str(), (long long)M, (long long)N, (long long)K, planes));
      }
}

// ---- gather ----------------------------------------------------------------------------------

void test_gather() {
  const std::vector<int32_t> ids7 = {0, 5, 5, 12, 1, 12, 0};
  std::vector<int32_t> ids40;
  for (int i = 0; i < 40; i++) ids40.push_back(int32_t((i * 7) % 13));
  // Float rows: bitwise the stored value widened.
  for (int dt : {mlx::kF32, mlx::kF16, mlx::kBF16})
    for (int64_t K : {int64_t(37), int64_t(4099)}) {
      Rng r(uint64_t(dt * 31 + K));
      const TestWeight w = float_weight(13, K, dt, r);
      const std::vector<int32_t>* id_lists[] = {&ids7, &ids40};
      for (const auto* ids : id_lists) {
        const int64_t n = int64_t(ids->size());
        std::vector<float> want(size_t(n * K));
        for (int64_t i = 0; i < n; i++)
          for (int64_t c = 0; c < K; c++) want[i * K + c] = float(w.W[(*ids)[i] * K + c]);
        std::vector<float> out(want.size());
        for (const KernelTable* v : V) {
          std::fill(out.begin(), out.end(), NAN);
          v->gather_rows(ids->data(), n, w.ref(), out.data());
          R.check(v->name, "gather", fmt_label("%s n=%lld K=%lld", dtype_name(dt), (long long)n, (long long)K),
                  exact_err(out.data(), want.data(), out.size()), 0);
        }
      }
    }
  // Quantized rows: s * q + b with at most one f32 rounding per operation (every bit width; 4 and 8 bit
  // also with long rows and a parallel lookup).
  for (int bits : {2, 3, 4, 5, 6, 8})
    for (int group : {32, 64, 128})
      for (int sd : {mlx::kF32, mlx::kF16, mlx::kBF16}) {
        const bool big = (bits == 4 || bits == 8) && sd == mlx::kBF16;
        const int64_t K = big ? 4096 : 2 * group;
        Rng r(uint64_t(bits * 101 + group + sd));
        const TestWeight w = quant_weight(13, K, bits, group, sd, r);
        const auto& ids = big ? ids40 : ids7;
        const int64_t n = int64_t(ids.size()), gpr = K / group;
        std::vector<float> out(size_t(n * K));
        for (const KernelTable* v : V) {
          std::fill(out.begin(), out.end(), NAN);
          v->gather_rows(ids.data(), n, w.ref(), out.data());
          double err = 0;
          for (int64_t i = 0; i < n; i++)
            for (int64_t c = 0; c < K; c++) {
              const int64_t row = ids[i];
              const double b = float_at(w.biases.data(), sd, row * gpr + c / group);
              const double ref = w.W[row * K + c];
              const double d = std::fabs(out[i * K + c] - ref), scale = std::fabs(ref - b) + std::fabs(b);
              const double e = d == 0 ? 0 : d / scale;
              if (!(e <= err)) err = std::isnan(e) ? kInf : e;
            }
          R.check(v->name, "gather", fmt_label("%s n=%lld K=%lld", w.name().c_str(), (long long)n, (long long)K), err, 0x1p-22);
        }
      }
}

// ---- norms, softmax, elementwise ---------------------------------------------------------------

void test_norms() {
  const int64_t shapes[][2] = {{1, 1}, {3, 7}, {5, 33}, {2, 4099}, {300, 64}};
  for (const auto& s : shapes) {
    const int64_t rows = s[0], dim = s[1];
    Rng r(uint64_t(rows * 7 + dim));
    const std::vector<float> x = rand_f32(size_t(rows * dim), r, -3, 3);
    const std::vector<float> w = rand_f32(size_t(dim), r);
    for (int mode = 0; mode < 3; mode++) {  // w, 1 + w (Gemma), none
      const float* wp = mode == 2 ? nullptr : w.data();
      const bool plus_one = mode == 1;
      std::vector<double> ref(x.size());
      for (int64_t i = 0; i < rows; i++) {
        double ss = 0;
        for (int64_t j = 0; j < dim; j++) ss += double(x[i * dim + j]) * x[i * dim + j];
        const double inv = 1 / std::sqrt(ss / dim + 1e-6);
        for (int64_t j = 0; j < dim; j++)
          ref[i * dim + j] = x[i * dim + j] * inv * (wp ? (plus_one ? 1.0 + w[j] : double(w[j])) : 1.0);
      }
      std::vector<float> out(x.size());
      for (const KernelTable* v : V) {
        std::fill(out.begin(), out.end(), NAN);
        v->rms_norm(x.data(), rows, dim, wp, 1e-6f, plus_one, out.data());
        R.check(v->name, "rms_norm", fmt_label("%lldx%lld %s", (long long)rows, (long long)dim, mode == 0 ? "w" : mode == 1 ? "1+w" : "no w"),
                rel_floor_err(out.data(), ref.data(), out.size(), 1e-6 / 1e-5), 1e-5);
      }
    }
  }
  {  // an all-zero row: eps keeps it finite (zeros, not NaN)
    const std::vector<float> z(8, 0.f);
    std::vector<float> out(8);
    const std::vector<double> zero(8, 0.0);
    for (const KernelTable* v : V) {
      std::fill(out.begin(), out.end(), NAN);
      v->rms_norm(z.data(), 1, 8, nullptr, 1e-5f, false, out.data());
      R.check(v->name, "rms_norm", "zero row", rel_floor_err(out.data(), zero.data(), 8, 0.1), 1e-5);
    }
  }
  const int64_t lshapes[][2] = {{1, 1}, {3, 7}, {4, 33}, {2, 4099}, {200, 96}};
  for (const auto& s : lshapes) {
    const int64_t rows = s[0], dim = s[1];
    Rng r(uint64_t(rows * 11 + dim));
    const std::vector<float> x = rand_f32(size_t(rows * dim), r, -2, 4);  // non-zero mean
    const std::vector<float> w = rand_f32(size_t(dim), r), b = rand_f32(size_t(dim), r);
    for (int mode = 0; mode < 4; mode++) {
      const float* wp = (mode == 0 || mode == 1) ? w.data() : nullptr;
      const float* bp = (mode == 0 || mode == 3) ? b.data() : nullptr;
      std::vector<double> ref(x.size());
      for (int64_t i = 0; i < rows; i++) {
        double mean = 0, var = 0;
        for (int64_t j = 0; j < dim; j++) mean += x[i * dim + j];
        mean /= dim;
        for (int64_t j = 0; j < dim; j++) var += (x[i * dim + j] - mean) * (x[i * dim + j] - mean);
        const double inv = 1 / std::sqrt(var / dim + 1e-5);
        for (int64_t j = 0; j < dim; j++)
          ref[i * dim + j] = (x[i * dim + j] - mean) * inv * (wp ? double(wp[j]) : 1.0) + (bp ? double(bp[j]) : 0.0);
      }
      std::vector<float> out(x.size());
      for (const KernelTable* v : V) {
        std::fill(out.begin(), out.end(), NAN);
        v->layer_norm(x.data(), rows, dim, wp, bp, 1e-5f, out.data());
        R.check(v->name, "layer_norm", fmt_label("%lldx%lld w=%d b=%d", (long long)rows, (long long)dim, wp != nullptr, bp != nullptr),
                rel_floor_err(out.data(), ref.data(), out.size(), 1e-6 / 1e-5), 1e-5);
      }
    }
  }
}

void softmax_ref(const float* x, int64_t rows, int64_t dim, double* y) {
  for (int64_t i = 0; i < rows; i++) {
    const float* xr = x + i * dim;
    double m = -kInf;
    for (int64_t j = 0; j < dim; j++) m = std::max(m, double(xr[j]));
    if (m == -kInf) {  // a fully masked row is defined as zeros
      for (int64_t j = 0; j < dim; j++) y[i * dim + j] = 0;
      continue;
    }
    double s = 0;
    for (int64_t j = 0; j < dim; j++) s += std::exp(double(xr[j]) - m);
    for (int64_t j = 0; j < dim; j++) y[i * dim + j] = std::exp(double(xr[j]) - m) / s;
  }
}

void test_softmax() {
  struct Case { std::string label; int64_t rows, dim; std::vector<float> x; };
  std::vector<Case> cases;
  const int64_t shapes[][2] = {{1, 1}, {3, 5}, {7, 33}, {2, 1000}, {64, 257}};
  for (const auto& s : shapes) {
    Rng r(uint64_t(s[1] + 11));
    std::vector<float> x = rand_f32(size_t(s[0] * s[1]), r, -20, 20);
    for (auto& v : x)
      if (r.uniform() < 0.2) v = -INFINITY;
    for (int64_t row = 0; row < s[0]; row++) x[row * s[1]] = float(50 + row);  // a finite max per row
    cases.push_back({fmt_label("%lldx%lld -inf entries", (long long)s[0], (long long)s[1]), s[0], s[1], x});
  }
  cases.push_back({"1x4 large logits", 1, 4, {1000, 999, -1000, 1000}});
  cases.push_back({"2x3 fully masked row", 2, 3, {-INFINITY, -INFINITY, -INFINITY, 1, 2, 3}});
  cases.push_back({"3x40 huge range", 3, 40, {}});
  {
    Rng r(9);
    cases.back().x = rand_f32(120, r, -3e4, 3e4);
  }
  for (const Case& c : cases) {
    std::vector<double> ref(c.x.size());
    softmax_ref(c.x.data(), c.rows, c.dim, ref.data());
    std::vector<float> out(c.x.size());
    for (const KernelTable* v : V) {
      std::fill(out.begin(), out.end(), NAN);
      v->softmax(c.x.data(), c.rows, c.dim, out.data());
      // per row, as the vitest suite does (rows are independent)
      double err = 0;
      for (int64_t i = 0; i < c.rows; i++)
        err = std::max(err, rel_floor_err(out.data() + i * c.dim, ref.data() + i * c.dim, size_t(c.dim), 1e-7 / 1e-5));
      R.check(v->name, "softmax", c.label, err, 1e-5);
    }
  }
}

void test_elementwise() {
  const int64_t sizes[] = {1, 7, 33, 1000, 40001};
  for (const UnaryInfo& u : kUnary)
    for (int64_t n : sizes) {
      Rng r(uint64_t(n * 13 + u.op));
      const bool is_sqrt = u.op == mlx::kSqrt, is_exp = u.op == mlx::kExp;
      std::vector<float> x = rand_f32(size_t(n), r, is_sqrt ? 0 : is_exp ? -80 : -12, is_exp ? 80 : 12);
      if (n > 7) {
        x[0] = 0;
        x[1] = -0.f;
        x[2] = 1e-20f;
        x[3] = is_exp ? -87 : -40;
        x[4] = is_exp ? 88 : 40;
        x[5] = is_sqrt ? -1 : -1e-8f;  // sqrt(-1) = NaN
      }
      std::vector<double> ref(x.size());
      for (size_t i = 0; i < x.size(); i++) ref[i] = ref_unary(u.op, x[i]);
      std::vector<float> out(x.size());
      for (const KernelTable* v : V) {
        std::fill(out.begin(), out.end(), NAN);
        v->unary(u.op, x.data(), n, out.data());
        R.check(v->name, "unary", fmt_label("%s n=%lld", u.name, (long long)n), rel_floor_err(out.data(), ref.data(), out.size(), 2e-7 / 4e-6), 4e-6);
      }
    }

  const char* bnames[] = {"add", "sub", "mul", "div", "max"};
  const int64_t bshapes[][2] = {{1, 1}, {33, 33}, {40001, 40001}, {35, 7}, {64 * 33, 33}, {40005, 5}, {17, 1}};
  for (int op = mlx::kAdd; op <= mlx::kMax; op++)
    for (const auto& s : bshapes) {
      Rng r(uint64_t(op * 1000 + s[0] + s[1]));
      const std::vector<float> a = rand_f32(size_t(s[0]), r, -5, 5), b = rand_f32(size_t(s[1]), r, -5, 5);
      std::vector<float> want(a.size()), out(a.size());
      for (int64_t i = 0; i < s[0]; i++) {  // float64 then one rounding = the IEEE f32 result
        const double p = a[i], q = b[i % s[1]];
        want[i] = float(op == mlx::kAdd ? p + q : op == mlx::kSub ? p - q : op == mlx::kMul ? p * q : op == mlx::kDiv ? p / q : std::max(p, q));
      }
      for (const KernelTable* v : V) {
        std::fill(out.begin(), out.end(), NAN);
        v->binary(op, a.data(), s[0], b.data(), s[1], out.data());
        R.check(v->name, "binary", fmt_label("%s n=%lld nb=%lld", bnames[op], (long long)s[0], (long long)s[1]), exact_err(out.data(), want.data(), out.size()), 0);
      }
    }

  for (int64_t n : sizes)
    for (const auto& st : {std::pair<float, float>{0.5f, 0.f}, {-3.25f, 1.5f}, {1e-3f, -7.f}}) {
      Rng r(uint64_t(n + 5));
      const std::vector<float> x = rand_f32(size_t(n), r, -100, 100);
      std::vector<float> out(x.size());
      for (const KernelTable* v : V) {
        std::fill(out.begin(), out.end(), NAN);
        v->affine(x.data(), n, st.first, st.second, out.data());
        double err = 0;
        for (int64_t i = 0; i < n; i++) {
          const double e = double(x[i]) * st.first + st.second, d = std::fabs(out[i] - e);
          const double rel = d == 0 ? 0 : d / (std::fabs(double(x[i]) * st.first) + std::fabs(st.second));
          if (!(rel <= err)) err = std::isnan(rel) ? kInf : rel;
        }
        R.check(v->name, "affine", fmt_label("n=%lld s=%g t=%g", (long long)n, st.first, st.second), err, 0x1p-23);
      }
    }

  // lincomb: out = sum_j c_j x_j; error / sum_j |c_j x_j| <= k 2^-22 (the vitest bound).
  for (int64_t n : sizes)
    for (int k : {1, 2, 4, 9}) {
      Rng r(uint64_t(n * 31 + k));
      std::vector<std::vector<float>> xs;
      for (int j = 0; j < k; j++) xs.push_back(rand_f32(size_t(n), r, -10, 10));
      const std::vector<float> c = rand_f32(size_t(k), r, -2, 2);
      std::vector<const float*> ptrs;
      for (const auto& x : xs) ptrs.push_back(x.data());
      std::vector<float> out(static_cast<size_t>(n), 0.f);
      for (const KernelTable* v : V) {
        std::fill(out.begin(), out.end(), NAN);
        v->lincomb(ptrs.data(), c.data(), k, n, out.data());
        double err = 0;
        for (int64_t i = 0; i < n; i++) {
          double e = 0, mag = 0;
          for (int j = 0; j < k; j++) {
            e += double(c[size_t(j)]) * xs[size_t(j)][size_t(i)];
            mag += std::fabs(double(c[size_t(j)]) * xs[size_t(j)][size_t(i)]);
          }
          const double d = std::fabs(out[size_t(i)] - e), rel = d == 0 ? 0 : d / mag;
          if (!(rel <= err)) err = std::isnan(rel) ? kInf : rel;
        }
        R.check(v->name, "lincomb", fmt_label("n=%lld k=%d", (long long)n, k), err, k * 0x1p-22);
      }
    }

  for (int64_t n : sizes) {
    Rng r(uint64_t(n + 6));
    const std::vector<float> x = rand_f32(size_t(n), r, -4, 4);
    const float lo = -1.25f, hi = 2.5f;
    std::vector<float> want(x.size()), out(x.size());
    for (size_t i = 0; i < x.size(); i++) want[i] = x[i] < lo ? lo : x[i] > hi ? hi : x[i];
    for (const KernelTable* v : V) {
      std::fill(out.begin(), out.end(), NAN);
      v->clamp(x.data(), n, lo, hi, out.data());
      R.check(v->name, "clamp", fmt_label("n=%lld", (long long)n), exact_err(out.data(), want.data(), out.size()), 0);
    }
  }

  const int64_t gshapes[][2] = {{1, 1}, {3, 7}, {5, 33}, {2, 1000}, {40, 257}};
  for (const auto& s : gshapes) {
    const int64_t rows = s[0], half = s[1];
    Rng r(uint64_t(rows * 3 + half));
    const std::vector<float> x = rand_f32(size_t(rows * 2 * half), r, -12, 12);
    std::vector<double> ref(size_t(rows * half));
    for (int64_t i = 0; i < rows; i++)
      for (int64_t j = 0; j < half; j++) {
        const double a = x[i * 2 * half + j], b = x[i * 2 * half + half + j];
        ref[i * half + j] = a / (1 + std::exp(-b));
      }
    std::vector<float> out(ref.size());
    for (const KernelTable* v : V) {
      std::fill(out.begin(), out.end(), NAN);
      v->glu(x.data(), rows, half, out.data());
      R.check(v->name, "glu", fmt_label("%lldx%lld", (long long)rows, (long long)half), rel_floor_err(out.data(), ref.data(), out.size(), 2e-7 / 4e-6), 4e-6);
    }
  }
}

void test_rope() {
  const int64_t shapes[][4] = {{1, 1, 2, 2}, {3, 4, 64, 64}, {5, 3, 96, 48}, {17, 2, 80, 20}, {300, 2, 32, 32}};
  for (const auto& s : shapes)
    for (bool inter : {false, true}) {
      const int64_t n_tok = s[0], n_heads = s[1], hd = s[2], rot = s[3], half = rot / 2, tab = 400;
      std::vector<float> cs(size_t(tab * half)), sn(cs.size());
      for (int64_t p = 0; p < tab; p++)
        for (int64_t i = 0; i < half; i++) {
          const double a = double(p) / std::pow(10000.0, double(2 * i) / double(rot));
          cs[p * half + i] = float(std::cos(a));
          sn[p * half + i] = float(std::sin(a));
        }
      Rng r(uint64_t(n_tok * 7 + hd));
      std::vector<int32_t> pos(static_cast<size_t>(n_tok));
      for (auto& p : pos) p = r.below(int(tab));
      const std::vector<float> x = rand_f32(size_t(n_tok * n_heads * hd), r, -2, 2);
      std::vector<float> out(x.size());
      for (const KernelTable* v : V) {
        out = x;
        v->rope(out.data(), n_tok, n_heads, hd, pos.data(), cs.data(), sn.data(), rot, inter);
        double err = 0;
        for (int64_t t = 0; t < n_tok; t++)
          for (int64_t h = 0; h < n_heads; h++) {
            const int64_t base = (t * n_heads + h) * hd;
            std::vector<char> rotated(size_t(hd), 0);
            for (int64_t i = 0; i < half; i++) {
              const int64_t ia = inter ? 2 * i : i, ib = inter ? 2 * i + 1 : i + half;
              rotated[ia] = rotated[ib] = 1;
              const double a = x[base + ia], b = x[base + ib];
              const double c = cs[pos[t] * half + i], sv = sn[pos[t] * half + i];
              const double ea = a * c - b * sv, eb = b * c + a * sv;
              const double sa = std::fabs(a * c) + std::fabs(b * sv), sb = std::fabs(b * c) + std::fabs(a * sv);
              const double da = std::fabs(out[base + ia] - ea), db = std::fabs(out[base + ib] - eb);
              const double e = std::max(da == 0 ? 0 : da / sa, db == 0 ? 0 : db / sb);
              if (!(e <= err)) err = std::isnan(e) ? kInf : e;
            }
            for (int64_t d = 0; d < hd; d++)
              if (!rotated[d] && !(out[base + d] == x[base + d])) err = kInf;  // pass-through dims
          }
        R.check(v->name, "rope", fmt_label("tok=%lld heads=%lld hd=%lld rot=%lld %s", (long long)n_tok, (long long)n_heads, (long long)hd, (long long)rot,
                                           inter ? "interleaved" : "half-split"),
                err, 0x1p-22);
      }
    }
}

// ---- attention (the flat single-sequence form) -------------------------------------------------

struct AttnCase {
  int kv_dtype, D, DV, n_heads, n_kv_heads;
  int64_t n_q, n_kv;
  bool causal;
  int64_t window;
  float scale, softcap;
  bool holes;  // some key slots empty (k_pos < 0)
};

void attention_case(const AttnCase& c) {
  Rng r(uint64_t(c.kv_dtype * 7919 + c.D * 131 + c.n_q * 17 + c.n_kv + c.window * 3 + (c.softcap > 0) + 2 * c.causal + 5 * c.holes + c.n_heads * 1009));
  const int H = c.n_heads, HK = c.n_kv_heads, D = c.D, DV = c.DV;
  const std::vector<float> q = rand_f32(size_t(c.n_q * H * D), r, -1.5, 1.5);
  const int es = esize(c.kv_dtype);
  std::vector<uint8_t> kb(size_t(c.n_kv * HK * D) * es), vb(size_t(c.n_kv * HK * DV) * es);
  for (int64_t i = 0; i < c.n_kv * HK * D; i++) store_float(kb.data(), c.kv_dtype, i, r.uf(-1, 1));
  for (int64_t i = 0; i < c.n_kv * HK * DV; i++) store_float(vb.data(), c.kv_dtype, i, r.uf(-1, 1));
  std::vector<int32_t> kpos(size_t(c.n_kv)), qpos(size_t(c.n_q));
  for (int64_t j = 0; j < c.n_kv; j++) kpos[j] = c.holes && j % 7 == 3 ? -1 : int32_t(j);
  for (int64_t i = 0; i < c.n_q; i++) qpos[i] = int32_t(c.n_kv - c.n_q + i);

  std::vector<double> ref(size_t(c.n_q * H * DV), 0.0), sc(size_t(c.n_kv));
  const int G = H / HK;
  for (int64_t i = 0; i < c.n_q; i++)
    for (int h = 0; h < H; h++) {
      const int hk = h / G;
      double m = -kInf;
      for (int64_t j = 0; j < c.n_kv; j++) {
        const int64_t kp = kpos[j], qp = qpos[i];
        const bool vis = kp >= 0 && (!c.causal || kp <= qp) && (c.window == 0 || qp - kp < c.window);
        if (!vis) { sc[j] = -kInf; continue; }
        double s = 0;
        for (int d = 0; d < D; d++) s += double(q[(i * H + h) * D + d]) * float_at(kb.data(), c.kv_dtype, (j * HK + hk) * D + d);
        s *= c.scale;
        if (c.softcap > 0) s = c.softcap * std::tanh(s / c.softcap);
        sc[j] = s;
        m = std::max(m, s);
      }
      if (m == -kInf) continue;  // sees nothing: zeros
      double z = 0;
      double* o = ref.data() + (i * H + h) * DV;
      for (int64_t j = 0; j < c.n_kv; j++) {
        if (sc[j] == -kInf) continue;
        const double p = std::exp(sc[j] - m);
        z += p;
        for (int d = 0; d < DV; d++) o[d] += p * float_at(vb.data(), c.kv_dtype, (j * HK + hk) * DV + d);
      }
      for (int d = 0; d < DV; d++) o[d] /= z;
    }

  mlx::AttentionArgs a;
  a.q = q.data();
  a.n_q = c.n_q;
  a.n_heads = H;
  a.head_dim = D;
  a.v_dim = DV;
  a.q_pos = qpos.data();
  a.k = kb.data();
  a.v = vb.data();
  a.kv_dtype = c.kv_dtype;
  a.n_kv = c.n_kv;
  a.n_kv_heads = HK;
  a.k_pos = kpos.data();
  a.scale = c.scale;
  a.softcap = c.softcap;
  a.causal = c.causal;
  a.window = c.window;
  std::vector<float> out(ref.size());
  a.out = out.data();
  const std::string label = fmt_label("%s nq=%lld nkv=%lld H=%d/%d D=%d DV=%d %s%s%s%s", dtype_name(c.kv_dtype), (long long)c.n_q,
                                      (long long)c.n_kv, H, HK, D, DV, c.causal ? "causal" : "bidir",
                                      c.window ? fmt_label(" window=%lld", (long long)c.window).c_str() : "",
                                      c.softcap > 0 ? " softcap" : "", c.holes ? " holes" : "");
  for (const KernelTable* v : V) {
    std::fill(out.begin(), out.end(), NAN);
    v->attention(a);
    R.check(v->name, "attention", label, max_norm_err(out.data(), ref.data(), out.size()), 3e-5);
  }
}

void test_attention() {
  int i = 0;
  for (int dt : {mlx::kF32, mlx::kF16, mlx::kBF16})
    for (int D : {64, 80})
      for (int64_t nq : {int64_t(1), int64_t(37)})
        for (int mode = 0; mode < 5; mode++) {
          // GQA groups cycle through 4 (8 heads on 2), 1 (4 on 4) and 8 (8 on 1).
          const int gq = i++ % 3;
          const int H = gq == 1 ? 4 : 8, HK = gq == 0 ? 2 : gq == 1 ? 4 : 1;
          AttnCase c{dt, D, D, H, HK, nq, nq == 1 ? 300 : 120, true, 0, float(1 / std::sqrt(double(D))), 0.f, false};
          if (mode == 1) c.window = 23;
          if (mode == 2) { c.scale = 0.6f; c.softcap = 2.5f; }
          if (mode == 3) c.causal = false;
          if (mode == 4) { c.holes = true; c.window = 50; }
          attention_case(c);
        }
  // v_dim != head_dim (v rows padded to the vector width inside the kernel), and a long decode.
  attention_case({mlx::kF16, 64, 72, 8, 2, 37, 90, true, 0, 0.125f, 0.f, false});
  attention_case({mlx::kBF16, 80, 48, 4, 1, 1, 700, true, 0, 0.1f, 0.f, true});
  attention_case({mlx::kF32, 64, 64, 8, 2, 1, 1000, true, 0, 0.125f, 0.f, false});
}

// ---- attention, batched form over cache storage (tile layout, quantized KV) ---------------------
// The layout of kernels.h (KvSegment): head-major 16-slot tiles, K tile [D][16] at tile
// i = h * capacity / 16 + slot / 16, V row r = h * capacity + slot; quantized K: 8-bit codes in the same
// layout with f32 scales/biases [D/group][16] per tile; quantized V: rows of DV * v_bits / 8 bytes
// (4-bit: each 32-code chunk is 16 bytes, byte j = code j | code j + 16 << 4), scales/biases
// [DV/group] per row. Slots past n and empty slots (pos < 0) hold NaN where the format can, so that a
// kernel reading them would show.

enum KvKind { kKvF32, kKvF16, kKvBF16, kKvQ8, kKvK8V4, kKvRowsF32 };
const char* kv_kind_name(int k) {
  const char* n[] = {"f32", "f16", "bf16", "q8", "k8v4", "rows-f32"};
  return n[k];
}

struct KvStore {
  std::vector<uint8_t> k, v;
  std::vector<float> ks, kb, vs, vb;
  std::vector<int32_t> pos;
  std::vector<double> K, V;  // exact values [slot][head][dim] (meaningless where pos < 0)
  mlx::KvSegment seg;
};

void make_kv(KvStore& s, int kind, int64_t n, int HK, int D, int DV, int group, int32_t pos0, bool holes, Rng& r) {
  s.pos.resize(size_t(n));
  for (int64_t j = 0; j < n; j++) s.pos[j] = holes && j % 11 == 4 ? -1 : pos0 + int32_t(j);
  s.K.assign(size_t(n * HK * D), 0.0);
  s.V.assign(size_t(n * HK * DV), 0.0);
  mlx::KvSegment& g = s.seg;
  g = mlx::KvSegment();
  g.pos = s.pos.data();
  g.n = n;
  if (kind == kKvRowsF32) {
    g.dtype = mlx::kF32;
    g.layout = mlx::kKvRows;
    s.k.resize(size_t(n * HK * D) * 4);
    s.v.resize(size_t(n * HK * DV) * 4);
    for (int64_t i = 0; i < n * HK * D; i++) store_float(s.k.data(), mlx::kF32, i, r.uf(-1, 1));
    for (int64_t i = 0; i < n * HK * DV; i++) store_float(s.v.data(), mlx::kF32, i, r.uf(-1, 1));
    for (int64_t i = 0; i < n * HK * D; i++) s.K[i] = float_at(s.k.data(), mlx::kF32, i);
    for (int64_t i = 0; i < n * HK * DV; i++) s.V[i] = float_at(s.v.data(), mlx::kF32, i);
    g.k = s.k.data();
    g.v = s.v.data();
    return;
  }
  const int64_t cap = (n + 15) / 16 * 16 + 16;  // a spare tile past the end
  g.layout = mlx::kKvTiles;
  g.capacity = cap;
  const bool quant = kind == kKvQ8 || kind == kKvK8V4;
  auto valid = [&](int64_t slot) { return slot < n && s.pos[slot] >= 0; };
  if (!quant) {
    const int dt = kind == kKvF32 ? mlx::kF32 : kind == kKvF16 ? mlx::kF16 : mlx::kBF16;
    g.dtype = dt;
    s.k.resize(size_t(HK * cap * D) * esize(dt));
    s.v.resize(size_t(HK * cap * DV) * esize(dt));
    for (int h = 0; h < HK; h++)
      for (int64_t slot = 0; slot < cap; slot++) {
        const int64_t tile = h * (cap / 16) + slot / 16, lane = slot % 16;
        for (int d = 0; d < D; d++) {
          const int64_t i = (tile * D + d) * 16 + lane;
          store_float(s.k.data(), dt, i, valid(slot) ? r.uf(-1, 1) : NAN);
          if (valid(slot)) s.K[(slot * HK + h) * D + d] = float_at(s.k.data(), dt, i);
        }
        for (int d = 0; d < DV; d++) {
          const int64_t i = (h * cap + slot) * DV + d;
          store_float(s.v.data(), dt, i, valid(slot) ? r.uf(-1, 1) : NAN);
          if (valid(slot)) s.V[(slot * HK + h) * DV + d] = float_at(s.v.data(), dt, i);
        }
      }
    g.k = s.k.data();
    g.v = s.v.data();
    return;
  }
  g.dtype = mlx::kQAffine;
  g.group = group;
  g.v_bits = kind == kKvK8V4 ? 4 : 8;
  const int ngk = D / group, ngv = DV / group;
  s.k.resize(size_t(HK * cap * D));
  s.ks.resize(size_t(HK * cap * ngk));
  s.kb.resize(s.ks.size());
  s.v.resize(size_t(HK * cap * DV * g.v_bits / 8));
  s.vs.resize(size_t(HK * cap * ngv));
  s.vb.resize(s.vs.size());
  for (int h = 0; h < HK; h++)
    for (int64_t slot = 0; slot < cap; slot++) {
      const int64_t tile = h * (cap / 16) + slot / 16, lane = slot % 16, row = h * cap + slot;
      for (int gi = 0; gi < ngk; gi++) {
        const int64_t si = (tile * ngk + gi) * 16 + lane;
        s.ks[si] = valid(slot) ? r.uf(-0.02, 0.02) : NAN;  // both signs
        s.kb[si] = valid(slot) ? r.uf(-1, 1) : NAN;
        for (int d = gi * group; d < (gi + 1) * group; d++) {
          const uint8_t q = uint8_t(r.next() >> 56);
          s.k[(tile * D + d) * 16 + lane] = q;
          if (valid(slot)) s.K[(slot * HK + h) * D + d] = double(s.ks[si]) * q + s.kb[si];
        }
      }
      for (int gi = 0; gi < ngv; gi++) {
        const int64_t si = row * ngv + gi;
        const double qmax = g.v_bits == 8 ? 255 : 15;
        s.vs[si] = valid(slot) ? r.uf(-2 / qmax, 2 / qmax) : NAN;
        s.vb[si] = valid(slot) ? r.uf(-1, 1) : NAN;
      }
      uint8_t* vr = s.v.data() + row * (DV * g.v_bits / 8);
      for (int d = 0; d < DV; d++) {
        const uint32_t q = uint32_t(r.next() >> 56) & (g.v_bits == 8 ? 255u : 15u);
        if (g.v_bits == 8) {
          vr[d] = uint8_t(q);
        } else {  // split-nibble chunks of 32 codes
          const int c0 = d / 32 * 32, j = d % 32;
          uint8_t& byte = vr[c0 / 2 + (j % 16)];
          byte = uint8_t(j < 16 ? (byte & 0xf0) | q : (byte & 0x0f) | (q << 4));
        }
        const int64_t si = row * ngv + d / group;
        if (valid(slot)) s.V[(slot * HK + h) * DV + d] = double(s.vs[si]) * q + s.vb[si];
      }
    }
  g.k = s.k.data();
  g.v = s.v.data();
  g.k_scales = s.ks.data();
  g.k_biases = s.kb.data();
  g.v_scales = s.vs.data();
  g.v_biases = s.vb.data();
}

struct SeqSpec {
  std::vector<KvStore*> segs;
  int64_t n_q = 0;
  std::vector<uint8_t> mask;  // [n_heads, n_q, cols] or empty
  std::vector<int32_t> spans;
};

void attention_tiles_case(int kind, int D, int H, int HK, int64_t n_q, int mode, bool holes, int group) {
  Rng r(uint64_t(kind * 1000 + D * 7 + H * 3 + HK + n_q * 101 + mode * 13 + holes));
  const int DV = D;
  const float scale = float(1 / std::sqrt(double(D))), softcap = mode == 3 ? 2.5f : 0.f;
  const int64_t window = mode == 1 ? 23 : 0;
  // Sequence 0: a cache body in `kind` plus a row-layout f32 staging tail; sequence 1: the body only.
  const int64_t n0 = n_q == 1 ? 300 : 90, n1 = n_q == 1 ? 77 : 60;
  KvStore body0, tail0, body1;
  make_kv(body0, kind, n0, HK, D, DV, group, 0, holes, r);
  make_kv(tail0, kKvRowsF32, 5, HK, D, DV, group, int32_t(n0), false, r);
  make_kv(body1, kind, n1, HK, D, DV, group, 0, false, r);
  SeqSpec seq[2];
  seq[0].segs = {&body0, &tail0};
  seq[1].segs = {&body1};
  std::vector<int32_t> qpos;
  for (int s = 0; s < 2; s++) {
    int64_t cols = 0, last = 0;
    for (KvStore* k : seq[s].segs) {
      cols += k->seg.n;
      last = std::max<int64_t>(last, k->pos.back());
    }
    seq[s].n_q = n_q;
    for (int64_t i = 0; i < n_q; i++) qpos.push_back(int32_t(last - n_q + 1 + i));
    if (mode == 2 && n_q > 1) {  // a random per-head mask, and a bidirectional span
      seq[s].mask.resize(size_t(H * n_q * cols));
      for (auto& m : seq[s].mask) m = r.uniform() < 0.7;
      seq[s].spans = {int32_t(last - n_q - 3), int32_t(last - n_q + 9), int32_t(last - n_q + 20), int32_t(last - n_q + 30)};
    }
  }
  const int64_t NQ = 2 * n_q;
  const std::vector<float> q = rand_f32(size_t(NQ * H * D), r, -1.5, 1.5);

  std::vector<double> ref(size_t(NQ * H * DV), 0.0);
  const int G = H / HK;
  for (int s = 0; s < 2; s++) {
    const SeqSpec& sq = seq[s];
    int64_t cols = 0;
    for (KvStore* k : sq.segs) cols += k->seg.n;
    for (int64_t i = 0; i < sq.n_q; i++) {
      const int64_t row = s * n_q + i, qp = qpos[row];
      int64_t slo = 0, shi = 0;
      for (size_t p = 0; p + 1 < sq.spans.size(); p += 2)
        if (qp >= sq.spans[p] && qp < sq.spans[p + 1]) { slo = sq.spans[p]; shi = sq.spans[p + 1]; break; }
      for (int h = 0; h < H; h++) {
        const int hk = h / G;
        std::vector<double> sc;
        std::vector<const double*> vrows;
        int64_t col = 0;
        for (KvStore* k : sq.segs)
          for (int64_t j = 0; j < k->seg.n; j++, col++) {
            const int64_t kp = k->pos[j];
            bool vis = kp >= 0 && (((kp <= qp) && (window == 0 || qp - kp < window)) || (kp >= slo && kp < shi));
            if (vis && !sq.mask.empty() && !sq.mask[(h * sq.n_q + i) * cols + col]) vis = false;
            if (!vis) continue;
            double d = 0;
            for (int e = 0; e < D; e++) d += double(q[(row * H + h) * D + e]) * k->K[(j * HK + hk) * D + e];
            d *= scale;
            if (softcap > 0) d = softcap * std::tanh(d / softcap);
            sc.push_back(d);
            vrows.push_back(k->V.data() + (j * HK + hk) * DV);
          }
        if (sc.empty()) continue;
        const double m = *std::max_element(sc.begin(), sc.end());
        double z = 0;
        double* o = ref.data() + (row * H + h) * DV;
        for (size_t c = 0; c < sc.size(); c++) {
          const double p = std::exp(sc[c] - m);
          z += p;
          for (int e = 0; e < DV; e++) o[e] += p * vrows[c][e];
        }
        for (int e = 0; e < DV; e++) o[e] /= z;
      }
    }
  }

  std::vector<mlx::KvSegment> segs0 = {body0.seg, tail0.seg}, segs1 = {body1.seg};
  mlx::AttnSeq as[2];
  for (int s = 0; s < 2; s++) {
    as[s].q_begin = s * n_q;
    as[s].n_q = n_q;
    as[s].segs = s == 0 ? segs0.data() : segs1.data();
    as[s].n_segs = s == 0 ? 2 : 1;
    if (!seq[s].mask.empty()) {
      as[s].mask = seq[s].mask.data();
      as[s].mask_heads = H;
    }
    if (!seq[s].spans.empty()) {
      as[s].spans = seq[s].spans.data();
      as[s].n_spans = int(seq[s].spans.size() / 2);
    }
  }
  mlx::AttentionArgs a;
  a.q = q.data();
  a.n_q = NQ;
  a.n_heads = H;
  a.head_dim = D;
  a.v_dim = DV;
  a.q_pos = qpos.data();
  a.n_kv_heads = HK;
  a.scale = scale;
  a.softcap = softcap;
  a.causal = true;
  a.window = window;
  a.seqs = as;
  a.n_seqs = 2;
  std::vector<float> out(ref.size());
  a.out = out.data();
  const char* modes[] = {"causal", "window=23", "mask+spans", "softcap"};
  const std::string label = fmt_label("%s%s nq=2x%lld H=%d/%d D=%d %s%s", kv_kind_name(kind),
                                      kind == kKvQ8 || kind == kKvK8V4 ? fmt_label(" g%d", group).c_str() : "", (long long)n_q, H, HK, D,
                                      modes[mode], holes ? " holes" : "");
  for (const KernelTable* v : V) {
    std::fill(out.begin(), out.end(), NAN);
    v->attention(a);
    R.check(v->name, "attention-kv", label, max_norm_err(out.data(), ref.data(), out.size()), 3e-5);
  }
}

void test_attention_kv() {
  // GQA cycles through 4, 1, 8 and 2 query heads per KV head (decode runs the in-register paths when a
  // unit has few query vectors, how few depending on the vector width).
  const int gqa[][2] = {{8, 2}, {4, 4}, {8, 1}, {4, 2}};
  int i = 0;
  for (int kind : {kKvF32, kKvF16, kKvBF16, kKvQ8, kKvK8V4})
    for (int D : {64, 80}) {
      const bool quant = kind == kKvQ8 || kind == kKvK8V4;
      if (quant && D % 32) continue;  // quantized KV: groups of 32 / 64 along the head dim
      for (int64_t n_q : {int64_t(1), int64_t(37)})
        for (int mode = 0; mode < 4; mode++) {
          if (mode == 2 && n_q == 1) continue;
          const int* g = gqa[i % 4];
          attention_tiles_case(kind, D, g[0], g[1], n_q, mode, i % 3 == 1, i % 2 ? 32 : 64);
          i++;
        }
    }
}

// ---- mixture of experts ----------------------------------------------------------------------

void test_moe() {
  struct Cfg { const char* name; int64_t E, H, I; int k; int act; std::vector<std::string> kinds; };
  const Cfg cfgs[] = {
      {"E8 k2 H128 I192 silu", 8, 128, 192, 2, mlx::kSilu, {"f32", "bf16", "q4 g64 sbf16", "q8 g32 sf16"}},
      {"E5 k3 H96 I160 gelu_tanh", 5, 96, 160, 3, mlx::kGeluTanh, {"f16", "q4 g32 sf32", "q3 g32 sf16"}},
      {"E4 k2 H70 I45", 4, 70, 45, 2, mlx::kSilu, {"f32", "bf16"}},
  };
  for (const Cfg& c : cfgs)
    for (const std::string& kind : c.kinds)
      for (bool fused : {false, true}) {
        Rng r(uint64_t(c.E * 1000 + c.H + c.I + kind.size() * 7 + fused));
        auto make = [&](int64_t rows, int64_t cols) {
          if (kind == "f32") return float_weight(rows, cols, mlx::kF32, r, 0.15);
          if (kind == "f16") return float_weight(rows, cols, mlx::kF16, r, 0.15);
          if (kind == "bf16") return float_weight(rows, cols, mlx::kBF16, r, 0.15);
          if (kind == "q4 g64 sbf16") return quant_weight(rows, cols, 4, 64, mlx::kBF16, r, 0.1);
          if (kind == "q8 g32 sf16") return quant_weight(rows, cols, 8, 32, mlx::kF16, r, 0.1);
          if (kind == "q4 g32 sf32") return quant_weight(rows, cols, 4, 32, mlx::kF32, r, 0.1);
          return quant_weight(rows, cols, 3, 32, mlx::kF16, r, 0.1);
        };
        const int64_t E = c.E, H = c.H, I = c.I;
        TestWeight gate = make(E * (fused ? 2 * I : I), H);
        TestWeight up = fused ? TestWeight() : make(E * I, H);
        TestWeight down = make(E * H, I);
        for (int64_t T : {int64_t(1), int64_t(7), int64_t(64)}) {
          const int k = c.k;
          const std::vector<float> x = rand_f32(size_t(T * H), r);
          std::vector<int32_t> ids(size_t(T * k));
          std::vector<float> wts(size_t(T * k));
          for (int64_t t = 0; t < T; t++)
            for (int j = 0; j < k; j++) {
              int32_t e;
              bool dup;
              do {  // k distinct experts; from 64 tokens on expert 0 gets most tokens (a GEMM-sized job)
                e = (j == 0 && T >= 64 && r.uniform() < 0.8) ? 0 : int32_t(r.below(int(E)));
                dup = false;
                for (int jj = 0; jj < j; jj++) dup |= ids[t * k + jj] == e;
              } while (dup);
              ids[t * k + j] = e;
              wts[t * k + j] = r.uf(0.1, 1.0);
            }
          // Reference from float64 matmuls over the exact weights.
          std::vector<double> ref(size_t(T * H), 0.0), xd(x.begin(), x.end()), g(static_cast<size_t>(I)), u(static_cast<size_t>(I)), h(static_cast<size_t>(I)), y(static_cast<size_t>(H));
          for (int64_t t = 0; t < T; t++)
            for (int j = 0; j < k; j++) {
              const int64_t e = ids[t * k + j];
              ref_matmul_d(xd.data() + t * H, 1, gate, fused ? 2 * I * e : I * e, I, g.data());
              if (fused) ref_matmul_d(xd.data() + t * H, 1, gate, 2 * I * e + I, I, u.data());
              else ref_matmul_d(xd.data() + t * H, 1, up, I * e, I, u.data());
              for (int64_t i = 0; i < I; i++) h[i] = (c.act == mlx::kSilu ? silu(g[i]) : gelu_tanh(g[i])) * u[i];
              ref_matmul_d(h.data(), 1, down, H * e, H, y.data());
              for (int64_t n = 0; n < H; n++) ref[t * H + n] += double(wts[t * k + j]) * y[n];
            }
          mlx::MoeArgs a;
          a.x = x.data();
          a.T = T;
          a.H = H;
          a.I = I;
          a.E = E;
          a.k = k;
          a.ids = ids.data();
          a.weights = wts.data();
          a.gate = gate.ref();
          if (!fused) a.up = up.ref();
          a.down = down.ref();
          a.fused = fused;
          a.act = c.act;
          std::vector<float> og(size_t(T * H)), ogr(og.size());
          const std::string label = fmt_label("%s %s %s T=%lld", c.name, kind.c_str(), fused ? "fused" : "split", (long long)T);
          for (const KernelTable* v : V) {
            std::fill(og.begin(), og.end(), NAN);
            std::fill(ogr.begin(), ogr.end(), NAN);
            a.path = mlx::kMoeGather;
            a.out = og.data();
            v->moe_switch_glu(a);
            a.path = mlx::kMoeGrouped;
            a.out = ogr.data();
            v->moe_switch_glu(a);
            R.check(v->name, "moe", label + " gather", max_norm_err(og.data(), ref.data(), og.size()), 1e-5);
            R.check(v->name, "moe", label + " grouped", max_norm_err(ogr.data(), ref.data(), ogr.size()), 1e-5);
            R.check(v->name, "moe", label + " grouped~gather", max_norm_err_f(ogr.data(), og.data(), og.size()), 1e-5);
          }
        }
      }
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2;
  if (const char* t = std::getenv("MLXCEL_THREADS")) threads = std::max(1, std::atoi(t));
  std::vector<std::string> only;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    if (a == "--verbose" || a == "-v") R.verbose = true;
    else if (a == "--threads" && i + 1 < argc) threads = std::max(1, std::atoi(argv[++i]));
    else if (a == "--help" || a == "-h") {
      std::printf("usage: %s [--threads N] [--verbose] [GROUP...]\n", argv[0]);
      std::printf("groups: matmul gather norms softmax elementwise rope attention attention-kv moe\n");
      return 0;
    } else only.push_back(a);
  }
  mlx::set_pool_threads(threads);
  V = mlx::available_variants();
  for (const KernelTable* v : V)
    if (std::string(v->name) == "scalar") g_scalar = v;
  std::string names;
  for (const KernelTable* v : V) names += std::string(names.empty() ? "" : ", ") + v->name;
#if defined(__aarch64__)
  const char* arch = "aarch64";
#elif defined(__x86_64__)
  const char* arch = "x86_64";
#else
  const char* arch = "other";
#endif
  std::printf("mlxcel kernel conformance (%s): variants %s; %d threads\n", arch, names.c_str(), mlx::pool_threads());

  struct Group { const char* name; void (*fn)(); };
  const Group groups[] = {{"matmul", test_matmul},   {"gather", test_gather},   {"norms", test_norms},
                          {"softmax", test_softmax}, {"elementwise", test_elementwise}, {"rope", test_rope},
                          {"attention", test_attention}, {"attention-kv", test_attention_kv}, {"moe", test_moe},
                          {"q8act", test_q8act}};
  const auto t_all = std::chrono::steady_clock::now();
  for (const Group& g : groups) {
    bool run = only.empty();
    for (const std::string& o : only) run |= std::string(g.name).find(o) != std::string::npos;
    if (!run) continue;
    const size_t before = R.order.size();
    const auto t0 = std::chrono::steady_clock::now();
    g.fn();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (size_t i = before; i < R.order.size(); i++) R.print_group(R.order[i], V, i + 1 == R.order.size() ? s : -1);
  }
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_all).count();

  int64_t cases = 0;
  for (const auto& g : R.stats)
    for (const auto& v : g.second) cases += v.second.cases;
  if (R.failures.empty()) {
    std::printf("PASS: %lld checks over %zu variants (%s), %.1f s\n", (long long)cases, V.size(), names.c_str(), total);
    return 0;
  }
  std::printf("FAIL: %zu of %lld checks failed (%.1f s):\n", R.failures.size(), (long long)cases, total);
  for (const Failure& f : R.failures)
    std::printf("  %-14s %-26s %-60s err %.3g > bound %.3g\n", f.variant.c_str(), f.group.c_str(), f.label.c_str(), f.err, f.bound);
  return 1;
}
