// Argument checking shared by all bindings. Every entry point validates shapes, dtypes and buffer
// sizes through these helpers and throws a JS error naming the function and argument at fault.
#pragma once
#include <napi.h>

#include <cstdint>
#include <initializer_list>
#include <string>

#include "kernels.h"

namespace mlx {

struct Bytes {
  uint8_t* data = nullptr;
  size_t size = 0;
};

[[noreturn]] void throw_type(Napi::Env env, const std::string& msg);
[[noreturn]] void throw_range(Napi::Env env, const std::string& msg);

// Any TypedArray, DataView or ArrayBuffer.
Bytes bytes_arg(const Napi::Value& v, const char* fn, const char* name);
bool is_nullish(const Napi::Value& v);

// A Float32Array holding at least `min_count` floats.
float* f32_arg(const Napi::Value& v, const char* fn, const char* name, int64_t min_count);
// An Int32Array holding at least `min_count` ints.
int32_t* i32_arg(const Napi::Value& v, const char* fn, const char* name, int64_t min_count);
// The single options-object argument of a binding (info[0]), or a TypeError naming fn.
Napi::Object options_arg(const Napi::CallbackInfo& info, const char* fn);
// An integer Number in [lo, hi].
int64_t int_arg(const Napi::Value& v, const char* fn, const char* name, int64_t lo, int64_t hi);
double num_arg(const Napi::Value& v, const char* fn, const char* name);
// a * b * c for element counts, throwing a RangeError when the product exceeds 2^61 (so a later
// multiplication by an element size cannot overflow either).
int64_t count_of(Napi::Env env, const char* fn, int64_t a, int64_t b, int64_t c = 1);
// The same check for any number of factors, naming the buffer whose size it is ("x", "store.k", ...):
// every element or byte count a binding derives from JS numbers goes through count_of or checked_size,
// never a bare `a * b`, so sizes near 2^31..2^63 give a RangeError instead of wrapping to a small
// number that passes the buffer-length check (and then reads or allocates out of bounds).
int64_t checked_size(Napi::Env env, const char* fn, const std::string& what, std::initializer_list<int64_t> factors);
bool bool_arg(const Napi::Value& v, const char* fn, const char* name);

// The sliding window of a 2-D convolution over an h x w input, read from an options object:
// kh, kw, strideH, strideW in [1, 64], padTop, padBottom, padLeft, padRight in [0, 64] (zero padding),
// and the output size it gives. A padded input smaller than the kernel is a RangeError naming fn.
struct ConvWindow {
  int kh = 0, kw = 0, sh = 1, sw = 1, pad_top = 0, pad_left = 0;
  int64_t out_h = 0, out_w = 0;  // padding below / right is implied by these
};
ConvWindow conv_window_arg(const Napi::Object& o, const char* fn, int64_t h, int64_t w);

// Parses and validates a weight descriptor object:
// { dtype: 0 f32 | 1 f16 | 2 bf16 | 3 affine, data, rows, cols, scales?, biases?, scaleDtype?, bits?, groupSize? }
WeightRef weight_arg(const Napi::Value& v, const char* fn, const char* name);

}  // namespace mlx
