/**
 * Concurrency and faults against a spawned `mlxcel serve`: 16 streams with half cancelled mid-way,
 * a 4 MB prompt refused while 4 streams keep flowing, and SIGTERM draining in-flight requests.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, serve, sseEvents, type Served } from './helpers/serve.js';

const body = (i: number, extra: Record<string, unknown> = {}) => ({
  model: 'tiny', messages: [{ role: 'user', content: `Story number ${i}: once upon a time` }], max_tokens: 24, temperature: 0, ...extra,
});

/** Reads an SSE response; `stopAfter` chunks with content -> abort (the client goes away). */
async function stream(base: string, b: object, stopAfter = Infinity): Promise<{ text: string; events: any[]; aborted: boolean }> {
  const abort = new AbortController();
  const r = await fetch(`${base}/v1/chat/completions`, { method: 'POST', body: JSON.stringify({ ...b, stream: true }), signal: abort.signal });
  const reader = r.body!.getReader();
  const decoder = new TextDecoder();
  let raw = '', seen = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    raw += decoder.decode(value, { stream: true });
    seen = (raw.match(/"content":"[^"]/g) ?? []).length;
    if (seen >= stopAfter) {
      abort.abort();
      return { text: '', events: [], aborted: true };
    }
  }
  const events = sseEvents(raw);
  const text = events.filter((e) => e !== '[DONE]' && !e.error).map((e) => e.choices[0]?.delta?.content ?? '').join('');
  return { text, events, aborted: false };
}

const metric = async (base: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(await (await fetch(`${base}/metrics`)).text())?.[1] ?? NaN);

describe('concurrency and faults', () => {
  let srv: Served;
  beforeAll(async () => {
    srv = await serve(['--model-name', 'tiny', '--max-batch', '16', '--no-webui']);
  });
  afterAll(async () => srv?.stop());

  it('16 concurrent streams, half cancelled mid-way: the rest equal their solo greedy output, the cancelled stop generating', async () => {
    const solo: string[] = [];
    for (let i = 0; i < 16; i += 2) solo.push((await post(srv.base, '/v1/chat/completions', body(i))).json.choices[0].message.content);
    const before = await metric(srv.base, 'mlxcel_generated_tokens_total');
    const results = await Promise.all(Array.from({ length: 16 }, (_, i) => stream(srv.base, body(i), i % 2 ? 3 : Infinity)));
    for (let i = 0; i < 16; i += 2) {
      expect(results[i]!.aborted).toBe(false);
      expect(results[i]!.text).toBe(solo[i / 2]);
      expect(results[i]!.events.at(-1)).toBe('[DONE]');
      expect(results[i]!.events.at(-2).choices[0].finish_reason).toBe('length');
    }
    expect(results.filter((r) => r.aborted)).toHaveLength(8);
    // Every sequence leaves the scheduler; the cancelled ones did not run to their 24 tokens.
    let health: any;
    for (let t = 0; t < 100; t++) {
      health = await (await fetch(`${srv.base}/health`)).json();
      if (health.active_sequences === 0 && health.queue_depth === 0) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(health).toMatchObject({ active_sequences: 0, queue_depth: 0 });
    const generated = (await metric(srv.base, 'mlxcel_generated_tokens_total')) - before;
    expect(generated).toBeLessThan(16 * 24);
    expect(generated).toBeGreaterThanOrEqual(8 * 24 + 8 * 3);
  });

  it('a 4 MB prompt is refused by the length bound while 4 streams keep flowing', async () => {
    const streams = Array.from({ length: 4 }, (_, i) => stream(srv.base, body(i, { max_tokens: 300 })));
    let finished = 0;
    for (const s of streams) void s.then(() => finished++);
    // Let the streams get going, then send the huge prompt.
    await new Promise((r) => setTimeout(r, 200));
    const huge = await post(srv.base, '/v1/chat/completions', { model: 'tiny', messages: [{ role: 'user', content: 'x'.repeat(4 * 1024 * 1024) }], max_tokens: 4 });
    const stillStreaming = 4 - finished;
    expect(huge.status).toBe(400);
    expect(huge.json.error).toMatchObject({ param: 'messages', code: 'context_length_exceeded', type: 'invalid_request_error' });
    // The refusal came back while the streams were still going, and none of them was harmed.
    expect(stillStreaming).toBe(4);
    for (const r of await Promise.all(streams)) {
      expect(r.events.at(-1)).toBe('[DONE]');
      expect(r.events.at(-2).choices[0].finish_reason).toBe('length');
    }
    const health = await fetch(`${srv.base}/health`);
    expect(health.status).toBe(200);
  });
});

describe('graceful shutdown', () => {
  it('SIGTERM: new requests refused, short requests finish, long streams end with a final chunk, an error event and [DONE]; exit 0', async () => {
    const srv = await serve(['--model-name', 'tiny', '--shutdown-grace', '1', '--no-webui']);
    try {
      const short = post(srv.base, '/v1/chat/completions', body(1, { max_tokens: 8 }));
      const long = stream(srv.base, body(2, { max_tokens: 4000 }));
      const longJson = post(srv.base, '/v1/chat/completions', body(3, { max_tokens: 4000 }));
      await new Promise((r) => setTimeout(r, 300));
      srv.proc.kill('SIGTERM');
      await new Promise((r) => setTimeout(r, 100));
      const refused = await fetch(`${srv.base}/v1/models`).then((r) => r.status, () => 'connection refused');
      expect([503, 'connection refused']).toContain(refused);
      const s = await short;
      expect(s.status).toBe(200);
      expect(s.json.choices[0].finish_reason).toBe('length');
      const l = await long;
      expect(l.events.at(-1)).toBe('[DONE]');
      expect(l.events.at(-2).error).toMatchObject({ code: 'server_shutdown' });
      expect(l.events.at(-3).choices[0].finish_reason).toBe('length');
      const j = await longJson;
      expect(j.status).toBe(503);
      expect(j.json.error.code).toBe('server_shutdown');
      expect(await srv.exited).toBe(0);
      expect(srv.stderr()).toMatch(/SIGTERM: draining/);
    } finally {
      await srv.stop();
    }
  });
});
