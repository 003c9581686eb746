#!/usr/bin/env node
// What `--matmul fast` (16-bit integer activations in quantized matmuls: prefill GEMMs and, on
// avx512vnni, the decode GEMV), `--matmul int8` (8-bit), `--matmul mixed` (8-bit for the MLP
// projections, 16-bit for the rest) and `--matmul balanced` (8-bit for the MLP's gate/up projections,
// 16-bit for the rest) cost in accuracy, on every text fixture and on random models at real shapes:
//   fixtures: for each fixtures/<case>/ with expected.safetensors (prompt, reference logits, greedy
//             continuation), a trace in each precision (full forward over the prompt + 8 greedy steps)
//             compared with the reference: max |Δlogit|, greedy ids equal, decided disagreements
//             (positions where both top-1 margins exceed 0.5 and the top-1 differ). Fixtures with float
//             weights never take the fast path (it applies to 4-/8-bit MLX affine weights only).
//   real shapes: random q4 models (--layers deep, default 4) from the real configs, each precision against
//             exact over a --prompt-token prompt (default 128): the same three measures.
// The "balanced + f16 KV" column is what `mlxcel generate`, `serve` and `bench` run by default: `balanced`
// matmuls and an f16 KV cache (engine defaultKvStorage); unlike the matmul paths it applies to float
// fixtures too.
//   pnpm bench accuracy [--layers 4] [--prompt 128] [--weight-layout auto|rows] [--json]
// --weight-layout: the layout of the resident 4-bit weights (default auto: the 16-row tile layout where
// the kernels read it; rows: the checkpoint's), so both layouts' accuracy can be tabled.
import { mkdtempSync, readdirSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuInfo, setMatmulPrecision } from '../packages/core-native/lib/index.js';
import { compareTraces, loadModel, randomModel, readJson, traceImages, traceModel, writeTrace } from '../packages/engine/dist/index.js';
import { SafetensorsFile, setWeightLayout, weightArena, weightLayout, weightPlacement } from '../packages/tensor/dist/index.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const flag = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : dflt;
};
const layers = Number(flag('layers', '4'));
const promptLen = Number(flag('prompt', '128'));
const json = args.includes('--json');
if (flag('weight-layout')) setWeightLayout(flag('weight-layout'));
const MARGIN = 0.5;
const tmp = mkdtempSync(join(tmpdir(), 'mlxcel-accuracy-'));

function summary(cmp) {
  const get = (n) => cmp.tensors.find((t) => t.name === n);
  const lg = get('logits'), gl = get('greedy_logits'), gi = get('greedy_ids');
  return {
    max_abs_logit_diff: Math.max(lg?.maxAbsDiff ?? 0, gl?.maxAbsDiff ?? 0),
    greedy_ids_equal: gi ? gi.equal : null,
    decided_disagreements: (lg?.decidedDisagreements ?? 0) + (gl?.decidedDisagreements ?? 0),
    argmax_disagreements: (lg?.argmaxDisagreements ?? 0) + (gl?.argmaxDisagreements ?? 0),
  };
}

// The integer-activation precisions compared with exact, and the CLI's default run (DEFAULT_RUN:
// `balanced` matmuls and an f16 KV cache, what `mlxcel generate`, `serve` and `bench` run).
const PRECISIONS = ['fast', 'int8', 'mixed', 'balanced'];
const DEFAULT_RUN = 'balanced+kv16';
const label = (m) => m.replace('+kv16', ' + f16 KV');

// mode: a matmul precision, or 'P+kv16' (precision P and an f16 KV cache).
function traceFile(model, ids, mode, name, decode, extra = {}) {
  const kv16 = mode.endsWith('+kv16');
  setMatmulPrecision(kv16 ? mode.slice(0, -'+kv16'.length) : mode);
  const r = traceModel(model, ids, { decode, ...extra, ...(kv16 ? { kvCache: 'f16' } : {}) });
  const path = join(tmp, `${name}-${mode}.safetensors`);
  writeTrace(path, r, model.vocabSize);
  return path;
}

const rows = [];
try {
  for (const c of readdirSync(join(root, 'fixtures')).sort()) {
    const dir = join(root, 'fixtures', c), exp = join(dir, 'expected.safetensors');
    if (!existsSync(exp) || !existsSync(join(dir, 'config.json'))) continue;
    const e = SafetensorsFile.open(exp);
    if (!e.has('input_ids') || !e.has('logits')) continue; // audio-encoder-only cases
    const ids = e.get('input_ids').toI32().slice();
    const decode = e.has('greedy_ids') ? e.get('greedy_ids').shape[0] : 0;
    const loaded = await loadModel(dir, { tokenizer: 'none' });
    const quantized = Boolean(loaded.config.quantization ?? loaded.config.quantization_config);
    const row = { case: c, quantized, prompt_tokens: ids.length };
    // Image fixtures: the image's soft tokens fill the prompt's placeholder run, as `mlxcel trace --image`
    // does (the vision tower itself runs in f32 in every precision; its text tower takes the precision).
    let extra = {};
    if (existsSync(join(dir, 'image.png'))) {
      const t = await traceImages(loaded, ids, [join(dir, 'image.png')]);
      extra = { embeddingOverrides: t.overrides, atomicSpans: t.spans, decodeEmbedding: t.decodeEmbedding };
      row.case += ' (with its image)';
    }
    for (const mode of ['exact', ...PRECISIONS, DEFAULT_RUN]) row[mode] = summary(compareTraces(traceFile(loaded.model, ids, mode, c, decode, extra), exp, { marginThreshold: MARGIN }));
    rows.push(row);
  }
  const MODELS = {
    'Gemma 3n E2B': 'fixtures/configs/unsloth--gemma-3n-E2B-it.json',
    'Gemma 4 E2B': 'fixtures/configs/gemma-4-E2B-it.json',
    'Phi-3.5-mini': 'fixtures/configs/Phi-3.5-mini-instruct.json',
  };
  for (const [name, cfg] of Object.entries(MODELS)) {
    const model = randomModel(readJson(join(root, cfg), name), { layers, quantize: { bits: 4, groupSize: 64 }, seed: 0 });
    let x = 7;
    const ids = Int32Array.from({ length: promptLen }, () => ((x = (Math.imul(x, 1103515245) + 12345) >>> 0) % 30000) + 100);
    const exact = traceFile(model, ids, 'exact', name, 8);
    const vsExact = (mode) => summary(compareTraces(traceFile(model, ids, mode, name, 8), exact, { marginThreshold: MARGIN }));
    const row = { case: `${name} random q4, ${layers} layers`, quantized: true, prompt_tokens: promptLen };
    for (const mode of [...PRECISIONS, DEFAULT_RUN]) row[`${mode}_vs_exact`] = vsExact(mode);
    rows.push(row);
  }
} finally {
  setMatmulPrecision('exact');
  rmSync(tmp, { recursive: true, force: true });
}

const layoutNote = `--weight-layout ${weightLayout()}, --weight-memory ${weightPlacement()}, ${(weightArena.tiledBytes / 2 ** 20).toFixed(1)} MiB loaded in tiles`;
if (json) console.log(JSON.stringify({ isa: cpuInfo().isa, margin: MARGIN, weight_layout: weightLayout(), weight_tiled_bytes: weightArena.tiledBytes, rows }));
else {
  const cell = (s) => `${s.max_abs_logit_diff.toExponential(2)} / ${s.greedy_ids_equal === null ? '-' : s.greedy_ids_equal ? 'equal' : 'DIFFER'} / ${s.decided_disagreements}`;
  console.log(`matmul precision and KV storage accuracy (${cpuInfo().isa}, ${layoutNote}; decided = both top-1 margins > ${MARGIN} and top-1 differ)`);
  console.log('each cell: max abs dlogit / greedy ids / decided disagreements');
  const modes = [...PRECISIONS, DEFAULT_RUN];
  const head = ['case', 'weights', 'prompt', 'exact vs reference', ...modes.map((m) => `${label(m)} vs reference`), ...modes.map((m) => `${label(m)} vs exact`)];
  console.log(`| ${head.join(' | ')} |`);
  console.log(`|${head.map(() => '---|').join('')}`);
  const c = (s) => (s ? cell(s) : '-');
  for (const r of rows) {
    const cells = [r.case, r.quantized ? 'quantized' : 'float', r.prompt_tokens, c(r.exact), ...modes.map((m) => c(r[m])), ...modes.map((m) => c(r[`${m}_vs_exact`]))];
    console.log(`| ${cells.join(' | ')} |`);
  }
}
