/**
 * Typed access to core-native's `moeSwitchGLU` (src/bind_moe.cc). It is reached through the addon's
 * default export, which carries every binding, so this package does not depend on core-native's
 * hand-written export list being updated.
 */
import native, { type NativeWeight } from '@mlxcel/core-native';
import { MlxcelError } from '@mlxcel/tensor';

export interface MoeNativeArgs {
  x: Float32Array;
  T: number;
  k: number;
  numExperts: number;
  ids: Int32Array;
  weights: Float32Array;
  /** Stacked weights flattened along the expert axis: gate/up [E*I, H] or gateUp [E*2I, H], down [E*H, I]. */
  gate?: NativeWeight;
  up?: NativeWeight;
  gateUp?: NativeWeight;
  down: NativeWeight;
  /** UnaryOp.SILU (0) or UnaryOp.GELU_TANH (1). */
  activation: number;
  /** 0 auto, 1 per-token gather (decode), 2 grouped by expert (prefill). */
  path: 0 | 1 | 2;
  out: Float32Array;
}

type MoeFn = (o: MoeNativeArgs) => 'gather' | 'grouped';

export function moeSwitchGLU(o: MoeNativeArgs): 'gather' | 'grouped' {
  const fn = (native as Record<string, unknown>).moeSwitchGLU;
  if (typeof fn !== 'function')
    throw new MlxcelError('E_NATIVE', '@mlxcel/core-native has no moeSwitchGLU: rebuild it (cd packages/core-native && node scripts/build-native.mjs)');
  return (fn as MoeFn)(o);
}
