'use strict';
// Per-op-kind timing of the native kernels (`mlxcel bench --profile`). Every kernel export of the addon
// is wrapped once at load; while no profile runs the wrapper only tests a flag and forwards the call, so
// it costs a few nanoseconds per call (native calls take microseconds or more).
const timing = { on: false, matmulShapes: false, ops: new Map() };

/**
 * `matmul` is split by shape: GEMV (decode and batched decode, M <= 16) and GEMM (prefill) are different
 * kernels; with `matmulShapes` also by the weight's [rows x cols], so a profile says which projections the
 * matmul time goes to (a 2048 x 64 LAuReL projection and a 262144 x 2048 head are very different loads).
 * `matmulShared` counts as the same kinds, its shape being the shared weights' [rows + rows ... x cols].
 */
function kindOf(name, args) {
  if (name === 'matmul' || name === 'matmulShared') {
    const kind = args[1] > 16 ? 'matmul (GEMM, M > 16)' : 'matmul (GEMV, M <= 16)';
    const w = args[2];
    if (!timing.matmulShapes || !w || typeof w !== 'object') return kind;
    // matmulShared: the weights sharing x, as [rows + rows + ... x cols].
    const ws = Array.isArray(w) ? w : [w];
    return `${kind} [${ws.map((v) => v && v.rows).join(' + ')} x ${ws[0] && ws[0].cols}]`;
  }
  return name;
}

function record(kind, ms) {
  const e = timing.ops.get(kind);
  if (e) {
    e.calls++;
    e.ms += ms;
  } else timing.ops.set(kind, { calls: 1, ms });
}

/** A copy of the addon's exports with each function in `names` timed while a profile runs. */
function withProfiling(native, names) {
  const out = { ...native };
  for (const name of names) {
    const fn = native[name];
    if (typeof fn !== 'function') continue;
    out[name] = function (...args) {
      if (!timing.on) return fn.apply(this, args);
      const t0 = performance.now();
      try {
        return fn.apply(this, args);
      } finally {
        record(kindOf(name, args), performance.now() - t0);
      }
    };
  }
  return out;
}

/** Starts (or restarts) collecting: clears the counters. options.matmulShapes: split matmul by weight shape too. */
function startProfile(options) {
  timing.ops = new Map();
  timing.matmulShapes = Boolean(options && options.matmulShapes);
  timing.on = true;
}

/** Stops collecting and returns { kind: { calls, ms } } since startProfile. */
function stopProfile() {
  timing.on = false;
  return Object.fromEntries([...timing.ops].sort((a, b) => b[1].ms - a[1].ms));
}

module.exports = { withProfiling, startProfile, stopProfile };
