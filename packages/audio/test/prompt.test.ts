import { beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import {
  audioEmbeddingOverrides, audioPromptIds, audioPromptTokens, audioSoftTokens, audioTokenCount, expandAudioPlaceholderIds,
  expandAudioPlaceholders, gemma4AudioTokenCount, loadAudioModel, renderAudioChatPrompt, withAudioInLastUserTurn, type AudioModel,
} from '../src/index.js';
import { FIXTURES } from './helpers.js';

describe('Gemma 4 audio token count (HF formula with its cap)', () => {
  it.each([
    [16000, 25], // 1 s
    [16001, 25], // mlx-vlm's ceil(ms / 40) would say 26
    [480000, 750], // 30 s
    [960000, 750], // capped
    [321, 1],
    [160, 0],
    [0, 0],
  ])('%i samples -> %i tokens', (n, want) => {
    expect(gemma4AudioTokenCount(n)).toBe(want);
  });
});

/** A toy tokenizer: special tokens by table, every other character its own id (1000 + code). */
function toyEncoder(specials: Record<string, number>): (text: string) => number[] {
  const keys = Object.keys(specials).sort((a, b) => b.length - a.length);
  return (text) => {
    const ids: number[] = [];
    for (let i = 0; i < text.length; ) {
      const k = keys.find((s) => text.startsWith(s, i));
      if (k) { ids.push(specials[k]!); i += k.length; } else { ids.push(1000 + text.charCodeAt(i)); i++; }
    }
    return ids;
  };
}

describe('prompt placement and embedding overrides', () => {
  let g4: AudioModel, g3n: AudioModel;
  beforeAll(() => {
    g4 = loadAudioModel(join(FIXTURES, 'gemma4-audio-tiny'));
    g3n = loadAudioModel(join(FIXTURES, 'gemma3n-audio-tiny'));
  });

  it('reads the token ids from config.json', () => {
    expect(audioPromptTokens(g4)).toMatchObject({ boa: { id: 501, text: '<|audio>' }, placeholder: { id: 503, text: '<|audio|>' }, eoa: { id: 505, text: '<audio|>' } });
    expect(audioPromptTokens(g3n)).toMatchObject({ boa: { id: 255 }, placeholder: { id: 321, text: '<audio_soft_token>' }, eoa: { id: 320 } });
    expect(audioTokenCount(g3n, 5)).toBe(188);
    expect(audioTokenCount(g4, 16000)).toBe(25);
  });

  it('renders the placeholder inside the last user turn and expands it', () => {
    const msgs = [
      { role: 'system' as const, content: 'Be brief.' },
      { role: 'user' as const, content: 'hi' },
      { role: 'assistant' as const, content: 'hello' },
      { role: 'user' as const, content: ' Transcribe this. ' },
    ];
    const p4 = renderAudioChatPrompt(g4, msgs);
    expect(p4).toBe('<bos><|turn>system\nBe brief.<turn|>\n<|turn>user\nhi<turn|>\n<|turn>model\nhello<turn|>\n<|turn>user\n<|audio|>Transcribe this.<turn|>\n<|turn>model\n<|channel>thought\n<channel|>');
    expect(expandAudioPlaceholders(p4, g4, [3])).toContain('<|turn>user\n<|audio><|audio|><|audio|><|audio|><audio|>Transcribe this.<turn|>');
    const p3 = renderAudioChatPrompt(g3n, msgs);
    expect(p3).toBe('<bos><start_of_turn>user\nBe brief.\n\nhi<end_of_turn>\n<start_of_turn>model\nhello<end_of_turn>\n<start_of_turn>user\n<audio_soft_token>Transcribe this.<end_of_turn>\n<start_of_turn>model\n');
    const x3 = expandAudioPlaceholders(p3, g3n, [188]);
    expect(x3).toContain('<start_of_turn>user\n\n\n<start_of_audio>' + '<audio_soft_token>'.repeat(188) + '<end_of_audio>\n\nTranscribe this.');
    expect(() => expandAudioPlaceholders(p4, g4, [3, 4])).toThrow(/1 "<\|audio\|>" placeholder\(s\) for 2 audio clip\(s\)/);
    expect(withAudioInLastUserTurn(msgs)[3]).toEqual({ role: 'user', content: [{ type: 'audio' }, { type: 'text', text: ' Transcribe this. ' }] });
    expect(() => renderAudioChatPrompt(g4, [{ role: 'system', content: 'x' }])).toThrow(/no user message/);
  });

  it('builds ids and overrides: Gemma 4 soft rows replace exactly the placeholder rows', () => {
    const wave = Float32Array.from({ length: 9000 }, (_, i) => 0.3 * Math.sin(i / 7));
    const soft = audioSoftTokens(g4, wave);
    expect(soft.nTokens).toBe(gemma4AudioTokenCount(9000));
    const encode = toyEncoder({ '<bos>': 2, '<|turn>': 105, '<turn|>': 106, '<|audio>': 501, '<|audio|>': 503, '<audio|>': 505, '<|channel>': 100, '<channel|>': 101 });
    const prompt = renderAudioChatPrompt(g4, [{ role: 'user', content: 'what?' }]);
    const { ids, audioRows } = audioPromptIds(g4, prompt, [soft.nTokens], encode);
    expect(audioRows.length).toBe(soft.nTokens);
    expect(ids[audioRows[0]! - 1]).toBe(501);
    expect(ids[audioRows[audioRows.length - 1]! + 1]).toBe(505);
    const ov = audioEmbeddingOverrides(g4, ids, [soft]);
    expect(Array.from(ov.rows)).toEqual(Array.from(audioRows));
    expect(Array.from(ov.values)).toEqual(Array.from(soft.embeds));
    expect(() => audioEmbeddingOverrides(g4, ids.subarray(0, ids.length - 5), [soft])).not.toThrow(); // tail text only
    expect(() => audioEmbeddingOverrides(g4, ids.filter((_, i) => i !== audioRows[0]), [soft])).toThrow(/placeholders but the clips provide/);
    expect(() => audioPromptIds(g4, prompt, [soft.nTokens], toyEncoder({}))).toThrow(/0 audio soft-token ids, expected/);
  });

  it('Gemma 3n: 188 soft rows plus the hard embedding for <end_of_audio>; id-level expansion', () => {
    const m = g3n;
    if (m.family !== 'gemma3n') throw new Error('gemma3n expected');
    const soft = audioSoftTokens(g3n, Float32Array.from({ length: 16000 }, (_, i) => 0.2 * Math.sin(i / 5)));
    const ids = expandAudioPlaceholderIds([2, 105, 7, 321, 8, 106], g3n, [soft.nTokens], { newlines: 108 });
    expect(ids.length).toBe(6 - 1 + 188 + 4);
    expect(Array.from(ids.subarray(3, 5))).toEqual([108, 255]);
    expect(Array.from(ids.subarray(193, 196))).toEqual([320, 108, 8]);
    const ov = audioEmbeddingOverrides(g3n, ids, [soft]);
    expect(ov.rows.length).toBe(189);
    expect(ov.rows[188]).toBe(193); // <end_of_audio> through the hard path
    const H = g3n.textHidden;
    expect(Array.from(ov.values.subarray(188 * H))).toEqual(Array.from(m.embedder.hard([320])));
    expect(() => expandAudioPlaceholderIds([321], g3n, [188])).toThrow(/pass its token id as opts.newlines/);
    expect(() => m.embedder.hard([5])).toThrow(/id 5 is not an audio token \(320\.\.383\)/);
  });
});
