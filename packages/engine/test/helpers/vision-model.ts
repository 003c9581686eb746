/**
 * Vision checkpoints with a tokenizer, built like the demo model. Gemma 4: the gemma4-vision-tiny fixture
 * (real Gemma 4 layout, tiny vocab 512) plus a byte-level BPE tokenizer.json over that vocab (bytes at
 * ids 10..265 in GPT-2's byte alphabet, no merges) with the Gemma 4 special tokens at the fixture's
 * ids, and the real Gemma 4 chat template (its image parts render `<|image|>`).
 */
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHAT_DIR, FIXTURES } from './paths.js';

/** GPT-2's bytes_to_unicode: every byte as one printable character. */
function byteChars(): string[] {
  const bs: number[] = [];
  for (let b = 33; b <= 126; b++) bs.push(b);
  for (let b = 161; b <= 172; b++) bs.push(b);
  for (let b = 174; b <= 255; b++) bs.push(b);
  const cs = [...bs];
  let n = 0;
  for (let b = 0; b < 256; b++) if (!bs.includes(b)) { bs.push(b); cs.push(256 + n++); }
  const out: string[] = new Array(256);
  bs.forEach((b, i) => (out[b] = String.fromCodePoint(cs[i]!)));
  return out;
}

/** The fixture's checkpoint files copied into a fresh folder (the tokenizer is written beside them). */
function copyFixture(name: string, prefix: string): string {
  const src = join(FIXTURES, name);
  const dir = mkdtempSync(join(tmpdir(), prefix));
  for (const f of ['config.json', 'model.safetensors', 'preprocessor_config.json', 'image.png']) copyFileSync(join(src, f), join(dir, f));
  return dir;
}

/**
 * Writes a byte-level BPE tokenizer.json (the given vocab, no merges) with `specials` as special added
 * tokens, and a tokenizer_config.json carrying the named chat template of test/chat.
 */
function writeByteLevelTokenizer(dir: string, vocab: Record<string, number>, specials: [number, string][], template: string, unk?: string): void {
  for (const [id, t] of specials) vocab[t] = id;
  const tokenizer = {
    version: '1.0',
    added_tokens: specials.map(([id, content]) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true })),
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: null,
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: { type: 'BPE', dropout: null, unk_token: unk ?? null, continuing_subword_prefix: null, end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab, merges: [] },
  };
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(tokenizer));
  writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify({
    bos_token: '<bos>', eos_token: '<eos>', pad_token: '<pad>', ...(unk ? { unk_token: unk } : {}), add_bos_token: false,
    chat_template: readFileSync(join(CHAT_DIR, template), 'utf8'),
  }));
}

export function makeGemma4VisionDir(): string {
  const dir = copyFixture('gemma4-vision-tiny', 'mlxcel-gemma4-vision-');
  const vocab: Record<string, number> = {};
  byteChars().forEach((c, b) => (vocab[c] = 10 + b));
  writeByteLevelTokenizer(dir, vocab, [
    [0, '<pad>'], [1, '<eos>'], [2, '<bos>'], [3, '<|turn>'], [4, '<turn|>'], [5, '<|channel>'], [6, '<channel|>'],
    [500, '<|image>'], [502, '<|image|>'], [504, '<image|>'], [501, '<|audio>'], [503, '<|audio|>'], [505, '<audio|>'], [506, '<|video|>'],
  ], 'gemma4.jinja');
  return dir;
}

/**
 * The same for Gemma 3n: the gemma3n-vision-tiny fixture (real Gemma 3n layout; 384 ids, of which 256..
 * are the vision and audio vocabularies), text tokens below 256 (newline and printable ASCII, in GPT-2's
 * byte alphabet, at ids 107..202), the Gemma 3n special tokens at the fixture's ids and the real Gemma 3n
 * chat template (image parts render `<image_soft_token>`).
 */
export function makeGemma3nVisionDir(): string {
  const dir = copyFixture('gemma3n-vision-tiny', 'mlxcel-gemma3n-vision-');
  const chars = byteChars();
  const vocab: Record<string, number> = {};
  [10, ...Array.from({ length: 95 }, (_, i) => 32 + i)].forEach((b, i) => (vocab[chars[b]!] = 107 + i));
  writeByteLevelTokenizer(dir, vocab, [
    [0, '<pad>'], [1, '<eos>'], [2, '<bos>'], [3, '<unk>'], [105, '<start_of_turn>'], [106, '<end_of_turn>'],
    [254, '<start_of_image>'], [256, '<end_of_image>'], [257, '<image_soft_token>'], [255, '<start_of_audio>'], [320, '<end_of_audio>'], [321, '<audio_soft_token>'],
  ], 'gemma3n.jinja', '<unk>');
  return dir;
}
