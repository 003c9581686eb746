#include "args.h"

namespace mlx {

void throw_type(Napi::Env env, const std::string& msg) { throw Napi::TypeError::New(env, msg); }
void throw_range(Napi::Env env, const std::string& msg) { throw Napi::RangeError::New(env, msg); }

static std::string where(const char* fn, const char* name) { return std::string(fn) + ": " + name; }

bool is_nullish(const Napi::Value& v) { return v.IsUndefined() || v.IsNull(); }

// Element size of a TypedArray type (napi_typedarray_type order).
static size_t typed_element_size(napi_typedarray_type t) {
  switch (t) {
    case napi_int8_array: case napi_uint8_array: case napi_uint8_clamped_array: return 1;
    case napi_int16_array: case napi_uint16_array: return 2;
    case napi_int32_array: case napi_uint32_array: case napi_float32_array: return 4;
    default: return 8;  // float64, bigint64, biguint64
  }
}

Bytes bytes_arg(const Napi::Value& v, const char* fn, const char* name) {
  Bytes b;
  if (v.IsTypedArray()) {
    // One napi_get_typedarray_info gives the type, the length and the data pointer already offset by
    // byteOffset (node-addon-api's ArrayBuffer() / ByteOffset() / ByteLength() would make five calls).
    napi_typedarray_type type;
    size_t length = 0;
    void* data = nullptr;
    if (napi_get_typedarray_info(v.Env(), v, &type, &length, &data, nullptr, nullptr) != napi_ok)
      throw_type(v.Env(), where(fn, name) + " could not be read as a TypedArray");
    b.data = static_cast<uint8_t*>(data);
    b.size = length * typed_element_size(type);
  } else if (v.IsArrayBuffer()) {
    auto ab = v.As<Napi::ArrayBuffer>();
    b.data = static_cast<uint8_t*>(ab.Data());
    b.size = ab.ByteLength();
  } else if (v.IsDataView()) {
    auto dv = v.As<Napi::DataView>();
    b.data = static_cast<uint8_t*>(dv.ArrayBuffer().Data()) + dv.ByteOffset();
    b.size = dv.ByteLength();
  } else {
    throw_type(v.Env(), where(fn, name) + " must be a TypedArray or ArrayBuffer");
  }
  if (b.size > 0 && b.data == nullptr) throw_type(v.Env(), where(fn, name) + " is a detached buffer");
  return b;
}

// A TypedArray of `type` with at least min_count elements: one napi_get_typedarray_info on success.
static void* typed_arg(const Napi::Value& v, const char* fn, const char* name, int64_t min_count, napi_typedarray_type want,
                       const char* type_name) {
  napi_typedarray_type type;
  size_t length = 0;
  void* data = nullptr;
  if (!v.IsTypedArray() || napi_get_typedarray_info(v.Env(), v, &type, &length, &data, nullptr, nullptr) != napi_ok || type != want)
    throw_type(v.Env(), where(fn, name) + " must be a" + (type_name[0] == 'I' ? "n " : " ") + type_name);
  if (int64_t(length) < min_count)
    throw_range(v.Env(), where(fn, name) + " has " + std::to_string(length) + " elements, needs " + std::to_string(min_count));
  return data;
}

float* f32_arg(const Napi::Value& v, const char* fn, const char* name, int64_t min_count) {
  return static_cast<float*>(typed_arg(v, fn, name, min_count, napi_float32_array, "Float32Array"));
}

int32_t* i32_arg(const Napi::Value& v, const char* fn, const char* name, int64_t min_count) {
  return static_cast<int32_t*>(typed_arg(v, fn, name, min_count, napi_int32_array, "Int32Array"));
}

int64_t int_arg(const Napi::Value& v, const char* fn, const char* name, int64_t lo, int64_t hi) {
  if (!v.IsNumber()) throw_type(v.Env(), where(fn, name) + " must be a number");
  double d = v.As<Napi::Number>().DoubleValue();
  if (!(d == double(int64_t(d)))) throw_type(v.Env(), where(fn, name) + " must be an integer, got " + std::to_string(d));
  int64_t i = int64_t(d);
  if (i < lo || i > hi)
    throw_range(v.Env(), where(fn, name) + " = " + std::to_string(i) + " is outside [" + std::to_string(lo) + ", " +
                             std::to_string(hi) + "]");
  return i;
}

Napi::Object options_arg(const Napi::CallbackInfo& info, const char* fn) {
  if (!info[0].IsObject()) throw_type(info.Env(), std::string(fn) + ": expects one options object");
  return info[0].As<Napi::Object>();
}

ConvWindow conv_window_arg(const Napi::Object& o, const char* fn, int64_t h, int64_t w) {
  ConvWindow c;
  c.kh = int(int_arg(o.Get("kh"), fn, "kh", 1, 64));
  c.kw = int(int_arg(o.Get("kw"), fn, "kw", 1, 64));
  c.sh = int(int_arg(o.Get("strideH"), fn, "strideH", 1, 64));
  c.sw = int(int_arg(o.Get("strideW"), fn, "strideW", 1, 64));
  c.pad_top = int(int_arg(o.Get("padTop"), fn, "padTop", 0, 64));
  const int pb = int(int_arg(o.Get("padBottom"), fn, "padBottom", 0, 64));
  c.pad_left = int(int_arg(o.Get("padLeft"), fn, "padLeft", 0, 64));
  const int pr = int(int_arg(o.Get("padRight"), fn, "padRight", 0, 64));
  // h, w <= 2^31 and pads <= 64: these sums cannot overflow.
  const int64_t hp = h + c.pad_top + pb, wp = w + c.pad_left + pr;
  if (hp < c.kh || wp < c.kw)
    throw_range(o.Env(), std::string(fn) + ": padded input [" + std::to_string(hp) + ", " + std::to_string(wp) +
                             "] is smaller than the kernel [" + std::to_string(c.kh) + ", " + std::to_string(c.kw) + "]");
  c.out_h = (hp - c.kh) / c.sh + 1;
  c.out_w = (wp - c.kw) / c.sw + 1;
  return c;
}

int64_t count_of(Napi::Env env, const char* fn, int64_t a, int64_t b, int64_t c) {
  constexpr int64_t kMax = int64_t(1) << 61;
  int64_t ab = 0, abc = 0;
  if (a < 0 || b < 0 || c < 0 || __builtin_mul_overflow(a, b, &ab) || __builtin_mul_overflow(ab, c, &abc) || abc > kMax)
    throw_range(env, std::string(fn) + ": sizes " + std::to_string(a) + " x " + std::to_string(b) + " x " + std::to_string(c) +
                         " are too large");
  return abc;
}

int64_t checked_size(Napi::Env env, const char* fn, const std::string& what, std::initializer_list<int64_t> factors) {
  constexpr int64_t kMax = int64_t(1) << 61;
  int64_t p = 1;
  bool bad = false;
  std::string dims;
  for (int64_t f : factors) {
    dims += (dims.empty() ? "" : " x ") + std::to_string(f);
    if (f < 0 || __builtin_mul_overflow(p, f, &p) || p > kMax) bad = true;
  }
  if (bad) throw_range(env, std::string(fn) + ": " + what + " size " + dims + " is too large (over 2^61)");
  return p;
}

double num_arg(const Napi::Value& v, const char* fn, const char* name) {
  if (!v.IsNumber()) throw_type(v.Env(), where(fn, name) + " must be a number");
  return v.As<Napi::Number>().DoubleValue();
}

bool bool_arg(const Napi::Value& v, const char* fn, const char* name) {
  if (is_nullish(v)) return false;
  if (!v.IsBoolean()) throw_type(v.Env(), where(fn, name) + " must be a boolean");
  return v.As<Napi::Boolean>().Value();
}

// The property names of a weight descriptor. (Keys created once per environment and held in a
// referenced array measured slower than these named lookups: 4.0 against 3.3 us per descriptor on Zen
// 1, node-api before version 10 cannot reference a string itself.)
namespace {
enum WeightKey { kKeyDtype, kKeyRows, kKeyCols, kKeyData, kKeyFfn, kKeyBits, kKeyGroupSize, kKeyScaleDtype, kKeyScales, kKeyBiases, kKeyLayout, kKeyCount };
constexpr const char* kWeightKeyNames[kKeyCount] = {"dtype", "rows", "cols", "data", "ffn", "bits", "groupSize", "scaleDtype", "scales", "biases", "layout"};

// int_arg's checks on the success path without building the argument's name; int_arg (which builds it
// and throws) on failure.
int64_t weight_int(const Napi::Value& v, const char* fn, const char* name, WeightKey k, int64_t lo, int64_t hi) {
  if (v.IsNumber()) {
    const double d = v.As<Napi::Number>().DoubleValue();
    if (d >= double(lo) && d <= double(hi) && d == double(int64_t(d))) return int64_t(d);
  }
  return int_arg(v, fn, (std::string(name) + "." + kWeightKeyNames[k]).c_str(), lo, hi);
}
}  // namespace

WeightRef weight_arg(const Napi::Value& v, const char* fn, const char* name) {
  Napi::Env env = v.Env();
  if (!v.IsObject()) throw_type(env, where(fn, name) + " must be a weight descriptor object");
  Napi::Object o = v.As<Napi::Object>();
  auto get = [&](WeightKey k) { return o.Get(kWeightKeyNames[k]); };
  auto field = [&](WeightKey k) { return std::string(name) + "." + kWeightKeyNames[k]; };  // error paths only
  auto w = [&]() { return where(fn, name); };
  WeightRef r;
  r.dtype = int(weight_int(get(kKeyDtype), fn, name, kKeyDtype, 0, 3));
  r.rows = weight_int(get(kKeyRows), fn, name, kKeyRows, 0, int64_t(1) << 40);
  r.cols = weight_int(get(kKeyCols), fn, name, kKeyCols, 1, int64_t(1) << 40);
  Bytes data = bytes_arg(get(kKeyData), fn, field(kKeyData).c_str());
  r.data = data.data;
  // Optional on every dtype (a float weight marked ffn takes the exact path like any float weight):
  // true / false, or the role "input" (gate / up) / "output" (down).
  const Napi::Value ffn = get(kKeyFfn);
  if (!ffn.IsUndefined() && !ffn.IsNull()) {
    if (ffn.IsBoolean()) r.ffn = ffn.As<Napi::Boolean>().Value() ? kFfnAny : kFfnNone;
    else {
      const std::string role = ffn.IsString() ? ffn.As<Napi::String>().Utf8Value() : std::string();
      if (role == "input") r.ffn = kFfnInput;
      else if (role == "output") r.ffn = kFfnOutput;
      else throw_type(env, w() + ".ffn must be a boolean, \"input\" or \"output\" when given");
    }
  }
  if (r.dtype != kQAffine) {
    size_t need = size_t(count_of(env, fn, r.rows, r.cols)) * (r.dtype == kF32 ? 4 : 2);
    if (data.size < need)
      throw_range(env, w() + ".data has " + std::to_string(data.size) + " bytes, needs " + std::to_string(need) +
                           " for [" + std::to_string(r.rows) + ", " + std::to_string(r.cols) + "]");
    return r;
  }
  r.bits = int(weight_int(get(kKeyBits), fn, name, kKeyBits, 2, 8));
  if (r.bits == 7) throw_range(env, w() + ".bits = 7 is not an MLX affine width (2, 3, 4, 5, 6, 8)");
  r.group = int(weight_int(get(kKeyGroupSize), fn, name, kKeyGroupSize, 32, 128));
  if (r.group != 32 && r.group != 64 && r.group != 128)
    throw_range(env, w() + ".groupSize = " + std::to_string(r.group) + " is not 32, 64 or 128");
  if (r.cols % r.group != 0)
    throw_range(env, w() + ": cols " + std::to_string(r.cols) + " is not a multiple of groupSize " + std::to_string(r.group));
  r.scale_dtype = int(weight_int(get(kKeyScaleDtype), fn, name, kKeyScaleDtype, 0, 2));
  const size_t packed = size_t(count_of(env, fn, r.rows, r.cols, r.bits)) / 8;
  if (data.size < packed)
    throw_range(env, w() + ".data has " + std::to_string(data.size) + " bytes, needs " + std::to_string(packed) +
                         " for " + std::to_string(r.bits) + "-bit [" + std::to_string(r.rows) + ", " + std::to_string(r.cols) + "]");
  const size_t sbytes = size_t(count_of(env, fn, r.rows, r.cols / r.group)) * (r.scale_dtype == kF32 ? 4 : 2);
  Bytes s = bytes_arg(get(kKeyScales), fn, field(kKeyScales).c_str());
  Bytes b = bytes_arg(get(kKeyBiases), fn, field(kKeyBiases).c_str());
  if (s.size < sbytes) throw_range(env, w() + ".scales has " + std::to_string(s.size) + " bytes, needs " + std::to_string(sbytes));
  if (b.size < sbytes) throw_range(env, w() + ".biases has " + std::to_string(b.size) + " bytes, needs " + std::to_string(sbytes));
  r.scales = s.data;
  r.biases = b.data;
  const Napi::Value layout = get(kKeyLayout);
  if (!layout.IsUndefined() && !layout.IsNull()) {
    r.layout = int(weight_int(layout, fn, name, kKeyLayout, kWeightRows, kWeightTiles16));
    if (r.layout == kWeightTiles16) {
      if (!tiles_shape_ok(r))
        throw_range(env, w() + ": the 16-row tile layout needs 4- or 8-bit codes with cols a multiple of 64 and rows a multiple of 16 (got " +
                             std::to_string(r.bits) + "-bit [" + std::to_string(r.rows) + ", " + std::to_string(r.cols) + "])");
      if (!kernels().weight_tiles)
        throw_range(env, w() + " is in the 16-row tile layout, which the " + std::string(kernels().name) +
                             " kernels do not read (repack it with packWeightTiles only where weightTileLayout() is true)");
    }
  }
  return r;
}

}  // namespace mlx
