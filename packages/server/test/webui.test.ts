/// <reference lib="dom" />
// (the page code these tests import, or evaluate in the browser, uses DOM globals)
import { describe, expect, it } from 'vitest';
import { WEBUI_CSP, webuiResponse } from '../src/webui.js';
import { describeError } from '../webui/src/api.js';
import { SseParser } from '../webui/src/sse.js';

describe('webuiResponse (the chat page built into dist/webui)', () => {
  it('serves the page at / with security headers and no inline script', () => {
    const page = webuiResponse('/')!;
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['cache-control']).toBe('no-cache');
    expect(page.headers['content-security-policy']).toBe(WEBUI_CSP);
    expect(WEBUI_CSP).toMatch(/default-src 'none'/);
    expect(WEBUI_CSP).toMatch(/script-src 'self'(;|$)/);
    expect(WEBUI_CSP).toMatch(/frame-ancestors 'none'/);
    expect(page.headers['x-frame-options']).toBe('DENY');
    expect(page.headers['x-content-type-options']).toBe('nosniff');
    const html = page.body.toString('utf8');
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/); // every <script> loads a file
    expect(html).not.toMatch(/\son[a-z]+=/i); // no inline event handlers
    expect(html).not.toMatch(/https?:\/\//); // nothing from another origin
    expect(webuiResponse('/index.html')!.body.equals(page.body)).toBe(true);
  });

  it('serves the hashed assets it names with their types, cached for good', () => {
    const html = webuiResponse('/')!.body.toString('utf8');
    const js = /src="([^"]+\.js)"/.exec(html)![1]!;
    const css = /href="([^"]+\.css)"/.exec(html)![1]!;
    const script = webuiResponse(`/${js}`)!;
    expect(script.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(script.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(Number(script.headers['content-length'])).toBe(script.body.length);
    expect(webuiResponse(`/${css}`)!.headers['content-type']).toBe('text/css; charset=utf-8');
    expect(webuiResponse('/favicon.svg')!.headers['content-type']).toBe('image/svg+xml');
  });

  it('returns null for every other path, including traversal attempts', () => {
    for (const p of ['/v1/models', '/health', '/nope.js', '/../package.json', '/%2e%2e/package.json', '//index.html', '/webui/index.html', ''])
      expect(webuiResponse(p)).toBeNull();
  });
});

describe('the page\'s SSE parser', () => {
  it('reassembles events split at any byte, across \\n, \\r\\n and \\r line ends', () => {
    const stream = 'data: {"a":1}\n\n: comment\nevent: x\ndata: two\ndata: lines\r\n\r\ndata: [DONE]\r\r';
    for (let cut = 0; cut <= stream.length; cut++) {
      const p = new SseParser();
      const got = [...p.push(stream.slice(0, cut)), ...p.push(stream.slice(cut)), ...p.end()];
      expect(got, `cut at ${cut}`).toEqual(['{"a":1}', 'two\nlines', '[DONE]']);
    }
  });

  it('keeps an event that ended without its blank line', () => {
    const p = new SseParser();
    expect(p.push('data: last')).toEqual([]);
    expect(p.end()).toEqual(['last']);
  });
});

describe('the page\'s error messages', () => {
  it('names the cause of 429, context overflow, loading and refused keys', () => {
    expect(describeError(429, { error: { message: 'queue full' } }, '7').message).toBe('The server is busy (429 Too Many Requests). Try again in 7 s. Server said: queue full');
    expect(describeError(400, { error: { message: 'too many tokens', code: 'context_length_exceeded' } }, null).message).toMatch(/too long for the model's context \(400\)/);
    expect(describeError(400, { error: { message: '"temperature" must be a number' } }, null).message).toBe('Request failed (400). Server said: "temperature" must be a number');
    expect(describeError(503, null, null).message).toMatch(/still loading \(503\)/);
    expect(describeError(503, { error: { message: 'the server is shutting down', code: 'server_shutdown' } }, null).message).toMatch(/^The server is shutting down \(503\)/);
    expect(describeError(401, null, null).message).toMatch(/refused the API key/);
    expect(describeError(500, 'not json', null).message).toBe('Request failed (500).');
  });
});
