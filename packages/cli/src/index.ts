export { buildProgram, main } from './main.js';
export { runBench, type BenchResult } from './commands/bench.js';
export { isQuantizable } from './commands/quantize.js';
