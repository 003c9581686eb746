/** generateOptionsFromRequest: the one mapper the CLI and the server share (fields, ranges, defaults). */
import { describe, expect, it } from 'vitest';
import { generateOptionsFromRequest, RequestFieldError, resolveSamplerOptions } from '../src/index.js';

function fieldError(body: Record<string, unknown>, label?: (f: string) => string): RequestFieldError {
  try {
    generateOptionsFromRequest(body, label);
  } catch (e) {
    expect(e).toBeInstanceOf(RequestFieldError);
    return e as RequestFieldError;
  }
  throw new Error('expected a RequestFieldError');
}

describe('generateOptionsFromRequest', () => {
  it('maps every OpenAI field onto its GenerateOptions name', () => {
    const o = generateOptionsFromRequest({
      max_tokens: 7, temperature: 0.5, top_p: 0.9, top_k: 40, min_p: 0.05, repetition_penalty: 1.1,
      presence_penalty: 0.5, frequency_penalty: -0.5, seed: 3, stop: 'END', logit_bias: { '13': -5, 29871: 2 },
    });
    expect(o).toEqual({
      maxTokens: 7, temperature: 0.5, topP: 0.9, topK: 40, minP: 0.05, repetitionPenalty: 1.1,
      presencePenalty: 0.5, frequencyPenalty: -0.5, seed: 3, stop: ['END'], logitBias: { 13: -5, 29871: 2 },
    });
    expect(generateOptionsFromRequest({ max_tokens: 5, max_completion_tokens: 9 }).maxTokens).toBe(9);
  });

  it('unset and null fields stay unset, so the engine defaults (greedy) apply', () => {
    expect(generateOptionsFromRequest({})).toEqual({});
    expect(generateOptionsFromRequest({ temperature: null, stop: null, logit_bias: null })).toEqual({});
    const r = resolveSamplerOptions(generateOptionsFromRequest({}));
    expect([r.temperature, r.topP, r.topK, r.minP, r.repetitionPenalty]).toEqual([0, 1, 0, 0, 1]);
  });

  it.each([
    [{ temperature: -1 }, 'temperature'],
    [{ temperature: '0.5' }, 'temperature'],
    [{ top_p: 1.5 }, 'top_p'],
    [{ top_k: 2.5 }, 'top_k'],
    [{ max_tokens: -1 }, 'max_tokens'],
    [{ seed: 2 ** 32 }, 'seed'],
    [{ presence_penalty: 3 }, 'presence_penalty'],
    [{ stop: [1] }, 'stop'],
    [{ logit_bias: [1] }, 'logit_bias'],
    [{ logit_bias: { x: 1 } }, 'logit_bias'],
    [{ logit_bias: { 5: 'big' } }, 'logit_bias'],
  ])('%j is rejected naming %s', (body, field) => {
    const e = fieldError(body);
    expect(e.field).toBe(`"${field}"`);
    expect(e.code).toBe('REQUEST_FIELD_INVALID');
    expect(e.message.startsWith(`"${field}" `)).toBe(true);
  });

  it('a label renames the field in errors (the CLI names its flag)', () => {
    expect(fieldError({ top_p: 2 }, (f) => (f === 'top_p' ? '--top-p' : f)).message).toMatch(/^--top-p must be a number in \[0, 1\]/);
  });
});
