/**
 * Converting a Phi checkpoint held in memory: float dtype changes and MLX quantization into the
 * mlx-community layout of its architecture (see common/convert.ts). Used by the tests for bf16 and
 * 8-bit cases, and usable by an engine `quantize` command.
 */
import { MlxcelError, type WeightStore } from '@mlxcel/tensor';
import { convertWeights, type ConvertOptions, type Converted } from './common/convert.js';
import { stackPhiMoEExperts } from './phimoe/sanitize.js';

export type { ConvertOptions, Converted } from './common/convert.js';
export { stackPhiMoEExperts } from './phimoe/sanitize.js';

export function convertPhiCheckpoint(config: Record<string, unknown>, weights: WeightStore, opts: ConvertOptions): Converted {
  switch (config.model_type) {
    case 'phi3':
    case 'phi3small':
      return convertWeights(config, weights, opts);
    case 'phimoe':
      return convertWeights(config, weights, opts, stackPhiMoEExperts);
    default:
      throw new MlxcelError('E_CONFIG_UNSUPPORTED', `convertPhiCheckpoint: model_type ${JSON.stringify(config.model_type)} is not a Phi architecture`);
  }
}
