// moeSwitchGLU({...}): the mixture-of-experts SwiGLU block over stacked expert weights (isa/moe_impl.h).
// Validates every shape, id and buffer size so the kernel can index blindly.
#include <string>
#include <vector>

#include "args.h"
#include "bindings.h"

namespace mlx {
namespace {

// Auto path. Both paths read each expert they use from memory; gather reads an expert once per pair
// that selects it, grouped once per call. So gather (no sort, gather or unsort copies) is the choice
// exactly when no expert is selected twice in the call: every decode step of one sequence, and small
// batches over many experts. Any sharing makes grouped read fewer bytes, and from a few rows per
// expert on it also runs a GEMM instead of GEMVs.
bool all_distinct(const int32_t* ids, int64_t n, int64_t E) {
  std::vector<uint8_t> seen(size_t(E), 0);
  for (int64_t i = 0; i < n; i++) {
    if (seen[size_t(ids[i])]) return false;
    seen[size_t(ids[i])] = 1;
  }
  return true;
}

std::string dims(const WeightRef& w) { return "[" + std::to_string(w.rows) + ", " + std::to_string(w.cols) + "]"; }

Napi::Value MoeSwitchGlu(const Napi::CallbackInfo& info) {
  const char* fn = "moeSwitchGLU";
  Napi::Env env = info.Env();
  if (!info[0].IsObject()) throw_type(env, "moeSwitchGLU: expects one options object");
  Napi::Object o = info[0].As<Napi::Object>();
  MoeArgs a;
  a.E = int_arg(o.Get("numExperts"), fn, "numExperts", 1, int64_t(1) << 20);
  a.T = int_arg(o.Get("T"), fn, "T", 0, int64_t(1) << 31);
  a.k = int(int_arg(o.Get("k"), fn, "k", 1, a.E));
  const std::string E = std::to_string(a.E);

  if (!is_nullish(o.Get("gateUp"))) {
    if (!is_nullish(o.Get("gate")) || !is_nullish(o.Get("up")))
      throw_type(env, "moeSwitchGLU: give either gateUp (fused) or gate and up, not both");
    a.gate = weight_arg(o.Get("gateUp"), fn, "gateUp");
    a.fused = true;
    if (a.gate.rows == 0 || a.gate.rows % (2 * a.E) != 0)
      throw_range(env, "moeSwitchGLU: gateUp rows " + std::to_string(a.gate.rows) + " are not numExperts (" + E +
                           ") x 2 x intermediate");
    a.I = a.gate.rows / (2 * a.E);
  } else {
    a.gate = weight_arg(o.Get("gate"), fn, "gate");
    a.up = weight_arg(o.Get("up"), fn, "up");
    if (a.gate.rows == 0 || a.gate.rows % a.E != 0)
      throw_range(env, "moeSwitchGLU: gate rows " + std::to_string(a.gate.rows) + " are not numExperts (" + E +
                           ") x intermediate");
    if (a.up.rows != a.gate.rows || a.up.cols != a.gate.cols)
      throw_range(env, "moeSwitchGLU: up " + dims(a.up) + " does not match gate " + dims(a.gate));
    a.I = a.gate.rows / a.E;
  }
  a.H = a.gate.cols;
  a.down = weight_arg(o.Get("down"), fn, "down");
  for (const WeightRef* x : {&a.gate, &a.up, &a.down})
    if (x->layout != kWeightRows)
      throw_range(env, "moeSwitchGLU: expert weights must be in the row layout (the MoE kernels slice experts by rows; "
                       "do not repack them with packWeightTiles)");
  if (a.down.rows != a.E * a.H || a.down.cols != a.I)
    throw_range(env, "moeSwitchGLU: down " + dims(a.down) + " should be [numExperts x hidden, intermediate] = [" +
                         std::to_string(a.E * a.H) + ", " + std::to_string(a.I) + "]");

  const int64_t P = checked_size(env, fn, "ids", {a.T, a.k});
  a.x = f32_arg(o.Get("x"), fn, "x", checked_size(env, fn, "x", {a.T, a.H}));
  a.ids = i32_arg(o.Get("ids"), fn, "ids", P);
  a.weights = f32_arg(o.Get("weights"), fn, "weights", P);
  a.out = f32_arg(o.Get("out"), fn, "out", checked_size(env, fn, "out", {a.T, a.H}));
  for (int64_t p = 0; p < P; p++)
    if (a.ids[p] < 0 || a.ids[p] >= a.E)
      throw_range(env, "moeSwitchGLU: ids[" + std::to_string(p) + "] = " + std::to_string(a.ids[p]) +
                           " (token " + std::to_string(p / a.k) + ") is outside [0, " + E + ")");

  a.act = is_nullish(o.Get("activation")) ? kSilu : int(int_arg(o.Get("activation"), fn, "activation", 0, 9));
  if (a.act != kSilu && a.act != kGeluTanh)
    throw_range(env, "moeSwitchGLU: activation " + std::to_string(a.act) + " is not SILU (0) or GELU_TANH (1)");
  int path = is_nullish(o.Get("path")) ? kMoeAuto : int(int_arg(o.Get("path"), fn, "path", 0, 2));
  if (path == kMoeAuto) path = all_distinct(a.ids, P, a.E) ? kMoeGather : kMoeGrouped;
  a.path = path;

  if (a.T > 0) kernels().moe_switch_glu(a);
  return Napi::String::New(env, path == kMoeGather ? "gather" : "grouped");
}

}  // namespace

void RegisterMoe(Napi::Env env, Napi::Object exports) {
  exports.Set("moeSwitchGLU", Napi::Function::New(env, MoeSwitchGlu, "moeSwitchGLU"));
}

}  // namespace mlx
