/**
 * The multimodal path end to end on the gemma4-audio-tiny checkpoint (audio tower + text model):
 * WAV -> soft tokens -> placeholder rows of the prompt -> text model. The fixture ships no tokenizer,
 * so a small test tokenizer maps the audio marker strings to the checkpoint's ids.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { encodeWav } from '@mlxcel/audio';
import { SafetensorsFile } from '@mlxcel/tensor';
import { audioPrompt } from '../src/audio.js';
import { generate, prefill } from '../src/generate.js';
import { loadModelFromDir } from '../src/load.js';
import type { Tokenizer } from '../src/tokenizer/index.js';
import { FIXTURES } from './helpers/paths.js';

const DIR = join(FIXTURES, 'gemma4-audio-tiny');
const SPECIAL: Record<string, number> = { '<|audio>': 501, '<|audio|>': 503, '<audio|>': 505, '<bos>': 2 };

function testTokenizer(): Tokenizer {
  const encode = (text: string): number[] => {
    const ids: number[] = [];
    for (let i = 0; i < text.length; ) {
      const sp = Object.keys(SPECIAL).find((s) => text.startsWith(s, i));
      if (sp) { ids.push(SPECIAL[sp]!); i += sp.length; } else { ids.push(10 + (text.charCodeAt(i) % 200)); i++; }
    }
    return ids;
  };
  return {
    kind: 'tokenizer.json', vocabSize: 512, bosId: 2, bosToken: '<bos>', eosToken: null, eosIds: [], specialIds: new Set(Object.values(SPECIAL)),
    tokenizerConfig: {}, encode, decode: () => '', idToToken: () => undefined, tokenToId: (t) => SPECIAL[t],
  };
}

describe('audio prompt through the text model (gemma4-audio-tiny)', () => {
  const loaded = loadModelFromDir(DIR, { tokenizer: 'none' });
  loaded.tokenizer = testTokenizer();
  const wave = SafetensorsFile.open(join(DIR, 'expected.safetensors')).get('waveform').toF32();
  const wav = encodeWav(wave, { sampleRate: 16000 });
  const p = audioPrompt(loaded, wav, 'Describe this.');
  const V = loaded.model.vocabSize;

  it('inserts one row per soft token inside the prompt', () => {
    expect(p.audioTokens).toBe(25); // 1 s at 16 kHz -> 25 tokens (HF formula)
    expect(p.overrides.rows.length).toBe(25);
    for (const r of p.overrides.rows) expect(p.ids[r]).toBe(503);
    expect(p.overrides.values.length).toBe(25 * loaded.model.hiddenSize);
  });

  it('chunked prefill with audio rows equals one pass, and the audio changes the logits', () => {
    const m = loaded.model;
    const one = prefill(m, m.newState(), p.ids, 0, p.overrides);
    const chunked = prefill(m, m.newState(), p.ids, 7, p.overrides);
    let d = 0;
    for (let i = 0; i < V; i++) d = Math.max(d, Math.abs(one[i]! - chunked[i]!));
    expect(d).toBeLessThanOrEqual(1e-4);
    const textOnly = prefill(m, m.newState(), p.ids, 0);
    let diff = 0;
    for (let i = 0; i < V; i++) diff = Math.max(diff, Math.abs(one[i]! - textOnly[i]!));
    expect(diff).toBeGreaterThan(1e-3);
  });

  it('generates from an audio prompt', async () => {
    const g = generate(loaded, p.ids, { maxTokens: 3, embeddingOverrides: p.overrides });
    const toks: number[] = [];
    for await (const t of g) toks.push(t.token);
    expect(toks.length).toBe(3);
    expect((await g.stats).promptTokens).toBe(p.ids.length);
  });

  it('rejects unreadable audio with a clear error', () => {
    expect(() => audioPrompt(loaded, new Uint8Array([1, 2, 3]), 'x')).toThrow(/RIFF|WAV|truncated/i);
  });
});
