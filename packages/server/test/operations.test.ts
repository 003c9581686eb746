/**
 * Operations: /health while loading and after, /metrics, one structured log line per request,
 * API keys (flag and MLXCEL_API_KEY), CORS, the bounded queue (429 + Retry-After) and
 * --request-timeout. The first server is embedded (startServer from the built package), the second
 * a spawned `mlxcel serve`.
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer, ServerOptions } from '../src/index.js';
import { post, serve, sseEvents, type Served } from './helpers/serve.js';
import { tinyModel } from './helpers/tiny-model.js';

// The worker threads load from the built package (dist/worker/*.js), so the embedded server does too.
const { startServer } = (await import('../dist/index.js')) as { startServer: (o: ServerOptions) => Promise<RunningServer> };

const MSGS = [{ role: 'user', content: 'The secret word is PELICAN' }];
const auth = (key: string) => ({ authorization: `Bearer ${key}` });

describe('embedded server: health, metrics, logs, auth, CORS', () => {
  let srv: RunningServer;
  let base = '';
  const lines: Record<string, unknown>[] = [];
  let firstHealth: { status: number; body: unknown };
  beforeAll(async () => {
    const stream = new Writable({
      write(chunk, _enc, cb) {
        for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l));
        cb();
      },
    });
    srv = await startServer({ model: tinyModel(), port: 0, modelName: 'tiny', apiKey: 'sk-test', cors: ['https://app.example'], logger: { level: 'info', stream } });
    base = `http://127.0.0.1:${srv.port}`;
    // The model loads on the engine thread after the server listens: /health says so.
    const r = await fetch(`${base}/health`);
    firstHealth = { status: r.status, body: await r.json() };
    await srv.ready;
  });
  afterAll(async () => srv?.close(0));

  it('/health: 503 while the model loads, then the model, queue depth, active sequences and the content parts it takes', async () => {
    expect(firstHealth).toEqual({ status: 503, body: { status: 'loading' } });
    const r = await fetch(`${base}/health`);
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ status: 'ok', model: 'tiny', context_length: 4096, queue_depth: 0, active_sequences: 0, image_input: false, audio_input: false });
  });

  it('--api-key: a Bearer token on /v1/* and /metrics, /health open', async () => {
    expect((await post(base, '/v1/chat/completions', { messages: MSGS, max_tokens: 2 })).status).toBe(401);
    const wrong = await post(base, '/v1/chat/completions', { messages: MSGS, max_tokens: 2 }, auth('sk-wrong'));
    expect(wrong.status).toBe(401);
    expect(wrong.json.error).toMatchObject({ type: 'authentication_error', code: 'invalid_api_key' });
    expect((await fetch(`${base}/v1/models`)).status).toBe(401);
    expect((await fetch(`${base}/metrics`)).status).toBe(401);
    expect((await fetch(`${base}/health`)).status).toBe(200);
    expect((await post(base, '/v1/chat/completions', { messages: MSGS, max_tokens: 2 }, auth('sk-test'))).status).toBe(200);
  });

  it('--cors: preflight answered without a key, allowed origin echoed, others not', async () => {
    const pre = await fetch(`${base}/v1/chat/completions`, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' },
    });
    expect(pre.status).toBeLessThan(300);
    expect(pre.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(pre.headers.get('access-control-allow-headers')).toMatch(/authorization/i);
    const r = await fetch(`${base}/v1/models`, { headers: { origin: 'https://app.example', ...auth('sk-test') } });
    expect(r.headers.get('access-control-allow-origin')).toBe('https://app.example');
    const other = await fetch(`${base}/v1/models`, { headers: { origin: 'https://evil.example', ...auth('sk-test') } });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('/metrics: Prometheus text with requests by route and status, tokens, latency histograms, queue and KV', async () => {
    await post(base, '/v1/completions', { prompt: 'Hello', max_tokens: 3, stream: false }, auth('sk-test'));
    const text = await (await fetch(`${base}/metrics`, { headers: auth('sk-test') })).text();
    expect(text).toMatch(/mlxcel_requests_total\{route="\/v1\/completions",status="200"\} \d+/);
    expect(text).toMatch(/mlxcel_requests_total\{route="\/v1\/chat\/completions",status="401"\} 2/);
    expect(text).toMatch(/mlxcel_generated_tokens_total \d+/);
    expect(text).toMatch(/mlxcel_prompt_tokens_total \d+/);
    expect(text).toMatch(/mlxcel_time_to_first_token_seconds_bucket\{le="0.1"\} \d+/);
    expect(text).toMatch(/mlxcel_inter_token_latency_seconds_count \d+/);
    expect(text).toMatch(/mlxcel_queue_depth 0/);
    expect(text).toMatch(/mlxcel_active_sequences \d+/);
    expect(text).toMatch(/mlxcel_kv_cache_bytes \d+/);
  });

  it('/metrics: the prefix cache — cached prompt tokens as usage reports them, lookups, hits, restored tokens, size', async () => {
    const metric = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
    const scrape = async () => (await fetch(`${base}/metrics`, { headers: auth('sk-test') })).text();
    const before = await scrape();
    const text = `Once upon a time ${'there was a long and winding road. '.repeat(30)}`;
    const ask = (end: string, extra = {}) => post(base, '/v1/completions', { prompt: text + end, max_tokens: 2, temperature: 0, ...extra }, auth('sk-test'));
    const first = await ask('The end.');
    const second = await ask('And then?');
    // best_of samples 3 candidates of one prompt: its cached tokens count once, like its prompt tokens.
    const third = await ask('Or else?', { best_of: 3, n: 1, temperature: 0.7, seed: 1 });
    const cached = [first, second, third].map((r) => r.json.usage.prompt_tokens_details.cached_tokens as number);
    expect(cached[0]).toBe(0);
    expect(cached[1]).toBeGreaterThan(0);
    expect(cached[2]).toBeGreaterThan(0);
    expect(cached[2]).toBeLessThan(third.json.usage.prompt_tokens);
    // Counted when each request ends: exact at once.
    const after = await scrape();
    expect(metric(after, 'mlxcel_prompt_cached_tokens_total') - (metric(before, 'mlxcel_prompt_cached_tokens_total') || 0)).toBe(cached[0]! + cached[1]! + cached[2]!);
    // The engine thread reports its pool every 200 ms at most.
    let now = after;
    for (let i = 0; i < 50 && !(metric(now, 'mlxcel_prefix_cache_hits_total') >= 2); i++) {
      await new Promise((r) => setTimeout(r, 100));
      now = await scrape();
    }
    expect(metric(now, 'mlxcel_prefix_cache_lookups_total')).toBeGreaterThanOrEqual(3);
    expect(metric(now, 'mlxcel_prefix_cache_hits_total')).toBeGreaterThanOrEqual(2);
    expect(metric(now, 'mlxcel_prefix_cache_restored_tokens_total')).toBeGreaterThanOrEqual(cached[1]! + cached[2]!);
    expect(metric(now, 'mlxcel_prefix_cache_blocks')).toBeGreaterThan(0);
    expect(metric(now, 'mlxcel_prefix_cache_bytes')).toBeGreaterThan(0);
    expect(metric(now, 'mlxcel_prefix_cache_budget_bytes')).toBeGreaterThanOrEqual(metric(now, 'mlxcel_prefix_cache_bytes'));
    expect(metric(now, 'mlxcel_prefix_cache_evicted_blocks_total')).toBe(0);
  });

  it('one structured log line per request: id, status, tokens, timing; never the prompt by default', async () => {
    const before = lines.length;
    const r = await post(base, '/v1/chat/completions', { messages: MSGS, max_tokens: 4 }, auth('sk-test'));
    expect(r.status).toBe(200);
    await new Promise((res) => setTimeout(res, 50));
    const mine = lines.slice(before).filter((l) => l.msg === 'request');
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ reqId: expect.stringMatching(/^req-/), method: 'POST', url: '/v1/chat/completions', status: 200, promptTokens: r.json.usage.prompt_tokens, completionTokens: 4, ms: expect.any(Number) });
    expect(JSON.stringify(lines)).not.toContain('PELICAN');
  });
});

describe('spawned server: MLXCEL_API_KEY, --log-prompts, --max-queue, --request-timeout', () => {
  let srv: Served;
  const key = auth('sk-env');
  beforeAll(async () => {
    srv = await serve(['--model-name', 'tiny', '--max-batch', '1', '--max-queue', '1', '--request-timeout', '1', '--log-prompts', '--no-webui'], { MLXCEL_API_KEY: 'sk-env' });
  });
  afterAll(async () => srv?.stop());

  it('takes the key from MLXCEL_API_KEY and logs prompts with --log-prompts', async () => {
    expect((await post(srv.base, '/v1/chat/completions', { messages: MSGS, max_tokens: 2 })).status).toBe(401);
    expect((await post(srv.base, '/v1/chat/completions', { messages: MSGS, max_tokens: 2 }, key)).status).toBe(200);
    await new Promise((res) => setTimeout(res, 100));
    expect(srv.stdout()).toContain('PELICAN');
  });

  it('a full queue answers 429 with Retry-After; a request over --request-timeout is ended (stream: final chunk, error, [DONE]; JSON: 504)', async () => {
    const long = { messages: MSGS, max_tokens: 4000, temperature: 0 };
    // One decoding (--max-batch 1), one waiting (--max-queue 1): the third is refused.
    const streaming = fetch(`${srv.base}/v1/chat/completions`, { method: 'POST', headers: key, body: JSON.stringify({ ...long, stream: true }) });
    const first = await streaming;
    expect(first.status).toBe(200);
    const waiting = post(srv.base, '/v1/chat/completions', long, key);
    await new Promise((res) => setTimeout(res, 100));
    const refused = await post(srv.base, '/v1/chat/completions', long, key);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(refused.json.error).toMatchObject({ type: 'rate_limit_error', code: 'queue_full' });
    const events = sseEvents(await first.text());
    expect(events.at(-1)).toBe('[DONE]');
    expect(events.at(-2).error).toMatchObject({ code: 'request_timeout' });
    expect(events.at(-3).choices[0].finish_reason).toBe('length');
    const timedOut = await waiting;
    expect(timedOut.status).toBe(504);
    expect(timedOut.json.error).toMatchObject({ type: 'timeout_error', code: 'request_timeout' });
    // The queue is free again.
    expect((await post(srv.base, '/v1/chat/completions', { messages: MSGS, max_tokens: 2 }, key)).status).toBe(200);
  });
});
