/**
 * A Gemma 3n vision checkpoint with a tokenizer, built the way the Gemma 4 one is (engine test
 * helpers): the gemma3n-vision-tiny fixture (real Gemma 3n layout; 384 ids, of which 256.. are the
 * vision and audio vocabularies) plus a byte-level BPE tokenizer.json whose text tokens fit below 256
 * (newline and printable ASCII, in GPT-2's byte alphabet, at ids 107..202; no merges), the Gemma 3n
 * special tokens at the fixture's ids, and the real Gemma 3n chat template (image parts render
 * `<image_soft_token>`).
 */
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHAT_DIR, FIXTURES } from '../../../engine/test/helpers/paths.js';

/** GPT-2's bytes_to_unicode for one byte (printable ASCII maps to itself, others are shifted). */
function byteChar(b: number): string {
  const keep = (x: number) => (x >= 33 && x <= 126) || (x >= 161 && x <= 172) || (x >= 174 && x <= 255);
  if (keep(b)) return String.fromCodePoint(b);
  let n = 0;
  for (let x = 0; x < b; x++) if (!keep(x)) n++;
  return String.fromCodePoint(256 + n);
}

export function makeGemma3nVisionDir(): string {
  const src = join(FIXTURES, 'gemma3n-vision-tiny');
  const dir = mkdtempSync(join(tmpdir(), 'mlxcel-gemma3n-vision-'));
  for (const f of ['config.json', 'model.safetensors', 'preprocessor_config.json', 'image.png']) copyFileSync(join(src, f), join(dir, f));
  const vocab: Record<string, number> = {};
  [10, ...Array.from({ length: 95 }, (_, i) => 32 + i)].forEach((b, i) => (vocab[byteChar(b)] = 107 + i));
  const specials: [number, string][] = [
    [0, '<pad>'], [1, '<eos>'], [2, '<bos>'], [3, '<unk>'], [105, '<start_of_turn>'], [106, '<end_of_turn>'],
    [254, '<start_of_image>'], [256, '<end_of_image>'], [257, '<image_soft_token>'], [255, '<start_of_audio>'], [320, '<end_of_audio>'], [321, '<audio_soft_token>'],
  ];
  for (const [id, t] of specials) vocab[t] = id;
  const tokenizer = {
    version: '1.0',
    added_tokens: specials.map(([id, content]) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true })),
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: null,
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: { type: 'BPE', dropout: null, unk_token: '<unk>', continuing_subword_prefix: null, end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab, merges: [] },
  };
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(tokenizer));
  writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify({
    bos_token: '<bos>', eos_token: '<eos>', pad_token: '<pad>', unk_token: '<unk>', add_bos_token: false,
    chat_template: readFileSync(join(CHAT_DIR, 'gemma3n.jinja'), 'utf8'),
  }));
  return dir;
}
