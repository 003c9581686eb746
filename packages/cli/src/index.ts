export { buildProgram, main } from './main.js';
export { runBench, runBatchBench, type BenchResult, type BatchBenchResult } from './commands/bench.js';
export { isQuantizable } from './commands/quantize.js';
