import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ChatTemplate, loadChatTemplate, toTemplateValue } from '../src/chat/template.js';
import { resolveChatTemplate } from '../src/chat/resolve.js';
import { buildPrompt, expandPlaceholders } from '../src/chat/prompt.js';
import type { ChatMessage } from '../src/chat/types.js';
import { MlxcelError } from '../src/errors.js';
import { loadTokenizer } from '../src/tokenizer/load.js';
import { CHAT_DIR, GEMMA3_DIR, LLAMA2_DIR, PHI3SMALL_DIR } from './helpers/paths.js';
import { makePhi3Dir } from './helpers/phi3.js';

const conversation: ChatMessage[] = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'Hi' },
  { role: 'assistant', content: 'Hello!' },
  { role: 'user', content: 'Bye' },
];

function errorCode(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(MlxcelError);
    return (err as MlxcelError).code;
  }
  return undefined;
}

describe('Gemma 3 chat template (real tokenizer_config.json)', () => {
  const tok = loadTokenizer(GEMMA3_DIR);
  const template = loadChatTemplate({ dir: GEMMA3_DIR })!;

  it('renders system + alternating turns + generation prompt', () => {
    expect(template.source).toContain('tokenizer_config.json#chat_template');
    const prompt = buildPrompt(tok, conversation, { template });
    expect(prompt.templated).toBe(true);
    expect(prompt.text).toBe(
      '<bos><start_of_turn>user\nYou are terse.\n\nHi<end_of_turn>\n' +
        '<start_of_turn>model\nHello!<end_of_turn>\n' +
        '<start_of_turn>user\nBye<end_of_turn>\n' +
        '<start_of_turn>model\n',
    );
    // exactly one <bos>: the rendered text is encoded without adding special tokens
    expect(prompt.ids.slice(0, 4)).toEqual([2, 105, 2364, 107]);
    expect(prompt.ids.filter((id) => id === 2)).toHaveLength(1);
    expect(prompt.ids.slice(-3)).toEqual([105, 4368, 107]);
    expect(tok.decode(prompt.ids)).toBe(prompt.text);
  });

  it('omits the generation prompt on request and renders a plain string as one user turn', () => {
    const text = buildPrompt(tok, 'Why?', { template, addGenerationPrompt: false }).text;
    expect(text).toBe('<bos><start_of_turn>user\nWhy?<end_of_turn>\n');
  });

  it('renders content parts and trims text parts', () => {
    const text = template.render(
      [{ role: 'user', content: [{ type: 'image' }, { type: 'text', text: '  Describe it. ' }] }],
      { bosToken: '<bos>' },
    );
    expect(text).toBe('<bos><start_of_turn>user\n<start_of_image>Describe it.<end_of_turn>\n<start_of_turn>model\n');
  });

  it('turns raise_exception into CHAT_TEMPLATE_ERROR', () => {
    const bad: ChatMessage[] = [
      { role: 'user', content: 'a' },
      { role: 'user', content: 'b' },
    ];
    expect(errorCode(() => buildPrompt(tok, bad, { template }))).toBe('CHAT_TEMPLATE_ERROR');
    expect(() => template.render(bad)).toThrow(/Conversation roles must alternate/);
  });
});

describe('Gemma 4 chat template (llama.cpp copy)', () => {
  const template = new ChatTemplate(readFileSync(join(CHAT_DIR, 'gemma4.jinja'), 'utf8'), 'gemma4.jinja');
  const vars = { bosToken: '<bos>', eosToken: '<eos>' };

  it('renders system turn, audio placeholder and the empty thought channel', () => {
    const text = template.render(
      [
        { role: 'system', content: '  Be brief. ' },
        { role: 'user', content: [{ type: 'audio', samples: new Float32Array(4) }, { type: 'text', text: 'What is said?' }] },
      ],
      vars,
    );
    expect(text).toBe(
      '<bos><|turn>system\nBe brief.<turn|>\n<|turn>user\n<|audio|>What is said?<turn|>\n<|turn>model\n<|channel>thought\n<channel|>',
    );
  });

  it('maps assistant → model, strips prior thinking and honours enable_thinking', () => {
    const text = template.render(
      [
        { role: 'user', content: 'Q1' },
        { role: 'assistant', content: '<|channel>thought\nhmm<channel|>A1' },
        { role: 'user', content: 'Q2' },
      ],
      { ...vars, variables: { enable_thinking: true } },
    );
    expect(text).toBe(
      '<bos><|turn>system\n<|think|><turn|>\n<|turn>user\nQ1<turn|>\n<|turn>model\nA1<turn|>\n<|turn>user\nQ2<turn|>\n<|turn>model\n',
    );
  });

  it('renders tool declarations from variables', () => {
    const tools = [
      {
        type: 'function',
        function: {
          name: 'get_time',
          description: 'Current time',
          parameters: { type: 'object', properties: { tz: { type: 'string', description: 'zone' } }, required: ['tz'] },
        },
      },
    ];
    const text = template.render([{ role: 'user', content: 'time?' }], { ...vars, variables: { tools } });
    expect(text.startsWith('<bos><|turn>system\n<|tool>declaration:get_time{description:<|"|>Current time<|"|>')).toBe(true);
    expect(text).toContain('tz:{description:<|"|>zone<|"|>,type:<|"|>STRING<|"|>}');
    expect(text).toContain('<tool|><turn|>\n<|turn>user\ntime?<turn|>\n');
  });
});

describe('Gemma 3n chat template (audio parts)', () => {
  const template = new ChatTemplate(readFileSync(join(CHAT_DIR, 'gemma3n.jinja'), 'utf8'));

  it('renders an audio part as one <audio_soft_token> that a processor expands', () => {
    const text = template.render(
      [
        { role: 'system', content: [{ type: 'text', text: 'Transcribe.' }] },
        { role: 'user', content: [{ type: 'audio', path: 'a.wav' }, { type: 'text', text: ' clip ' }] },
      ],
      { bosToken: '<bos>' },
    );
    expect(text).toBe('<bos><start_of_turn>user\nTranscribe.\n\n<audio_soft_token>clip<end_of_turn>\n<start_of_turn>model\n');
    const span = '\n\n<start_of_audio>' + '<audio_soft_token>'.repeat(3) + '<end_of_audio>\n\n';
    expect(expandPlaceholders(text, '<audio_soft_token>', [span])).toBe(
      `<bos><start_of_turn>user\nTranscribe.\n\n${span}clip<end_of_turn>\n<start_of_turn>model\n`,
    );
    expect(errorCode(() => expandPlaceholders(text, '<audio_soft_token>', []))).toBe('CHAT_PLACEHOLDER_MISMATCH');
  });
});

describe('Phi-3 chat template', () => {
  const dir = makePhi3Dir();
  const tok = loadTokenizer(dir);
  const template = loadChatTemplate({ dir })!;

  it('renders the Phi-3.5 format and encodes without BOS', () => {
    const prompt = buildPrompt(tok, conversation, { template });
    expect(prompt.text).toBe(
      '<|system|>\nYou are terse.<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\nHello!<|end|>\n<|user|>\nBye<|end|>\n<|assistant|>\n',
    );
    const enc = (s: string): number[] => tok.encode(s, { addSpecialTokens: false });
    // rstrip on the chat tokens absorbs the newline after each of them
    expect(prompt.ids).toEqual([
      32006, ...enc('You are terse.'), 32007,
      32010, ...enc('Hi'), 32007,
      32001, ...enc('Hello!'), 32007,
      32010, ...enc('Bye'), 32007,
      32001,
    ]);
  });

  it('ends with eos_token without a generation prompt and skips an empty system message', () => {
    const text = buildPrompt(tok, [{ role: 'system', content: '' }, { role: 'user', content: 'x' }], {
      template,
      addGenerationPrompt: false,
    }).text;
    expect(text).toBe('<|user|>\nx<|end|>\n<|endoftext|>');
  });
});

describe('Phi-3-small chat template (tiktoken)', () => {
  it('starts with <|endoftext|> as bos_token', () => {
    const tok = loadTokenizer(PHI3SMALL_DIR);
    const template = loadChatTemplate({ dir: PHI3SMALL_DIR })!;
    const prompt = buildPrompt(tok, 'Hi', { template });
    expect(prompt.text).toBe('<|endoftext|><|user|>\nHi<|end|>\n<|assistant|>\n');
    expect(prompt.ids).toEqual([100257, 100262, 198, 13347, 100266, 198, 100263, 198]);
  });
});

describe('raw prompts and template resolution', () => {
  const llama = loadTokenizer(LLAMA2_DIR);
  const dummy = new ChatTemplate('{{ messages[0].content }}!');

  it('noChatTemplate encodes the raw text with the tokenizer special tokens', () => {
    expect(buildPrompt(llama, 'Hello world', { template: dummy, noChatTemplate: true })).toEqual({
      text: 'Hello world',
      ids: [1, 15043, 3186],
      templated: false,
    });
    const joined = buildPrompt(llama, [{ role: 'user', content: [{ type: 'text', text: 'Hello' }] }, { role: 'user', content: 'world' }], {
      template: dummy,
      noChatTemplate: true,
    });
    expect(joined.text).toBe('Hello\nworld');
    // without a template a plain string is raw too; messages are an error
    expect(buildPrompt(llama, 'Hello world', { template: null }).ids).toEqual([1, 15043, 3186]);
    expect(errorCode(() => buildPrompt(llama, [{ role: 'user', content: 'x' }], { template: null }))).toBe('CHAT_TEMPLATE_MISSING');
    expect(buildPrompt(llama, 'Hello world', { template: dummy }).text).toBe('Hello world!');
  });

  it('prefers a user file, then chat_template.jinja, then chat_template.json, then tokenizer_config.json', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mlxcel-chat-'));
    expect(resolveChatTemplate({ dir })).toBeNull();
    writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify({ chat_template: 'from-config' }));
    expect(resolveChatTemplate({ dir })!.template).toBe('from-config');
    writeFileSync(join(dir, 'chat_template.json'), JSON.stringify({ chat_template: 'from-json' }));
    expect(resolveChatTemplate({ dir })!.template).toBe('from-json');
    writeFileSync(join(dir, 'chat_template.jinja'), 'from-jinja');
    expect(resolveChatTemplate({ dir })!.template).toBe('from-jinja');
    const file = join(dir, 'mine.jinja');
    writeFileSync(file, 'from-user');
    expect(resolveChatTemplate({ dir, file })).toEqual({ template: 'from-user', source: file });
    expect(errorCode(() => resolveChatTemplate({ file: join(dir, 'nope.jinja') }))).toBe('CHAT_TEMPLATE_NOT_FOUND');
  });

  it('picks named templates from a list', () => {
    const tokenizerConfig = {
      chat_template: [
        { name: 'default', template: 'D' },
        { name: 'tool_use', template: 'T' },
      ],
    };
    expect(resolveChatTemplate({ tokenizerConfig })!.template).toBe('D');
    expect(resolveChatTemplate({ tokenizerConfig, name: 'tool_use' })!.template).toBe('T');
    expect(() => resolveChatTemplate({ tokenizerConfig, name: 'rag' })).toThrow(/available: default, tool_use/);
    expect(errorCode(() => resolveChatTemplate({ tokenizerConfig: { chat_template: 5 } }))).toBe('CHAT_TEMPLATE_INVALID');
  });

  it('reports template syntax errors with the source name', () => {
    expect(errorCode(() => new ChatTemplate('{% for x in %}', 'bad.jinja'))).toBe('CHAT_TEMPLATE_INVALID');
    expect(() => new ChatTemplate('{% for x in %}', 'bad.jinja')).toThrow(/bad\.jinja/);
  });

  it('passes only JSON-like data to templates', () => {
    class Clip {
      x = 1;
    }
    expect(
      toTemplateValue({ type: 'audio', samples: new Float32Array(2), clip: new Clip(), n: 3, u: undefined, tags: ['a', Buffer.from('x')] }),
    ).toEqual({ type: 'audio', n: 3, tags: ['a'] });
  });
});
