export type { Routing } from './routing.js';
export { softmaxTopK, type SoftmaxTopKOptions } from './softmax-topk.js';
export { sparsemixer } from './sparsemixer.js';
export { gemma4Route, Gemma4Router } from './gemma4-router.js';
export { SwitchGLU, activationOf, type Activation, type MoePath, type ExpertProjections, type ForwardOptions } from './switch-glu.js';
export { loadExperts, detectExperts, type ExpertLayout, type LoadExpertsOptions, type DetectedExperts } from './load.js';
export { validateMoeConfig, type MoeConfig, type MoeConfigInput, type RouterKind } from './validate.js';
