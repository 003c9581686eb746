/**
 * mlxcel trace: the logit trace (fixture-contract tensor names) and `trace compare`.
 *   mlxcel trace --model DIR (--ids 1,2,3 | --ids-file F.safetensors) [--chunk K] [--decode N]
 *                [--kv-cache KIND] [--dump-layers] --out OUT.safetensors [--waveform F.safetensors]
 *                [--image FILE ...] [--max-soft-tokens N]
 *   mlxcel trace compare A.safetensors B.safetensors [--margin M] [--json]
 */
import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { compareTraces, loadModel, traceAudio, traceImages, traceModel, writeTrace, type TraceOptions } from '@mlxcel/engine';
import { SafetensorsFile, toTokenIds, writeSafetensors, type Tensor } from '@mlxcel/tensor';
import { UsageError } from '../errors.js';
import { collect, idList, int, num } from '../parse.js';
import { kvCacheFlag } from '../kv-cache-flag.js';
import { info } from '../ui/output.js';
import { addMatmulFlag, applyMatmulPrecision } from '../matmul-precision.js';

export function registerTrace(program: Command): void {
  const trace = program
    .command('trace')
    .description('write a logit trace of a prompt (and greedy continuation) as safetensors; `trace compare A B` compares two')
    .argument('[compare]', 'the word "compare" to compare two trace files')
    .argument('[files...]', 'with compare: A.safetensors B.safetensors')
    .option('-m, --model <dir>', 'model folder')
    .option('--ids <list>', 'comma-separated prompt token ids', idList('--ids'))
    .option('--ids-file <file>', 'safetensors file with an `input_ids` tensor')
    .option('--chunk <k>', 'prefill in chunks of k tokens', int('--chunk', 1))
    .option('--decode <n>', 'greedy continuation length', int('--decode', 1))
    .option('--kv-cache <kind>', 'KV cache storage: f32 | f16 | bf16 | q8 | k8v4 (default f32)', kvCacheFlag)
    .option('--dump-layers', 'also write `embeddings` and `hidden_states.<layer>` F32 [T, hidden] of the prompt forward')
    .option('--waveform <file>', 'safetensors with a `waveform` tensor (audio models)')
    .option('--image <file>', 'image whose soft tokens fill the next placeholder run of the ids (repeatable, in order)', collect, [])
    .option('--max-soft-tokens <n>', 'Gemma 4: soft-token budget per image (70, 140, 280, 560, 1120)', int('--max-soft-tokens', 1))
    .option('-o, --out <file>', 'output .safetensors')
    .option('--margin <m>', 'compare: top-1 margin for a "decided" disagreement', num('--margin', 0), 0.1)
    .option('--json', 'compare: machine-readable output');
  addMatmulFlag(trace, 'exact');
  trace.action(async (mode: string | undefined, files: string[], o: Record<string, unknown>) => {
    if (mode === 'compare') {
      if (files.length !== 2) throw new UsageError('trace compare needs two files: A.safetensors B.safetensors');
      for (const f of files) if (!existsSync(f)) throw new UsageError(`${f} does not exist`);
      const r = compareTraces(files[0]!, files[1]!, { marginThreshold: o.margin as number });
      if (o.json) {
        process.stdout.write(`${JSON.stringify(r)}\n`);
        return;
      }
      for (const t of r.tensors) {
        let line = `${t.name.padEnd(24)} [${t.shape.join(', ')}] max|Δ| ${t.maxAbsDiff.toExponential(3)}`;
        if (t.argmaxDisagreements !== undefined) line += ` argmax disagreements ${t.argmaxDisagreements}, decided ${t.decidedDisagreements}`;
        if (t.equal !== undefined) line += t.equal ? ' (equal)' : ' (DIFFERENT)';
        process.stdout.write(`${line}\n`);
      }
      if (r.onlyInA.length) process.stdout.write(`only in A: ${r.onlyInA.join(', ')}\n`);
      if (r.onlyInB.length) process.stdout.write(`only in B: ${r.onlyInB.join(', ')}\n`);
      if (r.perplexity) process.stdout.write(`perplexity of input_ids: A ${r.perplexity.a.toFixed(4)}  B ${r.perplexity.b.toFixed(4)}\n`);
      return;
    }
    if (mode !== undefined) throw new UsageError(`unknown trace mode "${mode}" (did you mean "trace compare A B"?)`);
    if (!o.model) throw new UsageError('--model is required');
    if (!o.out) throw new UsageError('--out is required');
    let ids: Int32Array | undefined;
    if (o.ids && o.idsFile) throw new UsageError('pass either --ids or --ids-file');
    if (o.ids) ids = toTokenIds(o.ids, '--ids');
    else if (o.idsFile) {
      const f = SafetensorsFile.open(o.idsFile as string);
      if (!f.has('input_ids')) throw new UsageError(`${o.idsFile} has no input_ids tensor`);
      ids = f.get('input_ids').toI32().slice();
    }
    applyMatmulPrecision(o);
    const loaded = await loadModel(o.model as string, { tokenizer: 'none' });
    const extra: Record<string, Tensor> = {};
    if (o.waveform) {
      const f = SafetensorsFile.open(o.waveform as string);
      if (!f.has('waveform')) throw new UsageError(`${o.waveform} has no waveform tensor`);
      Object.assign(extra, traceAudio(loaded, f.get('waveform').toF32()));
    }
    if (!ids && !o.waveform) throw new UsageError('pass --ids, --ids-file or --waveform');
    if (o.dumpLayers && !ids) throw new UsageError('--dump-layers needs prompt ids (--ids or --ids-file)');
    const images = o.image as string[];
    const topts: TraceOptions = {
      chunk: o.chunk as number | undefined, decode: o.decode as number | undefined, kvCache: o.kvCache as string | undefined,
      dumpLayers: o.dumpLayers === true,
    };
    if (images.length) {
      if (!ids) throw new UsageError('--image needs the prompt ids (--ids or --ids-file) with one placeholder run per image');
      for (const f of images) if (!existsSync(f)) throw new UsageError(`--image ${f} does not exist`);
      const t = await traceImages(loaded, ids, images, { maxSoftTokens: o.maxSoftTokens as number | undefined });
      Object.assign(extra, t.tensors);
      Object.assign(topts, { embeddingOverrides: t.overrides, atomicSpans: t.spans, decodeEmbedding: t.decodeEmbedding });
    }
    if (ids) {
      const r = traceModel(loaded.model, ids, topts);
      writeTrace(o.out as string, r, loaded.model.vocabSize, extra);
    } else {
      writeSafetensors(o.out as string, extra, { format: 'mlxcel-trace' });
    }
    info(`wrote ${o.out}`);
  });
}
