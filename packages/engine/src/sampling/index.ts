export { Sampler, type SampleResult } from './sampler.js';
export { resolveSamplerOptions, type SamplerOptions, type ResolvedSamplerOptions } from './options.js';
export { Xoshiro128, randomSeed } from './prng.js';
export { generateOptionsFromRequest, RequestFieldError, SAMPLING_FIELD_RULES, type SamplingRequest } from './request.js';
