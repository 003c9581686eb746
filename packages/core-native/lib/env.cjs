'use strict';
// Checks of the environment variables the native addon reads, run before it loads, so that a bad value
// is a one-line error naming the variable instead of a silent fallback (MLXCEL_THREADS=abc, 0, 1e9 or
// 3.5 used to become the core count, 1, or 3) or a stack trace from inside the addon's init.

/** Kernel variants any build can contain (which of them this CPU/build has is only known natively). */
const ISA_NAMES = Object.freeze(['scalar', 'avx2', 'avx2vnni', 'avx512', 'avx512vnni', 'avx512amx', 'neon', 'neon_dotprod']);
const MAX_THREADS = 1024;

function envError(message) {
  const e = new Error(message);
  e.code = 'E_ENV';
  return e;
}

/** Values of MLXCEL_FAST_GEMM: "int16" keeps the integer GEMM for "fast" where the CPU would take the exact one (Zen 1). */
const FAST_GEMM_VALUES = Object.freeze(['auto', 'int16']);

/** Throws an E_ENV error for an MLXCEL_THREADS, MLXCEL_ISA or MLXCEL_FAST_GEMM value the addon would misread. */
function checkEnv(env = process.env) {
  const threads = env.MLXCEL_THREADS;
  // Empty = unset (the pool uses the physical core count).
  if (threads !== undefined && threads !== '') {
    const t = threads.trim();
    if (!/^\d+$/.test(t) || Number(t) < 1 || Number(t) > MAX_THREADS)
      throw envError(`MLXCEL_THREADS=${JSON.stringify(threads)} must be a whole number of threads from 1 to ${MAX_THREADS} (unset it to use one thread per physical core)`);
  }
  const isa = env.MLXCEL_ISA;
  if (isa !== undefined && isa !== '' && !ISA_NAMES.includes(isa))
    throw envError(`MLXCEL_ISA=${JSON.stringify(isa)} is not a kernel variant (one of: ${ISA_NAMES.join(', ')}; unset it to pick the best for this CPU)`);
  const fastGemm = env.MLXCEL_FAST_GEMM;
  if (fastGemm !== undefined && fastGemm !== '' && !FAST_GEMM_VALUES.includes(fastGemm))
    throw envError(`MLXCEL_FAST_GEMM=${JSON.stringify(fastGemm)} must be auto or int16 (int16 keeps the 16-bit integer GEMM of --matmul fast on CPUs that would take the exact one)`);
}

module.exports = { checkEnv, ISA_NAMES, MAX_THREADS };
