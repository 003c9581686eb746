export { RopeConfigError } from './errors.js';
export type { RopeErrorCode } from './errors.js';
export { parseRope, parseRopeLayers } from './parse.js';
export type { ParseRopeOptions } from './parse.js';
export { regimeFor, regimeTransition, hasMultipleRegimes } from './regime.js';
export type { RegimeTransition } from './regime.js';
export { ropeFrequencies } from './frequencies.js';
export type { RopeFrequencies } from './frequencies.js';
export { RopeTable, RopeTableCache } from './table.js';
export type { RopeTableOptions } from './table.js';
export type {
  RopeType,
  RopeLayout,
  LongRopePolicy,
  RopeTableName,
  RopeScaling,
  DefaultScaling,
  LinearScaling,
  DynamicScaling,
  YarnScaling,
  Llama3Scaling,
  LongRopeScaling,
  ProportionalScaling,
  RopeRegime,
  RopeSpecData,
  RopeSpec,
} from './types.js';
