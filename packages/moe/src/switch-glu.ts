/**
 * The expert block: y_t = Σ_r w_{t,r} · down_e( act(gate_e(x_t)) ⊙ up_e(x_t) ),  e = ids_{t,r}.
 * Weights are stacked along a leading expert axis, in f32/f16/bf16 or MLX affine quantized form:
 *   separate: gate [E, I, H], up [E, I, H];  fused: gateUp [E, 2I, H] (rows [0, I) gate, [I, 2I) up);
 *   down [E, H, I].
 * The kernel (core-native moeSwitchGLU) has two paths that compute the same thing: 'gather' (per-token
 * GEMV over the selected experts; decode) and 'grouped' (sort pairs by expert, one GEMM per expert,
 * weighted unsort; prefill). 'auto' picks gather when no expert is selected twice in the call (each
 * expert is then read once either way and gather skips the sort/unsort copies), else grouped.
 */
import { UnaryOp } from '@mlxcel/core-native';
import { floats, MlxcelError, type Weight } from '@mlxcel/tensor';
import { moeSwitchGLU } from './native.js';

export type Activation = 'silu' | 'gelu_tanh';
export type MoePath = 'auto' | 'gather' | 'grouped';

/** Maps a config's hidden_act / hidden_activation to a supported expert activation. */
export function activationOf(hiddenAct: unknown): Activation {
  switch (hiddenAct) {
    case 'silu': case 'swish': return 'silu';
    case 'gelu_pytorch_tanh': case 'gelu_tanh': case 'gelu_new': case 'gelu_fast': return 'gelu_tanh';
    default:
      throw new MlxcelError('E_CONFIG', `expert activation ${JSON.stringify(hiddenAct)} is not supported (silu, gelu_pytorch_tanh)`);
  }
}

export type ExpertProjections = { gate: Weight; up: Weight; down: Weight } | { gateUp: Weight; down: Weight };

export interface ForwardOptions {
  path?: MoePath;
  /** Output [T, H]; may be x itself. Allocated when absent. */
  out?: Float32Array;
}

const PATH_CODE = { auto: 0, gather: 1, grouped: 2 } as const;

export class SwitchGLU {
  readonly numExperts: number;
  readonly hidden: number;
  readonly intermediate: number;
  readonly fused: boolean;
  /** The path the last forward call took. */
  lastPath: 'gather' | 'grouped' | undefined;

  constructor(readonly weights: ExpertProjections, readonly activation: Activation) {
    if (activation !== 'silu' && activation !== 'gelu_tanh')
      throw new MlxcelError('E_ARG', `SwitchGLU: activation ${JSON.stringify(activation)} is not silu or gelu_tanh`);
    const down = weights.down;
    const s3 = (w: Weight, name: string): readonly number[] => {
      if (w.shape.length !== 3) throw new MlxcelError('E_SHAPE', `SwitchGLU: ${name} must be stacked [experts, rows, cols], got [${w.shape}]`);
      return w.shape;
    };
    const [E, H, I] = s3(down, 'down');
    this.numExperts = E!;
    this.hidden = H!;
    this.intermediate = I!;
    const expect = (w: Weight, name: string, rows: number) => {
      const s = s3(w, name);
      if (s[0] !== E || s[1] !== rows || s[2] !== H)
        throw new MlxcelError('E_SHAPE', `SwitchGLU: ${name} is [${s}], expected [${E}, ${rows}, ${H}] from down [${down.shape}]`);
    };
    if ('gateUp' in weights) {
      this.fused = true;
      expect(weights.gateUp, 'gateUp', 2 * I!);
    } else {
      this.fused = false;
      expect(weights.gate, 'gate', I!);
      expect(weights.up, 'up', I!);
    }
  }

  /**
   * x [T, H] → [T, H]. ids/weights [T, k] come from a router; k is ids.length / T. The weights are
   * used as given (a router decides about renormalisation).
   */
  forward(x: Float32Array, T: number, ids: Int32Array, weights: Float32Array, opts: ForwardOptions = {}): Float32Array {
    const H = this.hidden;
    if (!Number.isInteger(T) || T < 0) throw new MlxcelError('E_ARG', `SwitchGLU.forward: T = ${T} is not a token count`);
    if (x.length !== T * H) throw new MlxcelError('E_SHAPE', `SwitchGLU.forward: x has ${x.length} values, expected ${T} x ${H}`);
    if (T === 0) return opts.out ?? new Float32Array(0);
    if (ids.length % T !== 0 || ids.length === 0)
      throw new MlxcelError('E_SHAPE', `SwitchGLU.forward: ${ids.length} expert ids are not [${T}, k]`);
    const k = ids.length / T;
    if (weights.length !== ids.length)
      throw new MlxcelError('E_SHAPE', `SwitchGLU.forward: ${weights.length} routing weights for ${ids.length} expert ids`);
    if (k > this.numExperts)
      throw new MlxcelError('E_SHAPE', `SwitchGLU.forward: k = ${k} experts per token but only ${this.numExperts} experts`);
    const out = opts.out ?? floats(T * H); // zeroed: a layer-arena array when called from a layer
    if (out.length !== T * H) throw new MlxcelError('E_SHAPE', `SwitchGLU.forward: out has ${out.length} values, expected ${T} x ${H}`);
    const path = opts.path ?? 'auto';
    if (!(path in PATH_CODE)) throw new MlxcelError('E_ARG', `SwitchGLU.forward: path ${JSON.stringify(path)} is not auto, gather or grouped`);
    const flat = (w: Weight) => ({ ...w.native, rows: this.numExperts * w.rows });
    const w = this.weights;
    this.lastPath = moeSwitchGLU({
      x, T, k, numExperts: this.numExperts, ids, weights,
      ...('gateUp' in w ? { gateUp: flat(w.gateUp) } : { gate: flat(w.gate), up: flat(w.up) }),
      down: flat(w.down),
      activation: this.activation === 'silu' ? UnaryOp.SILU : UnaryOp.GELU_TANH,
      path: PATH_CODE[path],
      out,
    });
    return out;
  }

  /** Bytes of expert weights (all experts, as stored). */
  get nbytes(): number {
    const w = this.weights;
    return ('gateUp' in w ? w.gateUp.nbytes : w.gate.nbytes + w.up.nbytes) + w.down.nbytes;
  }
}
