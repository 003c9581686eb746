// attention({...}): scaled dot-product attention with GQA, masks and soft-capping, in two forms:
// - single sequence over row-layout K/V (k, v, kPos, nKv, kvDtype, mask);
// - batched: `seqs`, each sequence with its own KV segments (any storage kind of packages/cache),
//   optional mask and bidirectional spans; plus optional Phi-3-small block-sparse visibility.
// Every buffer is checked against the shapes it must hold before the kernel runs.
#include <algorithm>
#include <cmath>
#include <vector>

#include "args.h"
#include "bindings.h"

namespace mlx {
namespace {

std::string S(int64_t x) { return std::to_string(x); }

void need_bytes(Napi::Env env, const std::string& what, size_t have, size_t need) {
  if (have < need) throw_range(env, what + " has " + S(int64_t(have)) + " bytes, needs " + S(int64_t(need)));
}

// Float32Array view with at least `count` floats (any length check message names `what`).
const float* f32_view(const Napi::Value& v, const std::string& what, int64_t count) {
  return f32_arg(v, "attention", what.c_str(), count);
}

// One KvSegment descriptor: { dtype, layout?, k, v, pos, n, kScales?, kBiases?, vScales?, vBiases?, vBits?, groupSize? }
KvSegment segment_arg(Napi::Env env, const Napi::Value& val, const std::string& w, int H, int D, int DV) {
  const char* fn = "attention";
  if (!val.IsObject()) throw_type(env, "attention: " + w + " must be a KV segment object");
  Napi::Object o = val.As<Napi::Object>();
  KvSegment sg;
  sg.dtype = int(int_arg(o.Get("dtype"), fn, (w + ".dtype").c_str(), 0, 3));
  sg.layout = is_nullish(o.Get("layout")) ? kKvRows : int(int_arg(o.Get("layout"), fn, (w + ".layout").c_str(), 0, 1));
  sg.n = int_arg(o.Get("n"), fn, (w + ".n").c_str(), 0, int64_t(1) << 31);
  sg.pos = i32_arg(o.Get("pos"), fn, (w + ".pos").c_str(), sg.n);
  Bytes k = bytes_arg(o.Get("k"), fn, (w + ".k").c_str());
  Bytes v = bytes_arg(o.Get("v"), fn, (w + ".v").c_str());
  sg.k = k.data;
  sg.v = v.data;
  if (sg.layout == kKvTiles) {
    sg.capacity = int_arg(o.Get("capacity"), fn, (w + ".capacity").c_str(), 0, int64_t(1) << 31);
    if (sg.capacity % kKvTile || sg.capacity < sg.n)
      throw_range(env, "attention: " + w + ".capacity " + S(sg.capacity) + " must be a multiple of " + S(kKvTile) + " and >= n (" + S(sg.n) + ")");
  }
  if (sg.dtype != kQAffine) {
    const size_t esz = sg.dtype == kF32 ? 4 : 2;
    const size_t slots = sg.layout == kKvTiles ? size_t(sg.capacity) : size_t(sg.n);
    need_bytes(env, "attention: " + w + ".k", k.size, size_t(checked_size(env, fn, w + ".k", {int64_t(slots), H, D, int64_t(esz)})));
    need_bytes(env, "attention: " + w + ".v", v.size, size_t(checked_size(env, fn, w + ".v", {int64_t(slots), H, DV, int64_t(esz)})));
    return sg;
  }
  if (sg.layout != kKvTiles) throw_range(env, "attention: " + w + ": quantized KV (dtype 3) needs the tile layout (layout 1)");
  sg.group = int(int_arg(o.Get("groupSize"), fn, (w + ".groupSize").c_str(), 32, 128));
  if (sg.group != 32 && sg.group != 64 && sg.group != 128)
    throw_range(env, "attention: " + w + ".groupSize = " + S(sg.group) + " is not 32, 64 or 128");
  if (D % sg.group || DV % sg.group)
    throw_range(env, "attention: " + w + ": headDim " + S(D) + " and vDim " + S(DV) + " must be multiples of groupSize " + S(sg.group));
  sg.v_bits = is_nullish(o.Get("vBits")) ? 8 : int(int_arg(o.Get("vBits"), fn, (w + ".vBits").c_str(), 4, 8));
  if (sg.v_bits != 4 && sg.v_bits != 8) throw_range(env, "attention: " + w + ".vBits = " + S(sg.v_bits) + " is not 4 or 8");
  const size_t slots = size_t(sg.capacity);
  need_bytes(env, "attention: " + w + ".k", k.size, size_t(checked_size(env, fn, w + ".k", {int64_t(slots), H, D})));
  need_bytes(env, "attention: " + w + ".v", v.size, size_t(checked_size(env, fn, w + ".v", {int64_t(slots), H, DV, sg.v_bits})) / 8);
  const int64_t k_groups = checked_size(env, fn, w + ".kScales", {int64_t(slots), H, D / sg.group});
  const int64_t v_groups = checked_size(env, fn, w + ".vScales", {int64_t(slots), H, DV / sg.group});
  sg.k_scales = f32_view(o.Get("kScales"), w + ".kScales", k_groups);
  sg.k_biases = f32_view(o.Get("kBiases"), w + ".kBiases", k_groups);
  sg.v_scales = f32_view(o.Get("vScales"), w + ".vScales", v_groups);
  sg.v_biases = f32_view(o.Get("vBiases"), w + ".vBiases", v_groups);
  return sg;
}

Napi::Value Attention(const Napi::CallbackInfo& info) {
  const char* fn = "attention";
  Napi::Env env = info.Env();
  if (!info[0].IsObject()) throw_type(env, "attention: expects one options object");
  Napi::Object o = info[0].As<Napi::Object>();
  AttentionArgs a;
  const bool batched = !is_nullish(o.Get("seqs"));
  a.n_heads = int(int_arg(o.Get("nHeads"), fn, "nHeads", 1, 1 << 16));
  a.head_dim = int(int_arg(o.Get("headDim"), fn, "headDim", 1, 1 << 14));
  a.v_dim = is_nullish(o.Get("vDim")) ? a.head_dim : int(int_arg(o.Get("vDim"), fn, "vDim", 1, 1 << 14));
  a.n_kv_heads = int(int_arg(o.Get("nKvHeads"), fn, "nKvHeads", 1, 1 << 16));
  if (a.n_heads % a.n_kv_heads != 0)
    throw_range(env, "attention: nHeads " + S(a.n_heads) + " is not a multiple of nKvHeads " + S(a.n_kv_heads));
  a.scale = float(num_arg(o.Get("scale"), fn, "scale"));
  a.softcap = is_nullish(o.Get("softcap")) ? 0.f : float(num_arg(o.Get("softcap"), fn, "softcap"));
  if (!std::isfinite(a.scale)) throw_range(env, "attention: scale must be a finite number");
  // 0 = no soft-cap; otherwise finite and > 0 (Infinity or NaN would turn every score into NaN).
  if (!(a.softcap >= 0.f && std::isfinite(a.softcap))) throw_range(env, "attention: softcap must be 0 (off) or a finite number > 0");
  a.causal = is_nullish(o.Get("causal")) ? true : bool_arg(o.Get("causal"), fn, "causal");
  a.window = is_nullish(o.Get("window")) ? 0 : int_arg(o.Get("window"), fn, "window", 0, int64_t(1) << 40);
  if (!is_nullish(o.Get("blockSparse"))) {
    if (!o.Get("blockSparse").IsObject()) throw_type(env, "attention: blockSparse must be an object");
    Napi::Object b = o.Get("blockSparse").As<Napi::Object>();
    a.bs_block = int_arg(b.Get("blockSize"), fn, "blockSparse.blockSize", 1, int64_t(1) << 30);
    a.bs_local = int_arg(b.Get("localBlocks"), fn, "blockSparse.localBlocks", 1, int64_t(1) << 30);
    a.bs_vert = int_arg(b.Get("vertStride"), fn, "blockSparse.vertStride", 1, int64_t(1) << 30);
    a.bs_head_step = is_nullish(b.Get("headStep")) ? 0 : int_arg(b.Get("headStep"), fn, "blockSparse.headStep", 0, int64_t(1) << 30);
  }

  std::vector<KvSegment> segs;
  std::vector<AttnSeq> seqs;
  if (!batched) {
    a.n_q = int_arg(o.Get("nQ"), fn, "nQ", 0, int64_t(1) << 32);
    a.n_kv = int_arg(o.Get("nKv"), fn, "nKv", 0, int64_t(1) << 32);
    a.kv_dtype = int(int_arg(o.Get("kvDtype"), fn, "kvDtype", 0, 2));
    const size_t esz = a.kv_dtype == kF32 ? 4 : 2;
    Bytes k = bytes_arg(o.Get("k"), fn, "k");
    Bytes v = bytes_arg(o.Get("v"), fn, "v");
    need_bytes(env, "attention: k", k.size, size_t(checked_size(env, fn, "k", {a.n_kv, a.n_kv_heads, a.head_dim, int64_t(esz)})));
    need_bytes(env, "attention: v", v.size, size_t(checked_size(env, fn, "v", {a.n_kv, a.n_kv_heads, a.v_dim, int64_t(esz)})));
    a.k_pos = i32_arg(o.Get("kPos"), fn, "kPos", a.n_kv);  // after the checked K/V sizes (those name the overflow)
    a.k = k.data;
    a.v = v.data;
    if (!is_nullish(o.Get("mask"))) {
      a.mask_heads = is_nullish(o.Get("maskHeads")) ? 1 : int(int_arg(o.Get("maskHeads"), fn, "maskHeads", 1, 1 << 16));
      if (a.mask_heads != 1 && a.mask_heads != a.n_heads)
        throw_range(env, "attention: maskHeads must be 1 or nHeads (" + S(a.n_heads) + ")");
      Bytes m = bytes_arg(o.Get("mask"), fn, "mask");
      need_bytes(env, "attention: mask", m.size, size_t(checked_size(env, fn, "mask", {a.mask_heads, a.n_q, a.n_kv})));
      a.mask = m.data;
    }
  } else {
    if (!o.Get("seqs").IsArray()) throw_type(env, "attention: seqs must be an array of sequence objects");
    Napi::Array arr = o.Get("seqs").As<Napi::Array>();
    const uint32_t ns = arr.Length();
    // Segments first (their vector must not reallocate once sequences point into it).
    std::vector<std::pair<uint32_t, uint32_t>> seg_range(ns);
    for (uint32_t s = 0; s < ns; s++) {
      const std::string w = "seqs[" + S(s) + "]";
      if (!arr.Get(s).IsObject()) throw_type(env, "attention: " + w + " must be an object");
      Napi::Object so = arr.Get(s).As<Napi::Object>();
      if (!so.Get("segments").IsArray()) throw_type(env, "attention: " + w + ".segments must be an array");
      Napi::Array sa = so.Get("segments").As<Napi::Array>();
      seg_range[s] = {uint32_t(segs.size()), sa.Length()};
      for (uint32_t i = 0; i < sa.Length(); i++)
        segs.push_back(segment_arg(env, sa.Get(i), w + ".segments[" + S(i) + "]", a.n_kv_heads, a.head_dim, a.v_dim));
    }
    int64_t rows = 0;
    for (uint32_t s = 0; s < ns; s++) {
      const std::string w = "seqs[" + S(s) + "]";
      Napi::Object so = arr.Get(s).As<Napi::Object>();
      AttnSeq sq;
      sq.q_begin = int_arg(so.Get("qStart"), fn, (w + ".qStart").c_str(), 0, int64_t(1) << 32);
      sq.n_q = int_arg(so.Get("nQ"), fn, (w + ".nQ").c_str(), 0, int64_t(1) << 32);
      sq.segs = segs.data() + seg_range[s].first;
      sq.n_segs = int(seg_range[s].second);
      rows = std::max(rows, sq.q_begin + sq.n_q);
      int64_t cols = 0;
      for (int i = 0; i < sq.n_segs; i++) cols += sq.segs[i].n;
      if (!is_nullish(so.Get("mask"))) {
        sq.mask_heads = is_nullish(so.Get("maskHeads")) ? 1 : int(int_arg(so.Get("maskHeads"), fn, (w + ".maskHeads").c_str(), 1, 1 << 16));
        if (sq.mask_heads != 1 && sq.mask_heads != a.n_heads)
          throw_range(env, "attention: " + w + ".maskHeads must be 1 or nHeads (" + S(a.n_heads) + ")");
        Bytes m = bytes_arg(so.Get("mask"), fn, (w + ".mask").c_str());
        need_bytes(env, "attention: " + w + ".mask", m.size, size_t(checked_size(env, fn, w + ".mask", {sq.mask_heads, sq.n_q, cols})));
        sq.mask = m.data;
      }
      if (!is_nullish(so.Get("spans"))) {
        Napi::Value sv = so.Get("spans");
        if (!sv.IsTypedArray() || sv.As<Napi::TypedArray>().TypedArrayType() != napi_int32_array)
          throw_type(env, "attention: " + w + ".spans must be an Int32Array of [start, end) pairs");
        const size_t len = sv.As<Napi::Int32Array>().ElementLength();
        if (len % 2) throw_range(env, "attention: " + w + ".spans has odd length " + S(int64_t(len)) + " (pairs of [start, end))");
        sq.spans = sv.As<Napi::Int32Array>().Data();
        sq.n_spans = int(len / 2);
        for (int i = 0; i < sq.n_spans; i++)
          if (sq.spans[2 * i] < 0 || sq.spans[2 * i + 1] < sq.spans[2 * i])
            throw_range(env, "attention: " + w + ".spans[" + S(i) + "] = [" + S(sq.spans[2 * i]) + ", " + S(sq.spans[2 * i + 1]) + ") is not a range of positions");
      }
      seqs.push_back(sq);
    }
    // Rows of different sequences must not overlap: tasks write their rows of `out` concurrently.
    std::vector<std::pair<int64_t, int64_t>> spans;
    for (const AttnSeq& sq : seqs)
      if (sq.n_q > 0) spans.push_back({sq.q_begin, sq.q_begin + sq.n_q});
    std::sort(spans.begin(), spans.end());
    for (size_t i = 1; i < spans.size(); i++)
      if (spans[i].first < spans[i - 1].second)
        throw_range(env, "attention: query rows of two sequences overlap at row " + S(spans[i].first));
    a.n_q = rows;
    a.seqs = seqs.data();
    a.n_seqs = int(seqs.size());
  }
  a.q = f32_arg(o.Get("q"), fn, "q", checked_size(env, fn, "q", {a.n_q, a.n_heads, a.head_dim}));
  a.q_pos = i32_arg(o.Get("qPos"), fn, "qPos", a.n_q);
  a.out = f32_arg(o.Get("out"), fn, "out", checked_size(env, fn, "out", {a.n_q, a.n_heads, a.v_dim}));
  if (a.bs_block > 0)
    for (int64_t i = 0; i < a.n_q; i++)
      if (a.q_pos[i] < 0) throw_range(env, "attention: qPos[" + S(i) + "] = " + S(a.q_pos[i]) + " is negative (block-sparse needs absolute positions)");
  if (a.n_q > 0 && (!batched || a.n_seqs > 0)) kernels().attention(a);
  return env.Undefined();
}

}  // namespace

void RegisterAttention(Napi::Env env, Napi::Object exports) {
  exports.Set("attention", Napi::Function::New(env, Attention, "attention"));
}

}  // namespace mlx
