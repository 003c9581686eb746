/**
 * Load-time checks of the MoE keys of a config. Errors name the config keys at fault, since the user
 * fixes config.json, not our option names.
 */
import { MlxcelError } from '@mlxcel/tensor';

export type RouterKind = 'softmax-topk' | 'sparsemixer' | 'gemma4';

export interface MoeConfigInput {
  numExperts: unknown;
  topK: unknown;
  router: RouterKind;
  /** router_jitter_noise; required (> 0) for sparsemixer, ignored otherwise. */
  jitterEps?: unknown;
  /** Config key names for messages (defaults: the PhiMoE/Mixtral names). */
  keys?: { numExperts?: string; topK?: string; jitterEps?: string };
}

export interface MoeConfig {
  numExperts: number;
  topK: number;
  /** Present for sparsemixer. */
  jitterEps?: number;
}

export function validateMoeConfig(c: MoeConfigInput): MoeConfig {
  const kE = c.keys?.numExperts ?? 'num_local_experts';
  const kK = c.keys?.topK ?? 'num_experts_per_tok';
  const kJ = c.keys?.jitterEps ?? 'router_jitter_noise';
  const E = c.numExperts, k = c.topK;
  if (typeof E !== 'number' || !Number.isInteger(E) || E < 1)
    throw new MlxcelError('E_CONFIG', `config.json: ${kE} must be an integer >= 1, got ${JSON.stringify(E)}`);
  if (typeof k !== 'number' || !Number.isInteger(k))
    throw new MlxcelError('E_CONFIG', `config.json: ${kK} must be an integer in 1..${kE} (${E}), got ${JSON.stringify(k)}`);
  if (k < 1)
    throw new MlxcelError('E_CONFIG', `config.json: ${kK} = ${k}, but every token needs at least one expert (1..${kE} = 1..${E})`);
  if (k > E)
    throw new MlxcelError('E_CONFIG', `config.json: ${kK} = ${k} exceeds ${kE} = ${E}; a token cannot pick more experts than exist`);
  const out: MoeConfig = { numExperts: E, topK: k };
  if (c.router === 'sparsemixer') {
    const j = c.jitterEps;
    if (typeof j !== 'number' || !Number.isFinite(j) || j <= 0)
      throw new MlxcelError(
        'E_CONFIG',
        `config.json: ${kJ} = ${JSON.stringify(j)}; the sparsemixer router uses 2 x ${kJ} as its mask threshold and needs a finite value > 0`,
      );
    out.jitterEps = j;
  }
  return out;
}
