'use strict';
// Per-op-kind timing of the native kernels (`mlxcel bench --profile`). Every kernel export of the addon
// is wrapped once at load; while no profile runs the wrapper only tests a flag and forwards the call, so
// it costs a few nanoseconds per call (native calls take microseconds or more).
const timing = { on: false, ops: new Map() };

/** `matmul` is split by shape: GEMV (decode and batched decode, M <= 16) and GEMM (prefill) are different kernels. */
function kindOf(name, args) {
  if (name === 'matmul') return args[1] > 16 ? 'matmul (GEMM, M > 16)' : 'matmul (GEMV, M <= 16)';
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

/** Starts (or restarts) collecting: clears the counters. */
function startProfile() {
  timing.ops = new Map();
  timing.on = true;
}

/** Stops collecting and returns { kind: { calls, ms } } since startProfile. */
function stopProfile() {
  timing.on = false;
  return Object.fromEntries([...timing.ops].sort((a, b) => b[1].ms - a[1].ms));
}

module.exports = { withProfiling, startProfile, stopProfile };
