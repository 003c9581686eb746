export type { AttendOptions, LayerCache } from './types.js';
export { ContiguousCache, RotatingCache } from './contiguous.js';
export { SharedCache } from './shared.js';
