import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHAT_DIR, LLAMA2_DIR } from './paths.js';

/**
 * Build a Phi-3-mini-like model folder in a temp dir: the real Llama-2 tokenizer.json plus
 * Phi-3's added chat tokens (ids 32000–32010, specials with rstrip as in Phi-3 revisions),
 * a tokenizer_config.json with add_bos_token=false and the Phi-3.5 chat template, and the
 * real Phi-3.5-mini generation_config.json stop ids.
 */
export function makePhi3Dir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'mlxcel-phi3-'));
  const json = JSON.parse(readFileSync(join(LLAMA2_DIR, 'tokenizer.json'), 'utf8')) as {
    added_tokens: Array<Record<string, unknown>>;
  };
  const added: Array<[number, string, boolean]> = [
    [32000, '<|endoftext|>', false],
    [32001, '<|assistant|>', true],
    [32002, '<|placeholder1|>', true],
    [32003, '<|placeholder2|>', true],
    [32004, '<|placeholder3|>', true],
    [32005, '<|placeholder4|>', true],
    [32006, '<|system|>', true],
    [32007, '<|end|>', true],
    [32008, '<|placeholder5|>', true],
    [32009, '<|placeholder6|>', true],
    [32010, '<|user|>', true],
  ];
  for (const [id, content, rstrip] of added) {
    json.added_tokens.push({ id, content, single_word: false, lstrip: false, rstrip, normalized: false, special: true });
  }
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(json));
  writeFileSync(
    join(dir, 'tokenizer_config.json'),
    JSON.stringify({
      add_bos_token: false,
      add_eos_token: false,
      bos_token: '<s>',
      eos_token: '<|endoftext|>',
      unk_token: '<unk>',
      pad_token: '<|endoftext|>',
      clean_up_tokenization_spaces: false,
      chat_template: readFileSync(join(CHAT_DIR, 'phi3.jinja'), 'utf8'),
      tokenizer_class: 'LlamaTokenizer',
    }),
  );
  writeFileSync(
    join(dir, 'generation_config.json'),
    JSON.stringify({ bos_token_id: 1, eos_token_id: [32007, 32001, 32000], pad_token_id: 32000 }),
  );
  return dir;
}
